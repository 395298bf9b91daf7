"""The attention backend SGLang picked itself (`Attention backend not set. Use X backend by
default.`) sizes the backend's formulas when the printed server_args say None, and a formula row
of an interval read 0.00 at both ends is shown beside the account, not carved. Synthetic lines."""

from __future__ import annotations

import memledger
from memledger.model.ledger import Ledger, RowKind
from memledger.units import GIB, MIB

DEFAULT_LINES = {
    # v0.4.6.post5 model_executor/model_runner.py:349-351
    "0.4": "Attention backend not set. Use {backend} backend by default.",
    # v0.5.2 model_executor/model_runner.py:498-500
    "0.5.2": "Attention backend not explicitly specified. Use {backend} backend by default.",
}


def _ledger(
    default_line: str | None,
    backend: str = "flashinfer",
    pool_end: str = "6.14",
    capture: str = "5.62",
) -> Ledger:
    lines = [
        "[2025-03-01 00:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
        "attention_backend=None)",
        *(
            [f"[2025-03-01 00:00:01 TP0] {default_line.format(backend=backend)}"]
            if default_line
            else []
        ),
        "[2025-03-01 00:00:01 TP0] Init torch distributed begin.",
        "[2025-03-01 00:00:01 TP0] Init torch distributed ends. mem usage=0.02 GB",
        "[2025-03-01 00:00:02 TP0] Load weight begin. avail mem=15.87 GB",
        "[2025-03-01 00:00:03 TP0] Load weight end. type=LlamaForCausalLM, "
        "dtype=torch.bfloat16, avail mem=9.26 GB, mem usage=6.61 GB",
        "[2025-03-01 00:00:03 TP0] KV Cache is allocated. K size: 1.52 GB, V size: 1.52 GB.",
        f"[2025-03-01 00:00:03 TP0] Memory pool end. avail mem={pool_end} GB",
        "[2025-03-01 00:00:04 TP0] Capture cuda graph begin. This can take up to several "
        f"minutes. avail mem={capture} GB",
        "[2025-03-01 00:00:05 TP0] Capture cuda graph end. Time elapsed: 1.24 s",
    ]
    return memledger.ledger(memledger.load_text("\n".join(lines) + "\n"))


def test_the_backend_sglang_picked_sizes_the_flashinfer_rows() -> None:
    for wording in DEFAULT_LINES.values():
        found = _ledger(wording)
        workspace = found.row("flashinfer_workspace")
        assert workspace is not None and workspace.kind is RowKind.DERIVED
        assert workspace.bytes == 384 * MIB
        wrappers = found.row("flashinfer_wrappers")
        assert wrappers is not None and wrappers.bytes == 40 * MIB
        phase = found.row("attention_backend_init")
        assert phase is not None
        drop = round(6.14 * GIB) - round(5.62 * GIB)
        assert phase.bytes == drop - 384 * MIB - 40 * MIB


def test_no_flashinfer_row_without_the_line_or_for_another_backend() -> None:
    assert _ledger(None).row("flashinfer_workspace") is None
    assert _ledger(DEFAULT_LINES["0.4"], backend="triton").row("flashinfer_workspace") is None
    assert _ledger(DEFAULT_LINES["0.4"], backend="fa3").row("flashinfer_wrappers") is None


def test_an_interval_read_at_the_floor_shows_the_formula_without_carving_it() -> None:
    found = _ledger(DEFAULT_LINES["0.4"], pool_end="0.00", capture="0.00")
    workspace = found.row("flashinfer_workspace")
    assert workspace is not None and workspace.bytes == 384 * MIB
    assert not workspace.in_partition
    assert "not summed: avail read 0.00 at both ends" in (workspace.evidence.note or "")
    assert found.row("attention_backend_init") is None
    residual = found.row("unexplained.capture_begin")
    assert residual is None or residual.bytes == 0  # nothing carved from a drop of 0
    assert abs(found.balance_error_bytes or 0) <= found.tolerance_bytes
