"""`memledger check @logs.txt`: a list of logs, one path per line (memledger.input.log_list)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.input.log_list import MAX_ENTRY_BYTES, MAX_LIST_BYTES
from tests.check.helpers import base_ledger, head_ledger, save_ledger, write
from tests.conftest import SAMPLES, run_cli

FAILING = '[[budget]]\nitem = "kv_tokens_per_instance"\nmin = 52_000_000\n'  # head 51.0 M


def test_a_list_checks_every_log_it_names_with_one_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # paths are taken as written: relative to the current folder
    save_ledger(tmp_path, "head.json", head_ledger())
    (tmp_path / "runs").mkdir()
    save_ledger(tmp_path / "runs", "base.json", base_ledger())
    write(tmp_path, "budget.toml", FAILING)
    lists = tmp_path / "lists"
    lists.mkdir()
    write(lists, "logs.txt", "# the matrix's logs\r\nhead.json\r\n\r\n  runs/base.json  \n")
    code, out, err = run_cli(
        ["check", "@lists/logs.txt", "--budget", "budget.toml", "--format", "json"], capsys
    )
    assert code == EXIT_BUDGET_FAILED, err
    report = json.loads(out)
    checked = [entry["path"] for entry in report["inputs"]]
    assert checked == ["head.json", "runs/base.json"]  # in the list's order, one report
    # the same list for `ledger`: one line per log
    code, out, err = run_cli(["ledger", "@lists/logs.txt"], capsys)
    assert code == EXIT_OK, err
    assert "2 logs -- 2 ready" in out


def test_a_listed_log_that_is_missing_says_where_it_was_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    save_ledger(tmp_path, "head.json", head_ledger())
    write(tmp_path, "budget.toml", FAILING)
    write(tmp_path, "logs.txt", "head.json\nruns/gone.log\n")
    code, out, err = run_cli(["check", "@logs.txt", "--budget", "budget.toml"], capsys)
    assert code == EXIT_INPUT
    assert err == "memledger: error: runs/gone.log: no such file (listed at logs.txt:2)\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "logs.txt: a list of logs that names none"),
        (b"# only a comment\n\n", "logs.txt: a list of logs that names none"),
        (b"a.log\n-\n", "logs.txt:2: stdin (-) cannot be listed: give it on the command line"),
        (
            b"@more.txt\n",
            "logs.txt:1: a list inside a list is not read (a log named so: ./@more.txt)",
        ),
        (b"a.log\nb\x00c\n", "logs.txt:2: a NUL byte: not a list of paths"),
        (b"a.log\n\xff\xfe.log\n", "logs.txt:2: not UTF-8 text"),
        (b"a\x1b[31m.log\n", "logs.txt:1: a control character in a path"),
        (b"x" * (MAX_ENTRY_BYTES + 1), f"logs.txt:1: a path of more than {MAX_ENTRY_BYTES} bytes"),
        (b"a.log\n" * (MAX_LIST_BYTES // 6 + 1), "logs.txt: a list of logs of more than 4 MiB"),
    ],
    ids=["empty", "comments", "stdin", "nested", "nul", "utf8", "control", "long", "big"],
)
def test_a_bad_list_is_one_line_at_its_file_and_line(
    content: bytes,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs.txt").write_bytes(content)
    code, out, err = run_cli(
        ["check", "@logs.txt", "--budget", str(SAMPLES / "budget.toml")], capsys
    )
    assert code == EXIT_USAGE and out == ""
    assert err.startswith(f"memledger: error: {message}") and err.count("\n") == 1, err


def test_a_missing_list_and_a_folder_given_as_a_list_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    budget = str(SAMPLES / "budget.toml")
    code, _, err = run_cli(["check", "@nope.txt", "--budget", budget], capsys)
    assert code == EXIT_USAGE
    assert err == "memledger: error: nope.txt: no such file (a list of logs, one path per line)\n"
    (tmp_path / "dir").mkdir()
    code, _, err = run_cli(["check", "@dir", "--budget", budget], capsys)
    assert code == EXIT_USAGE and err == "memledger: error: dir: is a folder, not a list of logs\n"
