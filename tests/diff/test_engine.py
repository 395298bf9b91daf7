"""The diff engine on hand-built ledgers: self-diff, totals, the exact fixed-overhead split."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.compare.categories import STATE_POOL_CATEGORIES
from memledger.compare.compute import diff_ledgers, sort_rows
from memledger.compare.models import MIN_TOLERANCE_BYTES, DiffStatus, LedgerDiff, SortKey, delta_pct
from memledger.model.ledger import FIXED_OVERHEAD_GROUPS, Ledger, Row, RowGroup
from memledger.record import json_schema, to_dict, validate, validate_json
from memledger.render.diff_common import headline, round_parts
from memledger.render.diff_json import DiffDocument, render_diff_json
from memledger.render.diff_prose import state_pool_statement, usable_note
from memledger.sglang.effects import PARAM_EFFECTS, param_effect
from memledger.units import GIB, MIB
from tests.diff.helpers import (
    CENTI,
    HALF_ULP,
    USABLE,
    article_pair,
    centi,
    checkpoint,
    interval,
    ledger,
    row,
)

# --- hypothesis: random ledgers ---------------------------------------------------------------

ROW_IDS = [f"r{i}" for i in range(12)]


@st.composite
def ledgers(draw: st.DrawFn, path: str = "a.log") -> Ledger:
    ids = draw(st.lists(st.sampled_from(ROW_IDS), unique=True, max_size=len(ROW_IDS)))
    rows: list[Row] = []
    for row_id in ids:
        # A row id keeps its group across ledgers (as engine ids do); bytes vary.
        group = list(RowGroup)[ROW_IDS.index(row_id) % len(RowGroup)]
        byte_count = draw(st.none() | st.integers(min_value=-(4 * GIB), max_value=200 * GIB))
        rows.append(
            row(
                row_id,
                group,
                byte_count,
                in_partition=draw(st.booleans()),
                error_bytes=draw(st.integers(min_value=0, max_value=GIB // 10)),
            )
        )
    params = draw(
        st.dictionaries(
            st.sampled_from(["dp_size", "dcp_size", "mem_fraction_static", "foo"]),
            st.integers(0, 4) | st.booleans() | st.none(),
            max_size=3,
        )
    )
    return ledger(rows, path=path, parameters=params)


def _known(values: list[int | None]) -> int:
    return sum(v for v in values if v is not None)


# --- self-diff ----------------------------------------------------------------------------------


def _assert_all_zero(diff: LedgerDiff) -> None:
    assert diff.counts["changed"] == diff.counts["not_comparable"] == 0
    for item in diff.rows:
        assert item.status in (DiffStatus.UNCHANGED, DiffStatus.UNKNOWN)
        assert item.delta_bytes in (0, None)
        assert item.status is DiffStatus.UNKNOWN or item.delta_bytes == 0
    for group in [*diff.groups, diff.total, *diff.state_pool.categories]:
        assert group.delta_bytes == 0
    assert diff.state_pool.fixed_overhead.delta_bytes == 0
    assert diff.state_pool.state_pool.delta_bytes == 0
    assert all(c.delta_bytes == 0 for c in diff.checkpoints)
    assert all(i.drop.delta_bytes == 0 and i.residual.delta_bytes == 0 for i in diff.intervals)
    assert diff.parameters == []
    assert diff.biggest_mover is None and diff.biggest_mover_group is None
    assert all(f.delta in (0, None) for f in diff.summary_fields)


def test_self_diff_of_the_article_ledgers_is_all_zeros() -> None:
    for side in article_pair():
        diff = diff_ledgers(side, side)
        _assert_all_zero(diff)
        assert diff.state_pool.larger_pool_side is None
        assert "equal" in state_pool_statement(diff)


@settings(max_examples=60, deadline=None)
@given(ledgers())
def test_self_diff_of_any_ledger_is_all_zeros(side: Ledger) -> None:
    _assert_all_zero(diff_ledgers(side, side))


# --- totals ---------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(ledgers("a.log"), ledgers("b.log"))
def test_totals_equal_the_sum_of_their_rows(base: Ledger, head: Ledger) -> None:
    diff = diff_ledgers(base, head)
    partition = [r for r in diff.rows if r.in_partition]
    for group in diff.groups:
        members = [r for r in partition if r.group.value == group.id]
        assert group.n_rows == len(members)
        assert group.base_bytes == _known([r.base_bytes for r in members if r.base_in_partition])
        assert group.head_bytes == _known([r.head_bytes for r in members if r.head_in_partition])
        assert group.delta_bytes == group.head_bytes - group.base_bytes
    assert diff.total.base_bytes == sum(g.base_bytes or 0 for g in diff.groups)
    assert diff.total.head_bytes == sum(g.head_bytes or 0 for g in diff.groups)
    # Against the inputs themselves, not the diff's own rows.
    assert diff.total.base_bytes == _known([r.bytes for r in base.rows if r.in_partition])
    assert diff.total.head_bytes == _known([r.bytes for r in head.rows if r.in_partition])
    # With no unknown row and no row leaving the partition, the Δ column adds up too.
    if not any(g.unknown_rows for g in diff.groups) and all(
        r.base_in_partition == r.head_in_partition or r.status == "not_comparable"
        for r in partition
    ):
        assert diff.total.delta_bytes == _known([r.delta_bytes for r in partition])


@settings(max_examples=80, deadline=None)
@given(ledgers("a.log"), ledgers("b.log"))
def test_categories_add_up_exactly_to_the_fixed_overhead_delta(base: Ledger, head: Ledger) -> None:
    analysis = diff_ledgers(base, head).state_pool
    fixed_delta = analysis.fixed_overhead.delta_bytes
    assert fixed_delta is not None
    assert sum(c.delta_bytes or 0 for c in analysis.categories) == fixed_delta
    for category in analysis.categories:
        assert sum(c.delta_bytes for c in category.rows) == category.delta_bytes
    # usable = fixed overhead + state pool, so the state-pool delta closes exactly.
    assert analysis.state_pool.delta_bytes == (analysis.partition.delta_bytes or 0) - fixed_delta


def test_the_categories_cover_every_fixed_overhead_group_once() -> None:
    grouped = [g for c in STATE_POOL_CATEGORIES for g in c.groups]
    assert sorted(grouped) == sorted(FIXED_OVERHEAD_GROUPS)
    assert RowGroup.STATE_POOL not in grouped


# --- the article's two deployments, hand-built ------------------------------------------------


def test_article_pair_split_matches_the_figures_the_fixture_was_built_from() -> None:
    dp16, dp2 = article_pair()
    diff = diff_ledgers(dp16, dp2)
    analysis = diff.state_pool
    by_id = {c.id: c for c in analysis.categories}
    # Expected values from the fixture table (diff_helpers docstring), head (DP2) - base (DP16).
    assert by_id["graphs_headroom"].delta_bytes == centi(590 + 400)
    assert by_id["dcp_slots_comm_workspace"].delta_bytes == centi(65 + (362 - 64))
    weights = centi(-137) + (2 * 183500800 - 2 * 627048448) + centi(123 - 85) - 1288 * MIB
    assert by_id["weights_staging"].delta_bytes == weights
    total = centi(990 + 363) + weights
    assert analysis.fixed_overhead.delta_bytes == total
    assert analysis.state_pool.delta_bytes == -total  # usable is 177.70 on both sides
    assert analysis.larger_pool_side == "base"
    assert state_pool_statement(diff).startswith("base (dp16)'s state pool is larger by 10.46 GiB")
    assert "fixed overhead + headroom is smaller by 10.46 GiB" in state_pool_statement(diff)
    assert usable_note(diff) is None
    # Article (per card): 9.9 + 3.6 - 3.1 = 10.4; this fixture rounds the same to 0.1 GiB.
    deltas = [c.delta_bytes for c in analysis.categories]
    assert [None if d is None else round(d / GIB, 1) for d in deltas] == [9.9, 3.6, -3.1]


def test_article_pair_row_statuses_and_parameter_effects() -> None:
    dp16, dp2 = article_pair()
    diff = diff_ledgers(dp16, dp2)
    by_id = {r.id: r for r in diff.rows}
    # Issue 11: a row on one side only is not comparable (it was new / removed); the side it is
    # on still counts it, so its delta is what it adds to or takes from that side's total.
    assert by_id["draft_staging"].status is DiffStatus.NOT_COMPARABLE
    assert by_id["draft_staging"].head_kind is None
    assert by_id["draft_staging"].delta_bytes == -1288 * MIB
    assert by_id["dcp_q_replica"].status is DiffStatus.NOT_COMPARABLE
    assert by_id["dcp_q_replica"].base_kind is None
    assert by_id["dcp_q_replica"].delta_bytes == centi(91)
    assert by_id["dcp_q_replica"].delta_pct is None
    assert by_id["cuda_graph"].delta_pct == pytest.approx(100 * 590 / 800)
    # Ledger order: base rows first, then head-only rows in head order.
    new_ids = [r.id for r in diff.rows if r.base_kind is None]
    assert all(diff.rows[-1 - i].status is DiffStatus.NOT_COMPARABLE for i in range(len(new_ids)))
    assert [r.id for r in diff.rows[-len(new_ids) :]] == new_ids
    assert new_ids == ["dcp_q_replica", "draft_slot_map", "graph_gap_residual"]
    params = {p.name: p for p in diff.parameters}
    assert set(params) == {
        "dp_size",
        "dcp_size",
        "mem_fraction_static",
        "max_running_requests",
        "disaggregation_decode_extra_slots",
        "cuda_graph_max_bs",
    }
    assert params["mem_fraction_static"].base == 0.88
    assert "runtime_headroom" in [c.id for c in params["mem_fraction_static"].moved_rows]
    assert [c.id for c in params["cuda_graph_max_bs"].moved_rows] == ["cuda_graph"]
    dcp_moved = {c.id for c in params["dcp_size"].moved_rows}
    assert {"dcp_q_replica", "req_to_token", "draft_slot_map"} <= dcp_moved
    assert "req_to_token" in [c.id for c in params["max_running_requests"].moved_rows]
    # CUDA graphs +5.90 is the fixed-overhead group that moved most (the state pool's -10.46 is
    # the consequence, not a mover); workspace has several rows, its top one is dcp_q_replica.
    assert (diff.biggest_mover_group, diff.biggest_mover) == ("cuda_graph", "cuda_graph")


def test_biggest_mover_falls_back_to_the_state_pool_and_names_its_top_row() -> None:
    base = ledger(
        [
            row("w", RowGroup.WEIGHTS, centi(5000)),
            row("kv", RowGroup.STATE_POOL, centi(3000)),
            row("ssm", RowGroup.STATE_POOL, centi(1000)),
        ]
    )
    head = ledger(
        [
            row("w", RowGroup.WEIGHTS, centi(5000)),
            row("kv", RowGroup.STATE_POOL, centi(2000)),
            row("ssm", RowGroup.STATE_POOL, centi(2500)),
        ],
        path="head.log",
    )
    diff = diff_ledgers(base, head)
    assert (diff.biggest_mover_group, diff.biggest_mover) == ("state_pool", "ssm")


# --- statuses, tolerance, unknowns ------------------------------------------------------------


def test_unchanged_means_within_printing_precision() -> None:
    base = ledger([row("a", RowGroup.WEIGHTS, centi(1000)), row("b", RowGroup.WEIGHTS, centi(10))])
    head = ledger(
        [
            row("a", RowGroup.WEIGHTS, centi(1000) + HALF_ULP),  # 0.005 GiB: printing noise
            row("b", RowGroup.WEIGHTS, centi(12)),  # 0.02 GiB: a change
        ],
        path="head.log",
    )
    by_id = {r.id: r for r in diff_ledgers(base, head).rows}
    assert by_id["a"].status is DiffStatus.UNCHANGED
    assert by_id["a"].tolerance_bytes == max(MIN_TOLERANCE_BYTES, 2 * HALF_ULP)
    assert by_id["b"].status is DiffStatus.CHANGED
    # A row with a wide error bound (a residual) needs a bigger move to count.
    wide = ledger([row("a", RowGroup.WORKSPACE, centi(100), error_bytes=GIB // 10)])
    moved = ledger([row("a", RowGroup.WORKSPACE, centi(105))], path="h.log")
    assert diff_ledgers(wide, moved).rows[0].status is DiffStatus.UNCHANGED


def test_unknown_rows_are_flagged_not_summed() -> None:
    base = ledger([row("a", RowGroup.WEIGHTS, centi(100)), row("q", RowGroup.WORKSPACE, None)])
    head = ledger(
        [row("a", RowGroup.WEIGHTS, centi(100)), row("q", RowGroup.WORKSPACE, centi(50))],
        path="head.log",
    )
    diff = diff_ledgers(base, head)
    q = next(r for r in diff.rows if r.id == "q")
    assert q.status is DiffStatus.UNKNOWN
    assert q.delta_bytes is None and q.base_bytes is None and q.head_bytes == centi(50)
    assert q.note is not None and q.note.startswith("base:")
    workspace = next(g for g in diff.groups if g.id == "workspace")
    assert workspace.unknown_rows == ["q"]
    assert workspace.base_bytes == 0 and workspace.head_bytes == centi(50)
    assert diff.state_pool.incomplete_rows == ["q"]
    assert diff.state_pool.reason is not None and "q" in diff.state_pool.reason


def test_delta_pct_is_head_minus_base_over_base_in_percent() -> None:
    assert delta_pct(200, 250) == 25.0
    assert delta_pct(200, 100) == -50.0
    assert delta_pct(0, 5) is None
    assert delta_pct(None, 5) is None
    assert delta_pct(5, None) is None


def test_a_usable_difference_is_reported_and_the_arithmetic_still_closes() -> None:
    base = ledger(
        [row("w", RowGroup.WEIGHTS, centi(5000)), row("kv", RowGroup.STATE_POOL, centi(3000))]
    )
    head = ledger(
        [row("w", RowGroup.WEIGHTS, centi(4000)), row("kv", RowGroup.STATE_POOL, centi(3500))],
        path="head.log",
    )
    diff = diff_ledgers(base, head)
    analysis = diff.state_pool
    assert analysis.fixed_overhead.delta_bytes == centi(-1000)
    assert analysis.partition.delta_bytes == centi(-500)
    assert analysis.usable.delta_bytes == centi(-500)
    assert analysis.state_pool.delta_bytes == centi(500)
    assert analysis.larger_pool_side == "head"
    assert "fixed overhead + headroom is smaller by 10.00 GiB" in state_pool_statement(diff)
    assert "usable memory is smaller by 5.00 GiB" in state_pool_statement(diff)
    note = usable_note(diff)
    assert note is not None and "usable memory differs" in note


def test_checkpoints_and_intervals_are_matched_by_id() -> None:
    base = ledger(
        [row("w", RowGroup.WEIGHTS, centi(100))],
        checkpoints=[checkpoint("load_begin", 17000, 3), checkpoint("load_end", 5000, 9)],
        intervals=[interval("load_begin", "load_end", centi(12000), centi(11900))],
    )
    head = ledger(
        [row("w", RowGroup.WEIGHTS, centi(100))],
        path="head.log",
        checkpoints=[
            checkpoint("load_begin", 17000, 4),
            checkpoint("load_end", 6000, 12),
            checkpoint("capture_end", 1000, 40),
        ],
        intervals=[interval("load_begin", "load_end", centi(11000), centi(10950))],
    )
    diff = diff_ledgers(base, head)
    by_id = {c.id: c for c in diff.checkpoints}
    assert by_id["load_begin"].status is DiffStatus.UNCHANGED
    assert (by_id["load_begin"].base_line, by_id["load_begin"].head_line) == (3, 4)
    assert by_id["load_end"].delta_bytes == centi(1000)
    assert by_id["capture_end"].status is DiffStatus.NEW
    (only,) = diff.intervals
    assert only.drop.delta_bytes == centi(-1000)
    assert only.residual.base_bytes == centi(100)
    assert only.residual.head_bytes == centi(50)
    assert only.status is DiffStatus.CHANGED


def test_parameters_present_on_one_side_and_type_changes() -> None:
    base = ledger([], parameters={"speculative_algorithm": "EAGLE", "flag": True, "n": 1})
    head = ledger([], path="head.log", parameters={"flag": 1, "n": 1.0, "dcp_size": 8})
    params = {p.name: p for p in diff_ledgers(base, head).parameters}
    assert params["speculative_algorithm"].status is DiffStatus.REMOVED
    assert params["dcp_size"].status is DiffStatus.NEW
    assert params["flag"].status is DiffStatus.CHANGED  # True vs 1 is a change of meaning
    assert "n" not in params  # 1 == 1.0
    assert params["speculative_algorithm"].affects == ["prefix:draft", "group:draft_weights"]


def test_param_effects_table_is_reachable() -> None:
    # Every entry must be the first match for at least its own pattern-shaped name.
    for effect in PARAM_EFFECTS:
        name = effect.pattern.replace("*", "X")
        assert param_effect(name) is not None
    assert param_effect("mem_fraction_static") is PARAM_EFFECTS[0]
    assert param_effect("SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK") is not None
    assert param_effect("log_level") is None


def test_labels_default_to_file_stems_and_fall_back_to_base_head() -> None:
    # File names, never "head (head)": a long stem is cut to 24 characters, equal stems are told
    # apart by their folder; only inputs nothing tells apart are `base`/`head`.
    dp16, dp2 = article_pair()
    inputs = diff_ledgers(dp16, dp2).inputs
    assert (inputs.base.label, inputs.head.label) == ("dp16", "dp2")
    assert (inputs.base.path, inputs.base.rank, inputs.base.startup) == (
        "samples/dp16.log",
        "TP0",
        0,
    )
    same = diff_ledgers(dp16, dp16).inputs
    assert (same.base.label, same.head.label) == ("base", "head")
    long_stem = replace(dp2, source=replace(dp2.source, path="logs/" + "x" * 25 + ".log"))
    long_inputs = diff_ledgers(dp16, long_stem).inputs
    # whole: a renderer with a width limit cuts it (render.diff_common.distinct_labels)
    assert (long_inputs.base.label, long_inputs.head.label) == ("dp16", "x" * 25)
    elsewhere = replace(dp16, source=replace(dp16.source, path="pr/dp16.log"))
    folders = diff_ledgers(dp16, elsewhere).inputs
    assert (folders.base.label, folders.head.label) == ("samples/dp16", "pr/dp16")
    named = diff_ledgers(dp16, dp2, base_label="old", head_label="new").inputs
    assert (named.base.label, named.head.label) == ("old", "new")


# --- sorting and display rounding -------------------------------------------------------------


def test_sort_rows_orders() -> None:
    dp16, dp2 = article_pair()
    rows = diff_ledgers(dp16, dp2).rows
    for key in (SortKey.DELTA, SortKey.BASE, SortKey.HEAD):
        ordered = sort_rows(rows, key)
        flags = [r.in_partition for r in ordered]
        # partition rows first, informational rows after them, whatever the key
        assert flags == sorted(flags, reverse=True)
    partition = [r for r in rows if r.in_partition]
    by_delta = sort_rows(partition, SortKey.DELTA)
    magnitudes = [abs(r.delta_bytes) for r in by_delta if r.delta_bytes is not None]
    assert magnitudes == sorted(magnitudes, reverse=True)
    assert [r.id for r in sort_rows(rows, SortKey.ID)] == sorted(r.id for r in rows)
    heads = [r.head_bytes for r in sort_rows(partition, SortKey.HEAD) if r.head_bytes is not None]
    assert heads == sorted(heads, reverse=True)
    bases = [r.base_bytes for r in sort_rows(partition, SortKey.BASE)]
    known = [b for b in bases if b is not None]
    assert known == sorted(known, reverse=True)
    assert bases[len(known) :] == [None] * (len(bases) - len(known))  # absent/unknown last


def test_informational_rows_sort_after_partition_rows() -> None:
    dp16, dp2 = article_pair()
    rows = sort_rows(diff_ledgers(dp16, dp2).rows, SortKey.DELTA)
    informational = [r for r in rows if not r.in_partition]
    assert informational, "the article pair has informational rows (load peak, reclaimed)"
    first_info = rows.index(informational[0])
    assert all(not r.in_partition for r in rows[first_info:])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-50 * GIB, max_value=50 * GIB), min_size=1, max_size=6))
def test_printed_parts_add_up_to_the_printed_total(parts: list[int]) -> None:
    texts, total_text = round_parts(parts)
    assert sum(round(float(t) * 100) for t in texts) == round(float(total_text) * 100)
    assert round(float(total_text) * 100) == round(sum(parts) * 100 / GIB)
    for text, part in zip(texts, parts, strict=True):
        assert abs(float(text) - part / GIB) < 0.01 + 1e-9


# --- the model --------------------------------------------------------------------------------


def test_json_round_trips_and_the_schema_is_versioned() -> None:
    dp16, dp2 = article_pair()
    diff = diff_ledgers(dp16, dp2)
    # The JSON document is the model plus the state-pool sentences the renderers write.
    document = validate_json(DiffDocument, render_diff_json(diff, sort=SortKey.ID))
    assert document.state_pool.statement == state_pool_statement(diff)
    assert document.verdict == headline(diff)  # the verdict line, as text and markdown open
    prose = {"state_pool": {"statement", "usable_note"}, "verdict": True}
    again = validate(LedgerDiff, to_dict(document, exclude=prose))
    assert replace(again, rows=diff.rows) == diff
    assert [r.id for r in again.rows] == sorted(r.id for r in diff.rows)
    schema = json_schema(DiffDocument, mode="serialization")
    for key in ("schema_version", "inputs", "rows", "state_pool", "parameters", "summary"):
        assert key in schema["properties"]
    # base, head and delta summaries share the ledger's Summary shape.
    sides = diff.summary
    assert set(to_dict(sides.delta)) == set(to_dict(sides.base))
    assert sides.delta.slots == 209 - 33
    assert sides.delta.mem_fraction_static == pytest.approx(-0.05)


def test_usable_is_177_70_on_both_sides_of_the_fixture() -> None:
    for side in article_pair():
        assert side.usable_bytes == USABLE
        assert sum(r.bytes or 0 for r in side.rows if r.in_partition) == USABLE
    assert CENTI * 100 <= GIB


def test_derived_parameters_are_kept_only_when_they_say_something_new() -> None:
    base = ledger(
        [row("req_to_token", RowGroup.WORKSPACE, centi(13))],
        parameters={
            "dp_size": 16,
            "ledger.dp_size": 16,
            "max_running_requests": 384,
            "ledger.max_running_requests": 24,
            "disaggregation_decode_extra_slots": 8,
            "ledger.extra_slots": 8,
        },
    )
    head = ledger(
        [row("req_to_token", RowGroup.WORKSPACE, centi(82))],
        path="head.log",
        parameters={
            "dp_size": 2,
            "ledger.dp_size": 2,
            "max_running_requests": 384,
            "ledger.max_running_requests": 192,
            "disaggregation_decode_extra_slots": 16,
            "ledger.extra_slots": 16,
        },
    )
    params = {p.name: p for p in diff_ledgers(base, head).parameters}
    # ledger.dp_size and ledger.extra_slots restate server_args; the per-DP request count does not
    # (max_running_requests is 384 on both sides, split over 16 vs 2 DP groups).
    assert set(params) == {
        "dp_size",
        "disaggregation_decode_extra_slots",
        "ledger.max_running_requests",
    }
    moved = params["ledger.max_running_requests"].moved_rows
    assert [(c.id, c.delta_bytes) for c in moved] == [("req_to_token", centi(69))]
