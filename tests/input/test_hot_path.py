"""The per-line shortcuts of the parse give exactly what the full readings give.

A memory line a second for weeks is millions of lines, so the hot path skips work a line's text
shows to be useless: the readers before the grammar for a line holding none of their words
(memledger.input.quiet, error_texts.no_error_words), the paste columns and CR split for a line
that starts with its prefix (logical.iter_logical_lines), the memory-looking regex where a word
decides (sglang.lines.looks_like_memory), the fold regex where no digit follows a letter
(shapecache.fold). Each shortcut is compared here with the full reading: function by function on
generated text, and as a whole on every real log, sample and memory-line stress input, parsed
with every shortcut on and with every one off.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memledger.input.parsing as parsing
from memledger.input import error_texts, logical, reader, shapecache, wrapped
from memledger.input.error_texts import ERROR_WORDS, ErrorTextReader, no_error_words
from memledger.input.logical import PREFIX_RE, iter_logical_lines, logical_lines_in_full
from memledger.input.outcome import OUTCOME_WORDS, outcome_kind
from memledger.input.quiet import READER_WORDS, QuietLines
from memledger.record import to_dict
from memledger.sglang.lines import MEMORY_LOOKING_RE, PLATFORM_MARKERS, looks_like_memory
from memledger.sglang.lines import platform_marker as marker_of
from tests.conftest import SAMPLES, real_log_paths

# pieces of lines: every reader's words (whole, cut, in other cases), numbers, prefixes, paste
# columns, CRs, ANSI codes and characters whose case folds beyond ASCII
_WORDS = [*READER_WORDS, "out of memory", "Tried to allocate 2.00 GiB", 'File "x.py", line 3, in f']
_PIECES = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from(_WORDS).map(str.upper),
    st.sampled_from(_WORDS).map(lambda w: w[: len(w) // 2]),
    st.sampled_from(_WORDS).map(lambda w: w[len(w) // 2 :]),
    st.sampled_from(
        [
            "[2026-11-05 10:12:07 TP0] ",
            "[2026-11-05 10:12:07 DP1 TP3 EP3] ",
            "[12-27 11:24:23] ",
            "[TP0] ",
            "[gpu_id=1]",
            "[pod/sgl-0/main] ",
            "> ",
            "sglang-1  | ",
            "2026-11-05T10:12:07.123Z ",
            "INFO model_runner.py:12: ",
            "\r",
            "\x1b[32m",
            ": ",
            "KV cache pool: used 25.51%, ",
            "avail mem=38.14 GB",
            "Memory pool end.",
            "Capturing batches (bs=8 avail_mem=7.19 GB)",
            "bf16",
            "TP10",
            "_9",
            "ſize",
            "\u212a",
            "İ",
            "\u0663 GB",
            "███",
            "\u00a0",
            "\u3000",
            "显存不足",
        ]
    ),
    st.integers(0, 10**6).map(str),
    st.text(alphabet="aB_ 0123456789.:=,[]()%-\"'", max_size=12),
)
# one text of each shape a reader reads (the readers' module docstrings list them)
READ_TEXTS = [
    'File "/sglang/srt/model_executor/model_runner.py", line 301, in init',
    '  File "/x/torch/nn/modules/module.py", line 1, in _call_impl',
    "Traceback (most recent call last):",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "KeyboardInterrupt",
    "SystemExit: 1",
    "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 812.00 MiB is free.",
    "NPU out of memory. Tried to allocate 52.00 MiB (NPU 0; 60.96 GiB total capacity;",
    "Not enough memory. Please try to increase --mem-fraction-static. Current value: 0.88",
    "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8.",
    "max_total_tokens=4096 is larger than the profiled value -12. Use the profiled value instead.",
    "Prefill out of memory. Try to lower your batch size.",
    "Try to allocate 148 tokens.",
    "Avaliable tokens: 2048",
    "Available swa tokens: 12",
    "alloc_req_slots runs out of memory. Please set a smaller number",
    "KV cache pool is full. Retract requests. #active_requests: 3",
    "Input length (9000 tokens) exceeds the maximum allowed length (8000 tokens).",
    "Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)",
    "Bus error (core dumped)",
    "[Errno 12] Cannot allocate memory",
    "std::bad_alloc",
    "Killed",
    "Exit code: -9",
    "Child process terminated with -9",
    "The server is fired up and ready to roll!",
    "Scheduler hit an exception: boom",
    "Received sigquit from a child process. It usually means the child failed.",
    "Initialization failed. warmup error",
    "OOM",
    *(marker.text for marker in PLATFORM_MARKERS),
]
_TEXTS = st.tuples(
    st.sampled_from(["", "  ", *READ_TEXTS]), st.lists(_PIECES, max_size=8).map("".join)
).map("".join)


def _line_texts() -> list[str]:
    """Every logical line's text of every real log and sample, as the readers see it."""
    texts: list[str] = []
    for path in [*real_log_paths(), *sorted(SAMPLES.glob("*.log"))]:
        for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
            line = raw.decode("utf-8", "replace")
            texts.extend(logical.text for logical in logical_lines_in_full(number, line))
    return texts


def _reads_nothing(text: str, rank: str, prefixed: bool) -> bool:
    """A fresh error-text reader's full reading of the line gives nothing and opens nothing."""
    reader = ErrorTextReader()
    if error_texts._looks_cut(text):
        return False
    return reader._read(1, text, rank, prefixed) == [] and reader._block is None


@settings(max_examples=250, deadline=None)
@given(text=_TEXTS, prefixed=st.booleans())
def test_a_quiet_line_is_read_by_no_reader(text: str, prefixed: bool) -> None:
    if QuietLines()(text, prefixed):
        assert outcome_kind(text) is None
        assert marker_of(text) is None
        assert no_error_words(text, prefixed)
    if no_error_words(text, prefixed):
        assert _reads_nothing(text, "TP0", prefixed)
    if no_error_words(text):
        assert no_error_words(text, True)  # a prefixed line is read for fewer words


def test_every_text_a_reader_reads_is_doubtful() -> None:
    quiet_lines = QuietLines()
    read = [
        t for t in READ_TEXTS if outcome_kind(t) or marker_of(t) or not _reads_nothing(t, "", False)
    ]
    assert read == READ_TEXTS  # each is read by some reader (the test's premise)
    for text in READ_TEXTS:
        assert not quiet_lines(text), text
        assert not quiet_lines(f"[2026-11-05 10:12:07 TP0] {text} 12"), text
        if not _reads_nothing(text, "", False):
            assert not no_error_words(text), text


def test_on_every_real_line_quiet_means_read_by_none() -> None:
    quiet_lines = QuietLines()
    texts = _line_texts()
    assert len(texts) > 10000
    doubtful = 0
    quiet_only_prefixed = 0
    for text in texts:
        if quiet_lines(text):
            assert outcome_kind(text) is None and marker_of(text) is None, text
            assert no_error_words(text), text
        else:
            doubtful += 1
        if quiet_lines(text, True):
            assert outcome_kind(text) is None and marker_of(text) is None, text
            assert no_error_words(text, True), text
            quiet_only_prefixed += not quiet_lines(text)
        if no_error_words(text):
            assert _reads_nothing(text, "TP0", True) and _reads_nothing(text, "", False), text
        if no_error_words(text, True):
            assert _reads_nothing(text, "TP0", True), text
    assert 0 < doubtful < len(texts)  # both verdicts occur in the corpus
    assert quiet_only_prefixed > 0  # SGLang's own lines holding a prose row's word


def test_every_reader_word_makes_a_line_doubtful() -> None:
    quiet_lines = QuietLines()
    for word in (*OUTCOME_WORDS, *ERROR_WORDS, *(m.text for m in PLATFORM_MARKERS)):
        for text in (word, f"x {word.upper()} 12", f"[aiter] {word}"):
            assert not quiet_lines(text), text
    assert quiet_lines("KV cache pool: used 25.51%, avail mem=38.14 GB")
    assert quiet_lines("Memory pool end. avail mem=38.14 GB")
    assert not quiet_lines("KV cache pool: used 25.51%, avail mem=38.14 GB \u212a")  # not ASCII


def test_a_prose_rows_word_makes_only_a_bare_line_doubtful() -> None:
    # SGLang's own lines print words of the reporter's prose rows (`#swa token`, `kept`,
    # `Mamba Cache`): those rows read bare lines only, so a prefixed line holding one is quiet
    quiet_lines = QuietLines()
    for text in (
        "Decode batch. #running-req: 3, #full token: 900, #swa token: 450, cuda graph: True",
        "requant-then-shard: 276 weights kept full through post-load",
        "Mamba Cache is allocated. max_mamba_cache_size: 32, conv_state size: 2.35GB",
    ):
        assert quiet_lines(text, True) and no_error_words(text, True), text
        assert not quiet_lines(text) and not no_error_words(text), text
    # a prose row's word in a sentence is read on a bare line
    said = "the SWA pool runs out after a few requests"
    assert not quiet_lines(said) and not _reads_nothing(said, "", False)
    # a prefixed line with a word of a row read on SGLang's own lines stays doubtful
    assert not quiet_lines("The chunked prefill size is adjusted to 4096 to fit", True)


@pytest.mark.parametrize(
    "text",
    [
        # the framework a line names is read on any line (a warning's path under a prefix)
        "(WorkerDict pid=7) /opt/verl/sglang/srt/utils.py:888: UserWarning: not writable",
        "actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
    ],
)
def test_a_framework_named_on_a_prefixed_line_is_read(text: str) -> None:
    assert not QuietLines()(text, True) and not no_error_words(text, True)
    read = ErrorTextReader().feed(1, text, "TP0", True)
    assert any("framework" in r.values for r in read), read


def test_no_error_words_then_the_reader_keeps_only_its_opener() -> None:
    reader = ErrorTextReader()
    assert reader.feed(1, "Exception in run_scheduler_process:", "TP0", True) == []
    assert reader.feed(2, "Scheduler loop:", "TP0", True) == []  # no error word, an opener
    assert reader._opener == (2, "TP0")
    # the bare `Traceback` right after the opener is that rank's
    assert reader.feed(3, "Traceback (most recent call last):", "", False) == []
    assert reader._block is not None and reader._block.rank == "TP0"


@settings(max_examples=250, deadline=None)
@given(text=_TEXTS)
def test_looks_like_memory_is_the_regex(text: str) -> None:
    assert looks_like_memory(text) is (MEMORY_LOOKING_RE.search(text) is not None)


@settings(max_examples=250, deadline=None)
@given(text=_TEXTS)
def test_fold_is_the_regex(text: str) -> None:
    assert shapecache.fold(text) == shapecache._FOLD_RE.sub("0", text)


@settings(max_examples=250, deadline=None)
@given(text=_TEXTS, number=st.integers(1, 10**6))
def test_logical_lines_shortcut_is_the_full_reading(text: str, number: int) -> None:
    ansi_free = logical.ANSI_RE.sub("", text)
    assert list(iter_logical_lines(number, text)) == list(logical_lines_in_full(number, ansi_free))


@settings(max_examples=200, deadline=None)
@given(
    tags=st.lists(
        st.sampled_from(["TP0", "DP1", "EP12", "PP3[2]", "x_y-z", "ATTN_TP2"]), max_size=4
    )
)
def test_rank_tag_is_the_tags_joined(tags: list[str]) -> None:
    for prefix in (
        f"[2026-11-05 10:12:07{''.join(' ' + t for t in tags)}]",
        f"[{' '.join(tags)}] ",
    ):
        match = PREFIX_RE.match(prefix)
        if match is None:
            continue
        spelled = (
            match.group("tags") if match.group("tags") is not None else match.group("bare_tags")
        )
        gpu = match.group("gpu")
        assert logical.rank_tag_of(match) == (gpu or " ".join(spelled.split()))


def _memory_lines_log(tmp_path: Path) -> Path:
    """A startup, then memory lines of a known and an unknown kind, a traceback among them."""
    lines = [(SAMPLES / "dp2.log").read_text()]
    for i in range(3000):
        stamp = f"[2026-11-06 10:{i // 60 % 60:02d}:{i % 60:02d} TP0]"
        lines.append(f"{stamp} Memory pool end. avail mem={30 + i % 997 / 100:.2f} GB\n")
        lines.append(f"{stamp} KV cache pool: used {i % 100}.5%, avail mem={i / 7:.2f} GB\n")
        if i == 1500:
            lines.append(
                f"{stamp} Scheduler hit an exception: Traceback (most recent call last):\n"
            )
            lines.append('  File "/sglang/srt/managers/scheduler.py", line 12, in run\n')
            lines.append(
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
            )
    path = tmp_path / "memory-lines.log"
    path.write_text("".join(lines))
    return path


def _full_readings(patch: pytest.MonkeyPatch) -> None:
    """Every shortcut off: each line read as it was before the shortcuts."""
    patch.setattr(QuietLines, "__call__", lambda self, text, prefixed=False: False)
    patch.setattr(error_texts, "no_error_words", lambda text, prefixed=False: False)
    patch.setattr(
        parsing, "looks_like_memory", lambda text: MEMORY_LOOKING_RE.search(text) is not None
    )
    patch.setattr(shapecache, "fold", lambda message: shapecache._FOLD_RE.sub("0", message))

    def in_full(line: int, text: str) -> Iterator[logical.LogicalLine]:
        return logical_lines_in_full(
            line, logical.ANSI_RE.sub("", text) if "\x1b" in text else text
        )

    patch.setattr(wrapped, "iter_logical_lines", in_full)


def test_every_log_parses_alike_with_the_shortcuts_and_without(tmp_path: Path) -> None:
    paths = [*real_log_paths(), *sorted(SAMPLES.glob("*.log")), _memory_lines_log(tmp_path)]
    fast = [to_dict(parsing.parse_log(path), mode="json") for path in paths]
    with pytest.MonkeyPatch.context() as patch:
        _full_readings(patch)
        full: list[Any] = [to_dict(parsing.parse_log(path), mode="json") for path in paths]
    assert fast == full
    stress = fast[-1]["startup"]
    assert stress["unrecognised_count"] >= 3000  # the unknown kind is counted, each line
    assert any(e["kind"] == "oom_message" for e in stress["events"])  # read among the quiet lines


@settings(max_examples=200, deadline=None)
@given(sniff=st.binary(max_size=600) | st.text(max_size=300).map(str.encode))
def test_binary_sniff_counts_the_control_bytes(sniff: bytes) -> None:
    controls = sum(1 for byte in sniff if byte in reader._CONTROL_BYTES)
    expected = bool(sniff) and controls / len(sniff) > reader.BINARY_CONTROL_RATIO
    assert reader._looks_binary(sniff) is expected


@pytest.mark.parametrize(
    "text",
    [
        "NCCL version 2.27.7+cuda12.9",
        "[W1105 10:09:58.118273829 ProcessGroupNCCL.cpp:981] Warning: TORCH_NCCL_AVOID_RECORD_"
        "STREAMS is the default now, this environment variable is thus deprecated.",
        "[2026-11-05 10:12:07 TP0] Init torch distributed begin. backend=nccl",
        # a progress bar's `?it/s` once made the KV-pool question's `?` a word of every reader
        "Loading safetensors checkpoint shards:   0% Completed | 0/37 [00:00<?, ?it/s]",
        "Capturing batches (bs=24 avail_mem=11.91 GB):   0%|          | 0/6 [00:00<00:21, ?it/s]",
    ],
)
def test_a_startup_line_naming_nccl_or_a_progress_bar_is_quiet(text: str) -> None:
    # the prose row for NCCL's allocation failure once made `nccl` a word of every reader:
    # each of a startup's NCCL lines then went through them all (a 20 MB log parsed 1.5x slower)
    assert QuietLines()(text, False) and QuietLines()(text, True)
    assert not QuietLines()("the nccl failed to calloc error again", False)
    assert not QuietLines()("so the KV cache total is 2M?", False)
