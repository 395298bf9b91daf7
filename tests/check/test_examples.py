"""The example budgets (the CI recipe itself: tests/check/test_ci_recipe.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from memledger.checking.budget import IfAbsent, load_budget
from memledger.checking.evaluate import check_budget
from memledger.cli import main
from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK, ConfigError
from memledger.model.check import CheckStatus
from memledger.model.ledger import Ledger
from memledger.units import GIB
from tests.conftest import PROJECT_ROOT, SAMPLES, ledger_for, real_log_paths, unwrapped

EXAMPLE_BUDGET = PROJECT_ROOT / "examples" / "memledger.toml"
DP16 = SAMPLES / "dp16.log"
DP2 = SAMPLES / "dp2.log"
BUDGET = SAMPLES / "budget.toml"


def test_example_budget_loads() -> None:
    budget = load_budget(EXAMPLE_BUDGET)
    assert [entry.item for entry in budget.entries] == [
        "kv_tokens_per_instance",
        "runtime_headroom",
        "cuda_graph",
        "weight_staging",
        "fixed_overhead",
        "req_to_token",
    ]
    assert all(entry.message for entry in budget.entries)  # the [defaults] message fills in


# --- absence: what a budgeted item the ledger lacks means ------------------------------------

SHIPPED_BUDGETS = [BUDGET, EXAMPLE_BUDGET]


@pytest.mark.parametrize("budget_path", SHIPPED_BUDGETS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("log", real_log_paths(), ids=lambda p: p.name)
def test_shipped_budgets_work_on_every_real_log(budget_path: Path, log: Path) -> None:
    # a complete startup gets an honest pass or fail; only a startup that stopped early may
    # leave a budgeted item missing (exit 3), and then the note says where it stopped
    ledger = ledger_for(log)
    report = check_budget(load_budget(budget_path), [(str(log), ledger)], today=date(2026, 12, 1))
    missing = [c for c in report.checks if c.status is CheckStatus.MISSING]
    if ledger.stopped_at is None:
        assert missing == [], [c.note for c in missing]
        assert report.exit_code in {EXIT_OK, EXIT_BUDGET_FAILED}
    else:
        assert report.exit_code == EXIT_INPUT or not missing
        # a startup that never finished is one missing `startup` check (review 3, finding 4)
        unfinished = [c for c in missing if c.item == "startup"]
        assert len(unfinished) == (ledger.outcome == "truncated")
        assert all((c.note or "").startswith("startup did not finish: ") for c in unfinished)
        others = [c for c in missing if c.item != "startup"]
        assert all("the startup stopped " in (c.note or "") for c in others)


def _budget_file(tmp_path: Path, if_absent: str | None, item: str = "weight_staging") -> Path:
    line = "" if if_absent is None else f'if_absent = "{if_absent}"\n'
    path = tmp_path / "b.toml"
    path.write_text(f'version = 1\n[[budget]]\nitem = "{item}"\nmax = "1 GiB"\n{line}')
    return path


def _no_staging_ledger() -> Ledger:
    # dp16 with its fork-only staging rows removed: what an upstream SGLang ledger looks like
    ledger = ledger_for(DP16)
    summary = replace(ledger.summary, weight_staging=None)
    rows = [row for row in ledger.rows if row.id != "weight_staging" and "staging" not in row.id]
    return replace(ledger, summary=summary, rows=rows)


@pytest.mark.parametrize(
    ("if_absent", "status", "exit_code", "note"),
    [
        (None, CheckStatus.MISSING, EXIT_INPUT, "this log cannot provide weight_staging"),
        ("missing", CheckStatus.MISSING, EXIT_INPUT, "this log cannot provide weight_staging"),
        ("skip", CheckStatus.SKIPPED, EXIT_OK, 'not in this log (if_absent = "skip")'),
        ("zero", CheckStatus.PASS, EXIT_OK, 'counted as 0 (if_absent = "zero")'),
    ],
)
def test_an_entry_says_what_absence_means(
    tmp_path: Path, if_absent: str | None, status: CheckStatus, exit_code: int, note: str
) -> None:
    budget = load_budget(_budget_file(tmp_path, if_absent))
    report = check_budget(budget, [("up.log", _no_staging_ledger())], today=date(2026, 12, 1))
    [check] = report.checks
    assert (check.status, report.exit_code) == (status, exit_code)
    assert check.note is not None and check.note.startswith(note)
    if if_absent == "zero":
        assert check.actual == 0 and check.margin == GIB


def test_absence_semantics_never_wave_through_a_startup_that_stopped(tmp_path: Path) -> None:
    stopped = replace(_no_staging_ledger(), stopped_at="after load_end (line 9)")
    for if_absent in ("skip", "zero"):
        budget = load_budget(_budget_file(tmp_path, if_absent))
        report = check_budget(budget, [("crash.log", stopped)], today=date(2026, 12, 1))
        assert [c.status for c in report.checks] == [CheckStatus.MISSING]
        assert report.exit_code == EXIT_INPUT


def test_if_absent_is_validated_and_works_from_defaults(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match='if_absent must be "missing", "skip" or "zero"'):
        load_budget(_budget_file(tmp_path, "ignore"))
    path = tmp_path / "d.toml"
    path.write_text(
        'version = 1\n[defaults]\nif_absent = "skip"\n'
        '[[budget]]\nitem = "weight_staging"\nmax = "1 GiB"\n'
    )
    assert load_budget(path).entries[0].if_absent is IfAbsent.SKIP


@pytest.mark.parametrize("fmt", ["text", "github", "json", "junit", "markdown"])
def test_a_mistyped_baseline_is_a_warning_in_every_format(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # a budget without relative limits too: the typo must still be seen
    code = main(
        ["check", str(DP16), "--budget", str(BUDGET), "--baseline", "basline.json"]
        + ["--format", fmt]
    )
    out = capsys.readouterr().out
    assert code == EXIT_OK  # a warning, not a failure
    warning = "baseline basline.json not found: no comparison"
    expected = {
        "text": f"warning: {warning}",
        "github": f"title=memledger%3A baseline not found::{warning}",
        "json": f'"warnings": [\n    "{warning}',
        "junit": f'<property name="warning" value="{warning}',
        "markdown": f"> ⚠️ {warning}",
    }[fmt]
    assert expected in unwrapped(out), out[:1500]
    if fmt == "text":
        assert unwrapped(out).splitlines()[1].startswith("warning: ")  # right under the verdict
