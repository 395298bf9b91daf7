"""A log printed as one escaped string (memledger.input.escaped), on synthetic lines in SGLang
v0.4's shapes (`Load weight end.` model_runner.py, `KV Cache is allocated.` memory_pool.py) and a
torch OOM text: read as the bare log, whatever literal carried it; every other line as it is."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest

from memledger.input.escaped import MAX_LINE_BYTES, UnescapedStream, unescaped, unescaped_line
from tests.conftest import diagnose_paste

P = "[2026-03-02 08:00:00 TP0] "
LOG = [
    P + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=61.00 GB, "
    "mem usage=15.50 GB.",
    P + "KV Cache is allocated. #tokens: 300000, KV size: 36.60 GB",
    P + "Capture cuda graph begin. This can take up to several minutes. avail mem=20.10 GB",
    "Traceback (most recent call last):",
    '  File "/sgl/srt/model_executor/cuda_graph_runner.py", line 310, in capture',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.20 GiB is free. Process 7 has 'x' and \"y\" in use.",
]
TEXT = "\n".join(LOG) + "\n"

SHAPES: dict[str, Callable[[str], str]] = {
    "repr of a str": repr,
    "repr of bytes": lambda text: repr(text.encode()),
    "an exception's repr": lambda text: "RuntimeError(" + repr(text) + ")",
    "after a few words": lambda text: "stderr was: " + repr(text) + ",",
    "a JSON string": json.dumps,
    "a str repr with ANSI colours": lambda text: repr("\x1b[32m" + text.replace("\n", "\x1b[0m\n")),
    "a line of a log, not a literal": lambda text: "RayTaskError: " + text.replace("\n", "\\n"),
}


def _reading(text: str) -> tuple[object, ...]:
    result = diagnose_paste(text)
    knobs = [(s.knob, s.direction, s.value) for s in result.suggestions]
    return (result.outcome, result.phase.value, result.verdict, knobs)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_a_log_in_one_escaped_string_reads_as_the_log(name: str) -> None:
    shaped = SHAPES[name](TEXT)
    assert "\n" not in shaped.rstrip("\n")  # one physical line
    assert _reading(shaped + "\n") == _reading(TEXT)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_string_among_other_lines_and_cut_by_reads(name: str) -> None:
    lines = "we ran it twice; the second run printed\n" + SHAPES[name](TEXT) + "\nany ideas?\n"
    whole = unescaped(lines.encode())
    kv = LOG[1].encode()
    assert any(kv in line and line.count(b"[2026") == 1 for line in whole.split(b"\n"))
    for size in (7, 64, 4096):
        assert _read_all(UnescapedStream(io.BytesIO(lines.encode())), size) == whole


def _read_all(stream: UnescapedStream, size: int) -> bytes:
    pieces = []
    while piece := stream.read(size):
        pieces.append(piece)
    return b"".join(pieces)


@pytest.mark.parametrize(
    "line",
    [
        P + "server_args=ServerArgs(model_path='m', chat_template='{{ a }}\\n{{ b }}\\n')",
        P + "Prompt: 'hello\\nworld\\nagain'",  # a message's own escapes, no log inside
        "C:\\new\\net\\nodes",
        "no escape at all",
        "'a literal with no line end'",
    ],
)
def test_a_line_that_is_no_escaped_log_stays_as_it_is(line: str) -> None:
    assert unescaped_line(line.encode()) is None
    assert unescaped((line + "\n").encode()) == (line + "\n").encode()


def test_an_escaped_backslash_before_n_is_no_line_end() -> None:
    assert unescaped_line(b"'C:\\\\new\\ndir\\n'") == b"C:\\new\ndir\n"


def test_a_line_longer_than_the_bound_is_read_as_it_is() -> None:
    line = b"'" + b"x\\n" * (MAX_LINE_BYTES // 3 + 1) + b"'"
    assert len(line) > MAX_LINE_BYTES and unescaped_line(line) is None
    assert _read_all(UnescapedStream(io.BytesIO(line + b"\n")), 1 << 16) == line + b"\n"


@pytest.mark.parametrize("chunk", [16, 17, 18, 19, 64])
def test_decoding_in_chunks_cuts_no_escape(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    import memledger.input.escaped as escaped

    text = (TEXT + "\\\\ \x1b[0m tab\there \u00e9 ") * 3
    literal = json.dumps(text).encode()[1:-1] + repr(text).encode()
    whole = escaped._decoded_text(literal)
    monkeypatch.setattr(escaped, "DECODE_CHUNK", chunk)
    assert escaped._decoded_text(literal) == whole
    assert whole.startswith(TEXT.encode())
