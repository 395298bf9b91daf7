"""memledger.diagnosis: verdict, phase, shortfall, findings and suggestions.

The corpus table below was checked against each log by hand (line numbers are the logs').
Synthetic failures are built in the test from real lines of ../shared/real-logs (never copied
into the repository) plus error texts written from the shapes PyTorch and SGLang print.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import memledger
from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import Diagnosis, diagnose
from memledger.diagnosis.evidence import gather
from memledger.diagnosis.health import headroom_after_startup
from memledger.diagnosis.model import FindingId
from memledger.input.parsing import parse_log
from memledger.record import to_json
from memledger.sglang.failure_rules import CRASH_CAUSES, LOAD_SITES
from memledger.sglang.lifecycle import MEMORY_KNOBS
from memledger.units import GIB, MIB
from tests.conftest import REAL_LOGS, diagnose_paste, load_truth
from tests.input.helpers import physical_lines, real_log


def _diagnose_path(path: Path) -> Diagnosis:
    parsed = parse_log(path)
    return diagnose(parsed, build(parsed, LoadOptions()))


def _diagnose_text(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines, label="pasted.log")


# (log, outcome, phase, verdict start) for every OOM, crash and truncated log of the corpus.
CORPUS = [
    (
        "single/008",
        "oom",
        "load",
        "OOM during weight loading: the Transformers fallback builds the whole model on each GPU",
    ),
    ("single/015", "oom", "load", "OOM during weight loading: likely cause: quantization='awq'"),
    ("single/007", "crash", "graph_capture", "crash during CUDA-graph capture: TypeError"),
    ("single/019", "crash", "graph_capture", "crash during CUDA-graph capture: the traceback"),
    ("complex/006", "crash", "warmup", "crash during warmup: RuntimeError"),
    ("complex/014", "crash", "warmup", "crash during warmup: RuntimeError"),
    ("complex/019", "crash", "load", "crash during weight loading: NameError"),
    ("complex/022", "crash", "dist_init", "crash during distributed init: TimeoutError"),
    ("complex/023", "crash", "load", "crash during weight loading: NameError"),
    ("single/003", "truncated", "graph_capture", "log ends during CUDA-graph capture"),
    ("single/006", "truncated", "graph_capture", "log ends during CUDA-graph capture"),
    ("single/024", "truncated", "after_pool", "log ends during setup after the memory pool"),
]


@pytest.mark.parametrize(("name", "outcome", "phase", "verdict"), CORPUS)
def test_corpus_failures(name: str, outcome: str, phase: str, verdict: str) -> None:
    result = _diagnose_path(real_log(name))
    assert (result.outcome, result.phase.value) == (outcome, phase)
    assert result.verdict.startswith(verdict), result.verdict


def test_corpus_table_covers_every_failed_or_truncated_log() -> None:
    listed = {real_log(name).relative_to(REAL_LOGS).as_posix() for name, *_ in CORPUS}
    failed = {e["file"] for e in load_truth() if e["facts"]["outcome"] != "ready"}
    assert failed == listed


def test_no_memory_knob_for_any_non_memory_failure_in_the_corpus() -> None:
    checked = 0
    for entry in load_truth():
        if entry["facts"]["outcome"] in ("crash", "truncated"):
            result = _diagnose_path(REAL_LOGS / entry["file"])
            knobs = {s.knob for s in result.suggestions}
            assert not knobs & MEMORY_KNOBS, (entry["file"], knobs)
            assert result.shortfall_bytes is None
            checked += 1
    assert checked == 10


def test_crash_names_the_failing_rank_and_says_not_memory() -> None:
    result = _diagnose_path(real_log("single/007"))
    assert result.failed_rank == "TP6" and result.rank == "TP0"
    (not_memory,) = [f for f in result.findings if f.id == "not_memory"]
    assert "cannot unpack non-iterable ForwardMetadata" in not_memory.message
    assert not_memory.evidence == [f"{real_log('single/007')}:539"]


def test_load_oom_uses_rank_zeros_own_message_and_the_fallback_site() -> None:
    result = _diagnose_path(real_log("single/008"))
    # rank 0's line 536: 12.00 GiB asked, 3.91 GiB free (GPU 3's line 444 says 3.88)
    assert result.shortfall_bytes == round(12 * GIB) - round(3.91 * GIB)
    ids = [f.id for f in result.findings]
    assert "unsharded_fallback" in ids
    # the Transformers fallback builds the whole model per GPU: no knob lowers that peak
    assert result.suggestions == []
    weights = next(f for f in result.findings if f.id == "weights_exceed_budget")
    assert "292.38 GiB" in weights.message  # 280.38 allocated + 12.00 requested


def test_load_oom_suggestions_carry_their_arithmetic() -> None:
    result = _diagnose_path(real_log("single/015"))
    assert result.shortfall_bytes == 256 * MIB - 70 * MIB
    by_knob = {s.knob: s for s in result.suggestions}
    # weights >= 31.34 GiB + 256 MiB = 31.59 GiB a rank; mfs 0.85 x P 31.46 = 26.74 GiB allowed
    assert by_knob["tp_size"].value == 4  # 2 x 31.59 / 26.74 = 2.36 -> next power of two
    assert "2.36" in by_knob["tp_size"].why
    assert by_knob["cpu_offload_gb"].value == 5  # 31.59 - 26.74 = 4.85 GiB, rounded up
    assert "unquantized_layer" in [f.id for f in result.findings]


def test_load_oom_headline_leads_with_the_root_cause_and_the_budget_deficit() -> None:
    # review M2: not "0.18 GiB short" (the last request minus free) and a knob first, but the
    # error finding that names the cause, then the weights' deficit (31.59 - 26.74 = 4.85 GiB)
    result = _diagnose_path(real_log("single/015"))
    cause, deficit, levers = result.verdict.split("; ")
    assert cause == (
        "OOM during weight loading: likely cause: quantization='awq' is set, but the failing "
        "layer is built unquantized (full-precision bytes): check that the checkpoint's "
        "quantization covers it"
    )
    assert deficit == "the weights are 4.85 GiB a rank over their budget (mfs x P)"
    assert levers == "else raise --tp-size to 4 or raise --cpu-offload-gb to 5"
    assert "0.18" not in result.verdict and result.shortfall_bytes == 256 * MIB - 70 * MIB


# a weight-loading OOM pasted without server_args (as a thread pastes it): no --tp-size, no
# --mem-fraction-static; synthetic lines in SGLang's shape (v0.5.x model_runner, torch's OOM text)
PASTED_LOAD_OOM = [
    "on 2x R9700 it dies while loading the weights:",
    "Load weight begin. avail mem=20.00 GB",
    '  File "sglang/srt/models/llama.py", line 300, in __init__',
    "    self.mlp = LlamaMLP(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a "
    "total capacity of 24.00 GiB of which 100.00 MiB is free. Of the allocated memory 20.25 GiB "
    "is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.  <- this one",
]


def test_a_pasted_load_oom_gives_no_tp_value_and_says_what_it_assumed() -> None:
    # the paste has no tp: "raise --tp-size to 2" could be said to a user already on 2 GPUs
    result = _diagnose_text(PASTED_LOAD_OOM)
    assert result.phase.value == "load"
    by_knob = {s.knob: s for s in result.suggestions}
    assert by_knob["tp_size"].value is None
    assert "does not show the current --tp-size" in by_knob["tp_size"].why
    # the offload is a per-rank amount: 20.25 + 0.50 = 20.75 GiB needed, 20.00 GiB at most
    assert by_knob["cpu_offload_gb"].value == 1
    assert result.verdict == (
        "OOM during weight loading: the weights are at least 0.75 GiB a rank over P, the memory "
        "free before loading (the log does not show --mem-fraction-static); raise "
        "--cpu-offload-gb to 1 or raise --tp-size (the log does not show its current value)"
    )


def test_ready_logs_findings() -> None:
    wsl = _diagnose_path(real_log("single/020"))
    assert wsl.outcome == "starved" and "zero_headroom" in [f.id for f in wsl.findings]
    # 15,387 KV tokens for a 40,960-token context: a warning whose levers keep or grow the pool
    # (review m7: lowering the fraction or capping the tokens would shrink it further)
    capacity = next(f for f in wsl.findings if f.id == "kv_capacity")
    assert capacity.severity.value == "warning"
    # a 0.4.6.post2 log: its release's summary line and request limit, not v0.5.8's (review m7)
    assert "v0.4.6 managers/scheduler.py:305-311" in capacity.message
    shorter, ranks = wsl.suggestions
    assert (shorter.knob, shorter.direction.value, shorter.value) == (
        "context_length",
        "lower",
        15360,
    )
    assert "v0.4.6 managers/tp_worker.py:120-124" in shorter.why
    # (40,960 - 15,387) x 114,436 B = 2.73 GiB over P 3.23 GiB: no fraction holds it
    assert (ranks.knob, ranks.direction.value) == ("tp_size", "raise")
    assert "0.88 + 0.8438 = 1.7238: above 0.95" in ranks.why
    assert wsl.verdict.endswith("lower --context-length to 15360")
    eagle = _diagnose_path(real_log("complex/007"))
    rose = next(f for f in eagle.findings if f.id == "free_rose_after_pool")
    assert rose.bytes == round(13.87 * GIB) - round(12.36 * GIB)
    plain = _diagnose_path(real_log("single/022"))
    # a ready log states what its KV pool holds (no problem found), in the verdict too
    assert (
        plain.verdict == "ready: no memory problem found; the KV pool holds 903,439 tokens a rank"
    )
    assert [f.id for f in plain.findings] == ["kv_capacity", "room_at_ready"]
    assert "903,439 tokens a rank" in plain.findings[0].message
    # 10.26 GB free at ready, in the tuning guide's "too high" band: a note and a raise, last
    # 0.831 + (10.26 - 8) / 77.43 = 0.8602, down to 0.86
    assert "10.26 GiB free at ready" in plain.findings[1].message
    raised = plain.suggestions[-1]
    assert (raised.knob, raised.direction.value, raised.value) == (
        "mem_fraction_static",
        "raise",
        0.86,
    )


def _capture_prefix() -> list[str]:
    """single/003 up to its graph-capture progress bar (a startup stopped in capture)."""
    return [line for line in physical_lines(real_log("single/003")) if line.strip()]


CAPTURE_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.50 GiB. GPU 0 has a total "
    "capacity of 19.67 GiB of which 5.10 GiB is free. Including non-PyTorch memory, this process "
    "has 14.50 GiB memory in use. Of the allocated memory 13.90 GiB is allocated by PyTorch, "
    "with 0.20 GiB allocated in private pools (e.g., CUDA Graphs), and 120.00 MiB is reserved "
    "by PyTorch but unallocated."
)


def test_oom_in_graph_capture_from_a_real_prefix() -> None:
    lines = _capture_prefix()
    lines += [
        "[2026-03-27 09:31:50 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 2145, in init_device_graphs',
        '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 526, in capture',
        CAPTURE_OOM,
    ]
    result = _diagnose_text(lines)
    assert (result.outcome, result.phase.value) == ("oom", "graph_capture")
    missing = round(7.5 * GIB) - round(5.10 * GIB)
    assert result.shortfall_bytes == missing
    (mfs,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    args = parse_log(real_log("single/003")).startup.server_args
    current = float(args["mem_fraction_static"])  # type: ignore[arg-type]
    # P = 18.73 GiB (TP0 load begin); d = 2.40 / 18.73
    expected = int((current - missing / round(18.73 * GIB)) * 100) / 100
    assert mfs.value == pytest.approx(expected)
    assert result.verdict.startswith("OOM during CUDA-graph capture: 2.40 GiB short; lower")
    point = next(f for f in result.findings if f.id == "capture_point")
    assert "bs=1" in point.message
    doc = json.loads(to_json(result))
    assert set(doc) >= {"outcome", "phase", "shortfall_bytes", "findings", "suggestions"}
    assert {"id", "severity", "message", "bytes", "evidence"} <= set(doc["findings"][0])
    assert {"knob", "direction", "value", "why"} <= set(doc["suggestions"][0])


@pytest.mark.parametrize("annotate", [False, True])
def test_pasted_oom_line_alone(annotate: bool) -> None:
    # rank 0's OOM text from single/015, cut to one line without its prefix or exception name
    line = physical_lines(real_log("single/015"))[123].split(": ", 1)[1]
    if annotate:
        line = "   " + line + "   <- this is what I get"
    result = _diagnose_text([line])
    assert result.outcome == "oom"
    assert result.shortfall_bytes == 256 * MIB - 70 * MIB
    assert result.verdict.startswith("OOM during an unknown phase: 0.18 GiB short")


def test_sglang_refusal_after_a_real_load() -> None:
    lines = [line for line in physical_lines(real_log("single/012")) if line.strip()]
    cut = next(i for i, line in enumerate(lines) if "Load weight end" in line)
    refusal = (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.05. Raise --mem-fraction-static above 0.076 (minimum viable = "
        "1 - available/pre = 0.0748). If using speculative decoding, draft weights are now counted."
    )
    result = _diagnose_text(lines[: cut + 1] + [refusal])
    assert (result.outcome, result.phase.value) == ("oom", "kv_sizing")
    raise_mfs = result.suggestions[0]
    assert (raise_mfs.knob, raise_mfs.direction.value, raise_mfs.value) == (
        "mem_fraction_static",
        "raise",
        0.08,
    )
    # P = 78.64 GiB (single/012 load begin) x (0.0748 - 0.05)
    assert result.shortfall_bytes == round(round(78.64 * GIB) * (0.0748 - 0.05))


def test_killed_without_oom_text_suggests_no_knob() -> None:
    lines = _capture_prefix() + ["Killed"]
    result = _diagnose_text(lines)
    assert result.outcome == "crash"
    assert "killed" in [f.id for f in result.findings]
    assert result.suggestions == []


def test_the_kv_cap_and_the_lower_fraction_buy_the_same_tokens_as_whatif() -> None:
    # the two headroom levers of single/020 move the same 0.32 GiB (its verdict leads with the
    # pool short of one request, whose levers keep the pool); the sizing model
    # (memledger.whatif) must agree with diagnose's own arithmetic on the tokens either leaves
    log = real_log("single/020")
    parsed = parse_log(log)
    _, (lower, cap) = headroom_after_startup(gather(parsed, build(parsed, LoadOptions())))
    assert (lower.knob, cap.knob) == ("mem_fraction_static", "max_total_tokens")
    assert lower.value == 0.78 and cap.value == 15387 - 3031
    by_fraction = memledger.whatif(log, mem_fraction_static=lower.value)
    by_cap = memledger.whatif(log, max_total_tokens=cap.value)
    for answer in (by_fraction, by_cap):
        row = answer.row("KV tokens per rank")
        assert row is not None and row.predicted == cap.value


def test_every_finding_id_of_the_failure_tables_is_its_own() -> None:
    # a table row reports its own id: one a row, in the JSON's shape, never one of the rules'
    ids = [cause.finding_id for cause in CRASH_CAUSES] + [site.finding_id for site in LOAD_SITES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", finding) for finding in ids)
    mirrored = set(ids) & {member.value for member in FindingId}
    assert not mirrored, f"a table row reports its own id: no FindingId member for {mirrored}"
