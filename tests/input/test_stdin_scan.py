"""A big log on stdin goes through the grep prefilter, read ahead at CLI entry: the same candidate
lines, line and byte counts as the built-in scanner, a long line handed over to it, small input
and gzip left to it, and a regular file on stdin scanned in place."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from memledger.input import grep_scan, stdin_scan
from memledger.input.reader import ReadStats, iter_candidate_lines, open_log
from memledger.input.scan import MAX_LINE_BYTES
from tests.conftest import SAMPLES

GREP = shutil.which("grep")
pytestmark = pytest.mark.skipif(
    GREP is None or not grep_scan.has_pcre(GREP), reason="no grep with -P on PATH"
)

STAMP = b"[2026-11-05 10:12:07 TP0]"
SERVING = STAMP + b" Decode batch. #running-req: 7, #token: 6377, token usage: 0.02, \n"

# In a fresh interpreter whose stdin is the test's pipe (or file): what the CLI does at entry,
# then the reader; prints whether the pipeline ran, and what the reader found.
CHILD = """
import json, sys
from memledger.input import grep_scan, prestart, stdin_scan
from memledger.input.reader import ReadStats, iter_candidate_lines, open_log
prestart.prestart(sys.argv[1:])
stats = ReadStats()
with open_log("-") as log:
    piped = log.prefiltered is not None
    in_place = log.path is not None
    found = [[n, raw.decode("latin-1")] for n, raw in iter_candidate_lines(log, stats)]
grep_scan.stop_all()
print(json.dumps({"piped": piped, "in_place": in_place, "found": found,
                  "lines": stats.n_lines, "bytes": stats.n_bytes}))
"""


def _child(stdin: bytes | Path, argv: tuple[str, ...] = ("parse", "-")) -> dict[str, object]:
    command = [sys.executable, "-c", CHILD, *argv]
    if isinstance(stdin, Path):
        with stdin.open("rb") as source:
            done = subprocess.run(command, stdin=source, capture_output=True, check=True)
    else:
        done = subprocess.run(command, input=stdin, capture_output=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _built_in(path: Path) -> dict[str, object]:
    stats = ReadStats()
    with mock.patch.dict("os.environ", {"MEMLEDGER_PREFILTER": "python"}), open_log(path) as log:
        found = [[n, raw.decode("latin-1")] for n, raw in iter_candidate_lines(log, stats)]
    return {"found": found, "lines": stats.n_lines, "bytes": stats.n_bytes}


def _big_log(tmp_path: Path, *, middle: bytes = b"", tail: bytes = b"") -> Path:
    """The dp2 sample's startup, serving lines past STREAM_DECIDE_BYTES, its startup again."""
    startup = (SAMPLES / "dp2.log").read_bytes()
    serving = SERVING * (stdin_scan.STREAM_DECIDE_BYTES // len(SERVING) + 1000)
    path = tmp_path / "big.log"
    path.write_bytes(startup + serving + middle + serving[: len(serving) // 2] + startup + tail)
    return path


def _same(child: dict[str, object], expected: dict[str, object]) -> None:
    assert {k: child[k] for k in expected} == expected


def test_a_big_pipe_goes_through_grep_with_the_built_in_lines(tmp_path: Path) -> None:
    path = _big_log(tmp_path, tail=STAMP + b" Load weight end. avail mem=1.00 GB")  # no newline
    child = _child(path.read_bytes())
    assert child["piped"] is True
    expected = _built_in(path)
    assert len(expected["found"]) > 50  # type: ignore[arg-type]
    _same(child, expected)


def test_a_line_too_long_for_grep_goes_on_in_the_built_in_scanner(tmp_path: Path) -> None:
    long_line = STAMP + b" Capturing " + b"x avail mem=1.00 GB " * (5 * MAX_LINE_BYTES // 20)
    path = _big_log(tmp_path, middle=long_line + b"\n")
    child = _child(path.read_bytes())
    assert child["piped"] is True
    expected = _built_in(path)
    pieces = [raw for _, raw in expected["found"] if len(raw) > MAX_LINE_BYTES // 2]  # type: ignore[attr-defined]
    assert len(pieces) >= 2  # the line was cut, and the pieces after it still found
    _same(child, expected)


def test_small_gzip_and_json_input_stay_with_the_built_in_scanner(tmp_path: Path) -> None:
    small = SAMPLES / "dp2.log"
    child = _child(small.read_bytes())
    assert child["piped"] is False
    _same(child, _built_in(small))
    big = _big_log(tmp_path)
    packed = gzip.compress(big.read_bytes(), compresslevel=1)
    assert _child(packed)["piped"] is False
    assert _child(b"{" + big.read_bytes())["piped"] is False  # maybe a saved ledger
    child = _child(big.read_bytes(), ("parse", "-o", "-"))  # `-` after -o is the output
    assert child["piped"] is False and child["lines"] == _built_in(big)["lines"]


def test_a_regular_file_on_stdin_is_scanned_in_place(tmp_path: Path) -> None:
    path = _big_log(tmp_path)
    child = _child(path)
    assert child["in_place"] is True and child["piped"] is False
    _same(child, _built_in(path))


def test_the_cli_reads_a_big_pipe_as_it_reads_the_file(tmp_path: Path) -> None:
    path = _big_log(tmp_path)
    argv = [sys.executable, "-m", "memledger", "parse", "--format", "json"]
    from_file = subprocess.run([*argv, str(path)], capture_output=True, check=True).stdout
    piped = subprocess.run([*argv, "-"], input=path.read_bytes(), capture_output=True, check=True)
    assert json.loads(piped.stdout)["path"] == "<stdin>"
    assert piped.stdout.replace(b'"<stdin>"', json.dumps(str(path)).encode()) == from_file
