"""`memledger check --grammar FILE`: a fork's own lines become ledger rows a budget can name.

The fork log is samples/dp16.log with rank 0's target staging-pool line replaced by the
`--grammar` example of docs/parse.md (`MyFork staging buffer ready: ... total=512.0 MiB`), so
without the example grammar rank 0 has no weight staging row, and with it the row is the
512 MiB the line prints.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import memledger
from memledger.app.load import load_ledger
from memledger.app.options import LoadOptions
from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.units import MIB
from tests.conftest import PROJECT_ROOT, SAMPLES, run_cli

PARSE_DOCS = PROJECT_ROOT / "docs" / "parse.md"
FORK_STAGING = 512 * MIB
"""`total=512.0 MiB` in the docs' fork line."""
RANK0_TARGET_STAGING = re.compile(
    r"^(\[[^\]]* DP0 TP0 EP0\]) FlatAGStagingPool allocated: role=target, .*$", re.M
)
WITHIN = 'version = 1\n[[budget]]\nitem = "weight_staging"\nmax = "1.5 GiB"\n'
TIGHT = 'version = 1\n[[budget]]\nitem = "weight_staging"\nmax = "256 MiB"\n'


@pytest.fixture
def fork(tmp_path: Path) -> tuple[Path, Path]:
    """The fork log and the docs' extension grammar."""
    docs = PARSE_DOCS.read_text()
    grammar = re.search(r"```lark\n(.*?)```", docs, re.S)
    line = re.search(r"^\[2026-11-05 10:12:50 TP0\] (MyFork .*)$", docs, re.M)
    assert grammar and line
    extra = tmp_path / "extra.lark"
    extra.write_text(grammar.group(1))
    log_text, replaced = RANK0_TARGET_STAGING.subn(
        lambda m: f"{m.group(1)} {line.group(1)}", (SAMPLES / "dp16.log").read_text()
    )
    assert replaced == 1
    log = tmp_path / "fork.log"
    log.write_text(log_text)
    return log, extra


def budget(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "budget.toml"
    path.write_text(text)
    return path


def test_the_fork_line_is_a_budgeted_row_only_with_the_grammar(
    fork: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, extra = fork
    within = budget(tmp_path, WITHIN)
    code, out, _ = run_cli(["check", log, "--budget", within], capsys)
    assert code == EXIT_INPUT
    assert f"MISSING weight_staging [{log}]" in out
    code, out, err = run_cli(
        ["check", log, "--budget", within, "--grammar", extra, "--format", "json"], capsys
    )
    assert (code, err) == (EXIT_OK, "")
    [check] = json.loads(out)["checks"]
    assert (check["status"], check["actual"]) == ("pass", FORK_STAGING)
    code, out, _ = run_cli(
        ["check", log, "--budget", budget(tmp_path, TIGHT), "--grammar", extra], capsys
    )
    assert code == EXIT_BUDGET_FAILED
    assert "FAIL weight_staging" in out and "over by 0.25 GiB" in out


def test_saved_ledgers_keep_their_rows_and_a_saved_baseline_is_not_refused(
    fork: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, extra = fork
    with_rows, without_rows = tmp_path / "with.json", tmp_path / "without.json"
    save: list[str | Path] = ["ledger", log, "--format", "json", "-o"]
    assert run_cli([*save, with_rows, "--grammar", extra], capsys)[0] == EXIT_OK
    assert run_cli([*save, without_rows], capsys)[0] == EXIT_OK
    within = budget(tmp_path, WITHIN)
    # The CI recipe: the PR's log against the base branch's saved ledger, one --grammar for both.
    argv: list[str | Path] = ["check", log, with_rows, "--baseline", with_rows, "--budget", within]
    code, out, err = run_cli([*argv, "--grammar", extra, "--format", "json"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert [c["actual"] for c in json.loads(out)["checks"]] == [FORK_STAGING, FORK_STAGING]
    # A ledger saved without the grammar keeps lacking the row: the grammar is not re-applied.
    code, out, _ = run_cli(["check", without_rows, "--budget", within, "--grammar", extra], capsys)
    assert code == EXIT_INPUT and "MISSING weight_staging" in out
    # `ledger` (one input, nothing to mix) still refuses it, as before.
    code, _, err = run_cli(["ledger", with_rows, "--grammar", extra], capsys)
    assert code == EXIT_USAGE and "--grammar cannot apply to a saved ledger" in err
    noted = load_ledger(with_rows, LoadOptions(grammars=(extra,), saved_ledger_skips_grammars=True))
    assert f"grammars not applied ({extra}): a saved ledger keeps the rows it was built with" in (
        noted.notes
    )


def test_python_api_takes_extra_grammars(fork: tuple[Path, Path], tmp_path: Path) -> None:
    log, extra = fork
    within = budget(tmp_path, WITHIN)
    assert memledger.check(log, within).exit_code == EXIT_INPUT
    assert memledger.check(log, within, grammars=[str(extra)]).exit_code == EXIT_OK
    tight = memledger.parse_budget(TIGHT)
    assert memledger.check(log, tight, grammars=[extra]).exit_code == EXIT_BUDGET_FAILED
    with pytest.raises(memledger.BudgetFailure, match="FAIL weight_staging"):
        memledger.assert_budget(log, tight, grammars=[extra])
    staging = memledger.ledger(log, grammars=[extra]).row("weight_staging")
    assert staging is not None and staging.bytes == FORK_STAGING
    assert memledger.ledger(log).row("weight_staging") is None
    diff = memledger.diff(SAMPLES / "dp16.log", log, grammars=[extra])
    row = next(r for r in diff.rows if r.id == "weight_staging")
    assert (row.base_bytes, row.head_bytes) == (1196 * MIB, FORK_STAGING)
