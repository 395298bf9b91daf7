"""Formula flashinfer_wrappers: the FlashInfer attention backend's wrappers each keep an 8 MiB
int workspace, packed two to a 20 MiB allocator block. Synthetic lines."""

from __future__ import annotations

import memledger
from memledger.model.ledger import Ledger, RowKind
from memledger.units import GIB, MIB

MHA_KV = "KV Cache is allocated. #tokens: 401920, K size: 1.52 GB, V size: 1.52 GB"
MLA_KV = "KV Cache is allocated. #tokens: 401920, KV size: 3.04 GB"
SWA = "Use sliding window memory pool. full_layer_tokens=401920, swa_layer_tokens=321536"


def _ledger(pool: list[str], backend: str = "flashinfer") -> Ledger:
    lines = [
        f"[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
        f"attention_backend='{backend}')",
        "[2026-01-01 00:00:01 TP0] Init torch distributed begin.",
        "[2026-01-01 00:00:01 TP0] Init torch distributed ends. mem usage=0.02 GB",
        "[2026-01-01 00:00:02 TP0] Load weight begin. avail mem=15.87 GB",
        "[2026-01-01 00:00:03 TP0] Load weight end. elapsed=1.25 s, type=LlamaForCausalLM, "
        "dtype=torch.bfloat16, avail mem=9.26 GB, mem usage=6.61 GB.",
        *(f"[2026-01-01 00:00:03 TP0] {line}" for line in pool),
        "[2026-01-01 00:00:03 TP0] Memory pool end. avail mem=6.14 GB",
        "[2026-01-01 00:00:04 TP0] Capture cuda graph begin. This can take up to several "
        "minutes. avail mem=5.62 GB",
        "[2026-01-01 00:00:05 TP0] Capture cuda graph end. Time elapsed: 1.24 s. mem usage=0.09 "
        "GB. avail mem=5.53 GB.",
    ]
    return memledger.ledger(memledger.load_text("\n".join(lines) + "\n"))


def test_four_wrappers_take_two_allocator_blocks() -> None:
    found = _ledger([MHA_KV])
    row = found.row("flashinfer_wrappers")
    assert row is not None and row.kind is RowKind.DERIVED
    assert row.bytes == 2 * 20 * MIB
    assert row.interval == "memory_pool_end->capture_begin"
    phase = found.row("attention_backend_init")
    assert phase is not None
    drop = round(6.14 * GIB) - round(5.62 * GIB)
    assert phase.bytes == drop - 384 * MIB - 40 * MIB  # what the formulas leave is measured


def test_no_row_for_an_mla_pool_a_sliding_window_or_another_backend() -> None:
    assert _ledger([MLA_KV]).row("flashinfer_wrappers") is None
    assert _ledger([SWA, MHA_KV]).row("flashinfer_wrappers") is None
    assert _ledger([MHA_KV], backend="triton").row("flashinfer_wrappers") is None
