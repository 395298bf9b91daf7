"""Terminal rendering of a ledger diff: text tables plus a bar view of both cards."""

from __future__ import annotations

import math
from collections.abc import Sequence

from memledger.compare import LedgerDiff, SortKey, group_label
from memledger.ledger_model import RowGroup
from memledger.render.diff_common import (
    PARAM_SOURCE_NOTE,
    balance_lines,
    category_table,
    checkpoints_table,
    composition,
    coverage_notes,
    coverage_table,
    definition_line,
    destination_table,
    gib_text,
    groups_table,
    headline,
    input_line,
    intervals_table,
    params_table,
    rows_view,
    side_header,
    summary_table,
)
from memledger.render.diff_prose import kv_token_lines
from memledger.render.tables import Table, text_table
from memledger.render.terminal import DEFAULT_WIDTH, PLAIN, Terminal, fit_lines
from memledger.units import GIB

BAR_WIDTH = 60
"""Characters of the wider card's bar."""

GROUP_GLYPHS: dict[RowGroup, str] = {
    RowGroup.WEIGHTS: "W",
    RowGroup.WEIGHT_STAGING: "s",
    RowGroup.DRAFT_WEIGHTS: "d",
    RowGroup.COMMUNICATION: "N",
    RowGroup.WORKSPACE: "w",
    RowGroup.UNEXPLAINED: "?",
    RowGroup.CUDA_GRAPH: "G",
    RowGroup.RUNTIME_HEADROOM: "h",
    RowGroup.STATE_POOL: "K",
}
"""One letter per group, so the bars read without colour."""


def _table(table: Table, width: int = DEFAULT_WIDTH) -> str:
    return text_table(table, width=width) if table.rows else "  (none)"


def _allocate(values: Sequence[int], units: int) -> list[int]:
    """Split `units` characters among non-negative values by largest remainder."""
    total = sum(values)
    if total <= 0 or units <= 0:
        return [0 for _ in values]
    exact = [v * units / total for v in values]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(values)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in order[: units - sum(counts)]:
        counts[i] += 1
    return counts


def composition_bars(diff: LedgerDiff, width: int = BAR_WIDTH) -> list[str]:
    """Both cards' memory by group as letter bars on one scale, plus a legend."""
    groups, base_bytes, head_bytes = composition(diff)
    sides = [
        (side_header("base", diff.inputs.base), [max(0, b) for b in base_bytes]),
        (side_header("head", diff.inputs.head), [max(0, b) for b in head_bytes]),
    ]
    largest = max(sum(values) for _, values in sides)
    if largest <= 0:
        return ["  (no rows to draw)"]
    per_char = largest / width
    name_width = max(len(name) for name, _ in sides)
    lines = [f"Composition per card (1 char = {per_char / GIB:.2f} GiB; same scale for both)"]
    for name, values in sides:
        counts = _allocate(values, round(sum(values) / per_char))
        bar = "".join(GROUP_GLYPHS.get(g, "o") * n for g, n in zip(groups, counts, strict=True))
        lines.append(f"  {name:<{name_width}}  |{bar:<{width}}| {gib_text(sum(values))}")
    legend = [
        f"{GROUP_GLYPHS.get(g, 'o')} {group_label(g)} {gib_text(b)}|{gib_text(h)}"
        for g, b, h in zip(groups, base_bytes, head_bytes, strict=True)
    ]
    lines.append("  legend (base|head GiB):")
    lines += ["    " + "   ".join(legend[i : i + 3]) for i in range(0, len(legend), 3)]
    negative = [
        group_label(g)
        for g, b, h in zip(groups, base_bytes, head_bytes, strict=True)
        if min(b, h) < 0
    ]
    if negative:
        lines.append(f"  (negative totals drawn as empty: {', '.join(negative)})")
    return lines


def render_diff_text(
    diff: LedgerDiff,
    *,
    sort: SortKey = SortKey.DELTA,
    show_unchanged: bool = False,
    terminal: Terminal = PLAIN,
) -> str:
    """The diff as terminal text, fitted to the terminal's width."""
    width = terminal.width
    out: list[str] = [
        "memledger diff",
        "  " + input_line("base", diff.inputs.base),
        "  " + input_line("head", diff.inputs.head),
        "  " + definition_line(),
        "",
        headline(diff),
        "",
        "Summary",
        _table(summary_table(diff), width),
        "",
        "Where the state-pool difference comes from",
        *("  " + line for line in balance_lines(diff)),
        "",
        _table(category_table(diff, with_rows=True), width),
        "",
        "Where the state pool goes",
        _table(destination_table(diff), width),
        *("  " + line for line in kv_token_lines(diff)),
        "",
        *composition_bars(diff),
        "",
    ]
    view = rows_view(diff, sort=sort, show_unchanged=show_unchanged)
    hidden = (
        f"; {view.hidden_unchanged} unchanged rows hidden (--show-unchanged)"
        if view.hidden_unchanged
        else ""
    )
    out += [f"Rows (sorted by {sort.value}{hidden})", _table(view.table, width)]
    out += [f"  note {n}" for n in view.notes]
    out += [
        "",
        "Group totals (TOTAL = sum of partition rows)",
        _table(groups_table(diff), width),
        "",
    ]
    out += ["Checkpoints", _table(checkpoints_table(diff), width), ""]
    out += ["Intervals", _table(intervals_table(diff), width), ""]
    out += ["Configuration (parameters that differ)", _table(params_table(diff), width)]
    out += [f"  {PARAM_SOURCE_NOTE}", ""] if diff.parameters else [""]
    out += ["Coverage", _table(coverage_table(diff), width)]
    out += [f"  {n}" for n in coverage_notes(diff)]
    return fit_lines("\n".join(out), width) + "\n"
