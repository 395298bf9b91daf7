"""File names are untrusted text: a pull request can add a log named with a newline and a GitHub
workflow command, or with terminal escapes (git keeps both). `check DIR` / `ledger DIR` and a
path on the command line must print such a name on one line with its controls shown, on stdout
and on stderr alike (stderr goes into the CI job log too, where a line starting with `::error::`
would run as a workflow command).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memledger.errors import EXIT_INPUT, EXIT_OK
from tests.security.helpers import log_text

NEWLINE_NAME = "x\n::error file=a::INJECTED.log"
ESCAPE_NAME = "evil\x1b[2J\x1b]0;title\x07\r.log"
_RAW_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_BUDGET = 'version = 1\n[[budget]]\nitem = "cuda_graph"\nmax = "10 GiB"\n'


def _memledger(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memledger", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )


def _no_command_and_no_control(text: str) -> None:
    for line in text.splitlines():
        assert not line.lstrip().startswith("::") or line.startswith("::"), line
        assert not _RAW_CONTROL.search(line), repr(line)
    assert "INJECTED" not in "".join(
        line for line in text.splitlines() if line.lstrip().startswith("::error file=a")
    )


@pytest.fixture
def hostile_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("a.log", NEWLINE_NAME, ESCAPE_NAME):
        (folder / name).write_text(log_text(), encoding="utf-8")
    (folder / "skip\x1b[31mred.bin").write_text("not a log", encoding="utf-8")
    return folder


def test_a_named_folder_prints_each_name_on_its_own_line(hostile_folder: Path) -> None:
    done = _memledger("ledger", hostile_folder, "--list-skipped")
    assert done.returncode == EXIT_OK, done.stderr
    _no_command_and_no_control(done.stdout)
    assert len([line for line in done.stdout.splitlines() if line.startswith("ready ")]) == 3
    # the note of the skipped file (named with --list-skipped): one line, its escape shown
    assert done.stderr.count("\n") == 1 and "skip\u241b[31mred.bin: skipped" in done.stderr
    _no_command_and_no_control(done.stderr)


@pytest.mark.parametrize("fmt", ["text", "github", "markdown"])
def test_check_dir_keeps_every_name_inert(hostile_folder: Path, tmp_path: Path, fmt: str) -> None:
    budget = tmp_path / "budget.toml"
    budget.write_text(_BUDGET, encoding="utf-8")
    done = _memledger(
        "check", "logs", "--budget", budget, "--format", fmt, "--full", cwd=hostile_folder.parent
    )
    assert done.returncode == EXIT_OK, done.stderr
    _no_command_and_no_control(done.stdout)
    _no_command_and_no_control(done.stderr)
    if fmt == "text":  # each check of a hostile name stays on its row (a CR wrapped it)
        rows = [line for line in done.stdout.splitlines() if line.startswith("  cuda_graph  ")]
        assert len(rows) == 3 and any("\u240d.log" in row for row in rows)


def test_an_unreadable_log_with_a_newline_in_its_name_is_one_error_line(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    os.mkfifo(folder / "y\x1b[31m\n::error::f.log")  # check stops on it: exit 3, one line
    budget = tmp_path / "budget.toml"
    budget.write_text(_BUDGET, encoding="utf-8")
    done = _memledger("check", folder, "--budget", budget, "--format", "github")
    assert done.returncode == EXIT_INPUT
    assert done.stderr.count("\n") == 1
    assert "y\u241b[31m\u240a::error::f.log: not a regular file" in done.stderr
    _no_command_and_no_control(done.stderr)
    listed = _memledger("ledger", folder)  # the fleet view: a line, and one in its notes
    assert listed.returncode == EXIT_INPUT
    _no_command_and_no_control(listed.stdout)


@pytest.mark.parametrize("command", ["ledger", "parse", "diagnose"])
def test_a_missing_path_with_controls_is_one_error_line(tmp_path: Path, command: str) -> None:
    path = tmp_path / "nope\x1b[2J\n::error::x.log"
    done = _memledger(command, path)
    assert done.returncode == EXIT_INPUT
    assert done.stderr.count("\n") == 1 and "nope\u241b[2J\u240a::error::x.log" in done.stderr
    _no_command_and_no_control(done.stderr)


def test_a_usage_error_quoting_a_value_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "base.log"
    log.write_text(log_text(), encoding="utf-8")
    done = _memledger("ledger", log, "--format", "x\n::error::y")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    _no_command_and_no_control(done.stderr)
