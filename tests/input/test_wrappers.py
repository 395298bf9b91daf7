"""What a tool puts before each line (memledger.input.wrappers): every row of the table, wrapped
around the same synthetic log, gives the reading the bare log gives. The lines are synthetic, in
the shapes of SGLang v0.2.13 managers/tp_worker.py:419-427 (`[gpu=N] Prefill batch. ...`) and
v0.4.6 model_executor/model_runner.py (`Load weight end. ...`); no real log text is used."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from memledger.diagnosis import Diagnosis
from memledger.input.launch_command import find_launch_command
from memledger.input.logical import strip_paste_columns
from memledger.input.parsing import parse_log
from memledger.input.scan import LineFilter, is_serving
from memledger.input.wrappers import (
    COLUMN,
    SUFFIXES,
    WRAPPERS,
    unwrapped_bytes,
    unwrapped_record,
    unwrapped_text,
    without_suffix,
)
from memledger.model.events import EventKind
from tests.conftest import diagnose_paste
from tests.input.test_scan import HAVE_GREP, reference_candidates, scanned

P = "[2026-03-02 08:00:00 TP0] "
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.20 GiB is free."
)
SERVING_OOM = [
    P + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=61.00 GB, "
    "mem usage=15.50 GB.",
    P + "KV Cache is allocated. #tokens: 300000, KV size: 36.60 GB",
    "[2026-03-02 08:00:05] The server is fired up and ready to roll!",
    P + "Prefill batch. #new-seq: 9, #new-token: 20500, #cached-token: 700, token usage: 0.30, "
    "#running-req: 2, #queue-req: 40",
    OOM,
]
OLD_SERVING_OOM = [
    "[gpu=0] Prefill batch. #new-seq: 9, #new-token: 20500, #cached-token: 700, "
    "cache hit rate: 3.30%, #running-req: 2, #queue-req: 40",
    OOM,
]
LOGS = {"v0.4 serving": SERVING_OOM, "v0.2 serving": OLD_SERVING_OOM}

_ROW = {w.name: w for w in WRAPPERS}
WRAPPED: dict[str, Callable[[str], str]] = {
    **{w.name: (lambda line, w=w: w.example + line) for w in WRAPPERS},  # type: ignore[misc]
    "ansi colours": lambda line: "\x1b[0;32m" + line + "\x1b[0m",
    "coloured compose column": lambda line: "\x1b[36msglang-1  |\x1b[0m " + line,
    "kubectl --prefix --timestamps": lambda line: "[pod/s-0/s] 2026-03-02T08:00:00.5Z " + line,
    "quote of a compose log": lambda line: "> sglang-1  | " + line,
    "crlf": lambda line: line + "\r",
    "Ray deduplicated": lambda line: "(WorkerDict pid=7) " + line + SUFFIXES[0].example,
    "docker json-file": lambda line: json.dumps(
        {"log": line + "\n", "stream": "stderr", "time": "2026-03-02T08:00:00.1Z"}
    ),
}


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines)


def _reading(result: Diagnosis) -> tuple[object, ...]:
    return (
        result.outcome,
        result.phase.value,
        result.verdict,
        [(s.knob, s.direction, s.value) for s in result.suggestions],
    )


def test_every_row_matches_its_own_example_whole() -> None:
    for row in WRAPPERS:
        line = row.example + "[TP0] x"  # what follows: an SGLang prefix
        whole = re.match(row.pattern, line)
        assert whole is not None and whole.end() == len(row.example), row.name
        assert unwrapped_text(line) == "[TP0] x", row.name
        assert unwrapped_bytes(line.encode()) == b"[TP0] x", row.name
        assert row.kind == COLUMN or strip_paste_columns(line) == "[TP0] x", row.name
        assert row.source, row.name


def test_every_suffix_row_is_cut_from_the_line_end_only() -> None:
    for row in SUFFIXES:
        assert without_suffix("x" + row.example) == "x", row.name
        assert unwrapped_bytes(("x" + row.example).encode()) == b"x", row.name
        assert without_suffix("x" + row.example + " y") == "x" + row.example + " y", row.name
        assert row.source, row.name


def test_a_record_gives_its_line_and_anything_else_stays_as_is() -> None:
    record = json.dumps({"log": "[TP0] x\n", "stream": "stdout", "time": "t"})
    assert unwrapped_record(record) == "[TP0] x"
    assert unwrapped_text(record) == "[TP0] x"
    deep = '{"log":"x","a":' + "[" * 100_000 + "]" * 100_000 + "}"
    for text in ('{"log":"x"', '{"log":"x", "log2": 1, }', '{"log": 1}', deep):
        assert unwrapped_record(text) == text


def test_one_record_alone_is_read_as_a_log_not_refused_as_json(tmp_path: Path) -> None:
    from memledger.app.open import open_input

    path = tmp_path / "one.log"
    path.write_text(json.dumps({"log": OOM + "\n", "stream": "stderr"}) + "\n", encoding="utf-8")
    with open_input(path) as opened:
        assert opened.log is not None and opened.document is None


@pytest.mark.parametrize("log", sorted(LOGS))
def test_the_bare_log_reads_as_a_serving_oom_with_a_prefill_cap(log: str) -> None:
    result = _diagnose(LOGS[log])
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert ("max_prefill_tokens", 16384) in [(s.knob, s.value) for s in result.suggestions]


@pytest.mark.parametrize("log", sorted(LOGS))
@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_a_wrapped_log_reads_as_the_bare_one(name: str, log: str) -> None:
    wrap, lines = WRAPPED[name], LOGS[log]
    assert _reading(_diagnose([wrap(line) for line in lines])) == _reading(_diagnose(lines))


@pytest.mark.parametrize(
    "wrap",
    [WRAPPED["journald short"], WRAPPED["kubectl logs --prefix"], WRAPPED["ansi colours"]],
)
def test_a_serving_line_behind_a_bracketed_wrapper_is_alone(wrap: Callable[[str], str]) -> None:
    line = wrap(SERVING_OOM[3]).encode()
    assert line.count(b"[") >= 2  # the wrapper's own `[`
    assert is_serving(line)
    data = [wrap(text).encode() for text in SERVING_OOM]
    kept = [number for number, _ in LineFilter().candidates(data, 1)]
    assert kept[-2:] == [4, 5]  # the serving line, kept before the OOM


def test_two_glued_lines_behind_a_wrapper_stay_a_candidate() -> None:
    glued = _ROW["journald short"].example + SERVING_OOM[3] + " " + SERVING_OOM[1]
    assert not is_serving(glued.encode())
    kept = list(LineFilter().candidates([glued.encode()], 1))
    assert kept == [(1, glued.encode())]
    parsed = parse_log(io.BytesIO(glued.encode() + b"\n"), label="paste.txt")
    assert EventKind.KV_ALLOCATED in {e.kind for e in parsed.startup.events}


def test_a_serving_line_with_a_bracket_of_its_own_is_no_wrapped_one() -> None:
    # nothing peeled: the second `[` is the line's, read as glued (security review F11)
    assert not is_serving(b"[gpu=0] Prefill batch. #new-seq: 1 [x]")


@pytest.mark.parametrize("name", ["docker compose service column", "Ray worker prefix"])
def test_a_launch_command_behind_a_column_is_read_over_its_continuations(name: str) -> None:
    command = [
        "python -m sglang.launch_server --model-path org/model \\",
        "  --tp-size 2 \\",
        "  --mem-fraction-static 0.8",
    ]
    wrapped = "\n".join(_ROW[name].example + line for line in command).encode()
    found = find_launch_command(wrapped, whole=True)
    assert found is not None
    assert (found.params.get("tp_size"), found.params.get("mem_fraction_static")) == (2, 0.8)


@pytest.mark.skipif(not HAVE_GREP, reason="grep not on PATH")
def test_the_grep_prefilter_keeps_what_the_built_in_scanner_keeps(tmp_path: Path) -> None:
    bar = "Capturing: 50%|##  | 1/2 [00:01<00:01]\r"
    shapes = [
        *(wrap(line) for wrap in WRAPPED.values() for line in SERVING_OOM),
        bar + SERVING_OOM[3],  # a progress bar's state before a serving line
        "Capturing batches (bs=8 avail_mem=9.00 GB) [x]\r" + SERVING_OOM[3],  # a kept state
        _ROW["journald short"].example + SERVING_OOM[3] + " " + SERVING_OOM[1],  # glued
        _ROW["journald short"].example + SERVING_OOM[3] + " [x]",  # glued to no keyword
    ]
    path = tmp_path / "wrapped.log"
    path.write_text("\n".join(shapes) + "\n", encoding="utf-8")
    expected = reference_candidates(path.read_bytes())
    assert scanned(path, "python") == expected
    assert scanned(path, "grep") == expected
    kept = {number for number, _ in expected[0]}
    assert len(shapes) - 3 in kept  # the serving line after a bar's state, held before the next
    assert len(shapes) - 2 in kept  # a CR state with a keyword is read
