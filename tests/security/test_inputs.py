"""F7, F10 and F29: inputs are opened once and streamed; odd inputs get the right one-line error.

F7: a log whose first byte is `{` is not read whole. F10: a FIFO, `/dev/stdin` and `<(...)`
lose nothing and keep their line numbers. F29: malformed or BOM-led JSON, `--rank ""`, a file
truncated while it is read.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memledger.app import open as opener
from memledger.app.load import load_ledger
from memledger.app.open import open_input
from memledger.errors import EXIT_INPUT, EXIT_OK
from memledger.input.reader import SNIFF_BYTES
from tests.conftest import CountingStream
from tests.security.helpers import log_text, run, write_log

# The review's padded.log: base.log with 60 padding lines after line 1, so nccl_init (the
# `Init torch distributed ends` line, line 3 of base.log) is on line 63.
PADDING = "".join(f"[2025-02-04 05:21:39] padding line {i} with nothing in it\n" for i in range(60))


def padded_text() -> str:
    first, rest = log_text().split("\n", 1)
    return f"{first}\n{PADDING}{rest}"


def _memledger(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    # a subprocess with a timeout: a hang (the FIFO of F10) fails instead of stalling the suite
    return subprocess.run(
        [sys.executable, "-m", "memledger", *args],
        input=None if stdin is None else stdin.decode("utf-8"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_F07_a_brace_led_log_is_read_to_the_saved_ledger_bound_then_streamed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # JSON lines first (Docker's *-json.log), then the log, then far more than the bound
    bound = 4 * SNIFF_BYTES
    monkeypatch.setattr(opener, "SAVED_LEDGER_MAX_BYTES", bound)
    filler = b'{"log": "Decode batch. #running-req: 1"}\n' * (4 * bound // 40)
    data = b'{"ts": 1}\n' + log_text().encode() + filler
    assert len(data) > 3 * bound
    stream = CountingStream(data)
    with open_input(stream) as opened:
        assert opened.log is not None and opened.document is None
        assert stream.bytes_read <= bound + 1  # not the whole input
    brace = load_ledger(io.BytesIO(data))
    plain = load_ledger(io.BytesIO(log_text().encode()))
    # nothing lost: the same figures and rows, each source one line later (the `{"ts": 1}`)
    assert brace.summary == plain.summary
    assert [(r.id, r.bytes) for r in brace.rows] == [(r.id, r.bytes) for r in plain.rows]
    lines = [[s.line for s in r.evidence.sources] for r in plain.rows]
    assert [[s.line - 1 for s in r.evidence.sources] for r in brace.rows] == lines


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_F10_a_fifo_is_read_as_a_stream_with_its_line_numbers(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("w", encoding="utf-8") as writer:
            writer.write(padded_text())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    done = _memledger("ledger", str(fifo), "--explain", "nccl_init")
    writer.join(timeout=10)
    assert done.returncode == EXIT_OK, done.stderr
    # the quoted text follows its `path:line`, on the next line when the path is long
    assert re.search(rf"{re.escape(str(fifo))}:63:\s+Init torch distributed ends", done.stdout)


def test_F10_dev_stdin_as_a_path_loses_nothing() -> None:
    done = _memledger(
        "ledger", "/dev/stdin", "--explain", "nccl_init", stdin=padded_text().encode()
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert "/dev/stdin:63: Init torch distributed ends" in done.stdout
    # server_args (line 1, inside the first 4 KiB the old peek lost) is still read
    done = _memledger("ledger", "/dev/stdin", stdin=padded_text().encode())
    assert done.returncode == EXIT_OK and "needs mem_fraction_static" not in done.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for <(...)")
def test_F10_process_substitution_works_for_ledger_and_diff(tmp_path: Path) -> None:
    padded = tmp_path / "padded.log"
    padded.write_text(padded_text(), encoding="utf-8")
    base = write_log(tmp_path)
    command = (
        f"{sys.executable} -m memledger ledger <(cat {padded}) --explain nccl_init && "
        f"{sys.executable} -m memledger diff {base} <(cat {padded}) --format json"
    )
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert ":63: Init torch distributed ends" in done.stdout
    assert "empty file" not in done.stderr


def test_F29_malformed_json_is_reported_as_json_not_as_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1', encoding="utf-8")
    budget = tmp_path / "budget.toml"
    budget.write_text('version = 1\n[[budget]]\nitem = "cuda_graph"\nmax = "10 GiB"\n')
    runs: list[list[str | Path]] = [
        ["ledger", bad],
        ["check", write_log(tmp_path), "--budget", budget, "--baseline", bad],
    ]
    for args in runs:
        code, _, err = run(capsys, *args)
        assert code == EXIT_INPUT and err.count("\n") == 1
        assert "not valid JSON (line 1, column 8: Expecting" in err


def test_F29_a_bom_led_saved_ledger_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, saved, _ = run(capsys, "ledger", write_log(tmp_path), "--format", "json")
    assert code == EXIT_OK
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + saved.encode("utf-8"))
    code, out, err = run(capsys, "ledger", bom, "--format", "json")
    assert (code, err) == (EXIT_OK, "") and out == saved


def test_F29_an_empty_rank_on_a_tagged_log_is_a_selection_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "ledger", write_log(tmp_path), "--rank", "")
    assert code == EXIT_INPUT and out == "" and err.count("\n") == 1
    assert "rank ''" in err and "TP0" in err


def test_F29_stdin_errors_name_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    done = _memledger("ledger", "-", stdin=b"\x00\x01binary\x00" * 100)
    assert done.returncode == EXIT_INPUT and "<stdin>: binary file" in done.stderr


def test_F29_a_file_truncated_while_it_is_read_is_an_input_error(tmp_path: Path) -> None:
    from memledger.errors import InputError
    from memledger.input.reader import ReadStats, iter_candidate_lines, open_log

    path = tmp_path / "rotating.log"
    path.write_text(padded_text() * 50, encoding="utf-8")
    with open_log(path) as log:
        lines = iter_candidate_lines(log, ReadStats())
        next(lines)  # the scan has started on the file as it was opened
        with path.open("r+b") as handle:
            handle.truncate(100)  # logrotate's copytruncate, mid-scan
        with pytest.raises(InputError, match="truncated while it was read"):
            list(lines)
    # a file that only grows (a live log) reads without complaint
    path.write_text(padded_text(), encoding="utf-8")
    with open_log(path) as log:
        lines = iter_candidate_lines(log, ReadStats())
        first = next(lines)
        with path.open("a", encoding="utf-8") as handle:
            handle.write("[2025-02-04 05:29:30 TP0] appended line\n")
        assert len([first, *lines]) > 1
