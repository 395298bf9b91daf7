"""`memledger check DIR` and `memledger ledger DIR`: a folder stands for the logs below it.

The walk (`fleet.walk_folder`) is lazy (one folder listing at a time), in the order of the
paths sorted as strings; a file is a log by its name (`fleet.LOG_ENDINGS`), any other file is
said to be skipped on stderr; a symlink loop, a folder that cannot be listed and a log that is
not a regular file are reported with a one-line error (exit 3), never skipped in silence.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

import memledger.app.fleet as fleet
from memledger.cli import main
from memledger.errors import EXIT_INPUT, EXIT_OK
from tests.conftest import SAMPLES

DP16, DP2 = SAMPLES / "dp16.log", SAMPLES / "dp2.log"
BUDGET = SAMPLES / "budget.toml"


def _run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _skip_line(path: Path) -> str:
    return f"memledger: note: {path}: skipped, not named {fleet.LOG_RULE}\n"


ONE_SKIPPED = (
    "memledger: note: skipped 1 file (not *.log, *.txt, *.out or .gz); --list-skipped names them\n"
)


def _tree(root: Path, names: list[str]) -> None:
    """Copies of the dp2 sample at each relative path (`.gz`: gzipped)."""
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".gz"):
            with gzip.open(path, "wb") as packed:
                packed.write(DP2.read_bytes())
        else:
            shutil.copy(DP2, path)


def test_the_walk_is_in_sorted_path_order_and_takes_logs_by_their_name(tmp_path: Path) -> None:
    # `a-c.log` < `a.log` < `a/...` < `a0.log` as strings: a folder sorts as its name and `/`
    logs = ["a-c.log", "a.log", "a/b.log", "a/z/q.out", "a0.log", "B.LOG", "m/n.txt.gz"]
    logs += ["nohup.out", "pod.txt", "x.log.gz"]
    others = ["README.md", "a/server.log.1", "data.json", "m/notes.gz"]
    _tree(tmp_path, logs + others)
    skipped: list[str] = []
    walked = list(fleet.walk_folder(str(tmp_path), skipped.append))
    assert walked == sorted(str(tmp_path / name) for name in logs)
    assert skipped == sorted(str(tmp_path / name) for name in others)


def test_the_walk_lists_one_folder_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, [f"r{i}/pod.log" for i in range(5)])
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: Path) -> object:
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    walk = fleet.walk_folder(str(tmp_path))
    assert next(walk) == str(tmp_path / "r0" / "pod.log")
    assert listed == [str(tmp_path), str(tmp_path / "r0")]  # r1..r4 not listed yet
    assert len(list(walk)) == 4 and len(listed) == 6


def test_ledger_dir_is_the_fleet_of_its_logs_and_reports_skipped_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path, ["pods/b.log", "pods/a/c.txt"])
    (tmp_path / "pods" / "notes.md").write_text("not a log\n")
    code, out, err = _run(capsys, "ledger", tmp_path / "pods", "--format", "json")
    assert code == EXIT_OK
    assert err == ONE_SKIPPED  # one line counting what was skipped
    _, _, err = _run(capsys, "ledger", tmp_path / "pods", "--format", "json", "--list-skipped")
    assert err == _skip_line(tmp_path / "pods" / "notes.md")
    assert [json.loads(line)["path"] for line in out.splitlines()] == [
        str(tmp_path / "pods" / "a" / "c.txt"),
        str(tmp_path / "pods" / "b.log"),
    ]


def test_check_dir_checks_the_logs_below_it_as_if_they_were_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path, ["pods/r1/dp2.log"])
    shutil.copy(DP16, tmp_path / "pods" / "dp16.log")
    (tmp_path / "pods" / "budget.toml").write_text("")
    code, out, err = _run(
        capsys, "check", tmp_path / "pods", "--budget", BUDGET, "--format", "json"
    )
    named = [tmp_path / "pods" / "dp16.log", tmp_path / "pods" / "r1" / "dp2.log"]
    code_named, out_named, _ = _run(capsys, "check", *named, "--budget", BUDGET, "--format", "json")
    assert err == ONE_SKIPPED
    assert (code, out) == (code_named, out_named)
    assert [i["path"] for i in json.loads(out)["inputs"]] == [str(p) for p in named]
    # a folder of one log: that log, read here
    code, out, _ = _run(capsys, "check", tmp_path / "pods" / "r1", "--budget", BUDGET)
    assert code == code_named and "on 1 log" in out.splitlines()[0]


def test_a_symlink_loop_is_an_unreadable_line_in_ledger_and_an_error_in_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path, ["pods/a.log", "pods/sub/b.log"])
    (tmp_path / "pods" / "sub" / "back").symlink_to(tmp_path / "pods")
    (tmp_path / "pods" / "shared").symlink_to(tmp_path / "pods" / "sub")  # not a loop: walked
    code, out, err = _run(capsys, "ledger", tmp_path / "pods", "--format", "json")
    records = [json.loads(line) for line in out.splitlines()]
    loop = str(tmp_path / "pods" / "sub" / "back")
    assert code == EXIT_INPUT and err == ""
    assert [r["path"] for r in records] == [
        str(tmp_path / "pods" / "a.log"),
        str(tmp_path / "pods" / "shared" / "b.log"),
        str(tmp_path / "pods" / "shared" / "back"),  # via the link: leads back to pods too
        str(tmp_path / "pods" / "sub" / "b.log"),
        loop,
    ]
    assert records[-1]["outcome"] == "unreadable"
    assert records[-1]["error"] == f"a symlink loop: it leads back to {tmp_path / 'pods'}"
    code, out, err = _run(capsys, "check", tmp_path / "pods", "--budget", BUDGET)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == f"memledger: error: {records[2]['path']}: a symlink loop: it leads back to " + (
        f"{tmp_path / 'pods'}\n"
    )


def test_a_folder_that_cannot_be_listed_is_reported_not_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, ["pods/a.log", "pods/locked/b.log"])
    locked = tmp_path / "pods" / "locked"
    real_scandir = os.scandir

    def scandir(path: Path) -> object:  # chmod 000 does not stop root: refuse it here
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, _ = _run(capsys, "ledger", tmp_path / "pods")
    assert code == EXIT_INPUT
    assert "memledger ledger: 2 logs -- 1 ready, 1 unreadable" == out.splitlines()[0]
    assert "  locked: cannot list this folder: Permission denied" in out.splitlines()
    code, out, err = _run(capsys, "check", tmp_path / "pods", "--budget", BUDGET)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == f"memledger: error: {locked}: cannot list this folder: Permission denied\n"


def test_a_log_that_is_not_a_regular_file_or_a_dangling_link_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _tree(tmp_path, ["pods/a.log"])
    os.mkfifo(tmp_path / "pods" / "fifo.log")  # reading it would wait forever
    (tmp_path / "pods" / "gone.log").symlink_to(tmp_path / "nowhere.log")
    code, out, _ = _run(capsys, "ledger", tmp_path / "pods", "--format", "json")
    records = {Path(r["path"]).name: r for r in map(json.loads, out.splitlines())}
    assert code == EXIT_INPUT and records["a.log"]["outcome"] == "ready"
    assert records["fifo.log"]["error"] == "not a regular file (a pipe, socket or device)"
    assert records["gone.log"]["error"] == "no such file"


def test_a_folder_without_logs_is_an_error_naming_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.md").write_text("x\n")
    for command in (["ledger"], ["check", "--budget", str(BUDGET)]):
        code, out, err = _run(capsys, *command, tmp_path)
        assert (code, out) == (EXIT_INPUT, "")
        assert err == f"memledger: error: {tmp_path}: a folder without logs ({fleet.LOG_RULE})\n"


def test_the_walk_skips_what_ruff_skips_and_counts_it_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review M5: `memledger ledger .` after the Quickstart walked into .venv and .git, with one
    # stderr line per file (12,158), and read pip's LICENSE.txt as a log
    logs = ["pods/a.log", "pods/sub/b.txt"]
    hidden = [".git/logs/HEAD.log", ".venv/lib/LICENSE.txt", "pods/.cache/x.log"]
    named = ["node_modules/pkg/npm.log", "pods/__pycache__/m.txt", "venv/x.log", "dist/y.log"]
    virtualenv = ["env311/lib/site/LICENSE.txt", "env311/pyvenv.cfg"]
    _tree(tmp_path, logs + hidden + named + virtualenv)
    (tmp_path / "notes.md").write_text("not a log\n")
    code, out, err = _run(capsys, "ledger", tmp_path, "--format", "json")
    assert code == EXIT_OK
    assert [json.loads(line)["path"] for line in out.splitlines()] == [
        str(tmp_path / name) for name in logs
    ]
    assert err == (
        "memledger: note: skipped 1 file (not *.log, *.txt, *.out or .gz) and 8 folders (.cache, "
        ".git, .venv, ...); --list-skipped names them\n"
    )
    _, _, listed = _run(capsys, "ledger", tmp_path, "--format", "json", "--list-skipped")
    folders = [".git", ".venv", "pods/.cache", "node_modules", "pods/__pycache__", "venv", "dist"]
    folders.append("env311")  # a virtualenv by its pyvenv.cfg, whatever its name
    assert set(listed.splitlines()) == {
        *(
            f"memledger: note: {tmp_path / folder}/: skipped, {fleet.SKIPPED_FOLDER_WHY}"
            for folder in folders
        ),
        _skip_line(tmp_path / "notes.md").rstrip("\n"),
    }
    # a folder given by name is walked whatever its name
    code, out, _ = _run(capsys, "ledger", tmp_path / ".git", "--format", "json")
    assert code == EXIT_OK and json.loads(out)["path"] == str(tmp_path / ".git/logs/HEAD.log")
