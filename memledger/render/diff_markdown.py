"""Markdown rendering of a ledger diff for a pull-request comment.

Layout: hidden marker, one-line headline, inputs, summary table, the state-pool split, then
collapsed `<details>` sections. A size cap cuts rows out of the middle of the largest detail
tables (then whole middle sections), never the headline, summary or split, and says so visibly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memledger.compare.categories import group_label
from memledger.compare.models import DiffInput, LedgerDiff, SortKey
from memledger.errors import ConfigError
from memledger.model.ledger import RowGroup
from memledger.render.diff_common import (
    PARAM_SOURCE_NOTE,
    balance_lines,
    category_table,
    checkpoints_table,
    composition,
    contributions_table,
    coverage_notes,
    coverage_table,
    definition_line,
    destination_table,
    groups_table,
    headline,
    intervals_table,
    params_table,
    rows_view,
    side_header,
    summary_table,
)
from memledger.render.diff_prose import kv_token_lines
from memledger.render.diff_upgrade import (
    defaults_table,
    inputs_table,
    notes,
    releases_line,
    rows_table,
    verdict,
    why_lines,
)
from memledger.render.escape import mermaid_label
from memledger.render.tables import (
    Table,
    github_table,
    inert_block_start,
    markdown_cell,
    markdown_code,
)
from memledger.units import GIB

DEFAULT_MARKER = "memledger"
DEFAULT_MAX_CHARS = 60_000
"""GitHub rejects comments over 65,536 characters; leave room for CI's own text."""
MIN_KEPT_ROWS = 4
"""A truncated table keeps at least this many rows (half from each end)."""


def marker_comment(marker: str) -> str:
    """`<!-- memledger -->` from `memledger`; a full `<!-- ... -->` is used as given."""
    text = marker.strip()
    if text.startswith("<!--") and text.endswith("-->"):
        inner = text[4:-3]
    else:
        inner = text
    if not inner.strip() or "--" in inner or "\n" in inner:
        raise ConfigError(f"marker {marker!r} cannot be an HTML comment (empty, newline or '--')")
    return f"<!-- {inner.strip()} -->"


def _code(text: str) -> str:
    return markdown_code(text)


@dataclass
class CappedTable:
    """A table whose middle rows may be cut by the size cap."""

    table: Table
    keep: int | None = None
    """Rows kept (None: all)."""

    @property
    def rows(self) -> list[list[str]]:
        """The table's rows (all of them)."""
        return self.table.rows

    def render(self) -> str:
        """The table, with one marker row standing for the rows cut from the middle."""
        return github_table(self.table, keep=self.keep)

    @property
    def truncated(self) -> bool:
        """Whether rows were cut."""
        return self.keep is not None and self.keep < len(self.rows)


Block = str | CappedTable
"""A paragraph of markdown (or a fenced block) or a table."""


@dataclass
class Section:
    """A collapsed `<details>` section."""

    title: str
    blocks: list[Block] = field(default_factory=list)
    dropped: bool = False
    """Cut whole by the size cap."""

    def render(self) -> str:
        """`<details>` with a summary line, blank-line separated blocks, `</details>`."""
        parts: list[str] = [f"<details><summary>{markdown_cell(self.title)}</summary>", ""]
        if self.dropped:
            parts += ["_This section was left out to keep the comment under the size cap._", ""]
        else:
            for block in self.blocks:
                if isinstance(block, CappedTable):
                    parts.append(block.render())
                    if block.truncated:
                        parts += [
                            "",
                            f"_Truncated: {len(block.rows) - (block.keep or 0):,} of "
                            f"{len(block.rows):,} rows cut from the middle to stay under the "
                            "size cap; `memledger diff --format json` has them all._",
                        ]
                else:
                    parts.append(block)
                parts.append("")
        parts.append("</details>")
        return "\n".join(parts)


def _table(table: Table) -> Block:
    return CappedTable(table) if table.rows else "_(none)_"


def _input_text(side: str, item: DiffInput) -> str:
    stopped = f", stopped {markdown_cell(item.stopped_at)}" if item.stopped_at else ""
    name = side if item.label == side else f"{side} **{markdown_cell(item.label)}**"
    return (
        f"{name} {_code(item.path)} (startup {item.startup} of "
        f"{item.n_startups}, rank {_code(item.rank or '-')}, {markdown_cell(item.outcome)}"
        f"{stopped})"
    )


GROUP_COLOURS: dict[RowGroup, str] = {
    RowGroup.WEIGHTS: "#4e79a7",
    RowGroup.WEIGHT_STAGING: "#a0cbe8",
    RowGroup.DRAFT_WEIGHTS: "#76b7b2",
    RowGroup.COMMUNICATION: "#f28e2b",
    RowGroup.WORKSPACE: "#ffbe7d",
    RowGroup.UNEXPLAINED: "#e15759",
    RowGroup.CUDA_GRAPH: "#b07aa1",
    RowGroup.RUNTIME_HEADROOM: "#bab0ac",
    RowGroup.STATE_POOL: "#59a14f",
}
"""One colour per group, the same in both pies (Tableau 10: distinct, none near white)."""
OTHER_COLOUR = "#9c755f"
PIE_COLOURS = 12
"""Mermaid's pie palette has 12 entries (`pie1` .. `pie12`)."""
DRAWN_BYTES = GIB // 200
"""A slice is drawn (and a negative group named) only when it prints as at least 0.01 GiB."""


SMALL_SHARE = 0.03
"""Slices under this share of a pie become one `other` slice: Mermaid prints each slice's
percentage at 0.75 of the radius, and neighbouring slices of 1-2% overlapped there ("2%1%1%"
on the samples, rendered with mermaid 11.17.2); each is still named under the pie, with its
size."""
OTHER_SLICE = f"other groups (under {SMALL_SHARE:.0%} each)"


def _pie(title: str, groups: Sequence[RowGroup], values: Sequence[int]) -> tuple[str, list[str]]:
    """One Mermaid pie whose slices keep their group's colour, and the groups folded into its
    `other` slice. Mermaid 11 gives `pie1`, `pie2`, ... to the slices in the order they are
    written (pieRenderer.ts: `d3pie().sort(null)`, a scaleOrdinal over the section keys); older
    releases sorted them by size first. Slices are written largest first, so both orders agree
    (checked by rendering both pies of the samples and of complex/004 -> 007 with mermaid
    11.17.2: every group has one colour in both)."""
    drawn = [(g, v) for g, v in zip(groups, values, strict=True) if v >= DRAWN_BYTES]
    total = sum(v for _, v in drawn)
    small = [(g, v) for g, v in drawn if v < SMALL_SHARE * total]
    slices: list[tuple[RowGroup | None, int]] = [(g, v) for g, v in drawn if (g, v) not in small]
    if len(small) > 1:
        slices.append((None, sum(v for _, v in small)))
    else:
        slices += small
    slices.sort(key=lambda slice_: -slice_[1])  # stable, as JavaScript's sort is
    palette = [OTHER_COLOUR if g is None else GROUP_COLOURS.get(g, OTHER_COLOUR) for g, _ in slices]
    variables = ", ".join(
        f'"pie{i}": "{colour}"' for i, colour in enumerate(palette[:PIE_COLOURS], 1)
    )
    lines = [
        '%%{init: {"theme": "base", "themeVariables": {' + variables + "}}}%%",
        f"pie showData title {mermaid_label(title)}",
    ]
    lines += [
        f'    "{mermaid_label(OTHER_SLICE if g is None else group_label(g))}" : {v / GIB:.2f}'
        for g, v in slices
    ]
    folded = [f"{group_label(g)} {v / GIB:.2f} GiB" for g, v in small] if len(small) > 1 else []
    return "\n".join(lines), folded


def composition_chart(diff: LedgerDiff) -> str:
    """Two Mermaid pie charts: each card's memory by group, each group in one colour in both.

    A pie cannot draw a negative slice (memory freed, e.g. a negative unexplained row), so such
    groups are left out of the chart and named under it: nothing disappears without a word. The
    title gives the card's usable memory as its rows add up (negative groups included).
    """
    groups, base_bytes, head_bytes = composition(diff)
    charts = []
    for side, item, values in (
        ("base", diff.inputs.base, base_bytes),
        ("head", diff.inputs.head, head_bytes),
    ):
        title = f"{side_header(side, item)}: {sum(values) / GIB:.2f} GiB usable per card"
        chart, folded = _pie(title, groups, values)
        charts.append("```mermaid\n" + chart + "\n```")
        if folded:
            charts.append(
                f"_{markdown_cell(side_header(side, item))}: {OTHER_SLICE}: "
                f"{markdown_cell(', '.join(folded))}._"
            )
        negative = [
            f"{group_label(g)} {value / GIB:.2f} GiB"
            for g, value in zip(groups, values, strict=True)
            if value <= -DRAWN_BYTES
        ]
        if negative:
            drawn = sum(v for v in values if v >= DRAWN_BYTES)
            charts.append(
                f"_{markdown_cell(side_header(side, item))}: not drawn (negative): "
                f"{', '.join(negative)}; the slices add up to {drawn / GIB:.2f} GiB, more than "
                "the usable memory by that much._"
            )
    return "\n\n".join(charts)


def _one_row_column(table: Table) -> Table:
    """The rows table for a comment: the id (code) and its label in one `row` cell, so the
    table fits GitHub's comment width (eight columns with a long id column overflowed it)."""
    rows = [
        [f"{markdown_code(cells[0])} {markdown_cell(cells[1])}", *cells[2:]] for cells in table.rows
    ]
    align = None if table.align is None else table.align[1:]
    return Table(["row", *table.headers[2:]], rows, align, markdown=(0,))


def _sections(diff: LedgerDiff, *, sort: SortKey, show_unchanged: bool) -> list[Section]:
    view = rows_view(diff, sort=sort, show_unchanged=show_unchanged)
    hidden = (
        f"; {view.hidden_unchanged} unchanged rows collapsed (`--show-unchanged` lists them)"
        if view.hidden_unchanged
        else ""
    )
    rows_blocks: list[Block] = [
        f"Sorted by {sort.value}{hidden}.",
        _table(_one_row_column(view.table)),
    ]
    if view.notes:
        rows_blocks.append(
            "\n".join(f"- {inert_block_start(markdown_cell(n))}" for n in view.notes)
        )
    kv_lines = kv_token_lines(diff)
    kv_blocks: list[Block] = []
    if kv_lines:
        kv_blocks.append(
            "\n".join(f"- {inert_block_start(markdown_cell(line))}" for line in kv_lines)
        )
    rows_blocks += ["**Group totals** (TOTAL = sum of partition rows)", _table(groups_table(diff))]
    coverage: list[Block] = [_table(coverage_table(diff))]
    notes = coverage_notes(diff)
    if notes:
        coverage.append("\n".join(f"- {inert_block_start(markdown_cell(n))}" for n in notes))
    return [
        *_upgrade_section(diff),
        Section("Rows behind each category", [_table(contributions_table(diff))]),
        Section("Where the state pool goes", [_table(destination_table(diff)), *kv_blocks]),
        Section("Composition of both cards (chart)", [composition_chart(diff)]),
        Section(f"Full ledger diff ({len(diff.rows)} rows)", rows_blocks),
        Section(
            "Checkpoints and intervals",
            [_table(checkpoints_table(diff)), _table(intervals_table(diff))],
        ),
        Section(
            f"Configuration diff ({len(diff.parameters)} parameters differ)",
            [_table(params_table(diff)), markdown_cell(PARAM_SOURCE_NOTE)]
            if diff.parameters
            else [_table(params_table(diff))],
        ),
        Section("Coverage", coverage),
        Section("All summary figures", [_table(summary_table(diff, keys=None))]),
    ]


def _upgrade(diff: LedgerDiff) -> list[str]:
    """The verdict on KV tokens per rank, under the summary (the top is never cut); one that
    concludes "not attributed" opens its collapsed section instead; for two engines, why their
    KV caches differ."""
    if diff.engines is not None:
        return (
            ["**Why the KV cache differs (SGLang vs vLLM):**", ""]
            + [f"- {markdown_cell(line)}" for line in diff.engines.lines]
            + [""]
        )
    upgrade = diff.upgrade
    if upgrade is None or not upgrade.available:
        return []
    return [
        f"**Why KV tokens per rank changed:** {markdown_cell(verdict(upgrade))}",
        "",
        f"_{markdown_cell(releases_line(upgrade))}_",
        "",
    ]


def _upgrade_section(diff: LedgerDiff) -> list[Section]:
    """The token shares, rows before the sizing and defaults crossed (cut like other details)."""
    upgrade = diff.upgrade
    if upgrade is None:
        return []
    blocks: list[Block] = []
    if not upgrade.available:  # a hedge, not the answer: collapsed with the details
        blocks += [markdown_cell(verdict(upgrade)), f"_{markdown_cell(releases_line(upgrade))}_"]
    if upgrade.inputs or upgrade.unexplained_tokens is not None:
        blocks.append(_table(inputs_table(upgrade)))
        why = why_lines(upgrade)
        if why:
            blocks.append("\n".join(f"- {markdown_cell(line)}" for line in why))
    if upgrade.rows_before_sizing:
        blocks += ["Rows sized before the KV pool that moved:", _table(rows_table(upgrade))]
    if upgrade.defaults_crossed:
        blocks += ["SGLang defaults changed in between:", _table(defaults_table(upgrade))]
    if not blocks:
        return []  # the verdict line already says why there is nothing to attribute
    title = "Why KV tokens per rank changed (inputs, rows, defaults)"
    if not upgrade.available:
        title = "Why KV tokens per rank changed: not attributed"
    found = notes(upgrade)
    if found:
        blocks.append("\n".join(f"- {markdown_cell(n)}" for n in found))
    return [Section(title, blocks)]


def _top(diff: LedgerDiff, marker: str, note: str | None) -> str:
    parts = [
        marker,
        f"**memledger diff** · {markdown_cell(headline(diff))}",
        "",
        github_table(summary_table(diff)),
        "",
        _input_text("base", diff.inputs.base) + "  ",
        _input_text("head", diff.inputs.head) + "  ",
        f"_{markdown_cell(definition_line())}_",
        "",
        *_upgrade(diff),
        "**Where the state-pool difference comes from**",
        "",
        "\n".join(f"- {inert_block_start(markdown_cell(line))}" for line in balance_lines(diff)),
        "",
        github_table(category_table(diff)),
        "",
    ]
    if note:
        parts += [f"> {note}", ""]
    return "\n".join(parts)


def _assemble(top: str, sections: Sequence[Section]) -> str:
    return top + "\n" + "\n\n".join(s.render() for s in sections) + "\n"


def _truncate(top: str, sections: list[Section], max_chars: int) -> str:
    """Cut middle rows from the largest tables, then whole middle sections, until it fits."""
    text = _assemble(top, sections)
    tables = [b for s in sections for b in s.blocks if isinstance(b, CappedTable)]
    for _ in range(200):
        if len(text) <= max_chars:
            return text
        cuttable = [
            t for t in tables if (t.keep if t.keep is not None else len(t.rows)) > MIN_KEPT_ROWS
        ]
        if not cuttable:
            break
        largest = max(cuttable, key=lambda t: len(t.render()))
        kept = largest.keep if largest.keep is not None else len(largest.rows)
        row_chars = max(1, len(largest.render()) // (kept + 2))
        excess = len(text) - max_chars
        largest.keep = max(MIN_KEPT_ROWS, kept - (excess // row_chars + 2))
        text = _assemble(top, sections)
    # Still too long: drop whole sections from the middle outwards.
    order = sorted(range(len(sections)), key=lambda i: abs(i - (len(sections) - 1) / 2))
    for index in order:
        if len(text) <= max_chars:
            break
        sections[index].dropped = True
        text = _assemble(top, sections)
    return text


def render_diff_markdown(
    diff: LedgerDiff,
    *,
    sort: SortKey = SortKey.DELTA,
    show_unchanged: bool = False,
    marker: str = DEFAULT_MARKER,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The diff as a PR comment of at most `max_chars` characters (the top part is never cut)."""
    comment = marker_comment(marker)
    sections = _sections(diff, sort=sort, show_unchanged=show_unchanged)
    full = _assemble(_top(diff, comment, None), sections)
    if len(full) <= max_chars:
        return full
    note = (
        f"⚠️ Details truncated to stay under {max_chars:,} characters (full comment: "
        f"{len(full):,}); run `memledger diff --format json` for everything."
    )
    return _truncate(_top(diff, comment, note), sections, max_chars)
