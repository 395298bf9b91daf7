"""The grep prefilter as the default for big files: same lines as the built-in scanner, bounded
memory on hostile lines (the built-in scanner takes over), started before the imports."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest

from memledger.input import grep_early, grep_scan, prestart
from memledger.input.grep_early import BORING_PCRE
from memledger.input.reader import ReadStats, iter_candidate_lines, open_log
from memledger.input.scan import BORING_ERE, MAX_LINE_BYTES
from memledger.sglang.lines import PREFILTER_WORDS

GREP = shutil.which("grep")
pytestmark = pytest.mark.skipif(
    GREP is None or not grep_scan.has_pcre(GREP), reason="no grep with -P on PATH"
)

STAMP = b"[2026-11-05 10:12:07 TP0]"
TRICKY = [
    STAMP + b" Decode batch. #running-req: 7, token usage: 0.12, avail mem=1.00 GB",
    STAMP + b" Decode batch. #running-req: 7 " + STAMP + b" Load weight end. avail mem=9.00 GB",
    b"junk ] Decode batch, avail mem=1.00 GB " + STAMP + b" x",
    b"no bracket ] Decode batch, avail mem=1.00 GB",
    b"[a] x ] Prefill batch avail mem",
    b"[[ts] Decode batch avail mem",
    b"[a] b [c] Prefill batch avail mem",
    STAMP + b" Prefill batch. #new-seq: 1, avail mem=2.00 GB ] Decode batch",
    STAMP + b" Load weight begin. avail mem=78.41 GB",
    # the PCRE's fast alternative (`[stamp] marker`, no `[` after) and its edges
    b"[a]b] Decode batch avail mem",
    STAMP + b" Decode batch avail mem [",
    b"[ts] Prefill batch avail mem",
    b"[ts]] Decode batch avail mem",
]


def _dropped_by(flags: list[str], lines: list[bytes]) -> list[bytes]:
    assert GREP is not None
    out = subprocess.run(
        [GREP, "-a", *flags],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        env={"LC_ALL": "C"},
        check=False,
    ).stdout
    return out.splitlines()


def test_the_pcre_serving_line_test_is_the_ere_one() -> None:
    matched_pcre = _dropped_by(["-P", grep_early.BORING_PCRE], TRICKY)
    matched_ere = _dropped_by(["-E", "-e", BORING_ERE], TRICKY)
    assert matched_pcre == matched_ere
    assert 0 < len(matched_pcre) < len(TRICKY)  # some serving lines, some kept (glued, odd)


def test_grep_is_the_default_for_a_big_regular_file_only(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    with mock.patch.dict("os.environ", {"PATH": os.environ["PATH"]}, clear=True):
        assert grep_scan.grep_program(path, grep_early.GREP_MIN_BYTES) == GREP
        assert grep_scan.grep_program(path, grep_early.GREP_MIN_BYTES - 1) is None
        assert grep_scan.grep_program(None, None) is None  # a stream: the built-in scanner
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": "python"}):
        assert grep_scan.grep_program(path, grep_early.GREP_MIN_BYTES) is None


def _candidates(path: Path, prefilter: str) -> tuple[list[tuple[int, bytes]], int, int]:
    stats = ReadStats()
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": prefilter}), open_log(path) as log:
        found = list(iter_candidate_lines(log, stats))
    return found, stats.n_lines, stats.n_bytes


def _hostile_log(tmp_path: Path) -> Path:
    """Startup lines around one 6 MiB line holding keywords in its pieces."""
    long_line = STAMP + b" Capturing " + b"x avail mem=1.00 GB " * (6 * MAX_LINE_BYTES // 80)
    lines = [
        STAMP + b" Load weight begin. avail mem=78.41 GB",
        *TRICKY,
        long_line,
        STAMP + b" Memory pool end. avail mem=9.83 GB",
        STAMP + b" Decode batch. #running-req: 7, token usage: 0.12",
    ]
    path = tmp_path / "hostile.log"
    path.write_bytes(b"\n".join(lines))  # no newline at the end
    return path


def test_an_over_long_line_is_handed_to_the_built_in_scanner(tmp_path: Path) -> None:
    path = _hostile_log(tmp_path)
    expected = _candidates(path, "python")
    assert any(len(raw) > MAX_LINE_BYTES // 2 for _, raw in expected[0])  # pieces of the line
    assert _candidates(path, "grep") == expected


def test_the_cli_starts_grep_before_the_imports_and_the_reader_claims_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep_scan, "GREP_MIN_BYTES", 1)
    monkeypatch.setattr(grep_early, "GREP_MIN_BYTES", 1)  # prestart reads it there
    path = _hostile_log(tmp_path)
    words = tuple(PREFILTER_WORDS)
    prestart.prestart(["parse", "--format", "json", str(path)])
    assert len(grep_scan.STARTED) == 1
    expected = _candidates(path, "python")
    assert _candidates(path, "grep") == expected  # read from the pipeline started above
    assert grep_scan.STARTED == {}
    prestart.prestart(["parse", str(path), "--grammar", "x.lark"])  # more keywords: not started
    prestart.prestart(["schema", str(path)])  # reads no log
    assert grep_scan.STARTED == {}
    prestart.prestart(["ledger", str(path)])
    [pipeline] = grep_scan.STARTED.values()
    grep_scan.stop_unclaimed()
    assert grep_scan.STARTED == {} and pipeline.second.returncode is not None
    assert grep_scan.claim(path, words) is None


def test_a_pipeline_whose_reader_never_ran_is_stopped_at_exit(tmp_path: Path) -> None:
    path = _hostile_log(tmp_path)
    assert GREP is not None
    lines = grep_scan.grep_candidates(
        path, None, GREP, PREFILTER_WORDS, lambda _n, _b: None, None
    )  # started, never iterated (Ctrl-C during the grammar build)
    [pipeline] = grep_scan._RUNNING
    grep_scan.stop_all()
    assert grep_scan._RUNNING == []
    assert pipeline.first.returncode is not None and pipeline.second.returncode is not None
    del lines


def _grep_from_the_first_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    """grep scans any log, however small (both modules read the bound; prestart reads it in
    grep_early), whatever MEMLEDGER_PREFILTER says outside."""
    monkeypatch.setattr(grep_early, "GREP_MIN_BYTES", 1)
    monkeypatch.setattr(grep_scan, "GREP_MIN_BYTES", 1)
    monkeypatch.delenv("MEMLEDGER_PREFILTER", raising=False)


def test_the_cli_starts_the_first_grep_with_the_stdlib_only_and_prestart_adopts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grep_from_the_first_byte(monkeypatch)
    path = _hostile_log(tmp_path)
    grep_early.start_early(["parse", "--format", "json", str(path)])
    [(_grep, first)] = grep_early.STARTED.values()
    assert isinstance(first, grep_early.Parts)
    assert len(first.firsts) == 1  # no newline near the middle: one part, fed as the halves are
    prestart.prestart(["parse", "--format", "json", str(path)])
    assert grep_early.STARTED == {}
    [pipeline] = grep_scan.STARTED.values()
    assert pipeline.first is first.firsts[0] and not pipeline.rest  # adopted, not started again
    expected = _candidates(path, "python")
    monkeypatch.delenv("MEMLEDGER_PREFILTER", raising=False)
    stats = ReadStats()
    with open_log(path) as log:
        found = list(iter_candidate_lines(log, stats))
    assert (found, stats.n_lines, stats.n_bytes) == expected
    assert grep_scan.STARTED == {}
    # forced either way, or not the first big log: nothing starts early
    for env, argv in (
        ({"MEMLEDGER_PREFILTER": "grep"}, ["parse", str(path)]),
        ({}, ["schema", str(path)]),
        ({}, ["parse", str(path), "--grammar", "x.lark"]),
    ):
        with mock.patch.dict("os.environ", env):
            grep_early.start_early(argv)
        assert grep_early.STARTED == {}
    grep_early.start_early(["ledger", str(path)])
    [(_grep, unadopted)] = grep_early.STARTED.values()
    assert isinstance(unadopted, grep_early.Parts)
    grep_scan.stop_unclaimed()  # the command failed before reading: the early grep is stopped
    assert grep_early.STARTED == {} and unadopted.firsts[0].returncode is not None


def test_the_entry_point_imports_no_click_typing_or_memledger_module_before_the_prestart() -> None:
    code = (
        "import sys; import memledger.cli, memledger.input.grep_early; "
        "print(sorted(m for m in sys.modules if m in ('click', 'typing', 'dataclasses') "
        "or (m.startswith('memledger.') and m not in ('memledger.cli', 'memledger.input', "
        "'memledger.input.grep_early'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _two_halves_log(tmp_path: Path, *, long_line_after_middle: bool = False) -> Path:
    """Candidates, odd serving lines and the END_OF_PART text in both halves of a file that is
    cut at its middle; optionally a line too long for the bounded read after the cut; no
    newline at the end."""
    serving = STAMP + b" Decode batch. #running-req: 7, token usage: 0.12, cuda graph: True"
    many = 100_000 if long_line_after_middle else 2000  # the cut falls before the long line
    half = [*TRICKY, grep_early.END_OF_PART, *([serving] * many), *TRICKY]
    tail = [STAMP + b" Capturing " + b"x avail mem=1.00 GB " * (6 * MAX_LINE_BYTES // 80)]
    lines = [*half, *half, *(tail if long_line_after_middle else []), b"avail mem=1 GB"]
    path = tmp_path / "halves.log"
    path.write_bytes(b"\n".join(lines))
    return path


@pytest.mark.parametrize("long_line", [False, True])
def test_a_file_cut_in_two_parts_gives_the_built_in_scanners_lines_and_counts(
    tmp_path: Path, long_line: bool
) -> None:
    path = _two_halves_log(tmp_path, long_line_after_middle=long_line)
    assert GREP is not None
    cut = grep_early.start_parts(GREP, str(path), ["-P", BORING_PCRE])
    assert cut is not None or grep_early.cores() < 2  # two CPUs: the file is cut in two
    if cut is not None:
        cut.stop()
    expected = _candidates(path, "python")
    assert expected[1] == path.read_bytes().count(b"\n") + 1
    assert _candidates(path, "grep") == expected


def _long_line_after_middle(tmp_path: Path) -> Path:
    return _two_halves_log(tmp_path, long_line_after_middle=True)


@pytest.mark.parametrize(
    "make_log", [_hostile_log, _long_line_after_middle], ids=["one part", "second part"]
)
def test_grep_out_of_memory_hands_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_log: Callable[[Path], Path]
) -> None:
    path = make_log(tmp_path)
    expected = _candidates(path, "python")
    monkeypatch.setattr(grep_scan, "GREP_DATA_LIMIT", 4 << 20)  # the 6 MiB line does not fit
    assert _candidates(path, "grep") == expected


def test_one_cpu_reads_the_file_in_one_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _two_halves_log(tmp_path)
    expected = _candidates(path, "python")
    monkeypatch.setattr(grep_early, "cores", lambda: 1)
    parts = grep_early.start_parts("grep", str(path), ["-P", BORING_PCRE])
    assert len(parts.firsts) == 1 and parts.feeders[0].end == path.stat().st_size
    parts.stop()
    assert _candidates(path, "grep") == expected


def test_parts_started_at_entry_are_adopted_or_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grep_from_the_first_byte(monkeypatch)
    path = _two_halves_log(tmp_path)
    expected = _candidates(path, "python")
    grep_early.start_early(["parse", str(path)])
    [(_grep, parts)] = grep_early.STARTED.values()
    if grep_early.cores() < 2:
        pytest.skip("one CPU: a file is never cut")
    assert isinstance(parts, grep_early.Parts) and len(parts.firsts) == 2
    prestart.prestart(["parse", str(path)])
    [pipeline] = grep_scan.STARTED.values()
    assert pipeline.first is parts.firsts[0] and pipeline.rest[0].first is parts.firsts[1]
    linux = Path("/proc/self/limits").exists()
    for part in (pipeline, *pipeline.rest) if linux else ():  # every grep under the data limit
        for process in (part.first, part.second):
            limits = Path(f"/proc/{process.pid}/limits").read_text()
            [data] = [line for line in limits.splitlines() if line.startswith("Max data size")]
            assert data.split()[3:5] == [str(grep_early.GREP_DATA_LIMIT)] * 2
    stats = ReadStats()
    with open_log(path) as log:
        found = list(iter_candidate_lines(log, stats))
    assert (found, stats.n_lines, stats.n_bytes) == expected
    grep_early.start_early(["parse", str(path)])
    [(_grep, unadopted)] = grep_early.STARTED.values()
    assert isinstance(unadopted, grep_early.Parts)
    grep_scan.stop_unclaimed()
    assert all(first.returncode is not None for first in unadopted.firsts)
    for feeder in unadopted.feeders:
        feeder.join(timeout=10)
        assert not feeder.is_alive()
