"""One test per SGLang sizing rule (memledger/sglang/sizing_rules.py), each naming its source line.

The inputs are built by hand, so each test checks the arithmetic of one rule in isolation.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import pytest

import memledger
from memledger.model.sizing import Settings
from memledger.sglang.mfs_defaults import default_mfs_by_v058_rule
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.releases import version_code
from memledger.sglang.sizing_rules import RULE, RULES
from memledger.sizing import SizingInputs, base_settings, predict, size_log, sizing_inputs
from memledger.sizing.cell import indexer_left_out
from memledger.sizing.defaults import default_mem_fraction_static
from memledger.sizing.inputs import KVPool, MambaState, Reading
from memledger.units import GIB

MIB = 1 << 20


def gib(value: float) -> int:
    return round(value * GIB)


def inputs(
    *,
    version: tuple[str | None, str | None] = ("0.5.9", "0.5.9"),
    p: float = 80.0,
    a: float = 70.0,
    knobs: dict[str, Any] | None = None,
    target: list[tuple[int | None, int]] | None = None,
    draft: list[tuple[int | None, int]] | None = None,
    mamba: MambaState | None = None,
    swa: tuple[int, int] | None = None,
    logged: int | None = None,
) -> SizingInputs:
    """SizingInputs with exact (unrounded) readings; pools as (tokens, bytes)."""
    first, last = version
    return SizingInputs(
        path="<test>",
        version=VersionRange(
            first=version_code(first) if first else None,
            last=version_code(last) if last else None,
        ),
        load_begin=Reading(bytes=gib(p), line=1),
        budget_avail=Reading(bytes=gib(a), line=2),
        knobs={"mem_fraction_static": 0.8, "page_size": 1, **(knobs or {})},
        target_kv=[KVPool(line=3, tokens=t, bytes=b, half_ulp=0) for t, b in (target or [])],
        draft_kv=[KVPool(line=5, tokens=t, bytes=b, half_ulp=0) for t, b in (draft or [])],
        swa_full_tokens=swa[0] if swa else None,
        swa_swa_tokens=swa[1] if swa else None,
        mamba=mamba,
        logged_tokens=logged,
        logged_context_len=(knobs or {}).get("context_length"),
    )


def pool(tokens: int, cell: int, pad: int = 1) -> tuple[int, int]:
    return tokens, (tokens + pad) * cell


def test_every_rule_has_a_test() -> None:
    module = sys.modules[__name__]
    missing = [r.id for r in RULES if not hasattr(module, f"test_rule_{r.id}")]
    assert missing == []
    assert all(rule.source.startswith("v0.") for rule in RULES)


def test_rule_budget() -> None:
    """rest = A - P x (1 - mfs): v0.5.8 model_executor/model_runner_kv_cache_mixin.py:138-140."""
    pred = predict(inputs(p=80, a=70, target=[pool(100, 1 << 20)]))
    assert pred.slack_bytes == gib(80 * 0.2)
    assert pred.rest_bytes == gib(70) - gib(16)


def test_rule_world_min() -> None:
    """P and A are world minima: v0.5.8 model_runner_kv_cache_mixin.py:112-117."""
    text = "\n".join(
        [
            "[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=80.00 GB",
            "[2026-01-01 00:00:00 TP1] Load weight begin. avail mem=79.50 GB",
            "[2026-01-01 00:00:01 TP0] Load weight end. type=X, dtype=torch.bfloat16, "
            "avail mem=70.00 GB, mem usage=10.00 GB.",
            "[2026-01-01 00:00:01 TP1] Load weight end. type=X, dtype=torch.bfloat16, "
            "avail mem=69.00 GB, mem usage=10.50 GB.",
        ]
    )
    read = sizing_inputs(memledger.load_text(text))
    assert read.load_begin is not None and read.budget_avail is not None
    assert read.load_begin.bytes == gib(79.5)
    assert read.budget_avail.bytes == gib(69)
    assert "min of 2 ranks" in read.budget_avail.note


def test_rule_tokens() -> None:
    """tokens = int(rest x 2^30) // cell: v0.5.8 model_runner_kv_cache_mixin.py:144."""
    cell = 36_864
    pred = predict(
        inputs(p=78.64, a=72.76, knobs={"mem_fraction_static": 0.836}, target=[pool(1000, cell)])
    )
    rest = gib(72.76) - round(gib(78.64) * (1 - 0.836))
    assert pred.tokens == rest // cell


def test_rule_kv_buffer_rows() -> None:
    """K/V buffers hold #tokens + page_size rows: v0.5.8 mem_cache/memory_pool.py:765,773;
    before 0.4.4 #tokens + 1 (v0.4.1 mem_cache/memory_pool.py:197)."""
    paged = predict(inputs(knobs={"page_size": 64}, target=[pool(6400, 1000, pad=64)]))
    assert paged.cell_bytes == pytest.approx(1000)
    old = predict(inputs(version=("0.4.2", "0.4.3"), target=[(None, 101 * 1000)], logged=100))
    assert old.cell_bytes == pytest.approx(1000)


def _mamba(slots: int, per_slot: int) -> MambaState:
    return MambaState(line=2, slots=slots, bytes=(slots + 1) * per_slot, half_ulp=0)


def _radix_off_mamba(version: tuple[str, str], per_slot: int) -> SizingInputs:
    """Radix cache off, max_running_requests 40: K is 40 slots of `per_slot`."""
    knobs = {"disable_radix_cache": True, "max_running_requests": 40}
    return inputs(version=version, knobs=knobs, target=[pool(10, 4096)], mamba=_mamba(40, per_slot))


def test_rule_mamba_first() -> None:
    """State is taken first, K x per_req: v0.5.8 model_runner_kv_cache_mixin.py:199-204."""
    per_slot = 100 * MIB
    pred = predict(_radix_off_mamba(("0.5.13", "0.5.16"), per_slot))
    assert pred.mamba_slots == 40
    assert pred.state_bytes == 40 * per_slot
    assert pred.kv_budget_bytes == pred.rest_bytes - 40 * per_slot  # type: ignore[operator]


def _radix_mamba(version: tuple[str, str], per_slot: int) -> SizingInputs:
    """A radix-cache Mamba log (K from the share of rest): P 31.49, A 16.98, mfs 0.85, 40 slots
    of `per_slot` logged."""
    return inputs(
        version=version,
        p=31.49,
        a=16.98,
        knobs={"mem_fraction_static": 0.85},
        target=[pool(10, 4096)],
        mamba=_mamba(40, per_slot),
    )


def test_rule_mamba_padding_ring() -> None:
    """0.5.17 - 0.5.19 take K + 1 slots (the pool's padding slot) and solve K with it:
    K = int((share - per_slot) // per_slot), v0.5.17 mem_cache/kv_cache_configurator.py:1950-1956;
    taken (K + 1) x per_slot, :1977-1982. 0.5.16 still takes K x per_req (:1808-1813)."""
    per_slot = 128 * MIB
    read = _radix_mamba(("0.5.17", "0.5.19"), per_slot)
    pred = predict(read)
    assert pred.rest_bytes is not None
    share = pred.rest_bytes / GIB * 0.9 / 1.9 * GIB
    k = int((share - per_slot) // per_slot)
    assert pred.mamba_slots == k
    assert pred.state_bytes == (k + 1) * per_slot
    older = predict(replace(read, version=VersionRange(first=5016, last=5016)))
    assert older.mamba_slots == int(share // per_slot)
    assert older.state_bytes == older.mamba_slots * per_slot
    # a range across 0.5.16/0.5.17 keeps K and says the newer rule would take one slot more
    across = predict(replace(read, version=VersionRange(first=5013, last=5020)))
    assert across.state_bytes == older.state_bytes
    assert any("may take K + 1 Mamba slots" in note for note in across.notes)


def test_rule_mamba_padding_slot() -> None:
    """(K + 1) x per slot from 0.5.20: v0.5.20 mem_cache/kv_cache_configurator.py:2535-2540,
    v0.5.23 :3405-3409."""
    per_slot = 100 * MIB
    pred = predict(_radix_off_mamba(("0.5.20", "0.5.23"), per_slot))
    assert pred.state_bytes == 41 * per_slot


def test_rule_mamba_slots_fixed() -> None:
    """Radix off: K = max_running_requests // dp (+ PD-decode extra slots):
    v0.5.16 mem_cache/kv_cache_configurator.py:1733-1750; disaggregation/decode.py:135."""
    knobs = {
        "disable_radix_cache": True,
        "max_running_requests": 384,
        "dp_size": 16,
        "enable_dp_attention": True,
        "disaggregation_mode": "decode",
        "disaggregation_decode_extra_slots": 8,
    }
    read = inputs(
        version=("0.5.20", "0.5.20"), knobs=knobs, target=[pool(10, 4096)], mamba=_mamba(32, MIB)
    )
    assert predict(read).mamba_slots == 24 + 8
    fewer = replace(base_settings(read), disaggregation_decode_extra_slots=2)
    assert predict(read, fewer).mamba_slots == 24 + 2


def test_rule_mamba_ratio_split() -> None:
    """Radix on: K = int(rest x m/(1+m) // per_req):
    v0.5.8 model_executor/model_runner_kv_cache_mixin.py:182-197."""
    per_slot = 128 * MIB
    read = _radix_mamba(("0.5.11", "0.5.11"), per_slot)
    pred = predict(read)
    rest = pred.rest_bytes
    assert rest is not None
    assert pred.mamba_slots == int(rest / GIB * 0.9 / 1.9 * GIB // per_slot)


SWA_CELLS = (49_152, 147_456)
"""Bytes per token of the full and the sliding-window layers of `_swa_log`."""


def _swa_log(version: tuple[str, str]) -> SizingInputs:
    """A hybrid SWA log: 1000 full and 800 window tokens logged (swa_full_tokens_ratio 0.8)."""
    full_cell, swa_cell = SWA_CELLS
    return inputs(
        version=version, target=[pool(800, swa_cell), pool(1000, full_cell)], swa=(1000, 800)
    )


def test_rule_swa_split() -> None:
    """cell = F + r x S; full = rest // cell; swa = int(full x r):
    v0.5.16 model_executor/pool_configurator.py:376-425."""
    full_cell, swa_cell = SWA_CELLS
    pred = predict(_swa_log(("0.5.16", "0.5.16")))
    assert pred.kv_budget_bytes is not None and pred.tokens is not None
    assert pred.tokens == pred.kv_budget_bytes // (full_cell + 0.8 * swa_cell)
    assert pred.swa_tokens == int(pred.tokens * 0.8)


def test_rule_draft_in_cell() -> None:
    """Draft KV in the cell from 0.5.14: v0.5.16 model_executor/pool_configurator.py:135-170;
    SWA models only for EAGLE/STANDALONE (:349-374)."""
    eagle = inputs(
        version=("0.5.16", "0.5.16"),
        knobs={"speculative_algorithm": "EAGLE"},
        target=[pool(1000, 8000)],
        draft=[pool(1000, 2000)],
    )
    assert predict(eagle).cell_bytes == pytest.approx(10_000)
    dflash_swa = inputs(
        version=("0.5.16", "0.5.16"),
        knobs={"speculative_algorithm": "DFLASH"},
        target=[pool(800, 3000), pool(1000, 1000)],
        draft=[pool(1000, 500)],
        swa=(1000, 800),
    )
    assert predict(dflash_swa).cell_bytes == pytest.approx(1000 + 0.8 * 3000)


def test_rule_draft_outside() -> None:
    """Draft KV outside the budget <= 0.5.13: v0.5.8 model_runner_kv_cache_mixin.py:291-297."""
    read = inputs(
        version=("0.5.3", "0.5.8"),
        knobs={"speculative_algorithm": "EAGLE"},
        target=[pool(1000, 8000)],
        draft=[pool(1000, 2000)],
    )
    pred = predict(read)
    assert pred.cell_bytes == pytest.approx(8000)
    assert any("outside the budget" in note for note in pred.notes)


def test_rule_spec_headroom() -> None:
    """0.4.4-0.5.6 add R x steps x topk + R x draft + 100: v0.4.6.post2 model_runner.py:779-799."""
    knobs = {
        "speculative_algorithm": "EAGLE",
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 2,
        "speculative_num_draft_tokens": 4,
        "max_running_requests": 10,
    }
    base = inputs(version=("0.4.6", "0.4.6"), target=[pool(1000, 1 << 20)])
    spec = inputs(version=("0.4.6", "0.4.6"), knobs=knobs, target=[pool(1000, 1 << 20)])
    assert predict(spec).tokens == predict(base).tokens + 10 * 3 * 2 + 10 * 4 + 100  # type: ignore[operator]


def test_rule_max_total_tokens() -> None:
    """min(T, --max-total-tokens): v0.5.8 model_runner_kv_cache_mixin.py:299-306."""
    read = inputs(knobs={"max_total_tokens": 5000}, target=[pool(1000, 1 << 20)])
    assert predict(read).tokens == 5000
    big = inputs(knobs={"max_total_tokens": 10**9}, target=[pool(1000, 1 << 20)])
    assert predict(big).tokens == predict(inputs(target=[pool(1000, 1 << 20)])).tokens


def test_rule_page_round() -> None:
    """T // page_size x page_size: v0.5.8 model_runner_kv_cache_mixin.py:308-312."""
    pred = predict(inputs(knobs={"page_size": 128}, target=[pool(1280, 70_000, pad=128)]))
    assert pred.tokens is not None and pred.tokens % 128 == 0
    raw = (pred.kv_budget_bytes or 0) // 70_000
    assert raw - 128 < pred.tokens <= raw


def test_rule_dcp_scope() -> None:
    """Per rank x dcp per DP group, x dp per instance: v0.5.23 managers/tp_worker.py:553,576."""
    knobs = {"dcp_size": 8, "dp_size": 2, "enable_dp_attention": True}
    pred = predict(inputs(knobs=knobs, target=[pool(1000, 13_824)]))
    assert pred.tokens_per_dp_group == pred.tokens * 8  # type: ignore[operator]
    assert pred.tokens_per_instance == pred.tokens * 16  # type: ignore[operator]


def test_rule_max_num_reqs_default() -> None:
    """min(max(int(T / ctx x 512), 2048), 4096): v0.5.8 model_runner_kv_cache_mixin.py:254-263."""
    read = inputs(
        version=("0.5.8", "0.5.8"),
        knobs={"context_length": 262_144},
        target=[pool(1000, 70_272)],
        p=283.56,
        a=209.98,
    )
    pred = predict(read, replace(base_settings(read), mem_fraction_static=0.826))
    assert pred.tokens is not None
    assert pred.max_num_reqs == min(max(int(pred.tokens / 262_144 * 512), 2048), 4096)
    assert pred.req_to_token_bytes == pred.max_num_reqs * (262_144 + 4) * 4


def test_rule_max_num_reqs_half() -> None:
    """From 0.5.10 the default is also at most T // 2: v0.5.10
    model_runner_kv_cache_mixin.py:840-851 (0.5.8 has no such cap)."""
    knobs = {"context_length": 64}
    small: list[tuple[int | None, int]] = [pool(10, 8 * MIB)]
    newer = predict(inputs(version=("0.5.10", "0.5.12"), knobs=knobs, target=small))
    older = predict(inputs(version=("0.5.8", "0.5.8"), knobs=knobs, target=small))
    assert newer.tokens is not None and older.tokens is not None
    assert newer.max_num_reqs == newer.tokens // 2 < 4096
    assert older.max_num_reqs == 4096


def test_rule_mamba_slots_no_radix() -> None:
    """Without radix cache and --max-running-requests, 512 slots (// dp) through 0.5.9: v0.5.8
    model_runner_kv_cache_mixin.py:168-180; not known after."""
    knobs = {"disable_radix_cache": True}
    mamba = _mamba(40, 100 * MIB)
    old = predict(
        inputs(version=("0.5.8", "0.5.9"), knobs=knobs, target=[pool(10, 4096)], mamba=mamba)
    )
    new = predict(
        inputs(version=("0.5.8", "0.5.10"), knobs=knobs, target=[pool(10, 4096)], mamba=mamba)
    )
    assert old.mamba_slots == 512
    assert new.mamba_slots != 512


def test_rule_req_to_token_global() -> None:
    """<= 0.5.9 the table has the global --max-running-requests rows:
    v0.5.8 model_runner_kv_cache_mixin.py:253,336-338."""
    knobs = {
        "max_running_requests": 32,
        "dp_size": 8,
        "enable_dp_attention": True,
        "context_length": 1000,
    }
    pred = predict(inputs(version=("0.5.3", "0.5.8"), knobs=knobs, target=[pool(1000, 1 << 20)]))
    assert pred.req_to_token_rows == 32
    assert pred.req_to_token_cols == 1004


def test_rule_req_to_token_plus_one() -> None:
    """0.3.6 - 0.4.6 the table has max_num_reqs + 1 rows (v0.4.1
    model_executor/model_runner.py:537-539, v0.4.6.post2 :823-825); 0.4.7 drops the extra row
    (v0.4.7 :926). Default max_num_reqs = max(int(T / ctx x 512), 2048) = 2048 here."""
    knobs = {"context_length": 131_072}
    old = predict(inputs(version=("0.4.2", "0.4.3"), knobs=knobs, target=[pool(1000, 1 << 20)]))
    assert old.max_num_reqs == 2048
    assert old.req_to_token_rows == 2049
    assert old.req_to_token_bytes == 2049 * (131_072 + 4) * 4
    later = predict(inputs(version=("0.4.7", "0.5.8"), knobs=knobs, target=[pool(1000, 1 << 20)]))
    assert later.req_to_token_rows == 2048


def test_rule_req_to_token_per_dp() -> None:
    """>= 0.5.11 rows = mrr // dp + 1 (+ PD extra slots): v0.5.16 disaggregation/decode.py:135."""
    knobs = {
        "max_running_requests": 384,
        "dp_size": 16,
        "enable_dp_attention": True,
        "context_length": 1_048_576,
        "disaggregation_mode": "decode",
        "disaggregation_decode_extra_slots": 8,
        "speculative_algorithm": "DSPARK",
        "speculative_num_draft_tokens": 5,
    }
    pred = predict(inputs(version=("0.5.20", "0.5.20"), knobs=knobs, target=[pool(1000, 1 << 20)]))
    assert pred.req_to_token_rows == 24 + 8 + 1
    assert pred.req_to_token_cols == 1_048_576 + 4 + 5


def _default(read: SizingInputs, settings: Settings) -> float | None:
    found = default_mem_fraction_static(read, settings)
    return None if found is None else found.value


def test_rule_mfs_default() -> None:
    """reserved MiB -> round((gpu - reserved) / gpu, 3): v0.5.8 server_args.py:988-1031;
    0.5.10 adds the piecewise-graph term and a 4 GiB speculative reserve (v0.5.10
    server_args.py:1280-1329)."""
    read = inputs(
        version=("0.5.9", "0.5.9"),
        knobs={"mem_fraction_static": None, "chunked_prefill_size": 2048, "tp_size": 1},
    )
    small = Settings(gpu_memory_mib=16_384, cuda_graph_max_bs=8)
    assert _default(read, small) == round((16_384 - (512 + 3072 + 16 + 128)) / 16_384, 3)
    big = Settings(gpu_memory_mib=81_559, cuda_graph_max_bs=256)
    assert _default(read, big) == round((81_559 - 10_240) / 81_559, 3)
    old = inputs(version=("0.4.7", "0.5.2"))
    assert _default(old, small) is None
    pred = predict(read, small)
    assert pred.terms[2].kind == "inferred" and pred.terms[2].rule == "mfs_default"
    assert "server_args.py:988-1031" in pred.terms[2].source
    # 0.5.10: piecewise graphs on (not disabled): 2048 max tokens -> 39 sizes x 8 MiB
    piecewise = inputs(
        version=("0.5.10", "0.5.10"),
        knobs={
            "mem_fraction_static": None,
            "chunked_prefill_size": 2048,
            "disable_piecewise_cuda_graph": False,
            "speculative_algorithm": "EAGLE",
        },
        target=[pool(10, 4096)],
    )
    sizes = len([*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32)])
    sizes += len([*range(576, 1025, 64), *range(1280, 2049, 256)])
    reserved = 512 + 3072 + 16 + 128 + sizes * 8 + 4096
    assert _default(piecewise, small) == round((16_384 - reserved) / 16_384, 3)


def test_mfs_default_has_one_implementation() -> None:
    """diagnose's default (no release range: the v0.5.8 rule, server_args.py:988-1031) is the
    sizing model's rule at 0.5.9, not a copy: same inputs, same value, including DP attention
    and the 2 GiB speculative reserve of that release."""
    knobs = {
        "mem_fraction_static": None,
        "chunked_prefill_size": 4096,
        "tp_size": 4,
        "dp_size": 4,
        "enable_dp_attention": True,
        "speculative_algorithm": "EAGLE",
    }
    read = inputs(version=("0.5.9", "0.5.9"), knobs=knobs)
    for gpu, max_bs in ((24_564, 80), (81_559, 320), (143_771, 512)):
        found = _default(read, Settings(gpu_memory_mib=gpu, cuda_graph_max_bs=max_bs))
        alone = default_mfs_by_v058_rule(
            gpu,
            chunked_prefill_size=4096,
            max_prefill_tokens=16384,
            cuda_graph_max_bs=max_bs,
            tp_size=4,
            dp_size=4,
            enable_dp_attention=True,
            speculative_algorithm="EAGLE",
        )
        assert found == alone
    reserved = 512 + 4096 * 1.5 + 4 / 8 * 1024 + 80 * 2 + 80 * 4 * 3 + 2048
    first = default_mfs_by_v058_rule(
        24_564,
        chunked_prefill_size=4096,
        max_prefill_tokens=16384,
        cuda_graph_max_bs=80,
        tp_size=4,
        dp_size=4,
        enable_dp_attention=True,
        speculative_algorithm="EAGLE",
    )
    assert first == round((24_564 - reserved) / 24_564, 3)


def test_rule_bench_one_batch_graphs() -> None:
    """bench_one_batch sets cuda_graph_max_bs = max(--batch-size) after ServerArgs computed its
    defaults (v0.5.9 bench_one_batch.py:754, after :801): the default used the GPU's table
    (256 at 81,559 MiB, tp 1), not the 8 the bench captured."""
    knobs = {"mem_fraction_static": None, "chunked_prefill_size": 8192}
    served = inputs(version=("0.5.9", "0.5.9"), knobs=knobs, target=[pool(10, 4096)])
    served = replace(served, logged_max_capture_bs=8)
    bench = replace(served, bench_one_batch=True)
    h100 = Settings(gpu_memory_mib=81_559)
    assert _default(served, h100) == round((81_559 - (512 + 12_288 + 8 * 2 + 128)) / 81_559, 3)
    assert _default(bench, h100) == round((81_559 - (512 + 12_288 + 256 * 2 + 128)) / 81_559, 3)
    found = default_mem_fraction_static(bench, h100)
    assert found is not None and any("bench_one_batch_graphs" in n for n in found.notes)
    # the bench's own marker: a summary event with max_total_num_tokens and nothing else
    text = "\n".join(
        [
            "[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=15.24 GB",
            "[2026-01-01 00:00:01 TP0] Load weight end. type=X, dtype=torch.bfloat16, "
            "avail mem=9.26 GB, mem usage=5.98 GB.",
            "max_total_num_tokens=399740",
        ]
    )
    assert sizing_inputs(memledger.load_text(text)).bench_one_batch


def test_rule_mfs_vlm_factor() -> None:
    """A ...ForConditionalGeneration model's default is scaled by 0.95 x a ViT factor clamped
    to [0.8, 1.05] (v0.5.10 server_args.py:6396-6431): without its vision_config the log can
    only bound it, and the sizing says so instead of applying a guess."""
    read = replace(
        inputs(
            version=("0.5.10", "0.5.12"),
            knobs={"mem_fraction_static": None, "chunked_prefill_size": 2048, "tp_size": 2},
            target=[pool(10, 4096)],
        ),
        model_type="Qwen3_5ForConditionalGeneration",
    )
    found = default_mem_fraction_static(read, Settings(gpu_memory_mib=24_564))
    assert found is not None
    assert found.value == round((24_564 - (512 + 3072 + 24 * 2 + 2 / 8 * 1024)) / 24_564, 3)
    assert any("rule mfs_vlm_factor" in note for note in found.notes)
    result = size_log(read)
    assert result.mismatch is not None
    assert "0.76 - 0.9975 times that (rule mfs_vlm_factor)" in result.mismatch
    plain = size_log(replace(read, model_type="Qwen3ForCausalLM"))
    assert plain.mismatch is not None and "mfs_vlm_factor" not in plain.mismatch


def test_rule_mfs_default_tp() -> None:
    """0.4.0 - 0.4.5: the default is a step of tp alone (v0.4.1 server_args.py:170-180, v0.4.5
    :233-243), so a log of that range without mem_fraction_static is sized with no GPU
    capacity at all."""
    for tp, expected in ((1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)):
        read = inputs(
            version=("0.4.4", "0.4.5"),
            knobs={"mem_fraction_static": None, "tp_size": tp},
            target=[pool(1000, 1 << 20)],
        )
        assert _default(read, Settings()) == expected
        pred = predict(read)
        assert pred.tokens is not None and pred.terms[2].rule == "mfs_default_tp"
        assert pred.slack_bytes == round(gib(80) * (1 - expected))
    across = inputs(version=("0.4.4", "0.4.7"), knobs={"mem_fraction_static": None})
    assert _default(across, Settings()) is None  # 0.4.6 has a > 80 GiB branch: undecided


def test_rule_mfs_default_tp_80g() -> None:
    """0.4.6 - 0.4.7: the tp (x pp) step on GPUs up to 80 GiB (v0.4.6 server_args.py:224-235,
    v0.4.6.post2 :226-238, v0.4.7 :253-265); above 80 GiB each post release differs (v0.4.6
    :236-238 (G - 13 GiB) / G, v0.4.6.post2 :239-247 min(...) above 96 GiB): not modelled.
    Code 0.4.7 is also 0.4.7.post1, which already uses the buckets (v0.4.7.post1 :261-300)."""
    knobs: dict[str, Any] = {"mem_fraction_static": None, "tp_size": 4}
    read = inputs(version=("0.4.6", "0.4.6"), knobs=knobs, target=[pool(1000, 1 << 20)])
    a10 = Settings(gpu_memory_mib=23_028)
    assert _default(read, a10) == 0.85
    found = default_mem_fraction_static(read, a10)
    assert found is not None and found.rule == "mfs_default_tp_80g"
    assert "23028 MiB GPU (<= 80 GiB)" in found.basis
    assert _default(read, Settings(gpu_memory_mib=81_920)) == 0.85
    assert _default(read, Settings(gpu_memory_mib=81_921)) is None  # the > 80 GiB branches
    assert _default(read, Settings()) is None  # the step needs the capacity to be <= 80 GiB
    pred = predict(read, a10)
    assert pred.tokens is not None and pred.terms[2].rule == "mfs_default_tp_80g"
    # across 0.4.4 - 0.4.6 the tp step and the <= 80 GiB step agree: one value, both rules named
    across = inputs(version=("0.4.4", "0.4.6"), knobs=knobs)
    found = default_mem_fraction_static(across, a10)
    assert found is not None and found.value == 0.85 and found.rule == "mfs_default_tp"
    assert any("mfs_default_tp, mfs_default_tp_80g" in note for note in found.notes)
    # code 0.4.7: 0.4.7's step 0.85 and 0.4.7.post1's bucket default
    # round((23028 - (2.8 + 0.4) x 1024) / 23028, 3) = 0.858 disagree: no value
    assert _default(inputs(version=("0.4.7", "0.4.7"), knobs=knobs), a10) is None


def test_legacy_default_is_one_rule_for_sizing_and_upgrades() -> None:
    """The upgrade view's legacy_mem_fraction_static (memledger.compare.upgrade_releases) is the
    sizing model's rule: the same function, the same value at every release before 0.5.3."""
    from memledger.compare import upgrade_releases
    from memledger.sglang import mfs_defaults

    shared_rule = mfs_defaults.legacy_mem_fraction_static
    assert vars(upgrade_releases)["legacy_mem_fraction_static"] is shared_rule  # not a copy
    for release in ("0.4.0", "0.4.5", "0.4.6", "0.4.8", "0.5.2"):
        for gpu in (16_384, 24_564, 46_068, 81_559, 143_771, 183_359):
            for tp in (1, 2, 8):
                read = inputs(
                    version=(release, release),
                    knobs={"mem_fraction_static": None, "tp_size": tp},
                    target=[pool(10, 4096)],
                )
                found = default_mem_fraction_static(read, Settings(gpu_memory_mib=gpu))
                shared = mfs_defaults.legacy_mem_fraction_static(
                    version_code(release), gpu, parallel=tp, speculative=False, dp_attention=False
                )
                assert (found.value if found else None) == shared, (release, gpu, tp)
    legacy = mfs_defaults.legacy_mem_fraction_static
    # v0.4.7 :281-283: x 0.95 with speculative decoding, 0.4.7 only (0.4.6.post2 has no such line)
    assert (
        legacy(version_code("0.4.6"), 24_576, parallel=1, speculative=True, dp_attention=False)
        == 0.88
    )
    # before 0.4.0 (v0.3.6 :156-166: 0.82 at tp >= 8) and from 0.5.3: not this rule's
    for release in ("0.3.6", "0.5.3"):
        assert (
            legacy(version_code(release), 81_559, parallel=8, speculative=False, dp_attention=False)
            is None
        )


def test_rule_mfs_default_buckets() -> None:
    """0.4.8 - 0.5.2: a reserve per capacity bucket, round((G - reserved) / G, 3)
    (v0.4.8 server_args.py:274-315, v0.5.2 :452-498)."""
    knobs: dict[str, Any] = {"mem_fraction_static": None, "tp_size": 8}
    read = inputs(version=("0.4.8", "0.5.2"), knobs=knobs, target=[pool(10, 4096)])
    h100 = Settings(gpu_memory_mib=81_559)
    assert _default(read, h100) == round((81_559 - (9.5 + 8 / 2) * 1024) / 81_559, 3)
    rtx = Settings(gpu_memory_mib=24_564)
    assert _default(read, rtx) == round((24_564 - (2.8 + 8 / 10) * 1024) / 24_564, 3)
    spec = inputs(
        version=("0.4.8", "0.5.2"),
        knobs={**knobs, "speculative_algorithm": "EAGLE", "enable_dp_attention": True},
        target=[pool(10, 4096)],
    )
    b200 = Settings(gpu_memory_mib=183_359)
    assert _default(spec, b200) == round((183_359 - (32 + 2 + 4) * 1024) / 183_359, 3)
    found = default_mem_fraction_static(spec, b200)
    assert found is not None and found.rule == "mfs_default_buckets"
    assert "183359 MiB GPU, reserved 38,912 MiB" in found.basis


def test_rule_mfs_default_graphs() -> None:
    """0.5.14+: graphs from reserve_for_graph_mb, no speculative reserve, DeepEP + 2 GiB:
    v0.5.16 server_args.py:4053-4088, :4164-4196, :4198-4210."""
    knobs: dict[str, Any] = {
        "mem_fraction_static": None,
        "chunked_prefill_size": 8192,
        "tp_size": 8,
        "speculative_algorithm": "EAGLE",
        "moe_a2a_backend": "deepep",
        "disable_piecewise_cuda_graph": True,
    }
    read = inputs(version=("0.5.16", "0.5.16"), knobs=knobs, target=[pool(10, 4096)])
    h200 = Settings(gpu_memory_mib=143_771, cuda_graph_max_bs=512)
    reserved = max(512 + 8192 * 1.5 + 8 / 8 * 1024 + 512 * 2, 10_240) + 2048
    assert _default(read, h200) == round((143_771 - reserved) / 143_771, 3)
    found = default_mem_fraction_static(read, h200)
    assert found is not None and found.rule == "mfs_default_graphs"
    # PD decode: activation from max_running_requests x draft tokens, no prefill graphs
    decode = inputs(
        version=("0.5.20", "0.5.23"),
        knobs={**knobs, "disaggregation_mode": "decode", "speculative_num_draft_tokens": 4},
        target=[pool(10, 4096)],
    )
    settings = replace(h200, max_running_requests=1024)
    reserved = max(512 + 4096 * 1.5 + 1024 + 512 * 2, 10_240) + 2048
    assert _default(decode, settings) == round((143_771 - reserved) / 143_771, 3)


def test_rules_are_unique_and_ranged() -> None:
    assert len(RULE) == len(RULES)


def test_size_log_reports_a_miss_with_a_reason() -> None:
    read = inputs(target=[pool(1000, 1 << 20)], logged=1)
    result = size_log(read)
    assert result.mismatch is not None and "predicted" in result.mismatch
    assert result.min_mem_fraction_static == round(1 - 70 / 80, 4)


def test_rule_swa_split_memory() -> None:
    """0.5.9 - 0.5.10: T = rest // (F + S), full = int(T x (F + S) / (F + r S)):
    v0.5.9 model_executor/model_runner_kv_cache_mixin.py:86-95, :251-333."""
    full_cell, swa_cell = SWA_CELLS
    pred = predict(_swa_log(("0.5.9", "0.5.10")))
    assert pred.kv_budget_bytes is not None
    profiled = pred.kv_budget_bytes // (full_cell + swa_cell)
    full = int(profiled * (full_cell + swa_cell) / (full_cell + 0.8 * swa_cell))
    assert pred.tokens == full
    assert pred.swa_tokens == int(full * 0.8)
    # one floor before the split: not the configurator's rest // (F + r S)
    assert pred.tokens <= pred.kv_budget_bytes // (full_cell + 0.8 * swa_cell)


def test_rule_swa_split_layers() -> None:
    """<= 0.5.8: total = T x n_layers split by r x n_swa + n_full (same tokens when SWA layers
    hold as many bytes per layer as full ones): v0.5.8 model_runner_kv_cache_mixin.py:206-249."""
    layer = 8_192
    full_cell, swa_cell = 4 * layer, 12 * layer  # 4 full layers, 12 SWA layers
    read = inputs(
        version=("0.5.3", "0.5.8"),
        target=[pool(800, swa_cell), pool(1000, full_cell)],
        swa=(1000, 800),
    )
    pred = predict(read)
    assert pred.kv_budget_bytes is not None
    profiled = pred.kv_budget_bytes // (16 * layer)
    assert pred.tokens == int(profiled * 16 / (0.8 * 12 + 4))
    assert any("head count" in note for note in pred.notes)


def test_rule_fp4_cell() -> None:
    """fp4_e2m1: cell // 2 + elements / 16 (9/16 B per element): v0.5.8
    model_executor/model_runner_kv_cache_mixin.py:56-67 (MLA), :88-96 (MHA)."""
    read = inputs(
        version=("0.5.9", "0.5.9"),
        knobs={"kv_cache_dtype": "bf16"},
        target=[pool(1000, 2 * 16_384)],
    )
    base = predict(read)
    fp4 = predict(read, replace(base_settings(read), kv_cache_dtype="fp4_e2m1"))
    assert fp4.cell_bytes == pytest.approx(2 * 16_384 * (0.5 + 1 / 16) / 2)
    assert fp4.tokens is not None and base.tokens is not None
    assert fp4.tokens == pytest.approx(base.tokens * 2 / 0.5625, rel=1e-6)
    too_old = inputs(
        version=("0.5.2", "0.5.4"),
        knobs={"kv_cache_dtype": "bf16"},
        target=[pool(1000, 2 * 16_384)],
    )
    kept = predict(too_old, replace(base_settings(too_old), kv_cache_dtype="fp4_e2m1"))
    assert kept.cell_bytes == pytest.approx(2 * 16_384)
    assert any("fp4 before 0.5.6" in note for note in kept.notes)


def _npu_mla(layers: int, row: int, tokens: int = 68_096, page: int = 128) -> SizingInputs:
    read = inputs(
        version=("0.5.7", "0.5.8"),
        p=60.78,
        a=21.40,
        knobs={
            "mem_fraction_static": 0.73,
            "device": "npu",
            "page_size": page,
            "attention_backend": "ascend",
            "kv_cache_dtype": "auto",
        },
    )
    kv = KVPool(
        line=3,
        tokens=tokens,
        bytes=(tokens + page) * layers * row,
        half_ulp=0,
        dtype="torch.bfloat16",
        combined=True,
    )
    return replace(read, target_kv=[kv], logged_kv_dtype="torch.bfloat16")


def test_rule_dsa_indexer_cell() -> None:
    """DSA sizing cell = 576 x 2 B + (128 + 128/128 x 4) x 1 B per layer (bf16): v0.5.8
    model_executor/model_runner_kv_cache_mixin.py:70-79 (NSA indexer, uint8 + scales)."""
    pred = predict(_npu_mla(61, 1408))
    assert pred.cell_bytes == 61 * (576 * 2 + 132)
    assert pred.kv_budget_bytes is not None and pred.tokens is not None
    assert pred.tokens == pred.kv_budget_bytes // (61 * 1284) // 128 * 128
    assert any(t.rule == "dsa_indexer_cell" for t in pred.terms)


def test_rule_dsa_indexer_left_out() -> None:
    """0.5.3 sized a DSA pool by the MLA cell alone (v0.5.3 model_executor/model_runner.py:
    1274-1279) while its pool holds 132 B a layer a token of indexer keys more; 0.5.3.post1
    counts them (sglang PR #11309)."""
    rows = (1_000_000 + 64) * 61  # 61 layers of a page-padded pool
    window = VersionRange(first=version_code("0.5.3"), last=version_code("0.5.3"))
    left = indexer_left_out(rows * 656, 1_000_000, None, window)
    assert left is not None and left.bytes == 1_000_000 * 132 * 61 and left.maybe == ""
    undated = indexer_left_out(rows * 656, 1_000_000, None, None)
    assert undated is not None and undated.maybe.startswith(" (if the release is 0.5.3")
    later = VersionRange(first=version_code("0.5.4"), last=None)
    assert indexer_left_out(rows * 656, 1_000_000, None, later) is None
    assert indexer_left_out(rows * 576, 1_000_000, None, window) is None  # plain MLA fp8
    assert indexer_left_out(rows * 1152, 1_000_000, "org/DeepSeek-V3", window) is None
    named = indexer_left_out(rows * 1152, 1_000_000, "org/DeepSeek-V3.2-Exp", window)
    assert named is not None and named.bytes == 1_000_000 * 132 * 61


def test_rule_npu_dsa_pool() -> None:
    """The Ascend pool allocates index_k in the KV dtype: (512 + 64 + 128) x 2 B per layer:
    v0.5.8 hardware_backend/npu/memory_pool_npu.py:224-235."""
    pred = predict(_npu_mla(61, 1408))
    assert pred.tokens is not None
    assert pred.kv_bytes == (pred.tokens + 128) * 61 * 1408  # allocated, not the sizing cell
    plain = predict(_npu_mla(61, 1152))  # DeepSeek V3 MLA on NPU: no indexer
    assert plain.cell_bytes == pytest.approx(61 * 1152)
    newer = replace(
        _npu_mla(61, 1408), version=VersionRange(first=version_code("0.5.23"), last=None)
    )
    assert predict(newer).cell_bytes == pytest.approx(61 * 1408)


def _ratio_reqs(version: str, knobs: dict[str, Any]) -> int | None:
    read = inputs(
        version=(version, version),
        knobs={"context_length": 4096, "max_mamba_cache_size": 60, **knobs},
        target=[pool(100_000, 4096)],
        mamba=_mamba(60, MIB),
    )
    return predict(read).max_num_reqs


def test_rule_mamba_ratio_v057() -> None:
    """0.5.7: ratio 5 (3 + 2) unless extra_buffer with speculative decoding (4):
    v0.5.7 model_executor/model_runner_kv_cache_mixin.py:289-302."""
    assert _ratio_reqs("0.5.7", {}) == 60 // 5
    spec = {"mamba_scheduler_strategy": "extra_buffer", "speculative_algorithm": "EAGLE"}
    assert _ratio_reqs("0.5.7", spec) == 60 // 4
    assert _ratio_reqs("0.5.7", {"disable_radix_cache": True}) == 60


def test_rule_mamba_ratio_spec() -> None:
    """0.5.8 - 0.5.9: 3, +2 with extra_buffer (+1 with spec):
    v0.5.8 model_executor/model_runner_kv_cache_mixin.py:268-281."""
    assert _ratio_reqs("0.5.8", {}) == 60 // 3
    assert _ratio_reqs("0.5.8", {"mamba_scheduler_strategy": "extra_buffer"}) == 60 // 5
    spec = {"mamba_scheduler_strategy": "extra_buffer", "speculative_algorithm": "EAGLE"}
    assert _ratio_reqs("0.5.9", spec) == 60 // 4


def test_rule_mamba_ratio_overlap() -> None:
    """0.5.10+: 3, +2 with extra_buffer (+1 without overlap schedule, or lazy):
    v0.5.10 model_executor/model_runner_kv_cache_mixin.py:373-386; v0.5.13 :233-252."""
    extra = {"mamba_scheduler_strategy": "extra_buffer"}
    assert _ratio_reqs("0.5.11", extra) == 60 // 5
    assert _ratio_reqs("0.5.11", {**extra, "disable_overlap_schedule": True}) == 60 // 4
    assert _ratio_reqs("0.5.13", {"mamba_scheduler_strategy": "extra_buffer_lazy"}) == 60 // 4
    assert _ratio_reqs("0.5.16", {"mamba_radix_cache_strategy": "extra_buffer"}) == 60 // 5
    assert _ratio_reqs("0.5.11", {}) == 60 // 3


def _used(pred: Any) -> Any:
    return next((t for t in pred.terms if t.name == "mem_fraction_static used"), None)


def test_rule_mfs_multimodal_runner() -> None:
    """0.4.5 - 0.4.8 ModelRunner scales a multimodal model's mfs by 0.90 after server_args and
    prints it (v0.4.5 model_executor/model_runner.py:273-278, v0.4.8 :414-419): the printed
    0.720 is what the budget uses (measured), not server_args' 0.8; a what-if 0.9 is scaled the
    same way (0.81). 0.3.0 - 0.4.0 print no value: x 0.95 (v0.4.0 :113-118). Where the range
    spans 0.4.4 (x 0.95) and 0.4.5 (x 0.90) the printed value picks the factor."""
    from memledger.sizing.fraction import PrintedFraction

    base = inputs(version=("0.4.5", "0.4.8"), p=80, a=70, target=[pool(100, 1 << 20)])
    read = replace(base, printed_fraction=PrintedFraction(line=4, value=0.72, shape="runner"))
    pred = predict(read)
    assert pred.slack_bytes == round(gib(80) * (1 - 0.72))
    used = _used(pred)
    assert used is not None and used.kind == "measured" and used.rule == "mfs_multimodal_runner"
    assert "line 4" in used.source
    assert predict(base).slack_bytes == round(gib(80) * (1 - 0.8))  # no line: not multimodal
    what = predict(read, replace(base_settings(read), mem_fraction_static=0.9))
    assert what.slack_bytes == round(gib(80) * (1 - 0.81))
    older = replace(
        inputs(version=("0.3.6", "0.4.0"), target=[pool(100, 1 << 20)]),
        printed_fraction=PrintedFraction(line=4, value=None, shape="runner"),
    )
    assert predict(older).slack_bytes == round(gib(80) * (1 - 0.76))
    spans = replace(
        base,
        version=VersionRange(first=version_code("0.4.4"), last=version_code("0.4.5")),
        printed_fraction=PrintedFraction(line=4, value=0.76, shape="runner"),
    )
    what = predict(spans, replace(base_settings(spans), mem_fraction_static=0.9))
    assert what.slack_bytes == round(gib(80) * (1 - 0.9 * 0.95))


def test_rule_mfs_vlm_line_is_measured() -> None:
    """0.4.10 prints the default after the ViT factor (v0.4.10 server_args.py:1981-1985): a log
    without server_args is sized with the printed 0.828, marked measured."""
    from memledger.sizing.fraction import PrintedFraction

    read = replace(
        inputs(
            version=("0.4.10", "0.4.10"),
            knobs={"mem_fraction_static": None},
            target=[pool(100, 1 << 20)],
        ),
        printed_fraction=PrintedFraction(line=1, value=0.828, before=0.871, shape="vlm"),
    )
    pred = predict(read)
    assert pred.slack_bytes == round(gib(80) * (1 - 0.828))
    term = next(t for t in pred.terms if t.name == "mem_fraction_static")
    assert term.kind == "measured" and term.rule == "mfs_vlm_factor" and "line 1" in term.source


def test_rule_mfs_aiter_runner() -> None:
    """0.4.9 - 0.5.4: aiter attention with context_len > 8192 is scaled by 0.85 in ModelRunner,
    after server_args printed it (v0.4.9 model_executor/model_runner.py:470-472, v0.5.4
    :646-648): the budget uses 0.8 x 0.85; at a context of 8,192 nothing changes."""
    knobs = {"attention_backend": "aiter", "context_length": 32768}
    read = inputs(version=("0.5.2", "0.5.2"), knobs=knobs, target=[pool(100, 1 << 20)])
    pred = predict(read)
    assert pred.slack_bytes == round(gib(80) * (1 - 0.68))
    used = _used(pred)
    assert used is not None and used.rule == "mfs_aiter_runner"
    short = replace(base_settings(read), context_length=8192)
    assert predict(read, short).slack_bytes == round(gib(80) * (1 - 0.8))
    triton = inputs(
        version=("0.5.2", "0.5.2"),
        knobs={**knobs, "attention_backend": "triton"},
        target=[pool(100, 1 << 20)],
    )
    assert predict(triton).slack_bytes == round(gib(80) * (1 - 0.8))


def test_rule_mfs_aiter_args() -> None:
    """0.5.5+: ServerArgs applies the 0.85 itself (v0.5.5 server_args.py:1270-1272, v0.5.8
    :1786-1788): single/008's printed 0.7718 (= 0.908 x 0.85) is used as printed, while a
    what-if --mem-fraction-static 0.9 would be scaled to 0.765, and a context of 8,192 undoes
    the factor of the printed value."""
    knobs = {"attention_backend": "aiter", "context_length": 202752, "mem_fraction_static": 0.7718}
    read = inputs(version=("0.5.8", "0.5.8"), knobs=knobs, target=[pool(100, 1 << 20)])
    assert predict(read).slack_bytes == round(gib(80) * (1 - 0.7718))
    assert _used(predict(read)) is None
    what = predict(read, replace(base_settings(read), mem_fraction_static=0.9))
    assert what.slack_bytes == round(gib(80) * (1 - 0.765))
    assert _used(what).rule == "mfs_aiter_args"
    short = predict(read, replace(base_settings(read), context_length=8192))
    assert short.slack_bytes == round(gib(80) * (1 - 0.7718 / 0.85))


def test_rule_mfs_default_platform() -> None:
    """Ascend and ROCm run no piecewise (prefill) graphs (v0.5.10 server_args.py:1100-1102), so
    the 0.5.10 default on an NPU has no piecewise reserve, while a CUDA log that enables them
    reserves 8 MiB per captured size (v0.5.10 server_args.py:1397-1413 sizes)."""
    knobs = {"mem_fraction_static": None, "chunked_prefill_size": 8192, "cuda_graph_max_bs": 256}
    npu = inputs(version=("0.5.10", "0.5.10"), knobs={**knobs, "device": "npu"})
    cuda = inputs(
        version=("0.5.10", "0.5.10"), knobs={**knobs, "disable_piecewise_cuda_graph": False}
    )
    gpu = Settings(gpu_memory_mib=65_536, cuda_graph_max_bs=256)
    on_npu = default_mem_fraction_static(npu, gpu)
    on_cuda = default_mem_fraction_static(cuda, gpu)
    assert on_npu is not None and on_cuda is not None
    assert any("rule mfs_default_platform" in note for note in on_npu.notes)
    from memledger.sizing.defaults import piecewise_token_sizes

    assert on_cuda.reserved_mib - on_npu.reserved_mib == len(piecewise_token_sizes(8192)) * 8


def test_rule_budget_from_the_printed_rest() -> None:
    """Ascend builds print SGLang's rest A - P x (1 - mfs) ('The available memory for KV cache
    is X GB'); a fragment without P or mem_fraction_static is then divided from it (rule
    tokens: int(rest) // cell, page-floored), marked measured; a what-if on the fraction has
    no such print to stand on and says what is missing."""
    cell = 1 << 20
    read = replace(
        inputs(
            version=("0.5.10", "0.5.10"),
            knobs={"mem_fraction_static": None, "page_size": 128},
            target=[pool(5000, cell, pad=128)],
        ),
        load_begin=None,
        logged_rest=Reading(bytes=gib(5), half_ulp=gib(0.005), line=7, note="printed"),
    )
    pred = predict(read)
    assert pred.tokens == gib(5) // cell // 128 * 128
    assert pred.slack_bytes is None and pred.rest_bytes == gib(5)
    rest = next(t for t in pred.terms if t.name == "rest (printed)")
    assert rest.kind == "measured" and "line 7" in rest.source
    assert pred.tokens_low is not None and pred.tokens_high is not None
    assert pred.tokens_low < pred.tokens <= pred.tokens_high  # 5 GiB is a whole page count
    what = predict(read, replace(base_settings(read), mem_fraction_static=0.8))
    assert what.tokens is None and what.missing == "the log has no load-begin avail reading (P)"


OLMOCR_LIKE_045 = """\
[2025-04-10 10:00:00] server_args=ServerArgs(model_path='allenai/olmOCR-7B-0225-preview', \
tp_size=1, mem_fraction_static=0.8, page_size=1, context_length=None)
[2025-04-10 10:00:05 TP0] Automatically reduce --mem-fraction-static to 0.720 because this is \
a multimodal model.
[2025-04-10 10:00:05 TP0] Init torch distributed begin.
[2025-04-10 10:00:06 TP0] Load weight begin. avail mem=78.50 GB
[2025-04-10 10:00:30 TP0] Load weight end. type=Qwen2VLForConditionalGeneration, \
dtype=torch.bfloat16, avail mem=62.40 GB, mem usage=16.10 GB.
[2025-04-10 10:00:31 TP0] KV Cache is allocated. #tokens: 756876, K size: 20.21 GB, V size: \
20.21 GB
[2025-04-10 10:00:31 TP0] Memory pool end. avail mem=21.95 GB
[2025-04-10 10:00:40 TP0] max_total_num_tokens=756876, chunked_prefill_size=8192, \
max_prefill_tokens=16384, max_running_requests=4097, context_len=32768
"""


def test_multimodal_reduction_line_end_to_end(tmp_path: Any) -> None:
    """A 0.4.5-style log (the shape of allenai/olmocr#105): server_args says 0.8, ModelRunner
    then prints 0.720 (v0.4.5 model_executor/model_runner.py:273-278). The line dates the log
    (0.4.2 - 0.4.8), the sizing uses 0.720 and matches; with server_args' 0.8 it would be
    +15 % off. A what-if 0.9 is reduced by the 0.90 the printed value implies (0.81)."""
    from memledger.sizing import whatif

    path = tmp_path / "olmocr.log"
    path.write_text(OLMOCR_LIKE_045)
    read = sizing_inputs(memledger.load(path))
    assert read.version.first is not None and read.version.first >= version_code("0.4.2")
    assert read.version.last is not None and read.version.last <= version_code("0.4.8")
    result = size_log(read)
    assert result.mismatch is None
    assert result.predicted_max_total_num_tokens is not None
    assert abs(result.predicted_max_total_num_tokens - 756_876) <= 0.005 * 756_876
    term = _used(result.prediction)
    assert term is not None and term.value == 0.72 and term.kind == "measured"
    unreduced = predict(replace(read, printed_fraction=None))
    assert unreduced.tokens is not None and unreduced.tokens > 1.15 * 756_876
    used = next(
        t
        for t in whatif(read, {"mem_fraction_static": 0.9}).arithmetic
        if t.name == ("mem_fraction_static used")
    )
    assert used.value == 0.81 and used.rule == "mfs_multimodal_runner"


def _replay_ssm_range(tmp_path: Any, paren: str) -> VersionRange:
    from memledger.sglang.release_markers import release_range

    log = tmp_path / "replay.log"
    log.write_text(
        f"[2026-11-05 14:36:48 TP0] GDN ReplaySSM ring buffers allocated {paren}: d=0.660GB, "
        "k=0.660GB, g=1.320GB\n"
    )
    return release_range(memledger.load(log).startup.events)


def test_replay_ssm_line_dates_by_its_form(tmp_path: Any) -> None:
    """`(L=N)`: v0.5.15 mem_cache/memory_pool.py:626, v0.5.16 :748 (v0.5.14 has no ReplaySSM);
    `(record_len=N, fold=M)`: v0.5.17 :817, v0.5.18 :834, v0.5.20 :894, v0.5.23 :1012."""
    ring_len = _replay_ssm_range(tmp_path, "(L=16)")
    assert (ring_len.first, ring_len.last) == (version_code("0.5.15"), version_code("0.5.16"))
    record_len = _replay_ssm_range(tmp_path, "(record_len=16, fold=1)")
    assert (record_len.first, record_len.last) == (version_code("0.5.17"), None)


def test_padding_rules_undecided_name_both_candidates() -> None:
    """A 0.5.19 - 0.5.20 log (a `record_len=` line, formats up to 0.5.20) may be either
    mamba_padding_ring or mamba_padding_slot: both take (K + 1) slots of the printed state and
    ring, so the figures are the same; the note names both rules instead of picking one."""
    per_slot = 100 * MIB
    knobs = {"disable_radix_cache": True, "max_running_requests": 40}
    read = inputs(
        version=("0.5.19", "0.5.20"),
        knobs=knobs,
        target=[pool(10, 4096)],
        mamba=_mamba(40, per_slot),
    )
    pred = predict(read)
    assert pred.state_bytes == 41 * per_slot
    for release in ("0.5.19", "0.5.20"):
        one = VersionRange(first=version_code(release), last=version_code(release))
        alone = predict(replace(read, version=one))
        assert alone.state_bytes == pred.state_bytes and alone.tokens == pred.tokens
    note = next(n for n in pred.notes if "cannot tell apart" in n)
    assert "mamba_padding_ring (0.5.17 - 0.5.19)" in note
    assert "mamba_padding_slot (0.5.20+)" in note
    assert "the same under either" in note
    ratio = predict(replace(read, knobs={"mem_fraction_static": 0.8}))
    assert any("K may be lower" in n for n in ratio.notes)


def test_request_table_columns_over_a_release_range() -> None:
    """extra_columns at 0.5.19 pages speculative KV by page_size (v0.5.16
    mem_cache/allocation_sizing.py:54-61), at 0.5.20 by page_size x dcp (v0.5.20 :11-14,
    :85-105): a 0.5.19 - 0.5.20 log with dcp 8 gets both, with dcp 1 one value."""
    from memledger.sglang.request_table import extra_columns_by_release

    args = {
        "speculative_algorithm": "EAGLE",
        "speculative_num_steps": 4,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 5,
        "page_size": 64,
    }
    low, ceiling = version_code("0.5.19"), version_code("0.5.20") + 1
    assert extra_columns_by_release(low, ceiling, args, 8) == {
        low: 2 * 5 + 64 - 1,
        version_code("0.5.20"): 2 * 5 + 64 * 8 - 1,
    }
    assert extra_columns_by_release(low, ceiling, args, 1) == {low: 73}
    assert extra_columns_by_release(low, 0, args, 8) == {low: 73}


def _printed_rest(read: SizingInputs, rest: float) -> SizingInputs:
    """The Ascend build's `The available memory for KV cache is X GB` line, as read."""
    return replace(read, logged_rest=Reading(bytes=gib(rest), half_ulp=gib(0.005), line=4))


def test_rule_npu_printed_rest() -> None:
    """The printed rest is divided, not A - P x (1 - mfs) from the ranks the log shows (A is
    all-reduced to the world minimum: v0.5.6 model_executor/model_runner.py:1367-1373); the
    difference is a note. A hybrid model's print after the Mamba state is not used."""
    read = inputs(p=60.78, a=30.59, knobs={"mem_fraction_static": 0.75, "device": "npu"})
    read = replace(read, target_kv=[KVPool(line=3, tokens=1000, bytes=1001 * 70_272, half_ulp=0)])
    own = predict(read)
    printed = predict(_printed_rest(read, 15.37))
    assert printed.rest_bytes == gib(15.37) != own.rest_bytes
    assert printed.tokens == gib(15.37) // 70_272
    assert any("below A - P x (1 - mfs)" in note for note in printed.notes)
    same = predict(_printed_rest(read, (own.rest_bytes or 0) / GIB))
    assert not any("npu_printed_rest" in note for note in same.notes)
    whatif = predict(_printed_rest(read, 15.37), replace(base_settings(read), page_size=64))
    assert whatif.rest_bytes == own.rest_bytes  # another setting: SGLang's arithmetic again
    fixed = {**read.knobs, "disable_radix_cache": True, "max_running_requests": 100}
    hybrid = replace(read, mamba=_mamba(100, 50 * MIB), knobs=fixed)
    after_state = gib(((own.rest_bytes or 0) - 100 * 50 * MIB - gib(0.02)) / GIB)
    left = predict(replace(hybrid, logged_rest=Reading(bytes=after_state, line=4)))
    assert left.kv_budget_bytes == after_state  # the print is what is left for the KV pool
    assert left.state_bytes == 100 * 50 * MIB
    assert any("what is left after the Mamba state" in note for note in left.notes)
    before = predict(replace(hybrid, logged_rest=Reading(bytes=gib(15.37), line=4)))
    assert before.rest_bytes == gib(15.37)
    assert before.kv_budget_bytes == gib(15.37) - 100 * 50 * MIB


def test_rule_npu_spec_headroom() -> None:
    """An Ascend build that prints its rest, dated 0.5.3 - 0.5.8 (either side of 0.5.6), adds
    0.5.6's headroom R x steps x topk + R x draft + 100 with the global R (v0.5.6
    model_executor/model_runner.py:1697-1716); without the print it does not."""
    knobs: dict[str, Any] = {
        "speculative_algorithm": "EAGLE",
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 4,
        "max_running_requests": 32,
        "dp_size": 8,
        "enable_dp_attention": True,
        "device": "npu",
        "mem_fraction_static": 0.75,
    }
    read = inputs(version=("0.5.3", "0.5.8"), p=60.78, a=30.59, knobs=knobs)
    read = replace(read, target_kv=[KVPool(line=3, tokens=1000, bytes=1001 * 70_272, half_ulp=0)])
    plain = predict(
        _printed_rest(replace(read, knobs={**knobs, "speculative_algorithm": None}), 15.37)
    )
    spec = predict(_printed_rest(read, 15.37))
    assert spec.tokens == (plain.tokens or 0) + 32 * 3 * 1 + 32 * 4 + 100
    assert any("rule npu_spec_headroom" in note for note in spec.notes)
    assert (
        predict(read).tokens
        == predict(replace(read, knobs={**knobs, "speculative_algorithm": None})).tokens
    )
    newer = replace(_printed_rest(read, 15.37), version=VersionRange(first=version_code("0.5.9")))
    assert predict(newer).tokens == plain.tokens
    after = VersionRange(first=version_code("0.5.7"), last=version_code("0.5.8"))
    assert predict(replace(_printed_rest(read, 15.37), version=after)).tokens == spec.tokens


def _gdn(version: str, knobs: dict[str, Any], per_slot: int = 64 * MIB) -> SizingInputs:
    """A Qwen3-Next-shaped hybrid GDN startup: 100 slots printed, a 4 KiB KV cell."""
    read = inputs(
        version=(version, version),
        p=60.0,
        a=40.0,
        knobs={"mem_fraction_static": 0.8, **knobs},
        target=[pool(100_000, 4096)],
        mamba=_mamba(100, per_slot),
    )
    return replace(read, model_type="Qwen3NextForCausalLM")


def test_rule_mamba_spec_ratio() -> None:
    """0.5.4 - 0.5.6: K = int(share // per_req // (1 + draft tokens)) and K x per_req x
    (1 + draft tokens) is taken (v0.5.6 model_executor/model_runner.py:1455-1459,
    :1480-1485, :1491-1497); 0.5.7 sizes K from the share alone."""
    spec = {"speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": 4}
    pred = predict(_gdn("0.5.6", spec))
    rest = gib(40) - round(gib(60) * 0.2)
    share = rest / GIB * 0.9 / 1.9 * GIB
    per_req = 101 * 64 * MIB / 101
    k = int(share // per_req // 5)
    assert pred.mamba_slots == k
    assert pred.state_bytes == round(k * per_req * 5)
    assert predict(_gdn("0.5.6", {})).mamba_slots == int(share // per_req)
    assert predict(_gdn("0.5.7", spec)).mamba_slots != k


def test_rule_mamba_gdn_dp() -> None:
    """0.5.4 - 0.5.6 divide a hybrid GDN model's K among the DP-attention workers after the
    split (v0.5.6 model_executor/model_runner.py:1487-1490); a non-GDN hybrid keeps it."""
    dp = {"enable_dp_attention": True, "dp_size": 2, "tp_size": 2}
    whole = predict(_gdn("0.5.6", {})).mamba_slots
    pred = predict(_gdn("0.5.6", dp))
    assert whole is not None and pred.mamba_slots == whole // 2
    other = replace(_gdn("0.5.6", dp), model_type="NemotronHForCausalLM")
    assert predict(other).mamba_slots == whole
    fixed = predict(_gdn("0.5.6", {**dp, "disable_radix_cache": True, "max_running_requests": 64}))
    assert fixed.mamba_slots == 32


def test_rule_mamba_spec_reserve() -> None:
    """0.5.7+: the intermediate states are reserved before the ratio split (v0.5.8
    model_executor/model_runner_kv_cache_mixin.py:150-166): K comes from the share of what
    is left; the Mamba line's intermediate sizes stand in for the reservation."""
    spec = {"speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": 4}
    read = _gdn("0.5.8", spec)
    assert read.mamba is not None
    inter = 4 * 101 * 64 * MIB
    read = replace(read, mamba=replace(read.mamba, intermediate_bytes=inter))
    rest = gib(40) - round(gib(60) * 0.2)
    share = (rest - inter) / GIB * 0.9 / 1.9 * GIB
    pred = predict(read)
    assert pred.mamba_slots == int(share // (64 * MIB))
    assert pred.mamba_slots is not None
    assert pred.state_bytes == pred.mamba_slots * 64 * MIB + inter
    no_spec = predict(replace(read, knobs={**read.knobs, "speculative_algorithm": None}))
    assert no_spec.mamba_slots == int(rest / GIB * 0.9 / 1.9 * GIB // (64 * MIB))


def test_mamba_spec_layout_decides_an_open_release_range() -> None:
    """A 0.5.3 - 0.5.8 log may be either side of rule mamba_spec_ratio: intermediate states
    printed for K + 1 slots x draft tokens are 0.5.4 - 0.5.6's layout (K x per_req x (1 + D)
    taken), for max_running_requests + 1 they are 0.5.7+'s (K x per_req + the printed
    intermediates); either way the printed K is taken (the slot rules are undecided)."""
    spec = {
        "speculative_algorithm": "EAGLE",
        "speculative_num_draft_tokens": 2,
        "max_running_requests": 32,
    }
    read = _gdn("0.5.3", spec)
    read = replace(
        read, version=VersionRange(first=version_code("0.5.3"), last=version_code("0.5.8"))
    )
    assert read.mamba is not None
    per_req = 64 * MIB
    per_slot_layout = replace(read, mamba=replace(read.mamba, intermediate_bytes=101 * 2 * per_req))
    pred = predict(per_slot_layout)
    assert pred.mamba_slots == 100
    assert pred.state_bytes == 100 * per_req * 3
    assert any("rule mamba_spec_ratio" in note for note in pred.notes)
    per_req_layout = replace(read, mamba=replace(read.mamba, intermediate_bytes=33 * 2 * per_req))
    pred = predict(per_req_layout)
    assert pred.mamba_slots == 100
    assert pred.state_bytes == 100 * per_req + 33 * 2 * per_req


def test_spec_headroom_is_for_the_eagle_family_and_standalone() -> None:
    """0.5.6 adds the headroom for algorithms with the EAGLE flag (EAGLE, NEXTN, EAGLE3) and
    STANDALONE (v0.5.6 speculative/spec_info.py:293-311), not for NGRAM."""
    base = {
        "speculative_num_steps": 2,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 3,
        "max_running_requests": 10,
    }

    def tokens(algorithm: str | None) -> int | None:
        knobs = {**base, "speculative_algorithm": algorithm}
        return predict(
            inputs(version=("0.5.6", "0.5.6"), knobs=knobs, target=[pool(1000, MIB)])
        ).tokens

    plain = tokens(None)
    assert plain is not None
    for algorithm in ("EAGLE", "NEXTN", "EAGLE3", "STANDALONE"):
        assert tokens(algorithm) == plain + 10 * 2 + 10 * 3 + 100
    assert tokens("NGRAM") == plain


def _ascend_hybrid(version: str, layers: tuple[int, int] | None) -> SizingInputs:
    """A hybrid GDN model on the Ascend backend: 80 Mamba slots of 18 MiB (radix cache off), one
    KV line allocated over all 48 layers (48 x 1,024 B/token, 12 of them full attention)."""
    read = inputs(
        version=(version, version),
        p=60.0,
        a=40.0,
        knobs={
            "attention_backend": "ascend",
            "device": "npu",
            "disable_radix_cache": True,
            "max_running_requests": 80,
        },
        target=[pool(100_000, 48 * 1024)],
        mamba=_mamba(80, 18 * MIB),
    )
    return replace(read, full_attention_layers=layers)


def test_rule_npu_hybrid_all_layers() -> None:
    """0.5.5 - 0.5.9 pool a hybrid model's KV over every layer on the Ascend backend while the
    tokens come from the full-attention layers (v0.5.8 model_executor/
    model_runner_kv_cache_mixin.py:126-131, :397-433); 0.5.10 pools the full-attention layers
    only (:478). --model-config's full_attention_interval gives the split; without it a note
    says what is missing and the KV line's cell is divided."""
    rest = gib(40 - 60 * 0.2) - 80 * 18 * MIB
    split = predict(_ascend_hybrid("0.5.8", (12, 48)))
    assert split.cell_bytes == pytest.approx(12 * 1024, rel=1e-4)
    assert split.tokens == rest // (12 * 1024)
    assert split.kv_bytes == pytest.approx((split.tokens + 1) * 48 * 1024, rel=1e-4)  # allocated
    unknown = predict(_ascend_hybrid("0.5.8", None))
    assert unknown.tokens == rest // (48 * 1024)
    assert any(n.startswith("rule npu_hybrid_all_layers") for n in unknown.notes)
    fixed = predict(_ascend_hybrid("0.5.10", (12, 48)))  # pool and sizing agree again
    assert fixed.cell_bytes == pytest.approx(48 * 1024, rel=1e-4)
    assert not any("npu_hybrid_all_layers" in n for n in fixed.notes)
