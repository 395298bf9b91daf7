"""Hand-built ledgers and budget files for the `memledger check` tests.

The numbers are chosen so every expected outcome follows from the arithmetic written next to it,
not from running the code: e.g. cuda_graph 7.50 GiB against `max = "8 GiB"` passes by 0.50 GiB.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from memledger.model.ledger import (
    Evidence,
    Ledger,
    Row,
    RowGroup,
    RowKind,
    Summary,
    summary_from_rows,
)
from memledger.record import to_json
from memledger.units import GIB
from tests.conftest import make_ledger as hand_built_ledger

CENTI = GIB // 100
"""0.01 GiB in bytes: every size below is a whole number of hundredths, so sums are exact."""

# The fixed overhead (10.50 GiB) is cuda_graph 7.50 + runtime_headroom 2.00 + req_to_token 0.13
# + resident weights 0.87; the state pool (167.20 GiB) is kv_pool 41.10 + other state 126.10;
# the two make usable 177.70 GiB.
HEAD_SUMMARY: dict[str, Any] = {
    "usable": 177.70,
    "cuda_graph": 7.50,
    "fixed_overhead": 10.50,
    "state_pool": 167.20,
    "kv_pool": 41.10,
    "kv_tokens_per_instance": 51_000_000,
    "slots": 33,
    "mem_fraction_static": 0.88,
    "runtime_headroom": 2.00,
}
BASE_SUMMARY: dict[str, Any] = {
    **HEAD_SUMMARY,
    "fixed_overhead": 10.00,  # head grows by 0.50 GiB = +5.0 % (resident weights 0.37)
    "state_pool": 167.70,  # so that usable stays 177.70
    "cuda_graph": 7.50,
    "kv_tokens_per_instance": 52_000_000,
}
REQ_TO_TOKEN = 0.13
"""GiB of the req_to_token row that every fixed overhead here includes."""


def make_ledger(
    path: str = "logs/head.log",
    summary: dict[str, Any] | None = None,
    *,
    stopped_at: str | None = None,
) -> Ledger:
    """A consistent ledger with the given summary (GiB floats / counts): its rows
    (`rows_for`) realise every figure that is a sum of rows, the summary holds those sums as
    the engine computes them (`summary_from_rows`) and the balance error is the rows' sum minus
    usable, as a saved ledger must (memledger refuses one its rows do not give, F12)."""
    values = HEAD_SUMMARY if summary is None else summary
    rows = rows_for(values)
    sums = summary_from_rows(rows)
    converted = summary_from_gib(values, rows)
    for name in values:  # the fixture's written arithmetic holds
        if name in sums:
            assert sums[name] == getattr(converted, name), name
    partition = sum(row.bytes for row in rows if row.in_partition and row.bytes is not None)
    usable = converted.usable
    return hand_built_ledger(
        rows,
        path=path,
        rank="DP0 TP0 EP0",
        outcome="ready" if stopped_at is None else "crash",
        stopped_at=stopped_at,
        summary=replace(converted, **sums),
        usable_bytes=usable,
        balance_error_bytes=0 if usable is None else partition - usable,
    )


def _centi(gib: float) -> int:
    return round(gib * 100) * CENTI


def rows_for(values: dict[str, Any]) -> list[Row]:
    """Rows giving the figures in `values`: req_to_token (derived, 13 hundredths),
    draft_slot_map (unknown), cuda_graph (logged), runtime_headroom, resident weights (the
    rest of the fixed overhead), kv_pool and other state (the state pool). A figure that is
    None (or absent) has no rows; no fixed overhead means none of its rows."""
    fixed = values.get("fixed_overhead")
    rows: list[Row] = []
    if fixed is not None:
        rows += [
            Row(
                id="req_to_token",
                label="req_to_token",
                group=RowGroup.WORKSPACE,
                kind=RowKind.DERIVED,
                bytes=_centi(REQ_TO_TOKEN),
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
        ]
        for row_id, label, group in (
            ("cuda_graph", "CUDA graphs", RowGroup.CUDA_GRAPH),
            ("runtime_headroom", "runtime headroom", RowGroup.RUNTIME_HEADROOM),
        ):
            if values.get(row_id) is not None:
                rows.append(
                    Row(
                        id=row_id,
                        label=label,
                        group=group,
                        kind=RowKind.LOGGED,
                        bytes=_centi(values[row_id]),
                        error_bytes=GIB // 200,
                    )
                )
        # the remainder rows make the group figures exactly round(GiB x 2^30), as written
        weights = round(fixed * GIB) - sum(row.bytes or 0 for row in rows)
        assert weights >= 0, "the fixed overhead must hold its named rows"
        rows.append(_row("weights_resident", RowGroup.WEIGHTS, weights))
    state = values.get("state_pool")
    if state is not None:
        kv_pool = _centi(values.get("kv_pool") or 0)
        rows += [
            _row("kv_pool", RowGroup.STATE_POOL, kv_pool),
            _row("other_state", RowGroup.STATE_POOL, round(state * GIB) - kv_pool),
        ]
    return rows


def _row(row_id: str, group: RowGroup, byte_count: int) -> Row:
    return Row(
        id=row_id,
        label=row_id.replace("_", " "),
        group=group,
        kind=RowKind.DERIVED,
        bytes=byte_count,
    )


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
    return write(tmp_path, name, to_json(ledger, indent=2))


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
