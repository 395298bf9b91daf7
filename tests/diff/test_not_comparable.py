"""Issue 11 in `diff`: rows on one side only are not comparable (never the biggest mover), and a
KV token change is split into the pool's size and each token's cost."""

from __future__ import annotations

from memledger.compare.compute import diff_ledgers, kv_token_split
from memledger.compare.models import DiffStatus, delta_pct
from memledger.model.ledger import RowGroup, Summary
from memledger.render.diff_common import headline
from memledger.render.diff_prose import kv_token_lines
from memledger.render.diff_text import render_diff_text
from memledger.units import GIB, MIB
from tests.diff.helpers import centi, ledger, row


def test_a_row_on_one_side_only_is_not_comparable_and_never_the_biggest_mover() -> None:
    # The head startup stopped before its CUDA graphs: 8 GiB of graphs exist on base only.
    weights = [row("weights", RowGroup.WEIGHTS, centi(3000))]
    base = ledger(
        [*weights, row("cuda_graph_largest_bucket", RowGroup.CUDA_GRAPH, centi(800))]
        + [row("nccl_init", RowGroup.COMMUNICATION, centi(100))]
    )
    head = ledger(
        [*weights, row("nccl_init", RowGroup.COMMUNICATION, centi(150))],
        stopped_at="capture_begin",
        outcome="crash",
    )
    diff = diff_ledgers(base, head)
    graphs = next(r for r in diff.rows if r.id == "cuda_graph_largest_bucket")
    assert graphs.status is DiffStatus.NOT_COMPARABLE
    assert graphs.note is not None and "only in base: not comparable" in graphs.note
    # The comparable change (NCCL +0.50 GiB) is the biggest mover, not the absent 8 GiB.
    assert (diff.biggest_mover_group, diff.biggest_mover) == ("communication", "nccl_init")
    assert "biggest mover: communication +0.50 GiB" in headline(diff)
    assert "not comparable" in render_diff_text(diff)


def test_nothing_comparable_moved_means_no_biggest_mover() -> None:
    weights = [row("weights", RowGroup.WEIGHTS, centi(3000))]
    base = ledger([*weights, row("cuda_graph_largest_bucket", RowGroup.CUDA_GRAPH, centi(800))])
    head = ledger(weights, stopped_at="capture_begin", outcome="crash")
    diff = diff_ledgers(base, head)
    # a partial side: the words say no row on both sides moved, not that nothing did
    assert diff.biggest_mover_group is None and "no row on both sides moved" in headline(diff)


def test_a_side_that_stopped_before_its_pools_gets_no_state_pool_verdict() -> None:
    # review M2: a head that OOMed while loading was told its state pool shrank by all of it
    weights = [row("weights", RowGroup.WEIGHTS, centi(3000))]
    base = ledger([*weights, row("kv_pool", RowGroup.STATE_POOL, centi(4000))])
    head = ledger(weights, stopped_at="after checkpoint load_begin (line 3); out of memory")
    verdict = headline(diff_ledgers(base, head))
    assert "no state-pool comparison (head stopped before its pools)" in verdict
    assert "state pool -40.00" not in verdict
    assert "head partial (ready, stopped after checkpoint load_begin (line 3))" in verdict


def summary(pool_gib: float, tokens: int) -> Summary:
    return Summary(kv_pool=round(pool_gib * GIB), kv_tokens_per_rank=tokens)


def test_kv_token_change_splits_into_pool_size_and_cost_per_token_exactly() -> None:
    # Base: 40 GiB at 16 KiB per token; head: 60 GiB at 20 KiB per token (a wider KV dtype).
    base = summary(40, 40 * GIB // (16 * 1024))
    head = summary(60, 60 * GIB // (20 * 1024))
    split = kv_token_split(base, head)
    assert split is not None
    assert (split.base_bytes_per_token, split.head_bytes_per_token) == (16384.0, 20480.0)
    assert split.from_pool_tokens + split.from_cost_tokens == split.delta_tokens
    assert split.delta_tokens == 524_288
    assert split.from_pool_tokens == 20 * GIB // (16 * 1024)  # +1,310,720: the pool grew 20 GiB
    assert split.from_cost_tokens == -786_432  # each token costs 4 KiB more
    diff = diff_ledgers(
        ledger([row("kv_pool", RowGroup.STATE_POOL, 40 * GIB)], summary=base),
        ledger([row("kv_pool", RowGroup.STATE_POOL, 60 * GIB)], summary=head),
    )
    lines = kv_token_lines(diff)
    assert lines[0] == "Bytes per KV token: base 16,384.0 B, head 20,480.0 B."
    assert lines[1].startswith("KV tokens per rank, head - base: +524,288 = +1,310,720 because")
    assert "+1,310,720 because the pool grew by 20.00 GiB, -786,432 because" in lines[1]
    assert "because each token costs 4,096.0 B more" in lines[1]


def test_no_split_without_a_kv_pool_on_both_sides() -> None:
    assert kv_token_split(summary(40, 1000), Summary()) is None
    assert kv_token_split(Summary(kv_pool=MIB, kv_tokens_per_rank=0), summary(1, 10)) is None


def test_no_delta_pct_from_a_base_of_zero_or_less() -> None:
    # review M8: an unexplained row of -2.06 GiB (memory freed) going to 0.00 read "-100.0%",
    # the sign flipped against its Δ of +2.06
    assert delta_pct(-2.06, 0.0) is None and delta_pct(0, 5) is None
    assert delta_pct(4.0, 5.0) == 25.0
