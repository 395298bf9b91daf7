"""Ledger engine on hand-built events: ids, intervals, rows, degradation; every figure by hand."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from memledger.engine import build_ledger
from memledger.engine.chain import EXCERPT_CHARS, excerpt
from memledger.formulas import parse_formulas
from memledger.model.events import EventKind
from memledger.model.ledger import RowGroup, RowKind
from memledger.model.model_config import model_dims_from_dict
from memledger.record import to_json
from memledger.units import GIB, MIB
from tests.engine.helpers import (
    SPEC_ARGS,
    TEST_FORMULAS,
    Log,
    gb,
    gib,
    ledger_of,
    partition_sum,
    row,
    speculative_log,
)


def test_checkpoint_ids_follow_the_0_5_14_order() -> None:
    ledger = ledger_of(speculative_log(), server_args=SPEC_ARGS)
    assert [c.id for c in ledger.checkpoints] == [
        "dist_init_end",
        "load_begin",
        "load_end",
        "draft_load_begin",
        "draft_load_end",
        "memory_pool_end",
        "draft_memory_pool_end",
        "attention_backend_begin",
        "attention_backend_end",
        "capture_begin",
        "capture_end",
        "draft_capture_begin",
        "draft_capture_end",
    ]
    # Consecutive pairs, the dist-init pseudo-checkpoint starting none.
    pairs = [(i.from_id, i.to_id) for i in ledger.intervals]
    assert pairs[0] == ("load_begin", "load_end")
    assert pairs[-1] == ("draft_capture_begin", "draft_capture_end")
    assert len(pairs) == len(ledger.checkpoints) - 2


def test_checkpoint_ids_follow_the_pre_0_5_14_order() -> None:
    """Target load -> pool -> graphs, then the draft; old graph lines name no phase (the
    transformer reads the role from the words: `Capture draft cuda graph begin.` is the draft's)."""
    target = {"role": "target", "phase": "decode"}
    draft = {"role": "draft", "phase": "decode"}
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=70.0)
    log.add(EventKind.LOAD_END, values={"type": "LlamaForCausalLM"}, avail=50.0, usage=20.0)
    log.add(EventKind.MEMORY_POOL_END, avail=10.0)
    log.add(EventKind.CAPTURE_BEGIN, "Capture cuda graph begin.", values=target, avail=10.0)
    log.add(EventKind.CAPTURE_END, "Capture cuda graph end.", values=target, avail=9.0, usage=1.0)
    log.add(EventKind.LOAD_BEGIN, avail=9.0)
    log.add(EventKind.LOAD_END, values={"type": "LlamaForCausalLMEagle"}, avail=8.5, usage=0.5)
    log.add(EventKind.MEMORY_POOL_END, avail=8.0)
    log.add(EventKind.CAPTURE_BEGIN, "Capture draft cuda graph begin.", values=draft, avail=8.0)
    log.add(
        EventKind.CAPTURE_END, "Capture draft cuda graph end.", values=draft, avail=7.8, usage=0.2
    )
    extend = {"role": "draft", "phase": "extend"}
    log.add(
        EventKind.CAPTURE_BEGIN, "Capture draft extend cuda graph begin.", values=extend, avail=7.8
    )
    log.add(
        EventKind.CAPTURE_END,
        "Capture draft extend cuda graph end.",
        values=extend,
        avail=7.7,
        usage=0.1,
    )
    ledger = ledger_of(log)
    assert [c.id for c in ledger.checkpoints] == [
        "load_begin",
        "load_end",
        "memory_pool_end",
        "capture_begin",
        "capture_end",
        "draft_load_begin",
        "draft_load_end",
        "draft_memory_pool_end",
        "draft_capture_begin",
        "draft_capture_end",
        "draft_extend_capture_begin",
        "draft_extend_capture_end",
    ]
    assert row(ledger, "draft_weights").bytes == gb(0.50).bytes
    assert row(ledger, "draft_cuda_graph").bytes == gb(0.20).bytes
    assert row(ledger, "draft_extend_cuda_graph").bytes == gb(0.10).bytes


def test_usable_is_dist_init_usage_plus_load_begin_avail() -> None:
    ledger = ledger_of(speculative_log(), server_args=SPEC_ARGS)
    assert ledger.usable_bytes == gb(0.50).bytes + gb(70.00).bytes
    assert ledger.summary.usable_gib == pytest.approx(70.50)
    assert row(ledger, "nccl_init").bytes == gb(0.50).bytes


def test_rows_partition_usable_and_each_interval_is_explained() -> None:
    ledger = ledger_of(speculative_log(), server_args=SPEC_ARGS)
    assert ledger.usable_bytes is not None
    assert partition_sum(ledger) == ledger.usable_bytes + ledger.balance_error_bytes
    assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes
    # Target pool interval: drop 23.30 = Mamba 3.00 + KV 20.00 + named + unexplained.
    pool = next(i for i in ledger.intervals if i.to_id == "memory_pool_end")
    assert pool.drop_bytes == gb(28.20).bytes - gb(4.90).bytes
    assert pool.logged_bytes == gb(1.00).bytes + gb(2.00).bytes + gb(20.00).bytes
    req = row(ledger, "req_to_token")
    # 0.5.14+ (target verify graph wording): 7 requests + 1 padding row, 4096 + 4 + 4 draft cols.
    assert req.bytes == 8 * 4104 * 4
    assert req.evidence.formula == "8 rows x 4104 cols x 4 B"
    assert row(ledger, "kv_free_pages").bytes == 100000 * 8
    assert pool.named_bytes == 8 * 4104 * 4 + 100000 * 8
    unexplained = row(ledger, "unexplained.memory_pool_end")
    assert unexplained.kind == RowKind.RESIDUAL and unexplained.group == RowGroup.UNEXPLAINED
    assert unexplained.bytes == pool.unexplained_bytes == pool.residual_bytes - pool.named_bytes
    assert unexplained.interval == "draft_load_end->memory_pool_end"


def test_staging_is_split_out_of_the_load_and_weights_peak_keeps_it() -> None:
    ledger = ledger_of(speculative_log(), server_args=SPEC_ARGS)
    assert row(ledger, "weight_staging").bytes == gb(1.00).bytes
    weights = row(ledger, "weights")
    assert weights.bytes == gb(41.00).bytes - gb(1.00).bytes
    # Lines: 1 dist init, 2 load begin, 3 staging pool, 4 load end (usage 41.00).
    assert weights.evidence.formula == (
        "load-end usage 41.00 GiB (hand.log:4) - staging 1.00 GiB (hand.log:3)"
    )
    assert [source.line for source in weights.evidence.sources] == [2, 3, 4]
    assert weights.interval_parts == {}
    peak = row(ledger, "weights_load_peak")
    assert peak.bytes == gb(41.00).bytes and not peak.in_partition
    assert peak.interval == "load_begin->load_end"
    assert ledger.row("weights_released") is None
    assert ledger.summary.weights_load_peak_gib == pytest.approx(41.00)
    assert ledger.summary.weights_resident_gib == pytest.approx(41.00)
    assert ledger.summary.weights_released is None
    assert ledger.summary.weight_staging_gib == pytest.approx(1.00)
    assert ledger.summary.draft_weights_gib == pytest.approx(0.80)
    # Nothing was split out of the draft load and nothing given back: no peak row beside it.
    assert ledger.row("draft_weights_load_peak") is None


def test_memory_given_back_after_load_nets_into_the_resident_weights_row() -> None:
    ledger = ledger_of(speculative_log(release=5.00), server_args=SPEC_ARGS)
    weights = row(ledger, "weights")
    # Resident = load-end usage 41.00 - staging 1.00 - released 5.00 (avail 29.00 -> 34.00).
    assert weights.bytes == gb(41.00).bytes - gb(1.00).bytes - gb(5.00).bytes
    assert weights.in_partition and weights.kind == RowKind.LOGGED
    assert weights.evidence.formula == (
        "load-end usage 41.00 GiB (hand.log:4) - staging 1.00 GiB (hand.log:3) - released "
        "5.00 GiB (avail rise load_end -> draft_load_begin, hand.log:4, hand.log:5)"
    )
    assert [source.line for source in weights.evidence.sources] == [2, 3, 4, 5]
    assert weights.interval == "load_begin->load_end"
    assert weights.interval_parts == {
        "load_begin->load_end": gb(41.00).bytes - gb(1.00).bytes,
        "load_end->draft_load_begin": -gb(5.00).bytes,
    }
    # The peak and the release are shown beside it, positive and not summed.
    peak, released = row(ledger, "weights_load_peak"), row(ledger, "weights_released")
    assert peak.bytes == gb(41.00).bytes and not peak.in_partition
    assert released.bytes == gb(5.00).bytes and not released.in_partition
    assert released.interval == "load_end->draft_load_begin"
    assert released.evidence.note is not None and "netted into `weights`" in released.evidence.note
    # The interval keeps its negative drop, explained (logged) by the row's release part.
    rise = next(i for i in ledger.intervals if i.to_id == "draft_load_begin")
    assert rise.drop_bytes == rise.logged_bytes == -gb(5.00).bytes
    assert rise.named_bytes == 0
    assert ledger.row("unexplained.draft_load_begin") is None
    assert not [r for r in ledger.rows if r.in_partition and (r.bytes or 0) < 0]
    assert ledger.usable_bytes is not None
    assert partition_sum(ledger) == ledger.usable_bytes + ledger.balance_error_bytes
    assert ledger.summary.weights_load_peak_gib == pytest.approx(41.00)
    assert ledger.summary.weights_released_gib == pytest.approx(5.00)
    assert ledger.summary.weights_resident_gib == pytest.approx(36.00)
    assert ledger.summary.runtime_headroom_gib == pytest.approx(6.30)


def test_draft_release_nets_into_the_draft_weights_row() -> None:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=50.00)
    log.add(EventKind.LOAD_END, values={"type": "FooForCausalLM"}, avail=30.00, usage=20.00)
    log.add(EventKind.LOAD_BEGIN, avail=30.00)
    log.add(EventKind.LOAD_END, values={"type": "FooEagle3"}, avail=27.00, usage=3.00)
    log.add(EventKind.MEMORY_POOL_END, avail=28.00)  # the draft loader gave 1.00 back
    ledger = ledger_of(log, server_args=SPEC_ARGS, outcome="truncated")
    draft = row(ledger, "draft_weights")
    assert draft.bytes == gb(3.00).bytes - gb(1.00).bytes
    assert draft.group == RowGroup.DRAFT_WEIGHTS
    assert draft.interval_parts == {
        "draft_load_begin->draft_load_end": gb(3.00).bytes,
        "draft_load_end->memory_pool_end": -gb(1.00).bytes,
    }
    assert row(ledger, "draft_weights_released").bytes == gb(1.00).bytes
    assert row(ledger, "draft_weights_load_peak").bytes == gb(3.00).bytes
    assert ledger.summary.draft_weights_gib == pytest.approx(2.00)
    # The target load gave nothing back: its row is its load-end usage, no informational rows.
    assert row(ledger, "weights").bytes == gb(20.00).bytes
    assert ledger.row("weights_load_peak") is None
    assert ledger.summary.weights_released is None
    # req_to_token (8 rows x 4104 cols x 4 B) is carved from that interval too: with nothing
    # left to carve from, its unexplained row is negative, and the account still balances.
    unexplained = row(ledger, "unexplained.memory_pool_end")
    assert unexplained.bytes == -(8 * 4104 * 4)
    assert unexplained.evidence.note is not None and "negative" in unexplained.evidence.note
    assert partition_sum(ledger) == ledger.usable_bytes


def test_release_after_a_load_without_its_begin_line_nets_into_the_usage_row() -> None:
    """The load end's own usage line gives the row when its begin is not the previous reading."""
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=50.00)
    log.add(EventKind.MEMORY_POOL_END, avail=49.00)
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=39.00, usage=10.00)
    log.add(EventKind.CAPTURE_BEGIN, avail=41.00)
    ledger = ledger_of(log, outcome="truncated")
    weights = row(ledger, "weights")
    assert weights.bytes == gb(10.00).bytes - gb(2.00).bytes
    assert weights.evidence.formula == (
        "load-end usage 10.00 GiB (hand.log:3) - released 2.00 GiB "
        "(avail rise load_end -> capture_begin, hand.log:3, hand.log:4)"
    )
    assert row(ledger, "weights_released").bytes == gb(2.00).bytes
    assert ledger.summary.weights_resident_gib == pytest.approx(8.00)
    assert ledger.usable_bytes is not None
    assert partition_sum(ledger) == ledger.usable_bytes + ledger.balance_error_bytes


def test_graph_rows_split_by_progress_readings() -> None:
    ledger = ledger_of(speculative_log(), server_args=SPEC_ARGS)
    assert gib(row(ledger, "cuda_graph_static").bytes) == pytest.approx(0.10)
    assert gib(row(ledger, "cuda_graph_largest_bucket").bytes) == pytest.approx(1.50)
    assert gib(row(ledger, "cuda_graph_buckets").bytes) == pytest.approx(0.40)
    assert gib(row(ledger, "draft_cuda_graph").bytes) == pytest.approx(0.40)
    assert ledger.summary.cuda_graph_gib == pytest.approx(2.40)
    assert ledger.summary.cuda_graph_largest_bucket_gib == pytest.approx(1.50)
    assert ledger.summary.cuda_graph_static_gib == pytest.approx(0.10)
    largest = row(ledger, "cuda_graph_largest_bucket")
    assert largest.evidence.inputs["first_batch"] == "bs=8"  # evidence, not the label:
    assert "bs=" not in largest.label  # labels stay the same across deployments (diffs)
    assert row(ledger, "cuda_graph_buckets").evidence.inputs["buckets"] == 2  # bs 4 and bs 1


def test_summary_groups_and_slots() -> None:
    ledger = ledger_of(speculative_log(), server_args=SPEC_ARGS)
    s = ledger.summary
    assert s.state_pool_gib == pytest.approx(3.00 + 20.00 + 1.00)
    assert s.fixed_overhead_gib == pytest.approx(70.50 - 24.00)
    assert s.kv_pool_gib == pytest.approx(20.00) and s.draft_kv_gib == pytest.approx(1.00)
    assert s.slots == 7 + 0 + 1
    assert s.state_per_slot_gib == pytest.approx(3.00 / 8)
    assert s.runtime_headroom_gib == pytest.approx(1.30)
    # workspace = every residual: 0.30 (pool) + 0 (draft pool) + 0.20 (backend -> capture).
    assert s.workspace_gib == pytest.approx(0.50)
    assert s.mem_fraction_static == 0.9
    assert (s.kv_tokens_per_rank, s.kv_tokens_per_dp_group, s.kv_tokens_per_instance) == (
        100000,
        100000,
        100000,
    )


def test_state_per_slot_uses_the_state_pools_own_slots() -> None:
    """A ratio-split Mamba pool (K unrelated to max_running_requests) sets the divisor."""
    log = speculative_log()
    for index, event in enumerate(log.events):
        if event.kind == EventKind.MAMBA_ALLOCATED:
            log.events[index] = replace(event, values={"max_mamba_cache_size": 99})
    ledger = ledger_of(log, server_args=SPEC_ARGS)
    assert ledger.summary.slots == 8
    assert ledger.summary.state_per_slot_gib == pytest.approx(3.00 / 100)
    assert any("differ from the Mamba pool" in note for note in ledger.notes)


def test_kv_tokens_scale_by_dcp_and_dp_groups() -> None:
    args = {**SPEC_ARGS, "dcp_size": 4, "dp_size": 3}
    s = ledger_of(speculative_log(), server_args=args).summary
    assert (s.kv_tokens_per_rank, s.kv_tokens_per_dp_group, s.kv_tokens_per_instance) == (
        100000,
        400000,
        1200000,
    )


def test_printed_usage_rounding_shows_as_balance_error_within_tolerance() -> None:
    log = Log()
    log.add(EventKind.DIST_INIT_END, usage=1.00)
    log.add(EventKind.LOAD_BEGIN, avail=50.00)
    # The true readings were 50.004 and 39.996: usage printed from them is 10.01.
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=40.00, usage=10.01)
    log.add(EventKind.MEMORY_POOL_END, avail=5.00)
    ledger = ledger_of(log)
    assert row(ledger, "weights").bytes == gb(10.01).bytes
    load = ledger.intervals[0]
    assert load.unexplained_bytes == gb(10.00).bytes - gb(10.01).bytes
    assert not [r for r in ledger.rows if r.id == "unexplained.load_end"]
    assert ledger.balance_error_bytes == gb(10.01).bytes - gb(10.00).bytes
    assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes


def test_usage_far_from_the_drop_leaves_an_unexplained_row() -> None:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=50.00)
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=40.00, usage=9.00)
    ledger = ledger_of(log)
    assert row(ledger, "unexplained.load_end").bytes == gb(10.00).bytes - gb(9.00).bytes
    assert ledger.balance_error_bytes == 0
    assert any("differs from the avail drop" in note for note in ledger.notes)


def test_missing_dist_init_usage_is_said_and_usable_is_load_begin() -> None:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=30.00)
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=20.00, usage=10.00)
    ledger = ledger_of(log)
    assert ledger.usable_bytes == gb(30.00).bytes
    nccl = row(ledger, "nccl_init")
    assert nccl.kind == RowKind.UNKNOWN and nccl.bytes is None and not nccl.in_partition
    assert any("distributed-init usage not logged" in note for note in ledger.notes)
    assert ledger.summary.nccl_init is None


def test_formula_without_its_parameters_is_unknown_with_the_reason() -> None:
    log = speculative_log()
    for event in list(log.events):
        if event.kind == EventKind.SUMMARY:
            log.events.remove(event)
    ledger = ledger_of(log, outcome="truncated")  # no server_args, no summary line
    req = row(ledger, "req_to_token")
    assert req.kind == RowKind.UNKNOWN and req.bytes is None and not req.in_partition
    assert req.evidence.note is not None and "max_running_requests" in req.evidence.note
    # Its bytes stay inside the interval's unexplained row: the account still balances.
    assert ledger.usable_bytes is not None
    assert partition_sum(ledger) == ledger.usable_bytes + ledger.balance_error_bytes


def test_formula_needing_model_dims_says_so() -> None:
    args = {**SPEC_ARGS, "dcp_size": 8, "dcp_replicate_q_proj": True}
    without = ledger_of(speculative_log(), server_args=args)
    note = row(without, "dcp_q_replica").evidence.note
    assert note is not None and "--model-config" in note
    dims = model_dims_from_dict(
        {
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "qk_nope_head_dim": 8,
            "qk_rope_head_dim": 4,
            "q_lora_rank": 16,
            "kv_lora_rank": 32,
            "torch_dtype": "bfloat16",
            "quantization_config": {"quant_method": "fp8"},
        },
        label="tiny.json",
    )
    with_dims = ledger_of(speculative_log(), server_args=args, model=dims)
    replica = row(with_dims, "dcp_q_replica")
    assert replica.bytes == 2 * (4 * 12 * 16 * 1 + 4 * 8 * 32 * 2)
    assert replica.interval == "attention_backend_end->capture_begin"


def test_truncated_log_gives_a_partial_ledger_that_says_where_it_stopped() -> None:
    log = Log()
    log.add(EventKind.DIST_INIT_END, usage=0.50)
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=30.00, usage=10.00)
    log.add(EventKind.KV_ALLOCATED, values={"tokens": 1000}, kv=20.00)
    log.add(EventKind.MEMORY_POOL_END, avail=9.00)
    log.add(EventKind.CAPTURE_BEGIN, avail=8.50)
    ledger = ledger_of(log, outcome="truncated")
    assert ledger.stopped_at is not None
    assert "capture_begin" in ledger.stopped_at and "truncated" in ledger.stopped_at
    free = row(ledger, "free_at_stop")
    assert free.bytes == gb(8.50).bytes and free.group == RowGroup.RUNTIME_HEADROOM
    assert ledger.row("runtime_headroom") is None
    assert ledger.summary.runtime_headroom is None
    assert partition_sum(ledger) == ledger.usable_bytes


def test_oom_while_loading_names_the_line() -> None:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    log.add(EventKind.OOM, values={"reason": "out of memory"})
    ledger = ledger_of(log, outcome="oom", outcome_line=2, outcome_text="torch.OutOfMemoryError")
    assert ledger.stopped_at == (
        "after checkpoint load_begin (line 1); out of memory at line 2: torch.OutOfMemoryError"
    )
    assert row(ledger, "free_at_stop").bytes == gb(40.00).bytes


def test_stopped_at_quotes_whole_sentences_or_words_never_half_a_word() -> None:
    # review M2: "... of which 3.88 GiB is free" was cut at "of whic"
    oom = (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 12.00 GiB. GPU 0 has a "
        "total capacity of 287.98 GiB of which 3.91 GiB is free. Of the allocated memory 280.38 "
        "GiB is allocated by PyTorch, and 6.32 MiB is reserved by PyTorch but unallocated."
    )
    assert excerpt(oom).endswith(
        "GPU 0 has a total capacity of 287.98 GiB of which 3.91 GiB is free."
    )
    words = "RuntimeError: " + "aclnnInplaceCopy failed " * 10
    cut = excerpt(words)
    assert cut.endswith(" failed …") and len(cut) <= EXCERPT_CHARS + 2
    assert excerpt("short text") == "short text"


def test_no_avail_reading_cannot_balance_and_says_why() -> None:
    log = Log()
    log.add(EventKind.DIST_INIT_END, usage=0.50)
    log.add(EventKind.CRASH, values={"reason": "Traceback"})
    ledger = ledger_of(log, outcome="crash", outcome_line=2)
    assert ledger.usable_bytes is None
    assert "cannot balance: no avail reading in this log" in ledger.notes
    assert ledger.stopped_at is not None and "before any memory reading" in ledger.stopped_at


def test_fragment_starting_at_load_end_recovers_load_begin_from_usage() -> None:
    log = Log()
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=30.00, usage=10.00)
    log.add(EventKind.MEMORY_POOL_END, avail=5.00)
    ledger = ledger_of(log)
    assert ledger.checkpoints[0].id == "load_begin"
    assert ledger.checkpoints[0].avail_bytes == gb(30.00).bytes + gb(10.00).bytes
    assert ledger.usable_bytes == gb(40.00).bytes
    assert row(ledger, "weights").bytes == gb(10.00).bytes


def test_fragment_starting_after_load_has_unknown_usable() -> None:
    log = Log()
    log.add(EventKind.MEMORY_POOL_END, avail=5.00)
    log.add(EventKind.CAPTURE_BEGIN, avail=4.00)
    ledger = ledger_of(log)
    assert ledger.usable_bytes is None
    assert any(n.startswith("cannot balance: no load-begin avail reading") for n in ledger.notes)


def test_allocation_logged_after_the_last_reading_is_carved_from_free_memory() -> None:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=30.00, usage=10.00)
    log.add(EventKind.KV_ALLOCATED, values={"tokens": 1000}, kv=20.00)
    ledger = ledger_of(log, outcome="truncated")
    assert row(ledger, "kv_pool").bytes == gb(20.00).bytes
    assert row(ledger, "free_at_stop").bytes == gb(10.00).bytes
    assert partition_sum(ledger) == ledger.usable_bytes


def test_swa_pool_line_is_informational_beside_its_kv_lines() -> None:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=30.00, usage=10.00)
    log.add(EventKind.SWA_SPLIT, values={"full_layer_tokens": 2000, "swa_layer_tokens": 1600})
    log.add(EventKind.KV_ALLOCATED, values={"tokens": 1600}, k=2.00, v=2.00)
    log.add(EventKind.KV_ALLOCATED, values={"tokens": 2000}, k=1.00, v=1.00)
    log.add(EventKind.SWA_POOL, usage=6.00)
    log.add(EventKind.MEMORY_POOL_END, avail=23.00)
    ledger = ledger_of(log)
    assert row(ledger, "kv_pool").bytes == gb(6.00).bytes  # both KV lines, one row
    assert not row(ledger, "swa_kv_pool").in_partition
    assert ledger.summary.kv_tokens_per_rank == 2000  # the full pool, printed second


def test_all_reduce_buffers_inside_dist_init_are_informational() -> None:
    log = Log()
    log.add(EventKind.ALL_REDUCE_CONFIG, symmetric_memory=gb(0.03), local_buffer=gb(0.01))
    log.add(EventKind.DIST_INIT_END, usage=0.50)
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    ledger = ledger_of(log, outcome="truncated")
    buffers = row(ledger, "all_reduce_buffers")
    assert not buffers.in_partition and buffers.evidence.note is not None
    assert ledger.usable_bytes == gb(40.50).bytes


def test_symmetric_pool_between_dist_init_and_load_is_added_to_usable() -> None:
    log = Log()
    log.add(EventKind.DIST_INIT_END, usage=0.50)
    log.add(EventKind.SYMM_PREALLOC, size=gb(4.00))
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    ledger = ledger_of(log, outcome="truncated")
    assert row(ledger, "symmetric_memory_pool").in_partition
    assert ledger.usable_bytes == gb(44.50).bytes
    assert partition_sum(ledger) == ledger.usable_bytes


def test_kv_tokens_from_model_dims_when_the_log_has_no_token_count() -> None:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    log.add(EventKind.LOAD_END, values={"type": "X"}, avail=30.00, usage=10.00)
    log.add(EventKind.KV_ALLOCATED, kv=gb(1.00))
    log.add(EventKind.MEMORY_POOL_END, avail=29.00)
    dims = model_dims_from_dict(
        {"num_hidden_layers": 4, "kv_lora_rank": 512, "qk_rope_head_dim": 64}, label="c.json"
    )
    ledger = ledger_of(log, model=dims, server_args={"kv_cache_dtype": "fp8_e4m3"})
    assert ledger.summary.kv_tokens_per_rank == GIB // (576 * 4)
    assert ledger_of(log).summary.kv_tokens_per_rank is None


def test_user_formula_is_carved_and_shown_with_its_text() -> None:
    extra = parse_formulas(
        """
[[formula]]
id = "sampler_buffers"
label = "sampler scratch"
interval = "capture_begin"
let.rows = "log.max_running_requests"
expression = "rows * 1048576"
text = "{rows} requests x 1 MiB"
why = "a fork's sampler keeps 1 MiB per request"
""",
        "mine.toml",
    )
    ledger = ledger_of(speculative_log(), server_args=SPEC_ARGS, formulas=[*TEST_FORMULAS, *extra])
    sampler = row(ledger, "sampler_buffers")
    assert sampler.bytes == 7 * MIB
    assert sampler.evidence.formula == "7 requests x 1 MiB"
    assert sampler.interval == "attention_backend_end->capture_begin"
    interval = next(i for i in ledger.intervals if i.to_id == "capture_begin")
    assert interval.named_bytes == 7 * MIB
    assert row(ledger, "unexplained.capture_begin").bytes == gb(0.20).bytes - 7 * MIB


def test_engine_is_pure_and_deterministic() -> None:
    parsed = speculative_log().parsed(server_args=SPEC_ARGS)
    before = to_json(parsed)
    first = build_ledger(parsed, formulas=TEST_FORMULAS)
    second = build_ledger(parsed, formulas=TEST_FORMULAS)
    assert first == second
    assert to_json(parsed) == before


def test_engine_modules_import_no_cli_or_grammar_library() -> None:
    code = (
        "import sys, memledger.engine, memledger.formulas, memledger.model.model_config; "
        "print(sorted(m for m in ('click', 'lark', 'tabulate') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_untagged_progress_bars_are_rank_0s_not_another_ranks() -> None:
    log = Log(rank="TP3")
    log.add(EventKind.LOAD_BEGIN, avail=40.00)
    log.add(EventKind.CAPTURE_BEGIN, values={"role": "target"}, avail=10.00)
    log.add(EventKind.CAPTURE_PROGRESS, rank="", values={"bs": 8}, avail=9.00)
    log.add(EventKind.CAPTURE_PROGRESS, rank="", values={"bs": 4}, avail=5.00)
    log.add(EventKind.CAPTURE_END, values={"role": "target"}, avail=4.00, usage=6.00)
    ledger = ledger_of(log, outcome="truncated")
    assert row(ledger, "cuda_graph").bytes == gb(6.00).bytes
    assert ledger.row("cuda_graph_largest_bucket") is None
    assert any("rank 0's" in note for note in ledger.notes)


def test_crash_after_the_summary_line_keeps_the_runtime_headroom() -> None:
    log = speculative_log()
    log.add(EventKind.CRASH, values={"reason": "Traceback"})
    ledger = ledger_of(log, server_args=SPEC_ARGS, outcome="crash", outcome_line=log.line)
    assert ledger.stopped_at is not None
    assert ledger.stopped_at.startswith(f"after the startup finished (summary line {log.line - 1})")
    assert ledger.summary.runtime_headroom_gib == pytest.approx(1.30)
