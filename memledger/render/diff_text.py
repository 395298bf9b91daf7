"""Terminal rendering of a ledger diff: text tables plus a bar view of both cards."""

from __future__ import annotations

import math
from collections.abc import Sequence

from memledger.compare.categories import group_label
from memledger.compare.models import LedgerDiff, SortKey
from memledger.model.ledger import RowGroup
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
    with_text_labels,
)
from memledger.render.diff_prose import kv_token_lines
from memledger.render.diff_upgrade import (
    default_lines,
    inputs_table,
    notes,
    releases_line,
    rows_table,
    verdict,
    why_lines,
)
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


def composition_bars(
    diff: LedgerDiff, width: int = BAR_WIDTH, *, columns: int = DEFAULT_WIDTH
) -> list[str]:
    """Both cards' memory by group as letter bars on one scale, plus a legend; the bars are
    narrowed so a line fits `columns`."""
    groups, base_bytes, head_bytes = composition(diff)
    sides = [
        (side_header("base", diff.inputs.base), [max(0, b) for b in base_bytes]),
        (side_header("head", diff.inputs.head), [max(0, b) for b in head_bytes]),
    ]
    largest = max(sum(values) for _, values in sides)
    if largest <= 0:
        return ["  (no rows to draw)"]
    name_width = max(len(name) for name, _ in sides)
    # `  name  |bar| 177.70`: the bar gives way to a long side name
    total_width = max(len(gib_text(sum(values))) for _, values in sides)
    width = max(10, min(width, columns - name_width - total_width - 7))
    per_char = largest / width
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
    lines += _legend_lines(legend, columns)
    negative = [
        group_label(g)
        for g, b, h in zip(groups, base_bytes, head_bytes, strict=True)
        if min(b, h) < 0
    ]
    if negative:
        lines.append(f"  (negative totals drawn as empty: {', '.join(negative)})")
    return lines


LEGEND_PER_LINE = 3


def _legend_lines(entries: Sequence[str], columns: int) -> list[str]:
    """Legend entries three to a line, fewer where three would pass `columns` (the entries are
    spaced like table cells, so the line wrapper leaves them alone)."""
    lines: list[list[str]] = []
    for entry in entries:
        last = lines[-1] if lines else None
        if last is not None and len(last) < LEGEND_PER_LINE:
            if len("    " + "   ".join([*last, entry])) <= columns:
                last.append(entry)
                continue
        lines.append([entry])
    return ["    " + "   ".join(line) for line in lines]


BRIEF_MOVERS = 5
"""Row movers the short view lists: the largest |Δ| among changed and one-side-only rows."""

BRIEF_FOOTER = (
    "every changed row, group totals, checkpoints, intervals, configuration and coverage: --full"
)


def upgrade_lines(diff: LedgerDiff, width: int) -> list[str]:
    """Why KV tokens per rank changed (nothing when the releases and sizing args agree), or
    why the KV cache differs between two engines."""
    if diff.engines is not None:
        return (
            ["Why the KV cache differs (SGLang vs vLLM)"]
            + [f"  {line}" for line in diff.engines.lines]
            + [""]
        )
    upgrade = diff.upgrade
    if upgrade is None:
        return []
    out = ["Why KV tokens per rank changed", f"  {verdict(upgrade)}", f"  {releases_line(upgrade)}"]
    if upgrade.inputs or upgrade.unexplained_tokens is not None:
        out += [_table(inputs_table(upgrade), width)]
        out += [f"  {line}" for line in why_lines(upgrade)]
    if upgrade.rows_before_sizing:
        out += ["", "Rows sized before the KV pool that moved", _table(rows_table(upgrade), width)]
    if upgrade.defaults_crossed:
        out += ["", "SGLang defaults changed in between (release, default: old -> new, source)"]
        out += [f"  {line}" for line in default_lines(upgrade)]
    out += [f"  {n}" for n in notes(upgrade)]
    return [*out, ""]


def diff_timeline(diff: LedgerDiff, width: int) -> list[str]:
    from memledger.render.timeline_text import diff_timeline as lines

    return lines(diff, width)


def render_diff_text(
    diff: LedgerDiff,
    *,
    sort: SortKey = SortKey.DELTA,
    show_unchanged: bool = False,
    terminal: Terminal = PLAIN,
    full: bool = False,
) -> str:
    """The diff as terminal text, fitted to the terminal's width: the verdict, the summary,
    the state-pool explanation, the largest movers and the composition bars, then (`full`)
    every table."""
    width = terminal.width
    diff = with_text_labels(diff)  # column headers: labels cut so that they still differ
    full = full or show_unchanged  # the unchanged rows are listed in the full Rows table
    # the answer first: the verdict, then the summary (what its columns are, under it); an
    # explanation of the KV tokens that concludes "not attributed" is for --full only
    upgrade = diff.upgrade
    attributed = upgrade is not None and upgrade.available
    out: list[str] = [
        headline(diff),
        "",
        "Summary",
        _table(summary_table(diff), width),
        "  " + input_line("base", diff.inputs.base),
        "  " + input_line("head", diff.inputs.head),
        "  " + definition_line(),
        "",
        "Where the state-pool difference comes from",
        *("  " + line for line in balance_lines(diff)),
        "",
        _table(category_table(diff, with_rows=full), width),
        "",
        *(upgrade_lines(diff, width) if full or attributed else []),
    ]
    if not full:
        movers = rows_view(diff, sort=SortKey.DELTA, show_unchanged=False, limit=BRIEF_MOVERS)
        if movers.total:
            out += [f"Largest movers ({len(movers.table.rows)} of {movers.total} changed rows)"]
            out += [_table(movers.table, width), ""]
        else:
            out += ["Largest movers: none (every row unchanged within printing precision)", ""]
        out += [*composition_bars(diff, columns=width), ""]
        notes = coverage_notes(diff)
        if notes:
            out += ["Notes", *(f"  {n}" for n in notes), ""]
        out += [BRIEF_FOOTER]
        return fit_lines("\n".join(out), width) + "\n"
    out += [
        "Where the state pool goes",
        _table(destination_table(diff), width),
        *("  " + line for line in kv_token_lines(diff)),
        "",
        *composition_bars(diff, columns=width),
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
    out += [*diff_timeline(diff, width), ""]
    out += ["Intervals", _table(intervals_table(diff), width), ""]
    out += ["Configuration (parameters that differ)", _table(params_table(diff), width)]
    out += [f"  {PARAM_SOURCE_NOTE}", ""] if diff.parameters else [""]
    out += ["Coverage", _table(coverage_table(diff), width)]
    out += [f"  {n}" for n in coverage_notes(diff)]
    return fit_lines("\n".join(out), width) + "\n"
