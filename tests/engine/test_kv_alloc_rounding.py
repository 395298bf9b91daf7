"""Formula kv_alloc_rounding: PyTorch's caching allocator rounds each per-layer KV buffer of
10 MiB or more up to 2 MiB, and the tails stay reserved in the pool interval. Synthetic lines;
the model dims come from a synthetic --model-config."""

from __future__ import annotations

import json
import math
from pathlib import Path

import memledger
from memledger.model.ledger import Ledger, RowGroup, RowKind
from memledger.units import GIB, MIB

TOKENS = 300_000
LAYERS = 24
KV_HEADS = 4
HEAD_DIM = 128
BUFFER = (TOKENS + 1) * KV_HEADS * HEAD_DIM * 2  # page_size 1: one padding row, bf16
"""One K (or V) buffer: (size + page_size) rows x heads x head_dim x 2 B."""
PRINTED = round(LAYERS * BUFFER / GIB, 2)


def _lines(
    *, extra_pool: str | None = None, device: str = "cuda", model_type: str = "Qwen3ForCausalLM"
) -> list[str]:
    pool = [
        f"KV Cache is allocated. #tokens: {TOKENS}, K size: {PRINTED:.2f} GB, "
        f"V size: {PRINTED:.2f} GB",
        *([extra_pool] if extra_pool else []),
    ]
    return [
        "[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
        f"page_size=1, mem_fraction_static=0.85, device='{device}')",
        "[2026-01-01 00:00:01 TP0] Init torch distributed begin.",
        "[2026-01-01 00:00:01 TP0] Init torch distributed ends. mem usage=0.02 GB",
        "[2026-01-01 00:00:02 TP0] Load weight begin. avail mem=39.50 GB",
        f"[2026-01-01 00:00:03 TP0] Load weight end. elapsed=1.25 s, type={model_type}, "
        "dtype=torch.bfloat16, avail mem=30.00 GB, mem usage=9.50 GB.",
        *(f"[2026-01-01 00:00:03 TP0] {line}" for line in pool),
        "[2026-01-01 00:00:03 TP0] Memory pool end. avail mem=15.90 GB",
        "[2026-01-01 00:00:04 TP0] max_total_num_tokens=300000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=64, context_len=4096, "
        "available_gpu_mem=15.90 GB",
    ]


def _config(tmp_path: Path, **dims: int) -> Path:
    fields = {
        "num_hidden_layers": LAYERS,
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "torch_dtype": "bfloat16",
    }
    fields.update(dims)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    return path


def _ledger(lines: list[str], model_config: Path | None = None) -> Ledger:
    text = "\n".join(lines) + "\n"
    return memledger.ledger(memledger.load_text(text), model_config=model_config)


def _unexplained(found: Ledger) -> int:
    return sum(r.bytes or 0 for r in found.rows if r.group is RowGroup.UNEXPLAINED)


def test_each_buffer_is_rounded_up_to_2_mib(tmp_path: Path) -> None:
    found = _ledger(_lines(), _config(tmp_path))
    row = found.row("kv_alloc_rounding")
    assert row is not None and row.kind is RowKind.DERIVED
    tail = math.ceil(BUFFER / (2 * MIB)) * 2 * MIB - BUFFER
    assert 0 < tail < 2 * MIB
    assert row.bytes == 2 * LAYERS * tail  # K and V buffers of every layer
    assert row.interval == "load_end->memory_pool_end"
    # carved from the pool interval: what it names leaves the unexplained residual
    without = _ledger(_lines())
    assert _unexplained(without) - _unexplained(found) == row.bytes
    assert abs(found.balance_error_bytes) <= found.tolerance_bytes


def test_without_model_dims_the_row_is_unknown_and_says_what_sizes_it() -> None:
    found = _ledger(_lines())
    row = found.row("kv_alloc_rounding")
    assert row is not None and row.kind is RowKind.UNKNOWN and not row.in_partition
    assert "--model-config" in (row.evidence.note or "")


def test_dims_that_do_not_give_the_logged_pool_make_no_row(tmp_path: Path) -> None:
    # twice the KV heads would give twice the printed pool: these are not the log's buffers
    found = _ledger(_lines(), _config(tmp_path, num_key_value_heads=8))
    assert found.row("kv_alloc_rounding") is None


def test_a_swa_pool_beside_the_kv_pool_or_an_npu_makes_no_row(tmp_path: Path) -> None:
    # a sliding-window split makes a second set of KV buffers the one KV line does not size
    config = _config(tmp_path)
    swa = "Use sliding window memory pool. full_layer_tokens=300000, swa_layer_tokens=240000"
    assert _ledger(_lines(extra_pool=swa), config).row("kv_alloc_rounding") is None
    assert _ledger(_lines(device="npu"), config).row("kv_alloc_rounding") is None
    assert _ledger(_lines(), config).row("kv_alloc_rounding") is not None


def test_mla_has_one_buffer_per_layer(tmp_path: Path) -> None:
    layers, width = 20, 512 + 64
    buffer = (TOKENS + 1) * width * 2
    printed = round(layers * buffer / GIB, 2)
    lines = [
        line.replace(
            f"K size: {PRINTED:.2f} GB, V size: {PRINTED:.2f} GB", f"KV size: {printed:.2f} GB"
        )
        for line in _lines()
    ]
    config = _config(tmp_path, num_hidden_layers=layers, kv_lora_rank=512, qk_rope_head_dim=64)
    row = _ledger(lines, config).row("kv_alloc_rounding")
    assert row is not None and row.kind is RowKind.DERIVED
    assert row.bytes == layers * (math.ceil(buffer / (2 * MIB)) * 2 * MIB - buffer)


def test_a_fragment_without_server_args_takes_tp_from_the_rank_tags(tmp_path: Path) -> None:
    # A tp-2 fragment: no server_args, TP0 and TP1 print the same pool. Each rank holds half
    # the config's KV heads, which only tp 2 from the tags gives (tp 1 would double the pool).
    tp_lines = [
        line
        for line in _lines()
        if "server_args" not in line and "max_total_num_tokens" not in line
    ]
    tp_lines += [line.replace(" TP0]", " TP1]") for line in tp_lines]
    found = _ledger(tp_lines, _config(tmp_path, num_key_value_heads=2 * KV_HEADS))
    assert found.parameters["ledger.tp_size"] == 2
    assert any("tp_size 2 from the rank tags (TP0-TP1)" in note for note in found.notes)
    row = found.row("kv_alloc_rounding")
    assert row is not None and row.kind is RowKind.DERIVED
    tail = math.ceil(BUFFER / (2 * MIB)) * 2 * MIB - BUFFER
    assert row.bytes == 2 * LAYERS * tail
    single = [line for line in tp_lines if " TP1]" not in line]
    assert _ledger(single).parameters["ledger.tp_size"] == 1


def test_a_hybrid_gdn_model_rounds_only_its_full_attention_layers(tmp_path: Path) -> None:
    # Qwen3-Next style: every 4th layer is full attention and has KV buffers; the Mamba/SSM
    # pool printed beside the KV line is its own tensors and does not stop the row.
    interval = 4
    full = LAYERS // interval
    printed = round(full * BUFFER / GIB, 2)
    mamba = (
        "Mamba Cache is allocated. max_mamba_cache_size: 38, conv_state size: 0.03GB, "
        "ssm_state size: 2.74GB "
    )
    lines = [
        line.replace(f"{PRINTED:.2f} GB", f"{printed:.2f} GB")
        for line in _lines(extra_pool=mamba, model_type="Qwen3NextForCausalLM")
    ]
    config = _config(tmp_path, full_attention_interval=interval)
    row = _ledger(lines, config).row("kv_alloc_rounding")
    assert row is not None and row.kind is RowKind.DERIVED
    tail = math.ceil(BUFFER / (2 * MIB)) * 2 * MIB - BUFFER
    assert row.bytes == 2 * full * tail
    # without the interval the config's 24 KV layers would be 4 x the printed pool: no row
    assert _ledger(lines, _config(tmp_path)).row("kv_alloc_rounding") is None
    # another hybrid class beside its Mamba pool: its KV layout is not modelled, no row at all
    other = [line.replace("Qwen3NextForCausalLM", "GraniteMoeHybridForCausalLM") for line in lines]
    assert _ledger(other, config).row("kv_alloc_rounding") is None
    assert _ledger(other).row("kv_alloc_rounding") is None
