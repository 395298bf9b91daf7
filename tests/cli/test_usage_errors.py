"""Usage errors are one line on stderr with exit 2, like every other error (README, Exit codes);
click's own form is three lines (Usage / Try / Error)."""

from __future__ import annotations

import pytest

from memledger.errors import EXIT_USAGE
from tests.conftest import SAMPLES, run_cli

DP16 = str(SAMPLES / "dp16.log")
DP2 = str(SAMPLES / "dp2.log")


@pytest.mark.parametrize(
    ("argv", "message", "hint"),
    [
        (
            ["ledger", DP16, "--format", "yaml"],
            "Invalid value for '--format': 'yaml' is not one of 'text', 'markdown', 'json', 'csv', "
            "'html'",
            "(see 'memledger ledger --help')",
        ),
        (
            ["diff", DP16, DP2, "--max-chars", "1000"],
            "Invalid value for '--max-chars': 1000 is not in the range x>=2000",
            "(see 'memledger diff --help')",
        ),
        (
            ["check", DP16, "--startup", "x"],
            "Invalid value for '--startup': 'x' is not a valid integer",
            "(see 'memledger check --help')",
        ),
        (["ledger", "--bogus"], "No such option '--bogus'", "(see 'memledger ledger --help')"),
        (["nosuch"], "No such command 'nosuch'", "(see 'memledger --help')"),
        (["ledger"], "Missing argument 'LOG...'", "(usage: memledger ledger [OPTIONS] LOG...)"),
        # HEAD may be left out for `diff LOG --against-release X` and `diff SAVED_DIFF.json`: the
        # same message, every usage
        (
            ["diff", DP16],
            "Missing argument 'HEAD'",
            "(usage: memledger diff [OPTIONS] BASE HEAD, or memledger diff [OPTIONS] LOG "
            "--against-release X.Y.Z, or memledger diff SAVED_DIFF.json)",
        ),
    ],
)
def test_a_usage_error_is_one_line_with_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str, hint: str
) -> None:
    code, out, err = run_cli(argv, capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert err == f"memledger: error: {message} {hint}\n"


def test_a_did_you_mean_stays_on_the_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["ledger", DP16, "--formt", "json"], capsys)
    assert code == EXIT_USAGE
    assert err.count("\n") == 1
    assert "No such option '--formt'" in err and "'--format'" in err


def test_the_group_alone_still_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli([], capsys)
    assert code == EXIT_USAGE
    assert "Commands:" in out + err and "Exit codes:" in out + err
