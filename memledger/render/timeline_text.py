"""The startup timeline for a terminal: one bar per checkpoint (two in a diff, base over head),
on one scale, fitted to the width. `ledger --full` and `diff --full` print it; the brief views
do not (a ledger's text path imports nothing of the pictures)."""

from __future__ import annotations

from collections.abc import Sequence

from memledger.compare.models import LedgerDiff
from memledger.model.ledger import Ledger
from memledger.render.timeline import phase_name
from memledger.units import GIB

NAME_WIDTH = 24
BAR_GLYPH = "#"


def timeline_lines(
    phases: Sequence[str], sides: Sequence[tuple[str, dict[str, int]]], columns: int
) -> list[str]:
    """`phase  side |####    | 30.90` per phase and side; a phase a side did not read is `-`;
    a reading below zero (none today) is drawn empty."""
    values = [v for _, free in sides for v in free.values()]
    largest = max(values, default=0)
    if largest <= 0 or not phases:
        return []
    tag_width = max(len(tag) for tag, _ in sides)
    width = max(10, columns - NAME_WIDTH - tag_width - 14)
    per_char = largest / width
    lines = [f"Free memory at each checkpoint (GiB; 1 char = {per_char / GIB:.2f} GiB)"]
    for phase in phases:
        label = phase_name(phase)
        label = label if len(label) <= NAME_WIDTH else label[: NAME_WIDTH - 1] + "…"
        for index, (tag, free) in enumerate(sides):
            name = label if index == 0 else ""
            shown_tag = tag if len(sides) > 1 else ""
            if phase not in free:
                empty = " " * width
                lines.append(f"  {name:<{NAME_WIDTH}} {shown_tag:<{tag_width}} |{empty}|      -")
                continue
            value = free[phase]
            bar = BAR_GLYPH * max(0, round(value / per_char))
            lines.append(
                f"  {name:<{NAME_WIDTH}} {shown_tag:<{tag_width}} |{bar:<{width}}| "
                f"{value / GIB:6.2f}"
            )
    return lines


def ledger_timeline(ledger: Ledger, columns: int) -> list[str]:
    """A ledger's checkpoints (and the usable memory at the start) as bars."""
    free = {c.id: c.avail_bytes for c in ledger.checkpoints}
    phases = [c.id for c in ledger.checkpoints]
    if ledger.usable_bytes is not None:
        free["start"] = ledger.usable_bytes
        phases.insert(0, "start")
    return timeline_lines(phases, [("", free)], columns)


def diff_timeline(diff: LedgerDiff, columns: int) -> list[str]:
    """Both sides' checkpoints, matched by id (by phase, not by line), as bars base over head."""
    base = {c.id: c.base_bytes for c in diff.checkpoints if c.base_bytes is not None}
    head = {c.id: c.head_bytes for c in diff.checkpoints if c.head_bytes is not None}
    phases = [c.id for c in diff.checkpoints]
    return timeline_lines(phases, [("base", base), ("head", head)], columns)
