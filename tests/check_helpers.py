"""Hand-built ledgers and budget files for the `memledger check` tests.

The numbers are chosen so every expected outcome follows from the arithmetic written next to it,
not from running the code: e.g. cuda_graph 7.50 GiB against `max = "8 GiB"` passes by 0.50 GiB.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memledger.ledger_model import Evidence, Ledger, LedgerSource, Row, RowGroup, RowKind, Summary
from memledger.units import GIB

CENTI = GIB // 100
"""0.01 GiB in bytes: every size below is a whole number of hundredths, so sums are exact."""

HEAD_SUMMARY: dict[str, Any] = {
    "usable": 177.70,
    "cuda_graph": 7.50,
    "fixed_overhead": 10.50,
    "state_pool": 167.20,
    "kv_pool": 41.10,
    "kv_tokens_per_instance": 51_000_000,
    "slots": 33,
    "mem_fraction_static": 0.88,
    "runtime_headroom": 4.00,
}
BASE_SUMMARY: dict[str, Any] = {
    **HEAD_SUMMARY,
    "fixed_overhead": 10.00,  # head grows by 0.50 GiB = +5.0 %
    "cuda_graph": 7.50,
    "kv_tokens_per_instance": 52_000_000,
}


def make_ledger(
    path: str = "logs/head.log",
    summary: dict[str, Any] | None = None,
    *,
    rows: list[Row] | None = None,
    stopped_at: str | None = None,
) -> Ledger:
    """A ledger with the given summary (GiB floats / counts) and rows."""
    values = HEAD_SUMMARY if summary is None else summary
    return Ledger(
        source=LedgerSource(path=path, startup=0, n_startups=1, rank="DP0 TP0 EP0"),
        outcome="ready" if stopped_at is None else "crash",
        stopped_at=stopped_at,
        checkpoints=[],
        intervals=[],
        rows=default_rows() if rows is None else rows,
        summary=summary_from_gib(values, default_rows() if rows is None else rows),
        usable_bytes=round(values.get("usable", 0) * GIB) or None,
    )


def default_rows() -> list[Row]:
    """req_to_token (derived, 13 hundredths), draft_slot_map (unknown), cuda_graph (logged)."""
    return [
        Row(
            id="req_to_token",
            label="req_to_token",
            group=RowGroup.WORKSPACE,
            kind=RowKind.DERIVED,
            bytes=13 * CENTI,
            evidence=Evidence(formula="33 rows x 1048580 cols x 4 B"),
        ),
        Row(
            id="draft_slot_map",
            label="draft slot map",
            group=RowGroup.WORKSPACE,
            kind=RowKind.UNKNOWN,
            bytes=None,
            evidence=Evidence(note="needs dspark_slot_map slots_per_req (not in this log)"),
        ),
        Row(
            id="cuda_graph",
            label="CUDA graphs",
            group=RowGroup.CUDA_GRAPH,
            kind=RowKind.LOGGED,
            bytes=750 * CENTI,
            error_bytes=GIB // 200,
        ),
    ]


def head_ledger(path: str = "logs/head.log") -> Ledger:
    """The head deployment (see HEAD_SUMMARY)."""
    return make_ledger(path, HEAD_SUMMARY)


def base_ledger(path: str = "logs/base.log") -> Ledger:
    """The baseline deployment (see BASE_SUMMARY)."""
    return make_ledger(path, BASE_SUMMARY)


def write(tmp_path: Path, name: str, text: str) -> Path:
    """Write a file under tmp_path and return its path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def save_ledger(tmp_path: Path, name: str, ledger: Ledger) -> Path:
    """A saved ledger JSON, as `memledger ledger --format json` writes it."""
    return write(tmp_path, name, ledger.model_dump_json(indent=2))


def summary_from_gib(values: dict[str, Any], rows: list[Row] | None = None) -> Summary:
    """A Summary from figures written as GiB floats (sizes) and counts, as tests write them.

    A size with a row of the same id takes that row's exact bytes (as the engine's would)."""
    exact = {row.id: row.bytes for row in rows or [] if row.bytes is not None}
    converted: dict[str, Any] = {}
    for name, value in values.items():
        if name in Summary.byte_fields() and value is not None:
            near = exact.get(name)
            value = (
                near if near is not None and abs(near / GIB - value) < 1e-5 else round(value * GIB)
            )
        converted[name] = value
    return Summary(**converted)
