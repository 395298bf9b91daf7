"""A carve: one piece of an interval's avail drop on its way to becoming (part of) a row."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from memledger.model.events import Event
from memledger.model.ledger import RowGroup, RowKind
from memledger.units import GIB, Size, format_gib


class Figure(StrEnum):
    """Which summary figure a row adds to (a field, so the summary never decodes row ids)."""

    KV_POOL = "kv_pool"
    DRAFT_KV = "draft_kv"
    DRAFT_WEIGHTS = "draft_weights"
    PER_SLOT_STATE = "per_slot_state"


@dataclass
class Carve:
    """A piece of an interval's drop, becoming (part of) one row."""

    row_id: str
    label: str
    group: RowGroup
    kind: RowKind
    bytes: int
    error: int
    sources: list[Event] = field(default_factory=list)
    formula: str | None = None
    inputs: dict[str, int | float | str | None] = field(default_factory=dict)
    note: str | None = None
    in_partition: bool = True
    part_of: Carve | None = None
    """Set on a later piece of another row (a release netted into the resident weights): the
    piece stays in its own interval's accounting but is added to that row."""
    figure: Figure | None = None


Placed = tuple[Carve, str | None]
"""A carve and the interval (`from->to`) it is shown in, if any (informational rows)."""


def logged(event: Event, row_id: str, label: str, group: RowGroup, size: Size) -> Carve:
    """A row read from one log line as printed."""
    return Carve(row_id, label, group, RowKind.LOGGED, size.bytes, size.half_ulp, [event])


def sum_sizes(*sizes: Size | None) -> Size | None:
    present = [size for size in sizes if size is not None]
    if not present:
        return None
    return Size(
        bytes=sum(size.bytes for size in present),
        half_ulp=sum(size.half_ulp for size in present),
        text=" + ".join(size.text for size in present if size.text),
    )


def negative_note(byte_count: int, why: str) -> str | None:
    return None if byte_count >= 0 else f"negative ({byte_count / GIB:.2f} GiB): {why}"


def gib_text(byte_count: int | None) -> str:
    return f"{format_gib(byte_count)} GiB"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


def weights_group(role: str) -> RowGroup:
    return RowGroup.DRAFT_WEIGHTS if role == "draft" else RowGroup.WEIGHTS


def weights_row_id(role: str) -> str:
    return {"target": "weights", "draft": "draft_weights"}.get(role, "weights_extra")


def weights_figure(role: str) -> Figure | None:
    return Figure.DRAFT_WEIGHTS if role == "draft" else None
