"""Every input form on realistic data: real logs read in place and transformed in tmp_path."""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path
from typing import Any

import pytest

from memledger.input.facts import facts_of
from memledger.input.logical import split_physical_line
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from tests.input.helpers import parse_json, physical_lines, real_log, truth_facts

# Real logs with different shapes: kubectl + glued lines (TP8), docker (TP1), no rank tag + ANSI +
# CR bars + glued lines, DP attention with 16 ranks.
SHAPES = ["single/022", "single/001", "single/005", "complex/004"]
PREFIX_START = re.compile(rb"^(?=\[\d{4}-\d\d-\d\d )", re.M)


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _facts(path: Path) -> dict[str, Any]:
    return facts_of(parse_log(path))


def _event_lines(path: Path, *, serving: bool = True) -> list[tuple[str, int]]:
    """(kind, line) of each event; `serving=False`: without the serving-batch lines, which are
    kept only alone on their physical line with at most one `[` (memledger.input.scan.is_serving:
    a `[` in a prefix, `sglang[4711]:`, a tqdm fragment's `[00:01<00:01]` or a colour's escape,
    makes them glued lines, read for what else they hold)."""
    events = parse_log(path).startup.events
    return [(e.kind.value, e.line) for e in events if serving or e.kind.value != "serving_batch"]


@pytest.mark.parametrize("name", SHAPES)
def test_gzip_file_gives_the_same_facts(name: str, tmp_path: Path) -> None:
    log = real_log(name)
    packed = _write(tmp_path, "server.log.gz", gzip.compress(log.read_bytes()))
    assert _facts(packed) == truth_facts(log)


def test_gzip_detected_by_magic_not_name(tmp_path: Path) -> None:
    log = real_log("single/022")
    packed = _write(tmp_path, "server.txt", gzip.compress(log.read_bytes()))
    assert _facts(packed) == truth_facts(log)


def test_stdin_dash(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    log = real_log("single/022")

    class FakeStdin:
        buffer = io.BytesIO(log.read_bytes())

    monkeypatch.setattr("sys.stdin", FakeStdin())
    document = parse_json(["-"], capsys)
    assert document["facts"] == truth_facts(log)
    assert document["path"] == "<stdin>"


def test_byte_stream_source() -> None:
    log = real_log("complex/004")
    parsed = parse_log(io.BytesIO(log.read_bytes()), label="upload.log")
    assert parsed.path == "upload.log"
    assert facts_of(parsed) == truth_facts(log)


@pytest.mark.parametrize("name", SHAPES)
def test_crlf_keeps_facts_and_line_numbers(name: str, tmp_path: Path) -> None:
    log = real_log(name)
    crlf = _write(tmp_path, "crlf.log", log.read_bytes().replace(b"\n", b"\r\n"))
    assert _facts(crlf) == truth_facts(log)
    assert _event_lines(crlf) == _event_lines(log)


@pytest.mark.parametrize("name", SHAPES)
def test_ansi_colours_are_removed(name: str, tmp_path: Path) -> None:
    log = real_log(name)
    data = re.sub(rb"(\[\d{4}-\d\d-\d\d [^\]]*\])", b"\x1b[32m\\1\x1b[0m", log.read_bytes())
    data = re.sub(rb"(avail mem=)([\d.]+)", b"\\1\x1b[1;33m\\2\x1b[0m", data)
    assert data != log.read_bytes()
    coloured = _write(tmp_path, "ansi.log", data)
    assert _facts(coloured) == truth_facts(log)
    # an escape's `[` makes a serving-batch line a glued line (`_event_lines`)
    assert _event_lines(coloured, serving=False) == _event_lines(log, serving=False)


JUNK_PREFIXES = {
    "docker": b"2025-02-04 21:29:17 ",
    "kubectl-timestamps": b"2026-09-23T08:24:42.655136271Z ",
    "journald": b"Nov 05 10:12:03 gpu-node-3 sglang[4711]: ",
    "journald-short": b"gpu-node-3 sglang-server[4711]: ",
    "ray": b"(SGLangWorker pid=1107016) ",
}


@pytest.mark.parametrize("junk", list(JUNK_PREFIXES), ids=list(JUNK_PREFIXES))
@pytest.mark.parametrize("name", ["single/022", "single/005", "single/013"])
def test_text_before_the_prefix(name: str, junk: str, tmp_path: Path) -> None:
    log = real_log(name)
    lines = log.read_bytes().split(b"\n")
    data = b"\n".join(JUNK_PREFIXES[junk] + line if line else line for line in lines)
    prefixed = _write(tmp_path, "junk.log", data)
    assert _facts(prefixed) == truth_facts(log)
    serving = b"[" not in JUNK_PREFIXES[junk]
    assert _event_lines(prefixed, serving=serving) == _event_lines(log, serving=serving)


def test_kubectl_header_lines(tmp_path: Path) -> None:
    log = real_log("complex/004")
    header = b'kubectl logs -f sglang-0 -n serving\nDefaulted container "sglang" out of: sglang\n'
    data = header + log.read_bytes()
    assert _facts(_write(tmp_path, "kubectl.log", data)) == truth_facts(log)


@pytest.mark.parametrize("name", SHAPES)
def test_lines_glued_after_a_progress_fragment(name: str, tmp_path: Path) -> None:
    # tqdm writes without a newline; the next SGLang line lands on the same physical line
    log = real_log(name)
    fragment = (
        b"Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.2s/it]"
    )
    data = PREFIX_START.sub(lambda _: fragment, log.read_bytes())
    glued = _write(tmp_path, "glued.log", data)
    assert _facts(glued) == truth_facts(log)
    assert _event_lines(glued, serving=False) == _event_lines(log, serving=False)


@pytest.mark.parametrize("name", ["single/022", "single/005", "single/010", "complex/004"])
def test_lines_glued_after_another_line(name: str, tmp_path: Path) -> None:
    # remove the newline before every second SGLang line: two lines share one physical line
    log = real_log(name)
    lines = log.read_bytes().split(b"\n")
    out: list[bytes] = []
    glue = False
    for line in lines:
        if glue and line.startswith(b"[") and out:
            out[-1] += line
        else:
            out.append(line)
        glue = not glue
    assert len(out) < len(lines)
    glued = _write(tmp_path, "pairs.log", b"\n".join(out))
    assert _facts(glued) == truth_facts(log)


@pytest.mark.parametrize("name", SHAPES)
def test_cr_progress_states_before_each_line(name: str, tmp_path: Path) -> None:
    log = real_log(name)
    bar = b"  0%|          | 0/8 [00:00<?, ?it/s]\r 50%|#####     | 4/8 [00:01<00:01]\r"
    data = PREFIX_START.sub(lambda _: bar, log.read_bytes())
    assert _facts(_write(tmp_path, "cr.log", data)) == truth_facts(log)


def test_cr_only_the_last_state_counts_except_capture_descriptions() -> None:
    text = (
        "Loading shards:  10%|#| 1/10\rLoading shards:  50%|#####| 5/10\r"
        "Loading shards: 100%|##########| 10/10"
    )
    assert [line.text for line in split_physical_line(7, text)] == [
        "Loading shards: 100%|##########| 10/10"
    ]
    capture = (
        "Capturing batches (bs=8 avail_mem=7.19 GB):   0%| | 0/8\r"
        "Capturing batches (bs=8 avail_mem=7.19 GB):  12%|#| 1/8\r"
        "Capturing batches (bs=7 avail_mem=7.03 GB):  25%|##| 2/8\r"
        "[2026-08-01 23:43:41] Capture target verify CUDA graph end. elapsed=3.00 s"
    )
    pieces = split_physical_line(163, capture)
    assert all(piece.line == 163 for piece in pieces)
    assert [p.text[:42] for p in pieces if not p.prefixed] == [
        "Capturing batches (bs=8 avail_mem=7.19 GB)",
        "Capturing batches (bs=8 avail_mem=7.19 GB)",
        "Capturing batches (bs=7 avail_mem=7.03 GB)",
    ]
    assert pieces[-1].prefixed and pieces[-1].text.startswith("Capture target verify")


def test_capture_progress_one_event_per_description() -> None:
    # independent reading: every distinct consecutive tqdm description in the raw bytes
    for name in ["single/005", "single/022", "single/010"]:
        log = real_log(name)
        found = re.findall(
            rb"Capturing (?:batches|num tokens) \((?:bs|num_tokens)=(\d+) avail_mem=([\d.]+) GB\)",
            log.read_bytes(),
        )
        expected: list[tuple[int, str]] = []
        for size, avail in found:
            state = (int(size), f"{avail.decode()} GB")
            if not expected or expected[-1] != state:
                expected.append(state)
        events = parse_log(log).startup.events
        progress = [
            (e.values.get("bs", e.values.get("num_tokens")), e.sizes["avail"].text)
            for e in events
            if e.kind is EventKind.CAPTURE_PROGRESS
        ]
        assert progress == expected, name
        assert len(progress) >= 2


# ---- prefix forms ------------------------------------------------------------------------------

PREFIX_FORMS = {
    "date-tp": ("[2025-10-16 09:06:22 TP0] ", "TP0"),
    "dp-tp-ep": ("[2025-10-16 09:06:22 DP0 TP0 EP0] ", "DP0 TP0 EP0"),
    "pp-tp": ("[2025-10-30 08:58:23 PP0 TP0] ", "PP0 TP0"),
    "millis": ("[2026-01-01 12:00:00.123 TP0] ", "TP0"),
    "time-only-2024": ("[22:30:52 TP0] ", "TP0"),
    "gpu-id-2024": ("[gpu_id=0] ", "gpu_id=0"),
    "no-tag": ("[2026-02-04 11:30:29] ", ""),
}


@pytest.mark.parametrize("form", list(PREFIX_FORMS), ids=list(PREFIX_FORMS))
@pytest.mark.parametrize("level", ["", "INFO model_runner.py:281: "])
def test_every_prefix_form(form: str, level: str, tmp_path: Path) -> None:
    prefix, tag = PREFIX_FORMS[form]
    other = prefix.replace("TP0", "TP1").replace("gpu_id=0", "gpu_id=1")
    body = [
        f"{prefix}{level}Load weight begin. avail mem=78.50 GB",
        f"{other}Load weight begin. avail mem=70.25 GB",
        f"{prefix}{level}Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=63.72 GB, mem usage=14.78 GB.",
        f"{prefix}KV Cache is allocated. #tokens: 444500, K size: 27.13 GB, V size: 27.13 GB",
        f"{prefix}Memory pool end. avail mem=8.34 GB",
        f"{prefix}max_total_num_tokens=444500, max_prefill_tokens=16384, "
        "max_running_requests=2049, context_len=131072",
    ]
    if not tag:
        body.pop(1)  # a single-GPU server has one rank
    facts = _facts(_write(tmp_path, "forms.log", "\n".join(body).encode()))
    assert facts["rank_tag"] == tag
    assert facts["load_begin_avail"] == 78.50
    assert facts["load_end_avail"] == 63.72
    assert facts["load_end_mem_usage"] == 14.78
    assert (facts["kv_tokens"], facts["k_size"], facts["v_size"]) == (444500, 27.13, 27.13)
    assert facts["mempool_end_avail"] == 8.34
    assert facts["max_total_num_tokens"] == 444500
    assert facts["outcome"] == "ready"


def test_rank0_needs_every_tag_at_index_zero(tmp_path: Path) -> None:
    lines = [
        "[2031-02-03 04:05:06 PP3 TP0 EP0] Load weight begin. avail mem=126.35 GB",
        "[2031-02-03 04:05:06 PP0 TP1 EP1] Load weight begin. avail mem=126.28 GB",
        "[2031-02-03 04:05:07 PP0 TP0 EP0] Load weight begin. avail mem=125.50 GB",
    ]
    parsed = parse_log(_write(tmp_path, "pp.log", "\n".join(lines).encode()))
    assert parsed.startup.rank == "PP0 TP0 EP0"
    assert facts_of(parsed)["load_begin_avail"] == 125.50


def test_physical_line_numbers_are_preserved() -> None:
    # every event's text sits on the physical line it claims, for logs with CR bars and glue
    for name in ["single/005", "single/022", "single/010", "complex/001", "complex/009"]:
        log = real_log(name)
        lines = physical_lines(log)
        for event in parse_log(log).startup.events:
            assert event.text[:40] in lines[event.line - 1], (name, event.kind, event.line)


def test_invalid_utf8_is_replaced_and_counted(tmp_path: Path) -> None:
    log = real_log("single/022")
    data = log.read_bytes().replace(b"Load weight end. type=", b"Load weight end. \xff\xfetype=")
    parsed = parse_log(_write(tmp_path, "bad-utf8.log", data))
    assert parsed.invalid_utf8_bytes == 2
    assert facts_of(parsed) == truth_facts(log)
    load_end = next(e for e in parsed.startup.events if e.kind is EventKind.LOAD_END)
    assert "\ufffd\ufffd" in load_end.text


def test_a_3mb_line_does_not_break_parsing(tmp_path: Path) -> None:
    log = real_log("single/022")
    lines = log.read_bytes().split(b"\n")
    huge = b"[2025-09-11 10:24:30 TP0] " + b"avail mem=1.00 GB " * (3 * 2**20 // 18)
    data = b"\n".join([*lines[:100], huge, *lines[100:]])
    parsed = parse_log(_write(tmp_path, "huge.log", data))
    facts = facts_of(parsed)
    assert facts == truth_facts(log)
    listed = [u for u in parsed.startup.unrecognised if u.line == 101]
    assert listed and listed[0].reason.startswith("too long to parse")
