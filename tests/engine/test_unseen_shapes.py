"""Log shapes the real logs do not cover, as synthetic lines in SGLang's own formats: the ledger
never crashes on them and never balances falsely (every row stays true to the line it cites, and
what no line explains stays in a named unexplained row or is not summed).

Shapes: an NPU log without `avail mem`, a log with only some checkpoints, a bare fragment, a DP
log whose lines carry no TP0 tag (untagged and interleaved, or `DP<i>` alone), a PD decode log
with `--disaggregation-decode-extra-slots`, and a second startup in the same file.
"""

from __future__ import annotations

from memledger import api
from memledger.model.ledger import Ledger, Row, RowGroup, RowKind
from memledger.render.text import render_text
from memledger.units import GIB, parse_size
from tests.engine.helpers import assert_intervals_add_up


def _gib(text: str) -> int:
    return parse_size(text, "GB").bytes


def _ledger(text: str, startup: int | None = None) -> Ledger:
    return api.ledger(api.load_text(text, startup=startup))


def _row(ledger: Ledger, row_id: str) -> Row:
    found = [r for r in ledger.rows if r.id == row_id]
    assert len(found) == 1, [r.id for r in ledger.rows]
    return found[0]


def _lines(tag: str, *messages: str, day: str = "2026-08-01") -> str:
    prefix = f"[{day} 10:00:00{' ' + tag if tag else ''}] "
    return "".join(prefix + message + "\n" for message in messages)


def _args(fields: str) -> str:
    return f"[2026-08-01 09:59:59] server_args=ServerArgs(model_path='m', {fields})\n"


LOAD_END = (
    "Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem={avail} GB, "
    "mem usage={usage} GB."
)
KV_LINE = "KV Cache is allocated. #tokens: 143360, K size: 4.24 GB, V size: 4.24 GB"
SUMMARY = (
    "max_total_num_tokens=143360, chunked_prefill_size=256, max_prefill_tokens=458880, "
    "max_running_requests={requests}, context_len=4096, available_gpu_mem={avail} GB"
)


def _assert_consistent(ledger: Ledger) -> None:
    """What every ledger holds: partition rows have bytes, unknown rows none, ids are unique,
    intervals add up, and a balance is claimed only with usable memory known."""
    assert all(r.bytes is not None for r in ledger.rows if r.in_partition)
    assert all(
        r.bytes is None and not r.in_partition for r in ledger.rows if r.kind is RowKind.UNKNOWN
    )
    assert len({r.id for r in ledger.rows}) == len(ledger.rows)
    assert_intervals_add_up(ledger)
    if ledger.usable_bytes is None:
        assert ledger.balance_error_bytes == 0 and ledger.tolerance_bytes == 0
    else:
        partition = sum(r.bytes or 0 for r in ledger.rows if r.in_partition)
        assert partition - ledger.usable_bytes == ledger.balance_error_bytes
        assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes


NPU_WITHOUT_AVAIL = _args("tp_size=4, device='npu', mem_fraction_static=0.8") + _lines(
    "TP0",
    "Init torch distributed ends. mem usage=0.00 GB",
    "Load weight begin.",
    "Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, mem usage=32.61 GB.",
    "The available memory for KV cache is 8.48 GB.",
    KV_LINE,
    "Memory pool end.",
    "Capture npu graph begin. This can take up to several minutes.",
    "Capture npu graph end. Time elapsed: 27.84 s. mem usage=9.38 GB.",
    SUMMARY.format(requests=16, avail="10.96"),
)


def test_npu_log_without_avail_shows_its_rows_and_claims_no_split() -> None:
    ledger = _ledger(NPU_WITHOUT_AVAIL)
    _assert_consistent(ledger)
    assert ledger.usable_bytes is None
    assert "cannot balance: no avail reading in this log" in ledger.notes
    # The lines' own numbers are shown, true to their line, but not summed (no account).
    weights = _row(ledger, "weights")
    assert weights.bytes == _gib("32.61") and not weights.in_partition
    assert weights.evidence.sources[0].line == 4
    assert _row(ledger, "kv_pool").bytes == _gib("4.24") * 2
    text = render_text(ledger)
    # Before: `weights 0.00` and `usable - GiB = fixed overhead 0.00 + ... + state pool 0.00`
    # beside a weights row of 32.61 GiB.
    groups = {
        line.split()[0]: line.split()[1]
        for line in text.splitlines()
        if "shown, not summed" in line
    }
    assert groups["weights"] == "-" and groups["state_pool"] == "-"
    assert "usable unknown, no split" in text
    assert "state pool 0.00" not in text


PARTIAL = _args(
    "tp_size=4, mem_fraction_static=0.8, max_running_requests=16, context_length=4096"
) + _lines(
    "TP0",
    "Load weight begin. avail mem=61.43 GB",
    KV_LINE,
    "Memory pool end. avail mem=20.34 GB",
    SUMMARY.format(requests=16, avail="20.34"),
)


def test_log_with_only_some_checkpoints_keeps_the_gap_unexplained() -> None:
    # No `Load weight end`: the weights and the pool share one interval, and only the KV line
    # is known inside it. The rest is the interval's unexplained row, not a weights row.
    ledger = _ledger(PARTIAL)
    _assert_consistent(ledger)
    assert ledger.usable_bytes == _gib("61.43")
    assert not [r for r in ledger.rows if r.group is RowGroup.WEIGHTS]
    gap = _row(ledger, "unexplained.memory_pool_end")
    named = sum(
        r.bytes or 0
        for r in ledger.rows
        if r.interval == "load_begin->memory_pool_end"
        and r.kind is not RowKind.RESIDUAL
        and r.in_partition
    )
    assert gap.bytes == _gib("61.43") - _gib("20.34") - named
    assert gap.bytes is not None and gap.bytes > 32 * GIB  # the weights (32.61) are in it


FRAGMENT = (
    KV_LINE + "\n"
    "Memory pool end. avail mem=20.34 GB\n"
    "Capture cuda graph begin. This can take up to several minutes. avail mem=20.34 GB\n"
    "Capture cuda graph end. Time elapsed: 27.84 s. mem usage=9.38 GB. avail mem=10.96 GB.\n"
)


def test_bare_fragment_has_unknown_usable_and_says_its_split_is_partial() -> None:
    ledger = _ledger(FRAGMENT)
    _assert_consistent(ledger)
    assert ledger.usable_bytes is None
    assert any(n.startswith("cannot balance: no load-begin avail reading") for n in ledger.notes)
    assert _row(ledger, "cuda_graph").bytes == _gib("9.38")
    text = render_text(ledger)
    assert "usable unknown; the rows the log shows: fixed overhead 9.38" in " ".join(text.split())


def _interleaved(first: str, second: str, dp_args: str) -> str:
    """Two workers' lines, each kind printed by both before the next kind (as they run)."""
    return (
        _args(dp_args)
        + _lines(first, "Init torch distributed ends. mem usage=0.50 GB")
        + _lines(second, "Init torch distributed ends. mem usage=0.50 GB")
        + _lines(first, "Load weight begin. avail mem=61.43 GB")
        + _lines(second, "Load weight begin. avail mem=60.70 GB")
        + _lines(second, LOAD_END.format(avail="28.75", usage="32.61"))
        + _lines(first, LOAD_END.format(avail="28.82", usage="32.61"))
        + _lines(first, KV_LINE)
        + _lines(second, KV_LINE)
        + _lines(first, "Memory pool end. avail mem=20.34 GB")
        + _lines(second, "Memory pool end. avail mem=18.17 GB")
        + _lines(first, SUMMARY.format(requests=32, avail="20.34"))
    )


DP_ATTENTION = (
    "tp_size=2, dp_size=2, enable_dp_attention=True, mem_fraction_static=0.8, "
    "max_running_requests=64, context_length=4096"
)


def test_untagged_lines_of_two_ranks_never_balance_as_one_rank() -> None:
    # Before: weights 66.50 (both ranks' load ends), KV 18.56 and -51.60 GiB of unexplained
    # rows, and "balances". One ModelRunner prints distributed init and the load once each
    # (v0.5.8 model_executor/model_runner.py:801, :808, :950): two in a row are two workers.
    ledger = _ledger(_interleaved("", "", DP_ATTENTION))
    _assert_consistent(ledger)
    assert ledger.usable_bytes is None
    note = next(n for n in ledger.notes if n.startswith("cannot balance: untagged lines"))
    assert "lines 2 and 3" in note
    assert not [r for r in ledger.rows if r.in_partition]
    assert not [r for r in ledger.rows if r.group is RowGroup.WEIGHTS]
    assert ledger.sizing is None


def test_one_untagged_rank_with_a_draft_is_not_taken_for_two() -> None:
    # Target and draft each print their own set, one after the other; a DFLASH draft's pool
    # follows the target's with no line between (v0.5.16, real single/005): one worker.
    text = _args("tp_size=1, mem_fraction_static=0.8") + _lines(
        "",
        "Init torch distributed ends. mem usage=0.50 GB",
        "Load weight begin. avail mem=60.00 GB",
        LOAD_END.format(avail="40.00", usage="20.00"),
        "Init torch distributed ends. mem usage=0.00 GB",
        "Load weight begin. avail mem=40.00 GB",
        "Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, "
        "avail mem=39.00 GB, mem usage=1.00 GB.",
        KV_LINE,
        "Memory pool end. avail mem=29.72 GB",
        "Memory pool end. avail mem=29.70 GB",
    )
    ledger = _ledger(text)
    _assert_consistent(ledger)
    assert ledger.usable_bytes == _gib("60.00") + _gib("0.50")
    assert not any("interleaved" in n for n in ledger.notes)


def test_dp_replica_tags_without_tp_read_dp0_as_its_rank_0() -> None:
    # tp_size 1: the scheduler's prefix is ` DP<i>` alone (v0.5.8 managers/scheduler.py
    # :2896-2903). DP0 is the first replica's only worker, not "a fragment of another rank".
    ledger = _ledger(
        _interleaved(
            "DP0",
            "DP1",
            "tp_size=1, dp_size=2, mem_fraction_static=0.8, max_running_requests=64, "
            "context_length=4096",
        )
    )
    _assert_consistent(ledger)
    assert ledger.source.rank == "DP0"
    assert ledger.usable_bytes == _gib("61.43") + _gib("0.50")
    assert (
        _row(ledger, "weights")
        .evidence.sources[-1]
        .text.endswith("avail mem=28.82 GB, mem usage=32.61 GB.")
    )
    assert any(n.startswith("no TP tag in this input (tp_size 1): read DP0") for n in ledger.notes)
    assert not any("fragments of different ranks" in n for n in ledger.notes)


def test_dp_attention_log_without_rank_0_reads_the_lowest_rank_and_says_so() -> None:
    ledger = _ledger(
        _interleaved("DP1 TP2", "DP1 TP3", DP_ATTENTION.replace("tp_size=2", "tp_size=4"))
    )
    _assert_consistent(ledger)
    assert ledger.source.rank == "DP1 TP2"
    assert any("no rank 0 in this input" in n for n in ledger.notes)
    assert _row(ledger, "weights").bytes == _gib("32.61")


PD_DECODE = _args(
    "tp_size=8, dp_size=4, enable_dp_attention=True, mem_fraction_static=0.8, "
    "max_running_requests=128, page_size=64, context_length=4096, tokenizer_backend='huggingface', "
    "disaggregation_mode='decode', disaggregation_decode_extra_slots=16"
) + _lines(
    "DP0 TP0",
    "Init torch distributed ends. elapsed=0.23 s, mem usage=0.50 GB",
    "Load weight begin. avail mem=78.00 GB",
    "Load weight end. elapsed=109.33 s, type=DeepseekV3ForCausalLM, avail mem=40.00 GB, "
    "mem usage=38.00 GB.",
    "KV Cache is allocated. #tokens: 300000, KV size: 20.00 GB",
    "Memory pool end. avail mem=19.99 GB",
    "Capture cuda graph begin. This can take up to several minutes. avail mem=19.99 GB",
    "Capture cuda graph end. Time elapsed: 28.00 s. mem usage=2.00 GB. avail mem=17.99 GB.",
    SUMMARY.format(requests=32, avail="17.99"),
)


def test_pd_decode_rows_are_per_dp_requests_plus_extra_slots_plus_padding() -> None:
    # From 0.5.11 (tokenizer_backend in server_args dates the log): DecodeReqToTokenPool has
    # size + pre_alloc + 1 rows (v0.5.11 disaggregation/decode.py:135, v0.5.16 :135), size
    # being the per-DP count (v0.5.10 model_runner_kv_cache_mixin.py:849), pre_alloc the
    # resolved --disaggregation-decode-extra-slots (v0.5.16 arg_groups/pd_disaggregation_hook.py).
    ledger = _ledger(PD_DECODE)
    _assert_consistent(ledger)
    table = _row(ledger, "req_to_token")
    assert table.evidence.inputs["rows"] == 32 + 16 + 1
    assert table.bytes == (32 + 16 + 1) * (4096 + 4) * 4
    assert ledger.summary.slots == 49
    assert ledger.summary.kv_tokens_per_instance == 300000 * 4
    assert not any("assumed" in n for n in ledger.notes)


def test_second_startup_in_the_same_file_is_accounted_alone() -> None:
    first = _args("tp_size=1, mem_fraction_static=0.8") + _lines(
        "",
        "Load weight begin. avail mem=70.00 GB",
        LOAD_END.format(avail="50.00", usage="20.00"),
        "Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    )
    second = _args(
        "tp_size=1, mem_fraction_static=0.7, max_running_requests=8, context_length=4096"
    ) + _lines(
        "",
        "Load weight begin. avail mem=69.00 GB",
        LOAD_END.format(avail="49.00", usage="20.00"),
        KV_LINE,
        "Memory pool end. avail mem=39.70 GB",
        SUMMARY.format(requests=8, avail="39.70"),
        "The server is fired up and ready to roll!",
    )
    ledger = _ledger(first + second)
    _assert_consistent(ledger)
    assert (ledger.source.startup, ledger.source.n_startups) == (1, 2)
    assert ledger.outcome == "ready" and ledger.usable_bytes == _gib("69.00")
    assert _row(ledger, "weights").evidence.sources[0].line > first.count("\n")
    earlier = _ledger(first + second, startup=0)
    _assert_consistent(earlier)
    assert earlier.outcome == "oom" and earlier.usable_bytes == _gib("70.00")
    assert not [r for r in earlier.rows if r.group is RowGroup.STATE_POOL]


NPU_SOME_AVAIL = _args(
    "tp_size=4, device='npu', mem_fraction_static=0.8, max_running_requests=16, context_length=4096"
) + _lines(
    "TP0",
    "Init torch distributed ends. mem usage=0.00 GB",
    "Load weight begin. avail mem=61.43 GB",
    "Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, mem usage=32.61 GB.",
    KV_LINE,
    "Memory pool end.",
    "Capture npu graph begin. This can take up to several minutes. avail mem=20.34 GB",
    "Capture npu graph end. Time elapsed: 27.84 s. mem usage=9.38 GB. avail mem=10.96 GB.",
    SUMMARY.format(requests=16, avail="10.96"),
)


def test_pool_end_without_avail_still_carves_the_pool_costs_from_its_interval() -> None:
    # `Memory pool end.` without a reading: the pools were still built there, inside the
    # interval load_begin -> capture_begin (v0.5.8 model_runner_kv_cache_mixin.py:647 prints the
    # line after init_memory_pool). Before: req_to_token and kv_free_pages were unknown, "the
    # account stops at capture_end" (it does not).
    ledger = _ledger(NPU_SOME_AVAIL)
    _assert_consistent(ledger)
    table = _row(ledger, "req_to_token")
    assert table.kind is RowKind.DERIVED and table.interval == "load_begin->capture_begin"
    assert table.bytes == 16 * (4096 + 4) * 4
    assert _row(ledger, "kv_free_pages").bytes == 143360 * 8
    assert _row(ledger, "weights").bytes == _gib("32.61")
    assert not any("the account stops" in n for n in ledger.notes)


def test_fragment_starting_at_pool_end_says_so_not_that_the_account_stops() -> None:
    ledger = _ledger(FRAGMENT)
    note = next(n for n in ledger.notes if n.startswith("kv_free_pages unknown"))
    assert "the log starts at memory_pool_end" in note and "stops" not in note


DRAFT_ONWARDS = _args("tp_size=8, dp_size=2, enable_dp_attention=True, device='npu'") + _lines(
    "DP0 TP0",
    "The available memory for KV cache is 29.84 GB.",
    "KV Cache is allocated. #tokens: 489472, K size: 14.94 GB, V size: 14.94 GB",
    "Load weight begin. avail mem=12.71 GB",
    "Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=10.94 GB, "
    "mem usage=1.77 GB.",
    "KV Cache is allocated. #tokens: 489472, K size: 0.23 GB, V size: 0.23 GB",
    "Memory pool end. avail mem=10.47 GB",
)


def test_fragment_starting_at_the_draft_load_has_no_usable_memory() -> None:
    # The shape of complex/007 (EAGLE3 on Ascend) from the target's KV line on (synthetic
    # numbers). Before: usable = the draft's load-begin avail + the target KV + the Ascend KV
    # *budget* (an informational line), OUT OF BALANCE by the budget. The target's weights were
    # loaded before the first reading here, so no usable memory can be told.
    ledger = _ledger(DRAFT_ONWARDS)
    _assert_consistent(ledger)
    assert ledger.usable_bytes is None
    assert any("the first avail reading is the draft's load" in n for n in ledger.notes)
    assert _row(ledger, "draft_weights").bytes == _gib("1.77")
    budget = _row(ledger, "ascend_kv_budget")
    assert not budget.in_partition


def test_an_informational_line_before_the_first_reading_is_not_added_to_usable() -> None:
    text = _args("tp_size=4, device='npu'") + _lines(
        "TP0",
        "The available memory for KV cache is 8.48 GB.",
        "Load weight begin. avail mem=61.43 GB",
        LOAD_END.format(avail="28.82", usage="32.61"),
        KV_LINE,
        "Memory pool end. avail mem=20.34 GB",
    )
    ledger = _ledger(text)
    _assert_consistent(ledger)
    assert ledger.usable_bytes == _gib("61.43")


def test_pool_interval_without_a_kv_line_or_tokens_names_the_kv_cache() -> None:
    # A July-2024 paste ([gpu_id=N] prefixes, SGLang 0.2.x): no KV line, no token count. The
    # 9.49 GiB of the pool interval stay unexplained (nothing sizes them), and the hint names
    # the KV cache (v0.4.1 model_executor/model_runner.py:493-575 prints no size), not the
    # req_to_token table alone as before.
    text = (
        "[gpu_id=0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=15.61 GB\n"
        "[gpu_id=1] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=15.95 GB\n"
        "[gpu_id=0] Memory pool end. avail mem=6.12 GB\n"
        "[gpu_id=1] Memory pool end. avail mem=6.46 GB\n"
    )
    ledger = _ledger(text)
    _assert_consistent(ledger)
    gap = _row(ledger, "unexplained.memory_pool_end")
    assert gap.bytes == _gib("15.61") - _gib("6.12")
    assert gap.evidence.note is not None and gap.evidence.note.startswith(
        "likely: the KV cache itself"
    )
    assert not [r for r in ledger.rows if r.group is RowGroup.STATE_POOL]


def test_two_servers_with_the_same_tag_in_one_file_never_balance_as_one() -> None:
    # A prefill and a decode server started together, both logging `TP0` into one file: the
    # last startup (from the second server_args on) holds both servers' lines. Before: one
    # account of both (two load ends in a row read as one load and an "extra" one).
    prefill = _args("tp_size=1, disaggregation_mode='prefill', mem_fraction_static=0.8")
    decode = _args("tp_size=1, disaggregation_mode='decode', mem_fraction_static=0.8")
    text = (
        prefill
        + decode
        + _lines(
            "TP0",
            "Load weight begin. avail mem=78.00 GB",
            "Load weight begin. avail mem=77.90 GB",
            LOAD_END.format(avail="58.00", usage="20.00"),
            LOAD_END.format(avail="57.90", usage="20.00"),
            KV_LINE,
            "Memory pool end. avail mem=48.72 GB",
            KV_LINE,
            "Memory pool end. avail mem=48.62 GB",
        )
    )
    ledger = _ledger(text)
    _assert_consistent(ledger)
    assert ledger.usable_bytes is None
    note = next(n for n in ledger.notes if n.startswith("cannot balance: lines tagged TP0"))
    assert "two processes" in note
    assert not [r for r in ledger.rows if r.in_partition]
