"""Formula flashinfer_index_buffer: the FlashInfer backend's verify wrapper keeps a 64 MiB index
buffer when the log's SGLang release (0.4.6 - 0.5.7) pins a FlashInfer that allocates it
(0.2.3 - 0.5.3); unknown when the log's formats leave the release open. Synthetic lines."""

from __future__ import annotations

import memledger
from memledger.model.ledger import Ledger, RowKind
from memledger.units import GIB, MIB

# v0.4.10 server_args.py:1981-1985 (0.4.10 - 0.5.0): dates the log inside 0.4.6 - 0.5.7
VLM_MFS = "Multimodal model: Dynamically adjusted --mem-fraction-static from: 0.871 to: 0.828."
# 0.4.4 - 0.5.8: `mem usage=` without `elapsed=`
LOAD_END_OLD = (
    "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=9.26 GB, "
    "mem usage=6.61 GB."
)
# 0.5.9 only: `elapsed=` and `dtype=`
LOAD_END_059 = (
    "Load weight end. elapsed=1.25 s, type=LlamaForCausalLM, dtype=torch.bfloat16, "
    "avail mem=9.26 GB, mem usage=6.61 GB."
)
MHA_KV = "KV Cache is allocated. #tokens: 401920, K size: 1.52 GB, V size: 1.52 GB"
MLA_KV = "KV Cache is allocated. #tokens: 401920, KV size: 3.04 GB"


def _ledger(
    load_end: str,
    dating: tuple[str, ...] = (),
    backend: str = "flashinfer",
    kv: str = MHA_KV,
) -> Ledger:
    lines = [
        f"[2025-08-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
        f"attention_backend='{backend}')",
        *(f"[2025-08-01 00:00:00 TP0] {line}" for line in dating),
        "[2025-08-01 00:00:02 TP0] Load weight begin. avail mem=15.87 GB",
        f"[2025-08-01 00:00:03 TP0] {load_end}",
        f"[2025-08-01 00:00:03 TP0] {kv}",
        "[2025-08-01 00:00:03 TP0] Memory pool end. avail mem=6.14 GB",
        "[2025-08-01 00:00:04 TP0] Capture cuda graph begin. This can take up to several "
        "minutes. avail mem=5.52 GB",
    ]
    return memledger.ledger(memledger.load_text("\n".join(lines) + "\n"))


def test_a_release_pinning_flashinfer_0_2_to_0_5_keeps_64_mib() -> None:
    found = _ledger(LOAD_END_OLD, (VLM_MFS,))
    row = found.row("flashinfer_index_buffer")
    assert row is not None and row.kind is RowKind.DERIVED
    assert row.bytes == 64 * MIB
    assert row.interval == "memory_pool_end->capture_begin"
    phase = found.row("attention_backend_init")
    assert phase is not None
    drop = round(6.14 * GIB) - round(5.52 * GIB)
    assert phase.bytes == drop - 384 * MIB - 40 * MIB - 64 * MIB


def test_no_row_from_0_5_8_on_nor_for_mla_or_another_backend() -> None:
    assert _ledger(LOAD_END_059).row("flashinfer_index_buffer") is None
    assert _ledger(LOAD_END_OLD, (VLM_MFS,), kv=MLA_KV).row("flashinfer_index_buffer") is None
    assert _ledger(LOAD_END_OLD, (VLM_MFS,), "triton").row("flashinfer_index_buffer") is None


def test_unknown_when_the_formats_leave_the_release_open() -> None:
    # 0.4.4 - 0.5.8 (no other dating line): the pin changed inside the range
    found = _ledger(LOAD_END_OLD)
    row = found.row("flashinfer_index_buffer")
    assert row is not None and row.kind is RowKind.UNKNOWN and row.bytes is None
    assert "0.4.6 - 0.5.7" in (row.evidence.note or "")
    phase = found.row("attention_backend_init")
    assert phase is not None and "flashinfer_index_buffer" in (phase.evidence.note or "")
