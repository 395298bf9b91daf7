"""Markdown rendering of a ledger diff for a pull-request comment.

Layout: hidden marker, one-line headline, inputs, summary table, the state-pool split, then
collapsed `<details>` sections. A size cap cuts rows out of the middle of the largest detail
tables (then whole middle sections), never the headline, summary or split, and says so visibly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memledger.compare.models import DiffInput, LedgerDiff, SortKey
from memledger.errors import ConfigError
from memledger.model.ledger import Ledger
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
from memledger.render.tables import (
    Table,
    github_table,
    inert_block_start,
    markdown_cell,
    markdown_code,
)
from memledger.render.timeline import GROUP_ORDER, Bar

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


def diff_bars(diff: LedgerDiff) -> list[Bar]:
    """Each side's usable memory by group (the diff's group totals), base first."""
    groups, base_bytes, head_bytes = composition(diff)
    bars = []
    for side, item, values in (
        ("base", diff.inputs.base, base_bytes),
        ("head", diff.inputs.head, head_bytes),
    ):
        by_group = dict(zip(groups, values, strict=True))
        parts = tuple((g, by_group[g]) for g in GROUP_ORDER if by_group.get(g, 0) > 0)
        negative = tuple((g, v) for g, v in zip(groups, values, strict=True) if v < 0)
        bars.append(Bar(side_header(side, item), parts, negative))
    return bars


def pictures(diff: LedgerDiff, sides: tuple[Ledger, Ledger] | None) -> tuple[list[str], list[str]]:
    """The timeline of both startups (when the ledgers are at hand) and the composition bars."""
    from memledger.render.mermaid import pictures_markdown
    from memledger.render.timeline import timeline_of

    bars = diff_bars(diff)
    names = [bar.name for bar in bars]
    timelines = (
        [timeline_of(ledger, name) for ledger, name in zip(sides, names, strict=True)]
        if sides is not None
        else []
    )
    return pictures_markdown(timelines, bars, names, " vs ".join(names))


def _one_row_column(table: Table) -> Table:
    """The rows table for a comment: the id (code) and its label in one `row` cell, so the
    table fits GitHub's comment width (eight columns with a long id column overflowed it)."""
    rows = [
        [f"{markdown_code(cells[0])} {markdown_cell(cells[1])}", *cells[2:]] for cells in table.rows
    ]
    align = None if table.align is None else table.align[1:]
    return Table(["row", *table.headers[2:]], rows, align, markdown=(0,))


def _sections(
    diff: LedgerDiff,
    *,
    sort: SortKey,
    show_unchanged: bool,
    behind: Sequence[Block] = (),
) -> list[Section]:
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
        Section("Timeline steps and bar segments (the charts' numbers)", list(behind)),
        Section("Rows behind each category", [_table(contributions_table(diff))]),
        Section("Where the state pool goes", [_table(destination_table(diff)), *kv_blocks]),
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


def _top(diff: LedgerDiff, marker: str, note: str | None, charts: Sequence[str] = ()) -> str:
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
    for block in charts:
        parts += [block, ""]
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
    sides: tuple[Ledger, Ledger] | None = None,
) -> str:
    """The diff as a PR comment of at most `max_chars` characters (the top part is never cut).
    `sides`, the two ledgers, give the timeline its steps (without them: the bars only)."""
    comment = marker_comment(marker)
    charts, behind = pictures(diff, sides)
    sections = _sections(diff, sort=sort, show_unchanged=show_unchanged, behind=behind)
    full = _assemble(_top(diff, comment, None, charts), sections)
    if len(full) <= max_chars:
        return full
    note = (
        f"⚠️ Details truncated to stay under {max_chars:,} characters (full comment: "
        f"{len(full):,}); run `memledger diff --format json` for everything."
    )
    return _truncate(_top(diff, comment, note, charts), sections, max_chars)
