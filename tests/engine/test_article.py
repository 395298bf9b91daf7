"""The seed article's memory table, figure by figure, from samples/dp16.log and samples/dp2.log.

Expected values are the article's (`../shared/seeds/000_f7cc2df0065878e9.txt`, the section
`显存：固定开销决定状态池有多大`, and issue 3's table): ±0.05 GiB, ±1% for token counts.
`DP2 + x` cells compare the two ledgers (DP16 = DP2's value + x).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from memledger.model.ledger import Ledger, Summary
from memledger.units import GIB, MIB
from tests.conftest import SAMPLES, ledger_for

GIB_TOLERANCE = 0.05
TOKEN_TOLERANCE = 0.01


@pytest.fixture(scope="module")
def ledgers() -> dict[str, Ledger]:
    config = SAMPLES / "k3-config.json"
    return {
        name: ledger_for(SAMPLES / f"{name}.log", model_config=config) for name in ("dp16", "dp2")
    }


def row_gib(ledger: Ledger, row_id: str) -> float | None:
    row = ledger.row(row_id)
    return None if row is None or row.bytes is None else row.bytes / GIB


def residual_gib(ledger: Ledger, to_id: str) -> float:
    """Residual (drop - logged) of the interval that ends at `to_id`."""
    interval = next(i for i in ledger.intervals if i.to_id == to_id)
    return interval.residual_bytes / GIB


Figure = Callable[[Ledger], Any]


def summary(field: str) -> Figure:
    return lambda ledger: _figure(ledger.summary, field)


def residual(to_id: str) -> Figure:
    return lambda ledger: residual_gib(ledger, to_id)


def row_value(row_id: str) -> Figure:
    return lambda ledger: row_gib(ledger, row_id)


def with_row(field: str, row_id: str) -> Figure:
    """A summary figure plus a row split out of it (the article counts both as one)."""

    def measure(ledger: Ledger) -> float:
        value = _figure(ledger.summary, field)
        assert isinstance(value, float)
        return value + (row_gib(ledger, row_id) or 0.0)

    return measure


# (figure, how memledger shows it, DP16, DP2) - GiB unless the name says otherwise.
PER_DEPLOYMENT: list[tuple[str, Figure, float | None, float | None]] = [
    ("usable at start", summary("usable"), 177.7, 177.7),
    ("load-end usage (peak)", summary("weights_load_peak"), 145.2, 109.9),
    ("released after load", summary("weights_released"), 47.7, 14.6),
    ("target weight staging pool", summary("weight_staging"), 1196 * MIB / GIB, 350 * MIB / GIB),
    ("draft weights", summary("draft_weights"), 0.85, 1.23),
    ("draft staging", summary("draft_staging"), 1288.0 * MIB / GIB, None),
    # The article's largest bucket holds the DeepEP buffer (allocated at the first dispatch);
    # the ledger splits it out as its own row (issue 10, finding 12).
    (
        "largest graph bucket",
        with_row("cuda_graph_largest_bucket", "deepep_ll_buffer"),
        7.19,
        10.24,
    ),
    ("static graph buffers", summary("cuda_graph_static"), 0.17, 1.33),
    ("residual: draft load end -> target pool end", residual("memory_pool_end"), 0.15, 0.82),
    ("residual: target -> draft pool end", residual("draft_memory_pool_end"), 0.13, 0.83),
    ("residual: attention backend -> capture begin", residual("capture_begin"), 0.36, 1.58),
    ("residual: target graph end -> draft graph begin", residual("draft_capture_begin"), 0.0, 0.39),
    ("req_to_token", summary("req_to_token"), 0.13, 0.82),
    ("KDA state + ReplaySSM per slot", summary("state_per_slot"), 0.64, 0.08),
    ("MLA KV pool", summary("kv_pool"), 41.1, 34.6),
    ("draft KV", summary("draft_kv"), 1.5, 2.0),
    ("DCP replicated Q", row_value("dcp_q_replica"), None, 0.91),
    ("draft slot map", row_value("draft_slot_map"), 0.02, 0.16),
]

# (figure, how memledger shows it, DP16 - DP2)
DIFFERENCES: list[tuple[str, Figure, float]] = [
    ("weights resident", summary("weights_resident"), 2.2),
    ("NCCL at dist init", summary("nccl_init"), -0.65),
    ("CUDA graphs total", with_row("cuda_graph", "deepep_ll_buffer"), -5.9),
    ("workspace (all residuals)", summary("workspace"), -2.97),
    ("runtime headroom after the last capture", summary("runtime_headroom"), -4.0),
    ("fixed overhead", summary("fixed_overhead"), -10.4),
]

TOKENS: list[tuple[str, str, int, int]] = [
    ("KV tokens per rank", "kv_tokens_per_rank", 3_190_000, 2_690_000),
    ("KV tokens per DP group", "kv_tokens_per_dp_group", 3_190_000, 21_500_000),
    ("KV tokens per instance (16 cards)", "kv_tokens_per_instance", 51_100_000, 43_000_000),
]


@pytest.mark.parametrize(
    ("figure", "measure", "dp16", "dp2"), PER_DEPLOYMENT, ids=[f[0] for f in PER_DEPLOYMENT]
)
def test_per_deployment_figure(
    ledgers: dict[str, Ledger],
    figure: str,
    measure: Figure,
    dp16: float | None,
    dp2: float | None,
) -> None:
    for name, expected in (("dp16", dp16), ("dp2", dp2)):
        value = measure(ledgers[name])
        if expected is None:
            assert value is None, f"{figure} ({name}): expected none, got {value}"
        else:
            assert value is not None, f"{figure} ({name}): missing"
            assert value == pytest.approx(expected, abs=GIB_TOLERANCE), f"{figure} ({name})"


@pytest.mark.parametrize(
    ("figure", "measure", "delta"), DIFFERENCES, ids=[f[0] for f in DIFFERENCES]
)
def test_difference_figure(
    ledgers: dict[str, Ledger], figure: str, measure: Figure, delta: float
) -> None:
    dp16, dp2 = measure(ledgers["dp16"]), measure(ledgers["dp2"])
    assert dp16 is not None and dp2 is not None
    assert dp16 - dp2 == pytest.approx(delta, abs=GIB_TOLERANCE), figure


@pytest.mark.parametrize(("figure", "field", "dp16", "dp2"), TOKENS, ids=[f[0] for f in TOKENS])
def test_kv_token_figure(
    ledgers: dict[str, Ledger], figure: str, field: str, dp16: int, dp2: int
) -> None:
    for name, expected in (("dp16", dp16), ("dp2", dp2)):
        value = _figure(ledgers[name].summary, field)
        assert value == pytest.approx(expected, rel=TOKEN_TOLERANCE), f"{figure} ({name})"


def test_staging_pools_are_two_buffers_of_the_logged_capacity(ledgers: dict[str, Ledger]) -> None:
    for name, capacity in (("dp16", 627048448), ("dp2", 183500800)):
        staging = ledgers[name].row("weight_staging")
        assert staging is not None and staging.bytes == 2 * capacity
    draft = ledgers["dp16"].row("draft_staging")
    assert draft is not None and draft.bytes == 2 * 675282944
    assert ledgers["dp2"].row("draft_staging") is None


def test_mem_fraction_static_and_slots(ledgers: dict[str, Ledger]) -> None:
    dp16, dp2 = ledgers["dp16"], ledgers["dp2"]
    assert (dp16.summary.mem_fraction_static, dp2.summary.mem_fraction_static) == (0.88, 0.83)
    # slots = max_running_requests per DP + decode extra slots + 1 padding slot.
    assert dp16.summary.slots == 24 + 8 + 1 == 33
    assert dp2.summary.slots == 192 + 16 + 1 == 209
    assert dp16.parameters["ledger.max_running_requests"] == 24
    assert dp16.parameters["ledger.extra_slots"] == 8
    assert dp2.parameters["ledger.max_running_requests"] == 192
    assert dp2.parameters["ledger.extra_slots"] == 16


def test_fixed_overhead_split_adds_up_to_the_state_pool_gap(ledgers: dict[str, Ledger]) -> None:
    """9.9 (graphs + headroom) + 3.6 (NCCL + workspace) - 3.1 (weights + staging) = 10.4."""
    dp16, dp2 = ledgers["dp16"].summary, ledgers["dp2"].summary

    def gap(field: str) -> float:
        return float(dp2.gib(field) or 0) - float(dp16.gib(field) or 0)

    graphs_headroom = gap("cuda_graph") + gap("runtime_headroom")
    comm_workspace = gap("nccl_init") + gap("workspace")
    weights = gap("weights_resident") + gap("draft_weights")
    weights += gap("draft_staging")
    assert graphs_headroom == pytest.approx(9.9, abs=GIB_TOLERANCE)
    assert comm_workspace == pytest.approx(3.6, abs=GIB_TOLERANCE)
    assert weights == pytest.approx(-3.1, abs=GIB_TOLERANCE)
    assert dp16.state_pool is not None and dp2.state_pool is not None
    assert (dp16.gib("state_pool") or 0) - (dp2.gib("state_pool") or 0) == pytest.approx(
        10.4, abs=GIB_TOLERANCE
    )


def test_both_samples_balance_within_printing_precision(ledgers: dict[str, Ledger]) -> None:
    for ledger in ledgers.values():
        assert ledger.outcome == "ready" and ledger.stopped_at is None
        assert ledger.usable_bytes is not None
        assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes
        partition = sum(r.bytes or 0 for r in ledger.rows if r.in_partition)
        assert partition == ledger.usable_bytes + ledger.balance_error_bytes


def test_req_to_token_evidence_reads_rows_by_columns_by_four_bytes(
    ledgers: dict[str, Ledger],
) -> None:
    # context_len 1048576 + max(4 + 5 draft tokens, 2 x 5 decode reserve + page - 1). The
    # samples' formats are 0.5.19 - 0.5.20 (their ReplaySSM `record_len=` line is 0.5.17+, v0.5.17
    # mem_cache/memory_pool.py:817): the ledger applies the lower bound, 0.5.19, whose page is
    # page_size 64 (v0.5.16 mem_cache/allocation_sizing.py:54-61); 0.5.20 pages by 64 x dcp (8 on
    # DP2, v0.5.20 :85-105 and :11-14), which the DP2 ledger names in a note.
    for name, rows, extra in (("dp16", 33, 2 * 5 + 64 - 1), ("dp2", 209, 2 * 5 + 64 - 1)):
        row = ledgers[name].row("req_to_token")
        assert row is not None and row.evidence.formula is not None
        match = re.fullmatch(r"(\d+) rows x (\d+) cols x 4 B", row.evidence.formula)
        assert match is not None, row.evidence.formula
        assert int(match.group(1)) == rows
        assert int(match.group(2)) == 1048576 + extra
        assert row.bytes == rows * int(match.group(2)) * 4
    at_0520 = 2 * 5 + 64 * 8 - 1
    assert any(f"73 at 0.5.19, {at_0520} at 0.5.20" in note for note in ledgers["dp2"].notes)
    assert not any("req_to_token columns" in note for note in ledgers["dp16"].notes)


def _figure(summary: Summary, field: str) -> float | int | None:
    """A summary figure as the article writes it: sizes in GiB, counts as counts."""
    return summary.gib(field) if field in Summary.byte_fields() else getattr(summary, field)
