"""Intervals SGLang's lifecycle names whole (memledger/sglang/measured_spans.py): the remainder
of the pool-end -> first-capture interval, of a LoRA launch's pool interval and of a hybrid
model's pool interval without its `Mamba Cache is allocated` line is a measured row of its
phase, not `unexplained`. Synthetic lines in each family's shape."""

from __future__ import annotations

from pathlib import Path

import pytest

import memledger
from memledger.model.ledger import Ledger, Row, RowGroup, RowKind
from memledger.sglang.measured_spans import MEASURED_SPANS
from memledger.units import GIB, MIB
from tests.conftest import ledger_for, real_log_paths


def _ledger(lines: list[str], model_config: Path | None = None) -> Ledger:
    text = "\n".join(lines) + "\n"
    return memledger.ledger(memledger.load_text(text), model_config=model_config)


def _row(found: Ledger, row_id: str) -> Row:
    match = found.row(row_id)
    assert match is not None, [r.id for r in found.rows]
    return match


def _unexplained(found: Ledger) -> list[Row]:
    return [r for r in found.rows if r.group is RowGroup.UNEXPLAINED]


def _server_args(**fields: str) -> str:
    body = ", ".join(f"{k}={v}" for k, v in fields.items())
    return f"[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', {body})"


def _startup(
    load_end_type: str,
    pool_lines: list[str],
    pool_end: float,
    capture_begin: float,
    *,
    load_end_avail: float = 9.26,
) -> list[str]:
    """A single-GPU startup: load, pools, capture, in 0.5.x line formats."""
    usage = 15.87 - load_end_avail
    return [
        "[2026-01-01 00:00:01 TP0] Init torch distributed begin.",
        "[2026-01-01 00:00:01 TP0] Init torch distributed ends. mem usage=0.02 GB",
        "[2026-01-01 00:00:02 TP0] Load weight begin. avail mem=15.87 GB",
        f"[2026-01-01 00:00:03 TP0] Load weight end. elapsed=1.25 s, type={load_end_type}, "
        f"dtype=torch.bfloat16, avail mem={load_end_avail:.2f} GB, mem usage={usage:.2f} GB.",
        *(f"[2026-01-01 00:00:03 TP0] {line}" for line in pool_lines),
        f"[2026-01-01 00:00:03 TP0] Memory pool end. avail mem={pool_end:.2f} GB",
        "[2026-01-01 00:00:03 TP0] Init attention backend begin.",
        "[2026-01-01 00:00:03 TP0] Init attention backend end. elapsed=0.03 s",
        "[2026-01-01 00:00:03 TP0] Capture cuda graph begin. This can take up to several "
        f"minutes. avail mem={capture_begin:.2f} GB",
        "[2026-01-01 00:00:04 TP0] Capture cuda graph end. Time elapsed: 1.24 s. mem usage=0.09 "
        f"GB. avail mem={max(capture_begin - 0.09, 0):.2f} GB.",
    ]


KV = "KV Cache is allocated. #tokens: 401920, K size: 1.52 GB, V size: 1.52 GB"
MAMBA = (
    "Mamba Cache is allocated. max_mamba_cache_size: 38, conv_state size: 0.03GB, "
    "ssm_state size: 2.74GB "
)


def test_pool_end_to_first_capture_is_the_attention_backend_phase() -> None:
    found = _ledger(_startup("GraniteMoeHybridForCausalLM", [MAMBA, KV], 3.42, 2.98))
    phase = _row(found, "attention_backend_init")
    assert phase.kind is RowKind.LOGGED and phase.group is RowGroup.WORKSPACE
    assert phase.bytes == round(3.42 * GIB) - round(2.98 * GIB)
    assert phase.interval == "memory_pool_end->capture_begin"
    assert "init_cublas" in (phase.evidence.note or "")
    assert found.row("unexplained.capture_begin") is None
    assert abs(found.balance_error_bytes) <= found.tolerance_bytes


def test_a_sized_workspace_is_carved_first_and_the_phase_keeps_the_rest() -> None:
    # FlashInfer on a Qwen3 class: its 512 MiB global workspace is the formula, the rest of
    # the interval the measured phase.
    lines = [
        _server_args(attention_backend="'flashinfer'", tp_size="1"),
        *_startup("Qwen3ForCausalLM", [KV], 6.44, 5.89),
    ]
    found = _ledger(lines)
    workspace = _row(found, "flashinfer_workspace")
    wrappers = _row(found, "flashinfer_wrappers")
    phase = _row(found, "attention_backend_init")
    assert workspace.bytes == 512 * MIB
    # ragged + paged prefill, verify and decode wrappers: four 8 MiB int workspaces, two to
    # each 20 MiB allocator block
    assert wrappers.bytes == 2 * 20 * MIB
    drop = round(6.44 * GIB) - round(5.89 * GIB)
    assert phase.bytes == drop - 512 * MIB - 40 * MIB
    assert "flashinfer_workspace" in (phase.evidence.formula or "")


def test_from_0_5_14_the_phase_spans_both_pools_to_the_first_capture_of_any_kind() -> None:
    # 0.5.14+: target load, draft load, both pools, both backends, then the first capture
    # (here a target verify graph in the new capture format).
    lines = [
        "[2026-01-01 00:00:01 TP0] Load weight begin. avail mem=70.00 GB",
        "[2026-01-01 00:00:02 TP0] Load weight end. elapsed=1.00 s, type=Qwen3ForCausalLM, "
        "avail mem=50.00 GB, mem usage=20.00 GB.",
        "[2026-01-01 00:00:03 TP0] Load weight begin. avail mem=50.00 GB",
        "[2026-01-01 00:00:04 TP0] Load weight end. elapsed=1.00 s, type=Qwen3ForCausalLMEagle3, "
        "avail mem=49.00 GB, mem usage=1.00 GB.",
        f"[2026-01-01 00:00:05 TP0] {KV}",
        "[2026-01-01 00:00:05 TP0] Memory pool end. avail mem=40.00 GB",
        "[2026-01-01 00:00:05 TP0] KV Cache is allocated. #tokens: 401920, K size: 0.20 GB, "
        "V size: 0.20 GB",
        "[2026-01-01 00:00:05 TP0] Memory pool end. avail mem=39.50 GB",
        "[2026-01-01 00:00:06 TP0] Capture target verify CUDA graph begin. backend=full, "
        "num_tokens_per_req=4, bs=[1, 2, 4], avail mem=38.90 GB",
        "[2026-01-01 00:00:09 TP0] Capture target verify CUDA graph end. elapsed=3.00 s, "
        "mem usage=0.50 GB, avail mem=38.40 GB.",
    ]
    found = _ledger(lines)
    phase = _row(found, "attention_backend_init")
    assert phase.interval is not None and phase.interval.endswith("capture_begin")
    assert phase.interval.startswith("draft_memory_pool_end")
    assert phase.bytes == round(39.50 * GIB) - round(38.90 * GIB)


def test_a_release_before_capture_stays_unexplained() -> None:
    # avail rises into the capture: not an allocation of the phase.
    found = _ledger(_startup("LlamaForCausalLM", [KV], 3.42, 3.80))
    assert found.row("attention_backend_init") is None
    residual = _row(found, "unexplained.capture_begin")
    assert residual.bytes is not None and residual.bytes < 0


def test_a_reading_at_the_floor_is_not_a_measured_phase() -> None:
    # free memory read 0.00 at the capture: the drop is capped at what was free (WSL spills on)
    found = _ledger(_startup("Qwen3ForCausalLM", [KV], 0.30, 0.00))
    assert found.row("attention_backend_init") is None
    assert "avail read 0.00" in (_row(found, "unexplained.capture_begin").evidence.note or "")


LORA_ARGS = {
    "tp_size": "1",
    "enable_lora": "True",
    "max_loras_per_batch": "8",
    "lora_paths": "None",
    "enable_lora_overlap_loading": "True",
}
LORA_KV = "KV Cache is allocated. #tokens: 100000, K size: 6.10 GB, V size: 6.10 GB"


def _lora_startup(**fields: str) -> list[str]:
    return [
        _server_args(**{**LORA_ARGS, **fields}),
        *_startup("LlamaForCausalLM", [LORA_KV], 0.70, 0.50, load_end_avail=15.00),
    ]


def test_lora_pool_without_its_inputs_is_the_measured_remainder() -> None:
    found = _ledger(_lora_startup(max_lora_rank="None", lora_target_modules="None"))
    pool = _row(found, "lora_pool")
    assert pool.kind is RowKind.LOGGED
    assert pool.interval == "load_end->memory_pool_end"
    assert found.row("unexplained.memory_pool_end") is None
    explained = sum(r.bytes or 0 for r in found.rows if r.interval == pool.interval)
    assert explained == round(15.00 * GIB) - round(0.70 * GIB)  # the interval's drop, whole
    # one row per id: the formula's unknown row is not repeated beside it
    assert [r.id for r in found.rows].count("lora_pool") == 1


def test_a_paste_without_server_args_shows_lora_by_the_managers_line() -> None:
    # v0.5.8 lora/lora_manager.py:83, printed by the LoRA manager built before the pool
    manager = "Using triton as backend of LoRA kernels."
    found = _ledger(
        _startup("LlamaForCausalLM", [manager, LORA_KV], 0.70, 0.50, load_end_avail=15.00)
    )
    pool = _row(found, "lora_pool")
    assert pool.kind is RowKind.LOGGED and pool.interval == "load_end->memory_pool_end"
    assert found.row("unexplained.memory_pool_end") is None
    without = _ledger(_startup("LlamaForCausalLM", [LORA_KV], 0.70, 0.50, load_end_avail=15.00))
    assert without.row("lora_pool") is None
    assert _row(without, "unexplained.memory_pool_end").bytes == pool.bytes


def test_lora_pool_is_the_mem_pool_formula_with_model_config(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        '{"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, '
        '"num_hidden_layers": 32, "num_key_value_heads": 8, "torch_dtype": "bfloat16"}'
    )
    modules = "['q_proj', 'v_proj', 'down_proj']"
    found = _ledger(_lora_startup(max_lora_rank="16", lora_target_modules=modules), config)
    pool = _row(found, "lora_pool")
    assert pool.kind is RowKind.DERIVED
    # v0.5.8 lora/mem_pool.py: A (n, r x stacked, in), B (n, out, r); q_proj/v_proj -> qkv_proj
    # (stacked 3, out = 128 x (32 + 2 x 8)), down_proj in = intermediate, out = hidden; tp 1.
    r, n = 16, 8
    qkv = 3 * r * 4096 + 128 * (32 + 2 * 8) * r
    down = r * 14336 + 4096 * r
    assert pool.bytes == n * 32 * (qkv + down) * 2
    # overlap loading pins adapters in host memory: nothing more on the GPU
    plain = _ledger(
        _lora_startup(
            max_lora_rank="16", lora_target_modules=modules, enable_lora_overlap_loading="False"
        ),
        config,
    )
    assert _row(plain, "lora_pool").bytes == pool.bytes


def test_a_moe_model_s_lora_pool_is_measured_not_the_dense_formula(tmp_path: Path) -> None:
    # experts get 4D buffers the dense formula does not count: the remainder is measured
    config = tmp_path / "config.json"
    config.write_text(
        '{"hidden_size": 2048, "intermediate_size": 6144, "num_attention_heads": 32, '
        '"num_hidden_layers": 48, "num_key_value_heads": 4, "num_experts": 128, '
        '"torch_dtype": "bfloat16"}'
    )
    found = _ledger(_lora_startup(max_lora_rank="16", lora_target_modules="['all']"), config)
    pool = _row(found, "lora_pool")
    assert pool.kind is RowKind.LOGGED


def test_no_lora_no_lora_row() -> None:
    found = _ledger([_server_args(tp_size="1"), *_startup("LlamaForCausalLM", [KV], 3.42, 2.98)])
    assert found.row("lora_pool") is None


def test_hybrid_pool_without_its_size_line_is_the_measured_state_pool() -> None:
    found = _ledger(_startup("Qwen3NextForCausalLM", [KV], 2.64, 2.20))
    state = _row(found, "mamba_state_unprinted")
    assert state.group is RowGroup.STATE_POOL and state.kind is RowKind.LOGGED
    assert state.interval == "load_end->memory_pool_end"
    assert found.row("unexplained.memory_pool_end") is None
    assert "Mamba Cache is allocated" in (state.evidence.note or "")
    # with the line, the pool is read from it and nothing is measured
    printed = _ledger(_startup("Qwen3NextForCausalLM", [MAMBA, KV], 2.64, 2.20))
    assert printed.row("mamba_state_unprinted") is None
    assert printed.row("mamba_ssm_state") is not None
    # a model that is not hybrid keeps its pool remainder unexplained
    dense = _ledger(_startup("LlamaForCausalLM", [KV], 2.64, 2.20))
    assert dense.row("mamba_state_unprinted") is None
    assert dense.row("unexplained.memory_pool_end") is not None


def test_a_hybrid_model_config_marks_an_unlisted_class(tmp_path: Path) -> None:
    # a Mamba2-style config (ssm_state_size) under a class name memledger does not list
    config = tmp_path / "config.json"
    config.write_text('{"architectures": ["NewHybridForCausalLM"], "ssm_state_size": 128}')
    lines = _startup("NewHybridForCausalLM", [KV], 2.64, 2.20)
    assert _ledger(lines).row("mamba_state_unprinted") is None
    assert _ledger(lines, config).row("mamba_state_unprinted") is not None


def test_entries_are_unique_and_each_names_what_runs_in_its_interval() -> None:
    ids = [entry.row_id for entry in MEASURED_SPANS]
    assert len(set(ids)) == len(ids)
    for entry in MEASURED_SPANS:
        assert entry.allocates and entry.opens_at


@pytest.mark.parametrize("path", real_log_paths(), ids=lambda p: p.name[:40])
def test_real_logs_measured_rows_are_never_a_release_and_still_balance(path: Path) -> None:
    found = ledger_for(path)
    ids = {entry.row_id for entry in MEASURED_SPANS}
    for measured in (r for r in found.rows if r.id in ids and r.kind is RowKind.LOGGED):
        assert (measured.bytes or 0) >= -(measured.error_bytes or 0), measured.id
    if found.usable_bytes is not None:
        assert abs(found.balance_error_bytes) <= found.tolerance_bytes
