"""`memledger check` end to end on saved ledgers: every exit code, outputs, step summary."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK, EXIT_USAGE
from tests.check.helpers import base_ledger, head_ledger, save_ledger, write
from tests.conftest import run_cli, unwrapped

PASSING = '[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB"\n'  # 7.50 GiB
FAILING = (
    '[[budget]]\nitem = "kv_tokens_per_instance"\nmin = 52_000_000\n'  # 51.0 M
    'message = "KV capacity below target"\n'
)
WARN_ONLY = '[[budget]]\nitem = "slots"\nmax = 32\nlevel = "warn"\n'  # 33 slots
WAIVER = (
    '[[budget]]\nitem = "slots"\nmax = 32\n'
    'waived_until = 2026-12-31\nreason = "bs list grows, #123"\n'
)
RELATIVE = '[[budget]]\nitem = "fixed_overhead"\nmax_increase = "0.25 GiB"\nmax_increase_pct = 2\n'
MISSING_ITEM = '[[budget]]\nitem = "draft_slot_map"\nmax = "1 GiB"\n'


@pytest.fixture
def head(tmp_path: Path) -> Path:
    return save_ledger(tmp_path, "head.json", head_ledger())


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return save_ledger(tmp_path, "base.json", base_ledger())


def test_exit_0_for_a_passing_budget(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", PASSING)
    code, out, err = run_cli(["check", head, "--budget", budget], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out.startswith("memledger check: PASS (exit 0) -- 1 passed of 1 check on 1 log")


def test_exit_1_for_a_failing_budget(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", FAILING + PASSING)
    code, out, _ = run_cli(["check", head, "--budget", budget], capsys)
    assert code == EXIT_BUDGET_FAILED
    first_breach = unwrapped(out).splitlines()[1]
    assert first_breach == (
        f"FAIL kv_tokens_per_instance [{head}]: 51,000,000 < min 52,000,000 "
        "(short by 1,000,000) -- KV capacity below target"
    )


def test_warn_only_exits_0_and_strict_exits_1(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", WARN_ONLY)
    code, out, _ = run_cli(["check", head, "--budget", budget], capsys)
    assert code == EXIT_OK and "WARN slots" in out
    code, _, _ = run_cli(["check", head, "--budget", budget, "--strict"], capsys)
    assert code == EXIT_BUDGET_FAILED


def test_waiver_and_expired_waiver_by_date(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", WAIVER)
    code, out, _ = run_cli(["check", head, "--budget", budget, "--today", "2026-12-31"], capsys)
    assert code == EXIT_OK and "WAIVED slots" in out
    code, out, _ = run_cli(["check", head, "--budget", budget, "--today", "2027-01-01"], capsys)
    assert code == EXIT_BUDGET_FAILED
    assert "EXPIRED slots" in out and "waiver expired 2026-12-31 (bs list grows, #123)" in out


def test_relative_budget_against_a_saved_baseline(
    tmp_path: Path, head: Path, base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # fixed_overhead 10.50 vs 10.00 GiB: +0.50 GiB and +5 % exceed 0.25 GiB and 2 %.
    budget = write(tmp_path, "b.toml", RELATIVE)
    code, out, _ = run_cli(["check", head, "--budget", budget, "--baseline", base], capsys)
    assert code == EXIT_BUDGET_FAILED
    assert "+0.50 GiB (+5.0%) vs baseline 10.00 GiB > max_increase +0.25 GiB and +2%" in out
    assert f"baseline: {base} (startup 0, rank DP0 TP0 EP0)" in unwrapped(out)


def test_missing_baseline_is_a_warning_not_an_error(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", RELATIVE)
    absent = tmp_path / "base-branch" / "ledger.json"
    code, out, err = run_cli(["check", head, "--budget", budget, "--baseline", absent], capsys)
    assert (code, err) == (EXIT_OK, "")
    # a warning since issue 13 (a mistyped path must be seen), still exit 0
    assert f"warning: baseline {absent} not found: no comparison" in unwrapped(out)
    assert "note: baseline" not in out


def test_exit_2_for_a_malformed_budget_with_file_and_line(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", PASSING + '[[budget]]\nitem = "slots"\nmax = "lots"\n')
    code, out, err = run_cli(["check", head, "--budget", budget], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert err == (
        f"memledger: error: {budget}:6: max for 'slots' must be a plain number "
        "(slots is a count), not 'lots'\n"
    )


def test_exit_2_for_bad_toml_and_bad_options(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", "[[budget]\n")
    code, _, err = run_cli(["check", head, "--budget", budget], capsys)
    assert code == EXIT_USAGE and err.startswith(f"memledger: error: {budget}:1: malformed TOML")
    code, _, _ = run_cli(["check", head, "--budget", budget, "--format", "yaml"], capsys)
    assert code == EXIT_USAGE
    code, _, _ = run_cli(["check", "--budget", budget], capsys)  # no LOG
    assert code == EXIT_USAGE


def test_exit_2_without_any_budget_file(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["check", head], capsys)
    assert code == EXIT_USAGE and "no budget file: pass --budget FILE" in err


def test_memledger_toml_is_found_in_the_working_directory(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "memledger.toml", FAILING)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(["check", head], capsys)
    assert code == EXIT_BUDGET_FAILED and "budget memledger.toml" in out.splitlines()[0]


def test_exit_3_for_an_item_the_log_cannot_provide(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", MISSING_ITEM)
    code, out, _ = run_cli(["check", head, "--budget", budget], capsys)
    assert code == EXIT_INPUT
    assert "MISSING draft_slot_map" in out and "needs dspark_slot_map" in out


def test_exit_3_for_a_log_that_is_not_understood(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", PASSING)
    code, out, err = run_cli(["check", tmp_path / "absent.log", "--budget", budget], capsys)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == f"memledger: error: {tmp_path / 'absent.log'}: no such file\n"
    not_a_ledger = write(tmp_path, "other.json", '{"hello": 1}')
    code, _, err = run_cli(["check", not_a_ledger, "--budget", budget], capsys)
    assert code == EXIT_INPUT and "not a saved ledger" in err


def test_github_format_appends_the_step_summary(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = write(tmp_path, "step_summary.md", "# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    budget = write(tmp_path, "b.toml", FAILING)
    code, out, _ = run_cli(["check", head, "--budget", budget, "--format", "github"], capsys)
    assert code == EXIT_BUDGET_FAILED
    assert out.startswith(f"::error file={budget},line=1,title=memledger%3A ")
    text = summary.read_text()
    assert text.startswith("# earlier step\n<!-- memledger-check -->\n")  # appended, not replaced
    assert "| ❌ fail | `kv_tokens_per_instance` |" in text
    # Other formats leave the summary alone.
    run_cli(["check", head, "--budget", budget, "--format", "text"], capsys)
    assert summary.read_text() == text


def test_output_file_and_junit(
    tmp_path: Path, head: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", FAILING + PASSING)
    report = tmp_path / "junit.xml"
    code, out, _ = run_cli(
        ["check", head, "--budget", budget, "--format", "junit", "-o", report], capsys
    )
    assert (code, out) == (EXIT_BUDGET_FAILED, "")
    root = ET.parse(report).getroot()
    assert (root.get("tests"), root.get("failures")) == ("2", "1")


def test_several_logs_and_json(
    tmp_path: Path, head: Path, base: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "b.toml", FAILING)
    code, out, _ = run_cli(["check", head, base, "--budget", budget, "--format", "json"], capsys)
    document = json.loads(out)
    # head has 51.0 M tokens (fail), base 52.0 M (pass: min is inclusive).
    assert [c["status"] for c in document["checks"]] == ["fail", "pass"]
    assert [i["path"] for i in document["inputs"]] == [str(head), str(base)]
    assert code == document["exit_code"] == EXIT_BUDGET_FAILED


def test_help_documents_exit_codes_and_pct(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["check", "--help"], capsys)
    assert code == EXIT_OK
    assert (
        "3  a log not understood, a budgeted item this log cannot provide, nothing checked," in out
    )
    assert "or a --require-baseline baseline that does not exist" in out
    assert "130  interrupted" in out
    assert "(head - base) / base x 100" in out and "BOTH" in out
