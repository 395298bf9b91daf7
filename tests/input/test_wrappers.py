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
from memledger.input.logical import logical_lines_in_full, strip_paste_columns
from memledger.input.parsing import parse_log
from memledger.input.reader import PlainStream
from memledger.input.scan import LineFilter, is_serving
from memledger.input.wrappers import (
    COLUMN,
    ENCLOSURE,
    ENCLOSURES,
    ENCODINGS,
    LOOKALIKES,
    RECORDS,
    SUFFIXES,
    WRAPPERS,
    Encoding,
    Lookalike,
    Record,
    encoding_of,
    plain_bytes,
    unenclosed,
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
_INNER = "[2026-01-03 10:42:11 TP0] KV Cache is allocated. #tokens: 1024"
"""The line an ENCLOSURES row's example holds."""


def _in_record(row: Record) -> Callable[[str], str]:
    """A line as a RECORDS row's tool writes it (its example's line replaced, JSON-escaped)."""
    return lambda line: row.example.replace("[TP0] x", json.dumps(line)[1:-1])


WRAPPED: dict[str, Callable[[str], str]] = {
    **{w.name: (lambda line, w=w: w.example + line) for w in WRAPPERS},  # type: ignore[misc]
    "ansi colours": lambda line: "\x1b[0;32m" + line + "\x1b[0m",
    "coloured compose column": lambda line: "\x1b[36msglang-1  |\x1b[0m " + line,
    "kubectl --prefix --timestamps": lambda line: "[pod/s-0/s] 2026-03-02T08:00:00.5Z " + line,
    "quote of a compose log": lambda line: "> sglang-1  | " + line,
    "crlf": lambda line: line + "\r",
    "crlf written again in text mode": lambda line: line + "\r\r",
    "Ray deduplicated": lambda line: "(WorkerDict pid=7) " + line + SUFFIXES[0].example,
    **{r.name: _in_record(r) for r in RECORDS},
    "Ray Serve replica": lambda line: "(ServeReplica:default:LLMServer pid=7) " + line,
    "a process tag with a rank": lambda line: "(SGLangWorker rank=1 pid=7) " + line,
    **{w.name: (lambda line, w=w: w.example.replace(_INNER, line)) for w in ENCLOSURES},  # type: ignore[misc]
    "inline code on a bullet": lambda line: "- `" + line + "`",
    "inline code on a quoted bullet": lambda line: "> * `" + line + "` ",
    "GitHub Actions raw log": lambda line: "2026-03-02T08:00:00.1234567Z ##[error]" + line,
    "chat time before a compose column": lambda line: "[8:00 PM] sglang-1  | " + line,
    "timestamp column, no level": lambda line: "2026-03-02 08:00:00 | " + line,
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


@pytest.mark.parametrize("row", RECORDS, ids=lambda row: row.name)
def test_a_record_gives_its_line_and_anything_else_stays_as_is(row: Record) -> None:
    assert unwrapped_record(row.example) == "[TP0] x", row.name
    assert unwrapped_text(row.example) == "[TP0] x", row.name
    assert json.loads(row.example)[row.key] in ("[TP0] x", "[TP0] x\n") and row.source
    key = json.dumps(row.key)
    deep = "{" + key + ':"x","a":' + "[" * 100_000 + "]" * 100_000 + "}"
    for text in ("{" + key + ':"x"', "{" + key + ':"x", "y": 1, }', "{" + key + ": 1}", deep):
        assert unwrapped_record(text) == text


def test_a_record_with_two_keys_gives_the_first_row_s() -> None:
    first, second = RECORDS[0].key, RECORDS[1].key
    assert unwrapped_record(json.dumps({second: "b", first: "a"})) == "a"
    assert unwrapped_record(json.dumps({second: "b", first: 1})) == "b"
    assert unwrapped_record(json.dumps({"other": "b"})) == '{"other": "b"}'


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


# A traceback as Python prints it (two-space frames, four-space source lines), raised where
# SGLang's model_runner.py checks each rank's free memory at distributed init (the IMBALANCE
# line of memledger.sglang.examples); paths and numbers are made up.
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2500, in '
    "run_scheduler_process",
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    '  File "/opt/sglang/python/sglang/srt/model_executor/model_runner.py", line 300, in __init__',
    "    min_per_gpu_memory = self.init_torch_distributed()",
    '  File "/opt/sglang/python/sglang/srt/model_executor/model_runner.py", line 700, in '
    "init_torch_distributed",
    "    raise ValueError(",
    "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
    "processes. min_per_gpu_memory=72.50, local_gpu_memory=79.10, local_gpu_memory * 0.9=71.19",
]
BULLETS = {
    "dash bullet": "- ",
    "star bullet": "* ",
    "plus bullet": "+ ",
    "rich-text bullet": "• ",
    "nested bullet": "  - ",
    "ordered list item": "12. ",
    "ordered list item with a parenthesis": "3) ",
    "Ray task prefix": "(pid=4242) ",
    "Ray task prefix with ip": "(pid=4242, ip=10.0.0.2) ",
}


def test_the_bare_traceback_reads_as_a_distributed_init_crash() -> None:
    result = _diagnose(TRACEBACK)
    assert (result.outcome, result.phase.value) == ("crash", "dist_init")
    assert "memory capacity is unbalanced" in result.verdict


@pytest.mark.parametrize("name", sorted({**WRAPPED, **BULLETS}))
def test_a_traceback_with_a_column_before_every_line_reads_as_the_bare_one(name: str) -> None:
    wrap = WRAPPED.get(name) or (lambda line: BULLETS[name] + line)
    wrapped = [wrap(line) for line in TRACEBACK]
    assert _reading(_diagnose(wrapped)) == _reading(_diagnose(TRACEBACK))


@pytest.mark.parametrize("name", sorted(BULLETS))
def test_a_bullet_before_a_bare_line_keeps_the_line_s_indentation(name: str) -> None:
    line = BULLETS[name] + TRACEBACK[1]
    assert strip_paste_columns(line) == TRACEBACK[1]
    assert unwrapped_bytes(line.encode()) == TRACEBACK[1].encode()


@pytest.mark.parametrize(
    "line",
    [
        "- sglang - INFO - Load weight end.",  # Python logging's name and level
        "- WARNING - Load weight end.",
        "-1: Load weight end.",  # no blank after the mark
        "--tp-size 2",
        "*** Load weight end.",
    ],
)
def test_what_is_no_bullet_keeps_its_mark(line: str) -> None:
    assert not re.match(_ROW["markdown list bullet"].pattern, line)


def test_every_enclosure_row_gives_its_example_s_line() -> None:
    for row in ENCLOSURES:
        assert row.kind == ENCLOSURE and row.source, row.name
        assert unenclosed(row.example) == _INNER, row.name
        assert strip_paste_columns("- " + row.example) == _INNER, row.name
        assert unwrapped_bytes(("- " + row.example).encode()) == _INNER.encode(), row.name
        assert unwrapped_text("- " + row.example) == _INNER, row.name


@pytest.mark.parametrize("fence", ["``", "```"])
def test_a_line_holding_a_backtick_is_read_out_of_its_longer_fence(fence: str) -> None:
    # CommonMark 0.31 §6.1: a longer fence, and a space each side that the span drops
    line = "[2026-01-03 10:42:11 TP0] server_args: tokenizer=`auto` x"
    quoted = "- " + fence + " " + line + " " + fence
    assert strip_paste_columns(quoted) == line
    assert unwrapped_bytes(quoted.encode()) == line.encode()
    assert strip_paste_columns(fence + "  two  " + fence) == " two "  # one space each side


@pytest.mark.parametrize(
    "line",
    [
        "set `--mem-fraction-static` to 0.8 and it runs",  # a sentence quoting code
        "`--tp 2` -> OOM",
        "`a` and `b`",  # two spans: no one encloses the line
        "``a`` and ``b``",
        "`` a ` b `` c `` d ``",
        "``",
        "[2026-01-03 10:42:11 TP0] uses `triton` for attention",
    ],
)
def test_a_line_not_wholly_in_code_keeps_its_backticks(line: str) -> None:
    assert strip_paste_columns(line) == line
    assert unwrapped_text(line) == line


@pytest.mark.parametrize(
    "line", ["[10:42:11] Load weight end.", "[22:30:52 TP0] Load weight end.", "[10:42:11 x] y"]
)
def test_a_time_with_seconds_is_an_sglang_prefix_not_a_chat_stamp(line: str) -> None:
    assert strip_paste_columns(line) == line
    (logical,) = logical_lines_in_full(1, line)
    assert logical.prefixed or line.endswith("y")


@pytest.mark.parametrize("line", ["3.5 GB free", "12.75 GiB KV cache is needed", "2025-06-01 x"])
def test_what_is_no_list_item_keeps_its_number(line: str) -> None:
    assert not re.match(_ROW["markdown ordered list item"].pattern, line)


@pytest.mark.parametrize("row", ENCODINGS, ids=[row.name for row in ENCODINGS])
def test_a_log_saved_in_another_encoding_reads_as_the_utf8_one(row: Encoding) -> None:
    text = "\r\n".join(LOOKALIKE_LOG) + "\r\n"  # as Windows wrote it
    codec = "utf-16-le" if row.bom == b"\xff\xfe" else "utf-16-be"
    data = row.bom + text.encode(codec)
    assert encoding_of(data) is row and row.source
    parsed = parse_log(io.BytesIO(data), label="paste.txt")
    plain = parse_log(io.BytesIO(text.encode()), label="paste.txt")
    assert [(e.kind, e.line, e.values, e.params) for e in parsed.startup.events] == [
        (e.kind, e.line, e.values, e.params) for e in plain.startup.events
    ]
    assert (parsed.startup.outcome, plain.startup.outcome) == ("oom", "oom")


# Every character a LOOKALIKES row replaces, in synthetic lines: a server_args repr (quotes,
# parentheses, commas), a traceback frame (double quotes, `<module>`), an OOM text (`: `), and a
# shell line with `&`.
LOOKALIKE_LOG = [
    "[2026-03-02 07:59:00] server_args=ServerArgs(model_path='org/m', served_model_name='R&D', "
    "tp_size=1, mem_fraction_static=0.88, chunked_prefill_size=8192)",
    *SERVING_OOM[:4],
    "Traceback (most recent call last):",
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 10, in <module>',
    OOM,
    "$ ulimit -n 65535 && python -m sglang.launch_server --model-path org/m",
]


def _disguised(text: str, row: Lookalike) -> str:
    """The text with the row's character where the log had its plain one (or, for a character
    that stands for nothing, after every blank and at the start)."""
    if row.plain:
        return text.replace(row.plain, row.text)
    return row.text + text.replace(" ", " " + row.text)


def test_every_lookalike_row_reads_as_its_plain_text_and_has_a_source() -> None:
    for row in LOOKALIKES:
        assert row.text != row.plain and row.source, row.name
        assert plain_bytes(("a" + row.text + "b").encode()) == ("a" + row.plain + "b").encode()
    # one pass: an escaped escape is read once
    assert plain_bytes(b"&amp;lt;") == b"&lt;"
    assert plain_bytes(b"no lookalike: a < b & c") == b"no lookalike: a < b & c"
    # a look-alike's first byte in other characters (a progress bar's `█`, `…`, `→`, an `&` of
    # prose) is no look-alike; beside one, the look-alike is still read
    bar = "Loading 50% |█████     | 1/2 [00:01<00:01] … a → b & c\n".encode() * 1000
    assert plain_bytes(bar) is bar
    for row in LOOKALIKES:
        mixed = bar + ("x" + row.text + "y").encode()
        assert plain_bytes(mixed) == bar + ("x" + row.plain + "y").encode(), row.name


@pytest.mark.parametrize("name", [row.name for row in LOOKALIKES])
def test_a_log_with_a_lookalike_reads_as_the_plain_one(name: str) -> None:
    row = next(r for r in LOOKALIKES if r.name == name)
    disguised = [_disguised(line, row) for line in LOOKALIKE_LOG]
    assert disguised != LOOKALIKE_LOG  # the row's character is in the log
    plain = _reading(_diagnose(LOOKALIKE_LOG))
    assert plain[:2] == ("oom", "serving")
    assert _reading(_diagnose(disguised)) == plain
    assert _events(disguised) == _events(LOOKALIKE_LOG)


def _events(lines: list[str]) -> list[tuple[object, ...]]:
    """What parse reads of each line: kind, place, sizes, values, settings and text."""
    parsed = parse_log(io.BytesIO("\n".join(lines).encode() + b"\n"), label="paste.txt")
    return [
        (e.kind, e.line, e.sizes, e.values, e.params, e.text)
        for e in sorted(parsed.startup.events, key=lambda e: (e.line, e.kind.value))
    ]


def test_a_lookalike_cut_by_a_read_s_end_is_read_whole() -> None:
    text = "\u00a0".join(["Load weight end.", "avail mem=61.00 GB"]) + " &amp; \u2019\uff1a\n"
    data = text.encode() * 50

    class Trickle:
        """A stream that gives a few bytes a read (a pipe fed slowly)."""

        def __init__(self, data: bytes) -> None:
            self.data = data

        def read(self, size: int = -1, /) -> bytes:
            piece, self.data = self.data[:3], self.data[3:]
            return piece

    stream = PlainStream(Trickle(data))
    read = b"".join(iter(lambda: stream.read(1 << 20), b""))
    assert read == plain_bytes(data) and b"\xc2" not in read and b"&" in read


def test_a_sentence_with_no_break_spaces_is_read_as_one_with_spaces() -> None:
    # a reporter's prose copied from a rendered page: every blank a no-break space
    prose = "after the model loaded I got " + OOM.replace("torch.", "") + " during a long prefill"
    plain = _diagnose([prose])
    assert plain.outcome == "oom"
    assert _reading(_diagnose([prose.replace(" ", "\u00a0")])) == _reading(plain)


def test_the_look_alikes_of_a_saved_ledger_s_json_are_its_own(tmp_path: Path) -> None:
    # JSON escapes its own characters: a brace-led input is read as its bytes are
    from memledger.input.reader import open_log

    path = tmp_path / "x.json"
    path.write_bytes(b'{"text": "&quot;"}\n')
    with open_log(path) as log:
        assert log.head == b'{"text": "&quot;"}\n'
    path.write_bytes(b"x &quot;\n")
    with open_log(path) as log:
        assert log.head == b'x "\n'
