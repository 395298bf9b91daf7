"""A paste a terminal hard-wrapped at its width (memledger.input.rewrap): read as the bare log.
Synthetic lines in the shapes of SGLang's startup lines (v0.4.6 model_executor/model_runner.py:
`Load weight end. ...`, `KV Cache is allocated. ...`), its scheduler summary and a CUDA OOM;
no real log text."""

from __future__ import annotations

import io
import re

import pytest

from memledger.diagnosis import Diagnosis
from memledger.input.error_texts import known_shapes
from memledger.input.parsing import parse_log
from memledger.input.rewrap import (
    MAX_JOINED_BYTES,
    PROSE,
    SHORT_LINES,
    RewrappedStream,
    Wrap,
    rewrapped_lines,
    short_joined,
    wrap_of,
)
from tests.conftest import diagnose_paste

P = "[2026-03-02 08:00:00 TP0] "
LOG = [
    "[2026-03-02 07:59:00] server_args=ServerArgs(model_path='org/model', tp_size=1, "
    "mem_fraction_static=0.88, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "context_length=32768, cuda_graph_max_bs=8, attention_backend='flashinfer')",
    P + "Load weight begin. avail mem=78.50 GB",
    P + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=61.00 GB, "
    "mem usage=15.50 GB.",
    P + "KV Cache is allocated. #tokens: 300000, K size: 18.30 GB, V size: 18.30 GB",
    P + "Memory pool end. avail mem=22.10 GB",
    P + "max_total_num_tokens=300000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=4096, context_len=32768, available_gpu_mem=20.00 GB",
    "Traceback (most recent call last):",
    '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2500, in '
    "run_scheduler_process",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process "
    "has 77.90 GiB memory in use.",
]


def _hard_wrapped(lines: list[str], width: int) -> list[str]:
    """What a terminal `width` columns wide gives on copy: every line in pieces of `width`."""
    return [line[at : at + width] for line in lines for at in range(0, max(len(line), 1), width)]


def _reading(lines: list[str]) -> tuple[object, ...]:
    parsed = parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.txt")
    events = sorted(
        (
            e.kind.value,
            e.sizes,
            {k: v for k, v in e.values.items() if k != "exception_line"},
            e.params,
        )
        for e in parsed.startup.events
    )  # a physical line number (the wrapped paste has more lines) aside
    result: Diagnosis = diagnose_paste(lines)
    return events, result.outcome, result.phase.value, result.verdict


@pytest.mark.parametrize("width", [80, 100, 120])
def test_a_hard_wrapped_log_reads_as_the_bare_one(width: int) -> None:
    wrapped = _hard_wrapped(LOG, width)
    assert len(wrapped) > len(LOG) and max(map(len, wrapped)) == width
    assert wrap_of("\n".join(wrapped).encode() + b"\n") == Wrap(width)
    assert _reading(wrapped) == _reading(LOG)


@pytest.mark.parametrize("quote_first", [True, False])
def test_a_quoted_hard_wrapped_log_reads_as_the_bare_one(quote_first: bool) -> None:
    # quoted, then cut by the terminal (the markers count in the width), or cut and then
    # quoted by a reply (`> ` before every piece: the width is the pieces' own)
    if quote_first:
        wrapped = _hard_wrapped(["> " + line for line in LOG], 80)
    else:
        wrapped = ["> " + piece for piece in _hard_wrapped(LOG, 80)]
    assert wrap_of("\n".join(wrapped).encode() + b"\n") == Wrap(80, quoted=not quote_first)
    assert _reading(wrapped) == _reading(LOG)


def test_a_joined_line_keeps_the_numbers_of_the_lines_after_it() -> None:
    wrapped = _hard_wrapped(LOG, 80)
    parsed = parse_log(io.BytesIO(("\n".join(wrapped) + "\n").encode()), label="paste.txt")
    lines = {e.kind.value: e.line for e in parsed.startup.events}
    # the physical line each record starts on in the wrapped paste
    starts = [n for n, text in enumerate(wrapped, start=1) if text.startswith(P)]
    assert lines["load_begin"] == starts[0] and lines["memory_pool_end"] == starts[3]


@pytest.mark.parametrize(
    "text",
    [
        # every rank printed the same long line: as long as each other, each starts a record
        "\n".join(f"[2026-03-02 08:00:00 TP{rank}] " + "x" * 70 for rank in range(4)),
        # a tool's process tag before each (vLLM's workers under Ray)
        "\n".join(f"(Worker_TP{rank} pid=1{rank}) INFO " + "y" * 70 for rank in range(4)),
        # the same line twice, a bracketed tag first
        "\n".join(["[some_tool.cpp] error result=1 file=x.cpp func=resume line=214 " * 2] * 2),
        # prose word-wrapped by an editor: lengths spread below the width
        "\n".join(
            ["a sentence of words " * 4 + "end.", "a sentence of words " * 4, "more words " * 7]
            + ["a sentence of words " * 4 + "end."]
        ),
        # one long line alone, and lines narrower than any terminal
        "x" * 200,
        "\n".join(["z" * 30] * 5),
    ],
)
def test_what_no_terminal_cut_has_no_width(text: str) -> None:
    assert wrap_of(text.encode() + b"\n") is None


def test_a_line_exactly_as_wide_that_was_not_cut_stays_alone() -> None:
    lines = [b"a" * 10, b"b" * 3, b"c" * 10, b"[2026-03-02 08:00:00 TP0] x", b"", b"d" * 10]
    assert list(rewrapped_lines(iter(lines), Wrap(10))) == [
        b"a" * 10 + b"b" * 3,
        b"",  # the joined piece's line, kept so later lines keep their numbers
        b"c" * 10,
        b"[2026-03-02 08:00:00 TP0] x",
        b"",
        b"d" * 10,
    ]


def test_a_joined_line_stops_growing_at_its_bound() -> None:
    pieces = (b"x" * 1000 for _ in range(3 * MAX_JOINED_BYTES // 1000))
    out = list(rewrapped_lines(pieces, Wrap(1000)))
    assert max(map(len, out)) <= MAX_JOINED_BYTES + 1000
    assert sum(map(len, out)) == 3 * MAX_JOINED_BYTES // 1000 * 1000  # nothing lost


def test_a_line_longer_than_the_bound_is_read_as_it_is_from_there_on() -> None:
    data = b"a" * 80 + b"\n" + b"b" * 3 + b"\n" + b"x" * (2 * MAX_JOINED_BYTES) + b"\n" + b"c" * 80
    data += b"\nd\n"
    stream = RewrappedStream(io.BytesIO(data), Wrap(80))
    read = b"".join(iter(lambda: stream.read(1 << 16), b""))
    cut = data.index(b"x")
    # before it, the cut line joined (and its line kept); from it on, the bytes as they were
    assert read[: read.index(b"x")] == b"a" * 80 + b"b" * 3 + b"\n\n"
    assert read[read.index(b"x") :] == data[cut:]


# short pastes: one error line and a few around it, in the shapes SGLang and the libraries under it
# print (v0.4.6 srt/utils.py get_available_gpu_memory's balance check; FlashInfer's allocator;
# HiCache's host pool check, v0.5.8 mem_cache/memory_pool_host.py; HIP's capture error)
SHORT = {
    "balance check": [
        "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
        "processes. min_per_gpu_memory=60.10, local_gpu_memory=75.20, local_gpu_memory * 0.9="
        "67.68"
    ],
    "workspace": [
        P + "Scheduler hit an exception: Traceback (most recent call last):",
        "RuntimeError: Failed to allocate memory for batch_prefill_tmp_v with size 435814400 and "
        "alignment 16 in AlignedAllocator",
    ],
    "host pool": [
        "ValueError: Not enough host memory available. Requesting 40.00 GB but only have 44.87 GB "
        "free. Please reduce the size of the hierarchical cache."
    ],
    "traceback head": [
        P + "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2500, in run_scheduler_process',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB.",
    ],
    "capture": [
        "RuntimeError: HIP error: operation not permitted on an event last recorded in a capturing "
        "stream"
    ],
}


def _at_a_blank(lines: list[str], width: int) -> bool:
    """Whether a terminal `width` wide cuts one of the lines at a blank."""
    return any(
        " " in line[at - 1 : at + 1] for line in lines for at in range(width, len(line), width)
    )


def _unnumbered(lines: list[str]) -> str:
    """The reading, the physical line numbers aside (a cut before a line moves it down)."""
    return re.sub(r"line \d+", "line N", repr(_reading(lines)))


@pytest.mark.parametrize("name", sorted(SHORT))
def test_a_short_paste_with_one_line_cut_reads_as_the_bare_one(name: str) -> None:
    lines = SHORT[name]
    bare = _unnumbered(lines)
    longest = max(len(line) for line in lines)
    tried = 0
    for width in range(60, longest, 7):
        if _at_a_blank(lines, width):  # a cut at a blank: below
            continue
        cut = _hard_wrapped(lines, width)
        pieces = set().union(*(known_shapes(piece) for piece in cut))
        made = known_shapes("".join(cut)) - pieces  # a text's numbers only the join completes
        if not made and any(_hides_words(a, b) for a, b in zip(cut, cut[1:], strict=False)):
            # the rest holds a reporter's words the first piece does not (`B free. Please
            # reduce the size of the hierarchical cache.`): left as two lines, read as typed
            assert short_joined(("\n".join(cut) + "\n").encode(), known_shapes) is None
            continue
        assert _unnumbered(cut) == bare, (name, width)
        tried += 1
    assert tried


def _hides_words(first: str, rest: str) -> bool:
    """Whether joining `rest` to `first` would hide a reporter's words of its own."""
    return any(n.startswith(PROSE) for n in known_shapes(rest) - known_shapes(first))


def test_a_cut_at_a_blank_is_joined_where_the_join_makes_a_known_shape() -> None:
    (line,) = SHORT["capture"]
    at = line.index(" stream")  # the crash cause's text is whole only when joined
    assert known_shapes(line) - known_shapes(line[:at]) - known_shapes(line[at:])
    assert _reading([line[:at], line[at:]]) == _reading([line])
    # a blank cut with no shape made by the join: two lines as well as one, left as they are
    text = "RuntimeError: HIP error: operation not permitted on an event last recorded\n in it\n"
    assert short_joined(text.encode(), known_shapes) is None


@pytest.mark.parametrize(
    "lines",
    [
        # a reporter's sentence as long as a log line, then the error: two lines
        [
            "When I start the server with tp 2 on two cards it always fails during the warmup",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB.",
        ],
        # prose cut at a word's end, its rest lower case: no log line, no known shape made
        [
            "the server starts fine and serves a few requests but after some time it crashes",
            "with an out of memory error during a long prefill",
        ],
        # an error text, then a reporter's sentence that starts lower case: its words are read
        # only on a line of its own
        [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.78 GiB. Of the "
            "allocated memory 70.1 GiB is allocated by PyTorch",
            "during serving we get oom when mem-fraction-static is 0.85",
        ],
        # a retraction, then a line of SGLang's page allocator: a shape of its own
        [
            "[2025-05-01 10:00:01] Decode out of memory happened. #retracted_reqs: 1, "
            "#new_token_ratio: 0.7000 -> 0.9000",
            "alloc_paged_token_slots_decode: num_new_pages=4 but free_pages has 3",
        ],
        # an exception whose next line is a frame (indented): a record of its own
        [
            "RuntimeError: HIP error: operation not permitted on an event last recorded in a",
            '  File "/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in capture',
        ],
    ],
)
def test_two_lines_that_were_not_cut_stay_two(lines: list[str]) -> None:
    text = ("\n".join(lines) + "\n").encode()
    assert short_joined(text, known_shapes) is None


def test_a_short_paste_is_joined_only_when_short() -> None:
    lines = _hard_wrapped(SHORT["workspace"], 80)
    assert len(lines) == 4  # both lines cut in two: no width told (not one line's pieces)
    text = "\n".join(lines) + "\n"
    joined = short_joined(text.encode(), known_shapes)
    first, second = SHORT["workspace"]
    assert joined == f"{first}\n\n{second}\n\n".encode()  # each piece leaves its line empty
    padding = "".join(f"{P}Load weight begin. avail mem={i}.00 GB\n" for i in range(SHORT_LINES))
    assert short_joined((padding + text).encode(), known_shapes) is None


# A console's cut at 120 where the log's own lines are near that long: a traceback's frames
# (`  File "...", line N, in NAME`) are 100-120 wide after a long install path, so lines a little
# shorter than the width are many; the cut lines still go on at column 0 as a word does, where a
# frame's code line is indented (Python's traceback module: two blanks before `File`, four
# before the code)
_SITE = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
FRAMES = (
    [P + "Scheduler hit an exception: Traceback (most recent call last):"]
    + [
        line
        for name, n, call in [
            ("managers/scheduler.py", 3563, "run_scheduler_process"),
            ("managers/tp_worker.py", 261, "__init__"),
            ("model_executor/model_runner.py", 412, "initialize"),
            ("model_executor/model_runner.py", 887, "load_model"),
            ("model_loader/loader.py", 598, "load_weights_and_postprocess"),
            ("layers/quantization/fp8.py", 1024, "process_weights_after_loading"),
            ("layers/moe/fused_moe_triton/layer.py", 1202, "_pack_per_expert_weights"),
        ]
        for line in (f'  File "{_SITE}/{name}", line {n}, in {call}', f"    self.{call}()")
    ]
    + ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB."]
)


def test_a_cut_among_lines_near_the_width_is_told_by_its_pieces() -> None:
    wrapped = _hard_wrapped(FRAMES, 120)
    lengths = [len(line) for line in wrapped]
    near = sum(1 for n in lengths if 112 <= n < 120)
    assert near >= lengths.count(120) >= 2  # the spread test alone would call it a log's own
    assert wrap_of(("\r\n".join(wrapped) + "\r\n").encode()) == Wrap(120)
    assert _unnumbered(wrapped) == _unnumbered(FRAMES)


def test_prose_an_editor_wrapped_has_no_width() -> None:
    # lines end at a word, many just under the longest, each followed by a lower-case line
    words = "the server starts and then fails with an error in the warmup of the graphs again "
    lines = [words[i : i + 70].strip() for i in range(0, 8 * 70, 70)] * 2
    text = "\n".join((words * 2)[:78] if i in (2, 9) else line for i, line in enumerate(lines))
    assert wrap_of(text.encode() + b"\n") is None


def test_a_piece_that_starts_like_a_numbered_line_goes_on() -> None:
    # a model name cut before `28-w8a8`: `N-` is a `grep -n` context line's column only where
    # the line before has one too (every line of such a paste does)
    args = (
        "[2026-03-02 07:59:00] server_args=ServerArgs(model_path='/models/org/Model-R1-05"
        "28-w8a8', tp_size=16, mem_fraction_static=0.81, chunked_prefill_size=8192, "
        "context_length=32768, cuda_graph_max_bs=8, attention_backend='ascend')"
    )
    bare = [args, *LOG[1:4]]
    wrapped = _hard_wrapped(bare, args.index("28-w8a8"))
    assert any(line.startswith("28-w8a8") for line in wrapped)
    assert _reading(wrapped)[:3] == _reading(bare)[:3]  # the events, outcome and phase
    numbered = [f"{i + 1}-{line}" for i, line in enumerate(["x" * 40, "y" * 40])]
    assert Wrap(42).continues(numbered[0].encode(), numbered[1].encode()) is False


LAUNCH = (
    "python3 -m sglang.launch_server --tp 8 --torch-compile-max-bs 8 --mem-fraction-static 0.7 "
    "--cuda-graph-max-bs 16 --model-path org/model-70b --enable-torch-compile"
)


@pytest.mark.parametrize("at", ["able-torch-compile", "-70b --en", "--enable-torch", "del-70b"])
def test_a_launch_command_cut_in_a_flag_or_a_value_reads_whole(at: str) -> None:
    cut = LAUNCH.index(at)
    error = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.10 GiB."
    lines = [LAUNCH[:cut], LAUNCH[cut:], error]
    assert short_joined(("\n".join(lines) + "\n").encode(), known_shapes) is not None
    assert _unnumbered(lines) == _unnumbered([LAUNCH, error])


def test_a_command_after_a_launch_command_stays_its_own() -> None:
    lines = [LAUNCH, "python3 bench_serving.py --num-prompts 8"]
    assert short_joined(("\n".join(lines) + "\n").encode(), known_shapes) is None
    # after a flag's value, a reporter's sentence in lower case: its second word is no flag
    lines = [LAUNCH + " --hicache-size 40", "with hicache=40GB and tp 4 the host RAM fills up"]
    assert short_joined(("\n".join(lines) + "\n").encode(), known_shapes) is None
    # after a flag's value, a line of its own starts with a capital (a log's message)
    lines = [LAUNCH + " --context-length 16000", "Prefill out of memory. Try to lower your batch."]
    assert short_joined(("\n".join(lines) + "\n").encode(), known_shapes) is None
    continued = [LAUNCH + " \\", "--cuda-graph-max-bs 16"]
    assert short_joined(("\n".join(continued) + "\n").encode(), known_shapes) is None
