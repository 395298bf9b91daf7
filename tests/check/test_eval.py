"""Evaluating budgets on hand-built ledgers: statuses, margins, waivers, baselines, exit codes."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memledger.checking.budget import Budget, BudgetEntry, parse_budget
from memledger.checking.evaluate import check_budget, read_item
from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK
from memledger.model.check import Bound, CheckReport, CheckStatus, ItemKind
from memledger.model.ledger import Ledger
from memledger.record import to_json, validate_json
from memledger.units import GIB
from tests.check.helpers import (
    BASE_SUMMARY,
    CENTI,
    HEAD_SUMMARY,
    base_ledger,
    head_ledger,
    make_ledger,
)

TODAY = date(2026, 11, 5)


def budget(text: str) -> Budget:
    return parse_budget("version = 1\n" + text, path="memledger.toml")


def run(
    text: str,
    ledger: Ledger | None = None,
    *,
    baseline: Ledger | None = None,
    strict: bool = False,
    today: date = TODAY,
) -> CheckReport:
    target = ledger or head_ledger()
    return check_budget(
        budget(text),
        [("logs/head.log", target)],
        today=today,
        baseline=baseline,
        strict=strict,
    )


def only(report: CheckReport) -> tuple[CheckStatus, int]:
    (check,) = report.checks
    return check.status, report.exit_code


def test_passing_budget_exits_0_with_headroom() -> None:
    report = run('[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB"\n')
    (check,) = report.checks
    assert (check.status, report.exit_code) == (CheckStatus.PASS, EXIT_OK)
    # The exact row bytes (750 hundredths of a GiB) are used, not the rounded summary float.
    assert check.actual == 750 * CENTI
    assert check.margin == 8 * GIB - 750 * CENTI
    assert check.tighten_to is None  # 0.5 / 8 = 6 % headroom: not "far below"


def test_failing_min_budget_exits_1_with_negative_margin() -> None:
    report = run('[[budget]]\nitem = "kv_tokens_per_instance"\nmin = 52_000_000\n')
    (check,) = report.checks
    assert (check.status, report.exit_code) == (CheckStatus.FAIL, EXIT_BUDGET_FAILED)
    assert (check.actual, check.limit, check.margin) == (51_000_000, 52_000_000, -1_000_000)


def test_count_with_a_fraction() -> None:
    report = run('[[budget]]\nitem = "mem_fraction_static"\nmax = 0.85\n')
    (check,) = report.checks
    assert (check.status, check.actual) == (CheckStatus.FAIL, 0.88)
    assert check.margin == pytest.approx(-0.03)


def test_max_and_min_on_one_entry_give_two_checks() -> None:
    report = run('[[budget]]\nitem = "slots"\nmin = 24\nmax = 32\n')
    assert [(c.bound, c.status) for c in report.checks] == [
        (Bound.MAX, CheckStatus.FAIL),  # 33 > 32
        (Bound.MIN, CheckStatus.PASS),
    ]


def test_warn_only_breach_exits_0_unless_strict() -> None:
    text = '[[budget]]\nitem = "cuda_graph"\nmax = "7 GiB"\nlevel = "warn"\n'
    assert only(run(text)) == (CheckStatus.WARN, EXIT_OK)
    assert only(run(text, strict=True)) == (CheckStatus.WARN, EXIT_BUDGET_FAILED)


WAIVED = (
    '[[budget]]\nitem = "cuda_graph"\nmax = "7 GiB"\n'
    'waived_until = 2026-12-31\nreason = "graph bs list grows, #123"\n'
)


def test_waived_breach_exits_0_even_with_strict() -> None:
    assert only(run(WAIVED)) == (CheckStatus.WAIVED, EXIT_OK)
    assert only(run(WAIVED, strict=True)) == (CheckStatus.WAIVED, EXIT_OK)
    # The last day of the waiver still counts.
    assert only(run(WAIVED, today=date(2026, 12, 31))) == (CheckStatus.WAIVED, EXIT_OK)


def test_expired_waiver_fails_at_the_entry_level() -> None:
    assert only(run(WAIVED, today=date(2027, 1, 1))) == (
        CheckStatus.EXPIRED_WAIVER,
        EXIT_BUDGET_FAILED,
    )
    warn = WAIVED.replace('max = "7 GiB"', 'max = "7 GiB"\nlevel = "warn"')
    assert only(run(warn, today=date(2027, 1, 1))) == (CheckStatus.EXPIRED_WAIVER, EXIT_OK)
    assert only(run(warn, today=date(2027, 1, 1), strict=True))[1] == EXIT_BUDGET_FAILED


def test_waiver_on_a_passing_item_says_it_is_no_longer_needed() -> None:
    report = run(WAIVED.replace('"7 GiB"', '"8 GiB"'))
    (check,) = report.checks
    assert check.status is CheckStatus.PASS
    assert check.note is not None and "no longer needed" in check.note


# Head fixed_overhead 10.50 GiB vs base 10.00 GiB: +0.50 GiB = +5.0 %.
@pytest.mark.parametrize(
    ("limits", "status"),
    [
        ('max_increase = "0.4 GiB"\nmax_increase_pct = 4', CheckStatus.FAIL),  # both exceeded
        ('max_increase = "0.4 GiB"\nmax_increase_pct = 6', CheckStatus.PASS),  # only absolute
        ('max_increase = "0.6 GiB"\nmax_increase_pct = 4', CheckStatus.PASS),  # only percent
        ("max_increase_pct = 4", CheckStatus.FAIL),
        ("max_increase_pct = 5.5", CheckStatus.PASS),
        ('max_increase = "0.49 GiB"', CheckStatus.FAIL),
        ('max_increase = "0.51 GiB"', CheckStatus.PASS),
    ],
)
def test_relative_budget_against_baseline(limits: str, status: CheckStatus) -> None:
    report = run(f'[[budget]]\nitem = "fixed_overhead"\n{limits}\n', baseline=base_ledger())
    (check,) = report.checks
    assert check.status is status
    assert check.baseline == round(BASE_SUMMARY["fixed_overhead"] * GIB)
    assert check.increase == round(HEAD_SUMMARY["fixed_overhead"] * GIB) - round(10.0 * GIB)
    assert check.increase_pct == pytest.approx(5.0)
    assert report.exit_code == (EXIT_BUDGET_FAILED if status is CheckStatus.FAIL else EXIT_OK)


def test_relative_budget_for_counts() -> None:
    # kv tokens 51.0 M vs 52.0 M: an increase of -1 M is within any max_increase.
    report = run(
        '[[budget]]\nitem = "kv_tokens_per_instance"\nmax_increase = 0\n', baseline=base_ledger()
    )
    (check,) = report.checks
    assert (check.status, check.increase, check.margin) == (
        CheckStatus.PASS,
        -1_000_000,
        1_000_000,
    )


def test_no_baseline_skips_relative_limits_with_a_note() -> None:
    report = run('[[budget]]\nitem = "fixed_overhead"\nmax_increase_pct = 1\nmax = "12 GiB"\n')
    assert [(c.bound, c.status) for c in report.checks] == [
        (Bound.MAX, CheckStatus.PASS),
        (Bound.MAX_INCREASE, CheckStatus.SKIPPED),
    ]
    assert report.exit_code == EXIT_OK
    assert any("no baseline" in note for note in report.notes)


def test_baseline_without_the_item_skips_the_comparison() -> None:
    # no fixed overhead in the baseline: none of its rows either (cuda graphs, headroom)
    summary = {**BASE_SUMMARY, "fixed_overhead": None, "cuda_graph": None, "runtime_headroom": None}
    report = run(
        '[[budget]]\nitem = "fixed_overhead"\nmax_increase_pct = 1\n',
        baseline=make_ledger("base.log", summary),
    )
    (check,) = report.checks
    assert check.status is CheckStatus.SKIPPED
    assert check.note is not None and check.note.startswith("the baseline cannot provide")


def test_growth_from_a_zero_baseline_exceeds_any_percentage() -> None:
    report = run(
        '[[budget]]\nitem = "runtime_headroom"\nmax_increase_pct = 1000\n',
        baseline=make_ledger("base.log", {**BASE_SUMMARY, "runtime_headroom": 0.0}),
    )
    (check,) = report.checks
    assert (check.status, check.increase_pct, check.margin_pct) == (CheckStatus.FAIL, None, None)


def test_item_the_log_cannot_provide_exits_3() -> None:
    report = run('[[budget]]\nitem = "draft_slot_map"\nmax = "1 GiB"\n')
    (check,) = report.checks
    assert (check.status, report.exit_code) == (CheckStatus.MISSING, EXIT_INPUT)
    # The ledger's own reason for the unknown row is passed on.
    assert check.note is not None and "dspark_slot_map" in check.note


def test_null_summary_key_is_missing_and_names_where_the_startup_stopped() -> None:
    ledger = make_ledger(
        "crash.log",
        {**HEAD_SUMMARY, "cuda_graph": None},
        stopped_at="capture_begin (OOM)",
    )
    report = run('[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB"\n', ledger)
    (check,) = report.checks
    assert check.status is CheckStatus.MISSING
    assert check.note is not None and "capture_begin (OOM)" in check.note


def test_missing_item_outranks_a_breach() -> None:
    # Exit 3 (the check is incomplete) wins over exit 1; both are listed.
    report = run(
        '[[budget]]\nitem = "slots"\nmax = 1\n[[budget]]\nitem = "draft_kv"\nmax = "1 GiB"\n'
    )
    assert [c.status for c in report.breaches()] == [CheckStatus.MISSING, CheckStatus.FAIL]
    assert report.exit_code == EXIT_INPUT


def test_tighten_hint_when_far_below_budget() -> None:
    report = run(
        '[[budget]]\nitem = "cuda_graph"\nmax = "16 GiB"\n'
        '[[budget]]\nitem = "kv_tokens_per_instance"\nmin = 30_000_000\n'
    )
    graph, tokens = report.checks
    # 7.50 GiB x 1.1 = 8.25 -> rounded up to two significant digits: 8.3 GiB.
    assert graph.tighten_to == round(8.3 * GIB)
    # 51.0 M x 0.9 = 45.9 M -> rounded down to two significant digits: 45 M.
    assert tokens.tighten_to == 45_000_000


def test_tighten_threshold_is_configurable() -> None:
    text = (
        '[defaults]\ntighten_headroom_pct = 60\n[[budget]]\nitem = "cuda_graph"\nmax = "16 GiB"\n'
    )
    # 8.5 / 16 = 53 % headroom < 60 %: no hint.
    assert run(text).checks[0].tighten_to is None


def test_logs_glob_selects_inputs() -> None:
    entries = budget(
        '[[budget]]\nitem = "slots"\nmax = 300\nlogs = "decode-*.log"\n'
        '[[budget]]\nitem = "slots"\nmax = 300\nlogs = "prefill-*.log"\n'
    )
    report = check_budget(
        entries,
        [("ci/decode-0.log", head_ledger("ci/decode-0.log")), ("ci/other.log", head_ledger())],
        today=TODAY,
    )
    assert [(c.log, c.budget_line) for c in report.checks] == [("ci/decode-0.log", 2)]
    assert any("applies to no given log" in note for note in report.notes)


def test_several_logs_each_get_their_checks() -> None:
    low = make_ledger("b.log", {**HEAD_SUMMARY, "slots": 300})
    report = check_budget(
        budget('[[budget]]\nitem = "slots"\nmax = 200\n'),
        [("a.log", head_ledger("a.log")), ("b.log", low)],
        today=TODAY,
    )
    assert [(c.log, c.status) for c in report.checks] == [
        ("a.log", CheckStatus.PASS),
        ("b.log", CheckStatus.FAIL),
    ]
    assert report.counts["pass"] == 1 and report.counts["fail"] == 1


def test_read_item_row_and_summary() -> None:
    ledger = head_ledger()
    assert read_item(ledger, "req_to_token", ItemKind.SIZE).value == 13 * CENTI
    assert read_item(ledger, "usable", ItemKind.SIZE).value == round(177.70 * GIB)
    # A summary key wins over a same-named row; a row stands in when the summary is null
    # (an in-memory ledger: a saved one whose summary misses a row's figure is refused, F12).
    ledger = replace(ledger, summary=replace(ledger.summary, req_to_token=None))
    assert read_item(ledger, "req_to_token", ItemKind.SIZE).value == 13 * CENTI
    assert ledger.summary.req_to_token is None
    missing = read_item(ledger, "no_such_row", ItemKind.SIZE)
    assert missing.value is None and missing.reason == "the ledger has no row 'no_such_row'"


def test_report_round_trips_through_json() -> None:
    report = run(WAIVED, baseline=base_ledger())
    again = validate_json(CheckReport, to_json(report))
    assert again == report


def test_a_row_id_the_log_lacks_is_missing_with_similar_ids() -> None:
    report = run('[[budget]]\nitem = "req_to_tokens_total"\nmax = "1 GiB"\n')
    (check,) = report.checks
    assert (check.status, report.exit_code) == (CheckStatus.MISSING, EXIT_INPUT)
    assert check.note == (
        "this log cannot provide req_to_tokens_total: "
        "the ledger has no row 'req_to_tokens_total' (similar: req_to_token)"
    )


@given(
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.sampled_from([Bound.MAX, Bound.MIN]),
)
def test_absolute_limits_property(actual: int, limit: int, bound: Bound) -> None:
    bounds: dict[str, Any] = {bound.value: limit}
    entry = BudgetEntry(item="kv_tokens_per_instance", kind=ItemKind.COUNT, **bounds)
    ledger = make_ledger("h.log", {**HEAD_SUMMARY, "kv_tokens_per_instance": actual})
    (check,) = check_budget(Budget(path="b", entries=[entry]), [("h", ledger)], today=TODAY).checks
    within = actual <= limit if bound is Bound.MAX else actual >= limit
    assert (check.status is CheckStatus.PASS) is within
    assert check.margin == (limit - actual if bound is Bound.MAX else actual - limit)


@given(
    st.integers(min_value=1, max_value=10**6),
    st.integers(min_value=0, max_value=2 * 10**6),
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=200),
)
def test_both_relative_limits_must_be_exceeded(
    base: int, head: int, allowed: int, allowed_pct: int
) -> None:
    entry = BudgetEntry(
        item="slots", kind=ItemKind.COUNT, max_increase=allowed, max_increase_pct=allowed_pct
    )
    report = check_budget(
        Budget(path="b", entries=[entry]),
        [("h", make_ledger("h.log", {**HEAD_SUMMARY, "slots": head}))],
        baseline=make_ledger("b.log", {**HEAD_SUMMARY, "slots": base}),
        today=TODAY,
    )
    both = head - base > allowed and (head - base) * 100 > allowed_pct * base
    assert (report.checks[0].status is CheckStatus.FAIL) is both


def test_free_memory_far_above_its_floor_is_spare_not_a_floor_to_raise() -> None:
    # review m12: runtime_headroom 2.00 GiB against min 1 GiB (100 % above, past the 25 %
    # threshold) is memory the pools could have had: no "tighten the floor to 1.8 GiB"
    from memledger.checking.evaluate import SPARE_HINT
    from memledger.render.check import tighten_text

    report = run(
        '[[budget]]\nitem = "runtime_headroom"\nmin = "1 GiB"\n'
        '[[budget]]\nitem = "runtime_headroom"\nmax = "8 GiB"\n'
        '[[budget]]\nitem = "kv_tokens_per_instance"\nmin = 30_000_000\n'
    )
    floor, ceiling, tokens = report.checks
    assert (floor.tighten_to, floor.hint) == (None, SPARE_HINT)
    assert tighten_text(floor) == "spare: raise mem_fraction_static"
    # a ceiling on free memory, and a floor on capacity, still get a tighter limit
    assert ceiling.tighten_to == round(2.2 * GIB) and ceiling.hint is None
    assert tokens.tighten_to == 45_000_000 and tokens.hint is None
