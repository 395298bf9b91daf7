"""The Python API: lazy package exports, typed ledgers, diff, check and assert_budget."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings
from datetime import date
from pathlib import Path

import pytest

import memledger
from memledger import testing as memledger_testing
from memledger.api import BudgetFailure, BudgetWarning, assert_budget, check
from memledger.checking.budget import parse_budget
from memledger.cli import main
from memledger.errors import ConfigError, InputError
from memledger.model.check import CheckStatus
from tests.check.helpers import base_ledger, head_ledger, save_ledger, write
from tests.conftest import REAL_LOGS, SAMPLES, unwrapped

TODAY = date(2026, 11, 5)
SAMPLES_DP2 = str(SAMPLES / "dp2.log")
SAMPLES_DP16 = str(SAMPLES / "dp16.log")
FAILING = '[[budget]]\nitem = "kv_tokens_per_instance"\nmin = 52_000_000\n'  # head: 51.0 M
WARN = '[[budget]]\nitem = "slots"\nmax = 32\nlevel = "warn"\n'  # head: 33


def test_import_is_lazy() -> None:
    # `import memledger` must not pull in pydantic or the API (keeps `memledger --help` fast).
    code = (
        "import sys, memledger; "
        "print(sorted(m for m in ('pydantic', 'memledger.api', 'tabulate') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_every_export_resolves() -> None:
    for name in memledger.__all__:
        assert getattr(memledger, name) is not None, name
    assert set(memledger.__all__) == set(memledger._EXPORTS) | {"__version__", "ledger"}
    with pytest.raises(AttributeError):
        memledger.no_such_thing  # noqa: B018


def test_ledger_is_the_api_function_and_models_live_apart() -> None:
    import memledger.model.ledger as ledger_model

    assert ledger_model.Ledger is memledger.Ledger
    assert ledger_model.Summary is memledger.Summary
    built = head_ledger()
    assert memledger.ledger(built) is built  # a Ledger passes through
    assert "ledger" in (memledger.ledger.__doc__ or "")


def test_summary_sizes_compare_in_gib(tmp_path: Path) -> None:
    saved = save_ledger(tmp_path, "head.json", head_ledger())
    cuda_graph = memledger.ledger(saved).summary.cuda_graph_gib  # sizes are bytes; *_gib views
    assert cuda_graph is not None and cuda_graph < 8
    assert memledger.ledger(str(saved)).summary.kv_tokens_per_instance == 51_000_000
    with saved.open("rb") as stream:
        assert memledger.ledger(stream).summary.slots == 33


def test_check_returns_a_report_without_raising(tmp_path: Path) -> None:
    budget = write(tmp_path, "memledger.toml", FAILING)
    report = check(head_ledger(), budget=budget, today=TODAY)
    assert report.exit_code == 1
    assert [c.status for c in report.checks] == [CheckStatus.FAIL]
    # Several sources, a Budget object, and a baseline ledger.
    both = check(
        [head_ledger("a.log"), base_ledger("b.log")],
        budget=parse_budget(FAILING),
        baseline=base_ledger(),
        today=TODAY,
    )
    assert [(c.log, c.status) for c in both.checks] == [
        ("a.log", CheckStatus.FAIL),
        ("b.log", CheckStatus.PASS),
    ]
    assert both.baseline.source is not None


def test_check_finds_memledger_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="no budget file"):
        check(head_ledger())
    write(tmp_path, "memledger.toml", FAILING)
    assert check(head_ledger(), today=TODAY).budget_path == "memledger.toml"


def test_check_missing_baseline_path_is_no_comparison(tmp_path: Path) -> None:
    budget = parse_budget('[[budget]]\nitem = "fixed_overhead"\nmax_increase_pct = 1\n')
    report = check(head_ledger(), budget, tmp_path / "absent.json", today=TODAY)
    assert report.exit_code == 0
    assert report.baseline.source is None
    assert report.baseline.note is not None and "not found: no comparison" in report.baseline.note


def test_assert_budget_fails_with_the_cli_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = write(tmp_path, "memledger.toml", FAILING)
    saved = save_ledger(tmp_path, "head.json", head_ledger())
    with pytest.raises(BudgetFailure) as caught:
        assert_budget(saved, budget=budget, today=TODAY)
    assert isinstance(caught.value, AssertionError)
    main(["check", str(saved), "--budget", str(budget)])
    cli_breach = unwrapped(capsys.readouterr().out).splitlines()[1]
    assert str(caught.value) == cli_breach
    assert caught.value.report.exit_code == 1


def test_assert_budget_passes_and_warns(tmp_path: Path) -> None:
    budget = write(tmp_path, "memledger.toml", WARN)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = memledger_testing.assert_budget(head_ledger(), budget=budget, today=TODAY)
    assert report.exit_code == 0
    assert [type(w.message) for w in caught] == [BudgetWarning]
    assert str(caught[0].message).startswith("WARN slots [logs/head.log]: 33 > max 32")
    with pytest.raises(BudgetFailure, match="^WARN slots"):
        assert_budget(head_ledger(), budget=budget, today=TODAY, strict=True)


def test_assert_budget_reports_missing_items() -> None:
    budget = parse_budget('[[budget]]\nitem = "draft_slot_map"\nmax = "1 GiB"\n')
    with pytest.raises(BudgetFailure, match="^MISSING draft_slot_map"):
        assert_budget(head_ledger(), budget=budget, today=TODAY)


def test_diff_two_ledgers() -> None:
    result = memledger.diff(base_ledger(), head_ledger())
    assert isinstance(result, memledger.LedgerDiff)


def test_bad_sources_raise_memledger_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        memledger.ledger(tmp_path / "absent.log")
    with pytest.raises(ConfigError):
        check(head_ledger(), budget=write(tmp_path, "bad.toml", "[[budget]\n"))


# --- parsing a real log (read in place; facts from truth.jsonl, checked by hand) ---------------

QWEN_3090 = REAL_LOGS / "single" / "001-docker-r1-distill-qwen7b-3090.log"


def _load_begin_avail(parsed: memledger.ParsedLog) -> float:
    event = next(e for e in parsed.startup.events if e.kind == memledger.EventKind.LOAD_BEGIN)
    size = event.size("avail")
    assert size is not None
    return size.gib


@pytest.mark.real_logs
def test_load_path_text_and_streams_agree() -> None:
    text = QWEN_3090.read_text(encoding="utf-8")
    from_path = memledger.load(QWEN_3090)
    from_text = memledger.load_text(text)
    with QWEN_3090.open("rb") as binary:
        from_binary = memledger.load(binary)
    from_str_stream = memledger.load(io.StringIO(text))
    # truth.jsonl: one startup, ready, "Load weight begin. avail mem=22.76 GB" (GiB).
    for parsed in (from_path, from_text, from_binary, from_str_stream):
        assert (parsed.n_startups, parsed.startup.outcome) == (1, "ready")
        assert _load_begin_avail(parsed) == pytest.approx(22.76)
        assert parsed.startup.events == from_path.startup.events
    assert from_path.path == str(QWEN_3090)
    assert from_text.path == "<text>"


@pytest.mark.real_logs
def test_load_selects_rank_and_rejects_unknown_ones() -> None:
    assert memledger.load(QWEN_3090, rank="TP0").startup.rank == "TP0"
    with pytest.raises(InputError):
        memledger.load(QWEN_3090, rank="TP7")


def test_a_mistyped_row_id_is_an_error_naming_the_rows() -> None:
    # review m13: `ledger.row("typo").evidence` was an AttributeError on None
    ledger = memledger.ledger(SAMPLES_DP2)
    assert ledger["req_to_token"] is ledger.row("req_to_token")
    with pytest.raises(KeyError) as raised:
        ledger["req_to_tokn"]
    assert isinstance(raised.value, memledger.NoSuchRowError)
    message = str(raised.value)
    assert message.startswith(f"no row 'req_to_tokn' in the ledger of {SAMPLES_DP2}; its rows: ")
    assert "req_to_token" in message.split("its rows: ")[1].split(", ")
    assert ledger.row("req_to_tokn") is None  # the optional lookup stays


def test_row_access_is_the_same_on_a_ledger_a_diff_and_a_whatif() -> None:
    # review m13: `[...]` raises NoSuchRowError naming what exists, `.row(...)` returns None
    diff = memledger.diff(SAMPLES_DP16, SAMPLES_DP2)
    assert diff["kv_pool"] is diff.row("kv_pool") and diff["kv_pool"].delta_bytes is not None
    with pytest.raises(memledger.NoSuchRowError, match=r"no row 'kv_pol' in the diff; its rows: "):
        diff["kv_pol"]
    assert diff.row("kv_pol") is None
    answer = memledger.whatif(SAMPLES_DP2, mem_fraction_static=0.85)
    assert answer["KV tokens per rank"] is answer.row("KV tokens per rank")
    with pytest.raises(memledger.NoSuchRowError) as raised:
        answer["KV tokens"]
    assert str(raised.value).startswith(
        f"no row 'KV tokens' in the what-if of {SAMPLES_DP2}; its rows: "
    )
    assert "KV tokens per rank" in str(raised.value)
    assert answer.row("KV tokens") is None
