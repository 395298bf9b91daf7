"""`memledger check` and the API end to end on the article's samples and on real logs.

Expected outcomes come from the seed article's figures (per card, rank 0): KV tokens per instance
51.1 M (DP16) vs 43.0 M (DP2 x DCP8), fixed overhead DP16 = DP2 - 10.4 GiB, CUDA graphs
DP16 = DP2 - 5.9 GiB; samples/budget.toml puts its limits between the two deployments.
"""

from __future__ import annotations

import json
import warnings
from datetime import date
from pathlib import Path

import pytest

import memledger
from memledger.cli import main
from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK
from memledger.model.check import CheckStatus
from memledger.units import GIB
from tests.check.helpers import write
from tests.conftest import REAL_LOGS, SAMPLES, ledger_for, run_cli, unwrapped

DP16 = SAMPLES / "dp16.log"
DP2 = SAMPLES / "dp2.log"
BUDGET = SAMPLES / "budget.toml"
TODAY = date(2026, 11, 5)


@pytest.fixture(scope="module")
def ledgers() -> dict[str, memledger.Ledger]:
    return {"dp16": ledger_for(DP16), "dp2": ledger_for(DP2)}


def test_sample_budget_passes_for_dp16(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["check", DP16, "--budget", BUDGET], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out.startswith("memledger check: PASS (exit 0) -- 6 passed of 6 checks on 1 log")


def test_sample_budget_fails_for_dp2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["check", DP2, "--budget", BUDGET], capsys)
    assert code == EXIT_BUDGET_FAILED
    breaches = [line.split(" [")[0] for line in unwrapped(out).splitlines()[1:4]]
    # 43.0 M < 45 M tokens and the larger fixed overhead fail; CUDA graphs above 10 GiB warn.
    assert breaches == ["FAIL kv_tokens_per_instance", "FAIL fixed_overhead", "WARN cuda_graph"]


def test_both_samples_in_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["check", DP16, DP2, "--budget", BUDGET, "--format", "json"], capsys)
    document = json.loads(out)
    failing = {(c["log"], c["item"]) for c in document["checks"] if c["status"] == "fail"}
    assert failing == {(str(DP2), "kv_tokens_per_instance"), (str(DP2), "fixed_overhead")}
    assert code == EXIT_BUDGET_FAILED


def test_figures_behind_the_budget_match_the_article(ledgers: dict[str, memledger.Ledger]) -> None:
    dp16, dp2 = ledgers["dp16"].summary, ledgers["dp2"].summary
    assert dp16.kv_tokens_per_instance == pytest.approx(51.1e6, rel=0.01)
    assert dp2.kv_tokens_per_instance == pytest.approx(43.0e6, rel=0.01)
    assert dp2.fixed_overhead is not None and dp16.fixed_overhead is not None
    assert (dp2.fixed_overhead - dp16.fixed_overhead) / GIB == pytest.approx(10.4, abs=0.05)
    assert dp2.cuda_graph is not None and dp16.cuda_graph is not None
    assert (dp2.cuda_graph - dp16.cuda_graph) / GIB == pytest.approx(5.9, abs=0.05)


def test_relative_budget_dp2_against_dp16(tmp_path: Path) -> None:
    # The article's 10.4 GiB fixed-overhead gap is +9 % of DP16's: it breaches 0.5 GiB AND 5 %.
    budget = memledger.parse_budget(
        '[[budget]]\nitem = "fixed_overhead"\nmax_increase = "0.5 GiB"\nmax_increase_pct = 5\n'
    )
    report = memledger.check(DP2, budget, baseline=DP16, today=TODAY)
    (check,) = report.checks
    assert check.status is CheckStatus.FAIL
    assert check.increase is not None
    assert check.increase / 2**30 == pytest.approx(10.4, abs=0.05)
    # The same baseline from a saved ledger JSON gives the same check.
    saved = tmp_path / "dp16.json"
    assert main(["ledger", str(DP16), "--format", "json", "-o", str(saved)]) == EXIT_OK
    again = memledger.check(DP2, budget, baseline=saved, today=TODAY)
    assert again.checks[0].increase == check.increase
    assert again.baseline.path == str(saved)


def test_item_a_sample_cannot_provide(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # DP16 has no decode context parallelism: no replicated-Q row (the article: "none").
    budget = write(tmp_path, "b.toml", '[[budget]]\nitem = "dcp_q_replica"\nmax = "1 GiB"\n')
    code, out, _ = run_cli(["check", DP16, "--budget", budget], capsys)
    assert code == EXIT_INPUT
    assert f"MISSING dcp_q_replica [{DP16}]: this log cannot provide dcp_q_replica" in unwrapped(
        out
    )
    # DP2 x DCP8 has one, but its formula needs the model's MLA layer count.
    code, out, _ = run_cli(["check", DP2, "--budget", budget], capsys)
    assert code == EXIT_INPUT and "pass --model-config config.json" in unwrapped(out)
    config = SAMPLES / "k3-config.json"
    code, out, _ = run_cli(["check", DP2, "--budget", budget, "--model-config", config], capsys)
    assert code == EXIT_OK
    assert "0.91 GiB <= max 1.00 GiB" in out  # the article: 0.91 GiB


@pytest.mark.real_logs
def test_crashed_real_log_is_a_startup_fail_not_missing_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # truth.jsonl: this startup crashed during graph capture (capture_end_* are null).
    # Issue 11: a crashed startup is a FAIL (exit 1) naming the phase, not MISSING items (exit 3).
    log = REAL_LOGS / "single" / "007-kimi-k25-tp8-mi355x-crash-capture.log"
    budget = write(tmp_path, "b.toml", '[[budget]]\nitem = "cuda_graph"\nmax = "20 GiB"\n')
    code, out, _ = run_cli(["check", log, "--budget", budget], capsys)
    assert code == EXIT_BUDGET_FAILED
    assert "FAIL startup" in out and "[phase graph_capture, shortfall unknown]" in out
    assert "MISSING cuda_graph" not in out


def test_log_not_understood_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_sglang = write(tmp_path, "nginx.log", "GET / HTTP/1.1 200\n" * 5)
    code, out, err = run_cli(["check", not_sglang, "--budget", BUDGET], capsys)
    assert (code, out) == (EXIT_INPUT, "")
    assert err.startswith(f"memledger: error: {not_sglang}") and err.count("\n") == 1


def test_api_on_the_samples(ledgers: dict[str, memledger.Ledger]) -> None:
    assert memledger.ledger(str(DP16)).summary == ledgers["dp16"].summary
    parsed = memledger.load(DP2)
    assert memledger.ledger(parsed).summary == ledgers["dp2"].summary
    from_text = memledger.ledger(memledger.load_text(DP2.read_text(encoding="utf-8")))
    assert from_text.summary == ledgers["dp2"].summary
    diff = memledger.diff(DP16, DP2)
    assert isinstance(diff, memledger.LedgerDiff)


def test_assert_budget_on_the_samples(capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        memledger.assert_budget(DP16, budget=BUDGET, today=TODAY)
        with pytest.raises(memledger.BudgetFailure) as caught:
            memledger.assert_budget(DP2, budget=BUDGET, today=TODAY)
    main(["check", str(DP2), "--budget", str(BUDGET)])
    cli_out = unwrapped(capsys.readouterr().out)
    cli_lines = [line for line in cli_out.splitlines() if line.startswith("FAIL")]
    assert str(caught.value).splitlines() == cli_lines
