"""`memledger ledger` over several logs or a folder: one summary line per log, on both cores;
and the progress meter of ledger / diff / check on large inputs."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import shutil
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import memledger.app.fleet as fleet
import memledger.input.reader as reader
from memledger.app.load import load_ledger
from memledger.app.options import LoadOptions
from memledger.cli import main
from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.model.fleet import FleetEntry
from memledger.model.ledger import RowGroup
from tests.conftest import REAL_LOGS, SAMPLES, real_log_paths, require_real_logs

DP16, DP2 = SAMPLES / "dp16.log", SAMPLES / "dp2.log"


def _run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _fleet_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "pods"
    (folder / "restart-2").mkdir(parents=True)
    shutil.copy(DP16, folder / "a-dp16.log")
    with gzip.open(folder / "restart-2" / "b-dp2.log.gz", "wb") as packed:
        packed.write(DP2.read_bytes())
    (folder / "notes.md").write_text("not a log\n")
    return folder


def test_text_gives_the_verdict_then_one_line_per_log(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "ledger", DP16, DP2)
    assert (code, err) == (EXIT_OK, "")
    lines = out.splitlines()
    assert lines[0] == "memledger ledger: 2 logs -- 2 ready"
    [dp16] = [line for line in lines if line.endswith(" dp16.log")]
    [dp2] = [line for line in lines if line.endswith(" dp2.log")]
    ledger = load_ledger(DP16)
    assert ledger.usable_bytes is not None
    assert f"{ledger.usable_bytes / 2**30:.2f}" in dp16.split()
    assert dp16.split()[0] == dp2.split()[0] == "ready"
    assert max(len(line) for line in lines) <= 120  # numbers in 100 columns, then the name


def test_a_folder_stands_for_its_logs_recursively_and_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _fleet_folder(tmp_path)
    code, out, err = _run(capsys, "ledger", folder, "--format", "json")
    assert code == EXIT_OK
    # the file that is not a log by its name is said to be skipped, on stderr (not in the JSON)
    assert err == (
        "memledger: note: skipped 1 file (not *.log, *.txt, *.out or .gz); --list-skipped names "
        "them\n"
    )
    records = [json.loads(line) for line in out.splitlines()]  # JSON Lines
    assert [r["log"] for r in records] == ["a-dp16.log", "b-dp2.log.gz"]
    assert records[1]["path"] == str(folder / "restart-2" / "b-dp2.log.gz")
    assert all(r["outcome"] == "ready" and r["error"] is None for r in records)


def test_csv_names_each_log_and_gives_exact_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "ledger", DP16, DP2, "--format", "csv")
    assert code == EXIT_OK
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [row["log"] for row in rows] == ["dp16.log", "dp2.log"]
    for row, path in zip(rows, (DP16, DP2), strict=True):
        ledger = load_ledger(path)
        pool = sum(
            r.bytes or 0 for r in ledger.rows if r.in_partition and r.group is RowGroup.STATE_POOL
        )
        assert int(row["usable"]) == ledger.usable_bytes
        assert int(row["state_pool"]) == pool
        assert int(row["fixed_overhead"]) == (ledger.usable_bytes or 0) - pool
        assert int(row["kv_tokens_per_rank"]) == ledger.summary.kv_tokens_per_rank


def test_an_unreadable_log_is_a_line_with_its_error_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    code, out, _ = _run(capsys, "ledger", DP16, empty, DP2)
    assert code == EXIT_INPUT
    assert out.splitlines()[0] == "memledger ledger: 3 logs -- 2 ready, 1 unreadable"
    assert "unreadable" in next(line for line in out.splitlines() if line.endswith(" empty.log"))
    # the one-line error under the table, its path said once (the name begins the line)
    assert "  empty.log: empty file" in out and f"{empty}: empty" not in out
    code, out, _ = _run(capsys, "ledger", DP16, empty, "--format", "json")
    assert [json.loads(line)["outcome"] for line in out.splitlines()] == ["ready", "unreadable"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--explain", "weights"], "--explain takes one LOG"),
        (["--format", "markdown"], "unknown format 'markdown'"),
    ],
)
def test_one_log_options_are_refused_for_several(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "ledger", DP16, DP2, *argv)
    assert code == EXIT_USAGE and message in err and err.count("\n") == 1


def test_a_folder_without_logs_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "ledger", tmp_path)
    assert code == EXIT_INPUT and f"{tmp_path}: a folder without logs ({fleet.LOG_RULE})" in err


def _pid_of_worker(path: str, options: LoadOptions) -> FleetEntry:
    time.sleep(0.2)  # long enough that both workers take a log
    return FleetEntry(path, error=str(os.getpid()))


def test_logs_are_read_on_two_cores_in_the_order_given(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [f"pod-{n}.log" for n in range(6)]
    monkeypatch.setattr(fleet, "_load", _pid_of_worker)  # forked workers inherit the patch
    # an earlier test's progress watcher may still run in this process; the next test covers it
    monkeypatch.setattr(fleet, "_threads_alive", lambda: False)
    entries = list(fleet.load_fleet(paths, LoadOptions()))
    assert [entry.path for entry in entries] == paths
    workers = Counter(entry.error for entry in entries)
    assert len(workers) == min(2, os.cpu_count() or 1)
    assert str(os.getpid()) not in workers


def test_no_worker_is_forked_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread holding a lock (a stream's, the allocator's) at a fork leaves the child hung."""
    paths = [f"pod-{n}.log" for n in range(4)]
    monkeypatch.setattr(fleet, "_load", _pid_of_worker)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        entries = list(fleet.load_fleet(paths, LoadOptions()))
    finally:
        stop.set()
        other.join()
    assert [entry.path for entry in entries] == paths
    assert {entry.error for entry in entries} == {str(os.getpid())}  # all read in this process


def test_the_real_logs_folder_gives_one_line_per_log(capsys: pytest.CaptureFixture[str]) -> None:
    require_real_logs()
    code, out, _ = _run(capsys, "ledger", REAL_LOGS, "--format", "json")
    assert code == EXIT_OK
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["path"] for r in records] == [str(p) for p in real_log_paths()]
    for record in records[:5]:
        assert record["usable"] == load_ledger(record["path"]).usable_bytes


# --- progress on large inputs ---------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["ledger", str(DP16)],
        ["diff", str(DP16), str(DP2)],
        ["check", str(DP16), "--budget", str(SAMPLES / "budget.toml")],
    ],
    ids=["ledger", "diff", "check"],
)
def test_ledger_diff_and_check_show_progress_on_a_terminal_only(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(reader, "PROGRESS_EVERY", 1024)  # "large" for the test
    main(argv)
    assert "memledger: read" not in capsys.readouterr().err  # not a terminal: no meter
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main(argv)
    err = capsys.readouterr().err
    assert "memledger: read" in err and "MiB" in err
    assert err.endswith("\r\x1b[K")  # the meter line is erased when the log has been read
