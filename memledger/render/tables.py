"""Tables: the one `Table` type every renderer builds, and the only places they become text.

`text_table` is the only tabulate caller (and lays out most tables itself, as tabulate would:
`tabulate_layout`); `github_table` the only GitHub-markdown table builder;
`markdown_cell` the one markdown escaper (used for table cells and for the plain text markdown
renderers interpolate into headings and paragraphs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Literal

ABSENT = "-"
"""The one placeholder for a value a table does not have: not in the log (an item this side or
this build lacks), or not known (a row whose bytes could not be read). Explained once, under the
table (`ABSENT_LEGEND`), never as `?`, `n/a` or a blank cell."""
ABSENT_LEGEND = f"{ABSENT} = no value (not in this log, or not known)"

Align = Literal["left", "right"]


@dataclass(frozen=True)
class Table:
    """A table as plain strings: what a renderer formats, never recomputes."""

    headers: list[str]
    rows: list[list[str]]
    align: list[Align] | None = None
    """Per column; None: tabulate's choice in text, unaligned in markdown."""
    title: str = ""
    footnote: str | None = None
    code: tuple[int, ...] = ()
    """Columns shown as code spans in markdown (ids, paths)."""
    keep: tuple[int, ...] = ()
    """Columns never shortened to fit a terminal (ids the user types back, e.g. --explain)."""
    optional: tuple[int, ...] = ()
    """Columns left out of text output when the table cannot fit with them (their content is
    also elsewhere: --explain, markdown, JSON)."""
    markdown: tuple[int, ...] = ()
    """Columns whose cells the renderer already made markdown out of escaped pieces (a code
    span and a label in one cell); `github_table` puts them in as they are."""
    provenance: tuple[int, ...] = ()
    """Columns of `file:line (+N lines)` cells (where a number came from): cut to fit a
    terminal, such a cell keeps its `:line` (`cut_provenance`)."""


# Text GitHub turns into a notification, a cross-reference or a link even when escaped: a
# zero-width space after `@` (mentions), `#` before a digit (issue refs), `://` and `www.`
# (autolinks) keeps the text as printed and inert.
_GITHUB_REFERENCE = re.compile(r"@(?=[\w-])|#(?=\d)|:(?=//)|www(?=\.)", re.IGNORECASE)


_UNDERSCORES = re.compile("_+")


def _underscores(match: re.Match[str], text: str) -> str:
    """A run of `_` inside a word (`end__capture`) cannot open or close emphasis: kept."""
    before = text[match.start() - 1] if match.start() else " "
    after = text[match.end()] if match.end() < len(text) else " "
    if before.isalnum() and after.isalnum():
        return match.group(0)
    return match.group(0).replace("_", "\\_")


def markdown_cell(text: str) -> str:
    """Untrusted text as inert GitHub markdown on one line (a table cell or inline text).

    Nothing in it can become markup: no HTML (`<`, `&`), link or image (`[`), code span, table
    cell break, emphasis, mention, issue reference or autolink.
    """
    flat = " ".join(text.split())
    for char, escaped in (
        ("\\", "\\\\"),
        ("&", "&amp;"),
        ("|", "\\|"),
        ("*", "\\*"),
        ("`", "\\`"),
        ("[", "\\["),
        ("]", "\\]"),
        ("~", "\\~"),
    ):
        flat = flat.replace(char, escaped)
    # `_` opens emphasis only next to a non-alphanumeric: `mem_fraction_static` stays as is
    flat = _UNDERSCORES.sub(lambda m: _underscores(m, flat), flat)
    # A `<word>` would be taken for an HTML tag and hidden by GitHub.
    flat = flat.replace("<", "&lt;")
    return _GITHUB_REFERENCE.sub(lambda m: m.group(0) + "\u200b", flat)


_BLOCK_START = re.compile(r"[-+#>=]|\d+[.)]")


def inert_block_start(text: str) -> str:
    """`text` (already inline-escaped) with a backslash before a leading block marker.

    `- = no value` (the placeholder legend) or an untrusted note starting with `- `, `# ` or
    `1.` stays plain text: no nested list, heading or code span (the shape of the document
    does not depend on what the text says).
    """
    match = _BLOCK_START.match(text)
    if match is None:
        return text
    end = match.end() - 1
    return text[:end] + "\\" + text[end:]


def markdown_code(text: str) -> str:
    """A code span (one line; a backtick inside becomes `'`, a pipe stays out of the table)."""
    # Inside a code span GitHub renders no HTML, link, mention or reference.
    return "`" + " ".join(text.split()).replace("`", "'").replace("|", "\\|") + "`"


ELLIPSIS = "…"


def _drop_column(table: Table, index: int) -> Table:
    def cut(cells: list[str]) -> list[str]:
        return cells[:index] + cells[index + 1 :]

    def shift(columns: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(c - (c > index) for c in columns if c != index)

    align = None if table.align is None else table.align[:index] + table.align[index + 1 :]
    return Table(
        cut(table.headers),
        [cut(row) for row in table.rows],
        align,
        table.title,
        table.footnote,
        shift(table.code),
        shift(table.keep),
        shift(table.optional),
        provenance=shift(table.provenance),
    )


_PROVENANCE = re.compile(r"(?P<name>.*):(?P<line>\d+)(?: \(\+(?P<more>\d+) lines?\))?")


def cut_provenance(cell: str, width: int) -> str:
    """`cell` in at most `width` characters; a `file:line (+N lines)` cell keeps its `:line`:
    the `(+N lines)` shrinks to `+N` first, then the file name loses its middle
    (`015-qw…-load.log:124 +2`); any other cell is cut at its end."""
    if len(cell) <= width:
        return cell
    match = _PROVENANCE.fullmatch(cell)
    if match is None:
        return cell[: width - 1] + ELLIPSIS
    more = match.group("more")
    where = f":{match.group('line')}" + (f" +{more}" if more else "")
    name, room = match.group("name"), width - len(where)
    if len(name) <= room:
        return name + where
    if room >= 3:
        head = (room - 1) // 2
        return name[:head] + ELLIPSIS + name[len(name) - (room - 1 - head) :] + where
    if len(where) <= width:
        return where
    return cell[: width - 1] + ELLIPSIS


def fit_columns(table: Table, width: int, *, gap: int = 2) -> Table:
    """The table fitted to `width` columns: optional columns left out (rightmost first) while
    it cannot fit with them, then the widest columns shortened a character at a time (cells cut
    with `…`), never the `keep` columns; numbers are narrow, so long text gives way first."""

    def natural(t: Table) -> list[int]:
        # tabulate makes a column at least its header + 2 wide.
        return [
            max([len(header) + 2, *(len(row[i]) for row in t.rows if i < len(row))])
            for i, header in enumerate(t.headers)
        ]

    def floors(t: Table, widths: list[int]) -> list[int]:
        # A column gives way down to 8 (its header is cut too), a kept one not at all.
        return [widths[i] if i in t.keep else min(widths[i], 8) for i in range(len(t.headers))]

    widths = natural(table)
    while table.optional and sum(floors(table, widths)) + gap * (len(widths) - 1) > width:
        table = _drop_column(table, max(table.optional))
        widths = natural(table)
    floor = floors(table, widths)
    total = sum(widths) + gap * (len(widths) - 1)
    while total > width:
        shrinkable = [i for i, w in enumerate(widths) if w > floor[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: (widths[i], i))
        widths[widest] -= 1
        total -= 1
    headers = [
        h if len(h) + 2 <= widths[i] else h[: max(1, widths[i] - 3)] + ELLIPSIS
        for i, h in enumerate(table.headers)
    ]
    fits = all(
        len(row[i]) <= widths[i] for row in table.rows for i in range(min(len(row), len(widths)))
    )
    if fits and headers == table.headers:
        return table

    def fitted(i: int, cell: str) -> str:
        if i >= len(widths) or len(cell) <= widths[i]:
            return cell
        if i in table.provenance:
            return cut_provenance(cell, widths[i])
        return cell[: widths[i] - 1] + ELLIPSIS

    rows = [[fitted(i, cell) for i, cell in enumerate(row)] for row in table.rows]
    return Table(headers, rows, table.align, table.title, table.footnote, table.code, table.keep)


def text_table(
    table: Table,
    *,
    numparse: bool = False,
    style: Literal["simple", "plain"] = "simple",
    width: int | None = None,
) -> str:
    """The table body (no title) for a terminal (tabulate `simple`).

    Cells are pre-rounded strings, so numbers are not re-parsed ("0.10" would become "0.1")
    unless `numparse` (tables of raw values, as `parse` prints them). `width`: the widest
    columns are shortened until the table fits (`fit_columns`).
    """

    def render(t: Table) -> str:
        laid = None if numparse else tabulate_layout(t.headers, t.rows, t.align, style)
        if laid is not None:
            return laid
        from tabulate import tabulate  # here: most tables never need it (~45 ms to import)

        return tabulate(
            t.rows,
            headers=t.headers,
            tablefmt=style,
            disable_numparse=not numparse,
            colalign=t.align,
        )

    if width is None:
        return render(table)
    # tabulate's padding rules vary by style: fit, render, and fit tighter by what is left over.
    target = width
    text = render(fit_columns(table, target))
    for _ in range(8):
        excess = max(len(line) for line in text.split("\n")) - width
        if excess <= 0:
            break
        target -= excess
        text = render(fit_columns(table, target))
    return text


_TABULATE_DECIDES = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Control characters: tabulate treats some specially (ANSI colour codes are not counted in
widths, a line break makes a multi-line cell, `\x01` a separating line)."""


def tabulate_layout(
    headers: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] | None, style: str
) -> str | None:
    """What tabulate (0.9, 0.10) prints for string cells without number parsing in its `simple`
    or `plain` format (`tabulate(rows, headers, style, disable_numparse=True, colalign=align)`),
    without importing it: its import reads every installed package's metadata for its version
    (importlib.metadata, email, ...: ~45 ms of a ~0.27 s `ledger`). None where tabulate must
    decide: a control character, ragged rows, an alignment other than left or right, no rows
    and no headers, or a non-ASCII cell when wcwidth is installed (tabulate then measures
    widths with it). tests/render/test_tables.py compares the two on random tables.

    The rules: cells are stripped; a column is as wide as its widest cell, and its header plus
    2; columns are joined by two spaces and each line is right-stripped; a column is left
    aligned unless `align` says right (headers too, but all left in a table without rows);
    `simple` puts a dashed line under the headers, or above and below the rows when there are
    none; `plain` prints no lines."""
    if style not in ("simple", "plain") or not (headers or rows):
        return None
    n_columns = len(headers) if headers else len(rows[0])
    if not n_columns or any(len(row) != n_columns for row in rows):
        return None
    aligns = ["left"] * n_columns
    if align is not None and rows:
        aligns[: len(align)] = align[:n_columns]
    if any(a not in ("left", "right") for a in aligns):
        return None
    cells = " ".join([*headers, *(cell for row in rows for cell in row)])
    if _TABULATE_DECIDES.search(cells) or (not cells.isascii() and _wcwidth_installed()):
        return None
    columns = [[row[i].strip() for row in rows] for i in range(n_columns)]
    widths = [
        max([len(headers[i]) + 2 if headers else 0, *map(len, column)])
        for i, column in enumerate(columns)
    ]

    def line(cells: Iterable[str]) -> str:
        return "  ".join(cells).rstrip()

    def padded(cells: Iterable[str]) -> list[str]:
        return [
            cell.ljust(width) if how == "left" else cell.rjust(width)
            for cell, width, how in zip(cells, widths, aligns, strict=True)
        ]

    dashes = line("-" * width for width in widths)
    lines: list[str] = []
    if headers:
        lines.append(line(padded(headers)))
    if style == "simple":
        lines.append(dashes)
    lines.extend(line(padded(row)) for row in zip(*columns, strict=True))
    if style == "simple" and not headers:
        lines.append(dashes)
    return "\n".join(lines)


_WCWIDTH: list[bool] = []


def _wcwidth_installed() -> bool:
    """Whether tabulate would measure widths with wcwidth (found once per process)."""
    if not _WCWIDTH:
        from importlib.util import find_spec

        _WCWIDTH.append(find_spec("wcwidth") is not None)
    return _WCWIDTH[0]


TABLE_ROWS = 512
"""A long table is laid out this many rows at a time (`text_table_in_chunks`), not built whole."""


def text_table_in_chunks(
    table_of: Callable[[list[list[str]]], Table],
    probe: list[str],
    rows: Iterable[list[str]],
    *,
    style: Literal["simple", "plain"] = "simple",
    width: int | None = None,
) -> Iterator[str]:
    """The lines `text_table(table_of(every row))` gives, laid out `TABLE_ROWS` rows at a time:
    each chunk with `probe` first, a one-line row as wide, in every column, as that column's
    widest cell (so every chunk gets the columns the whole table would), its line left out."""
    head = len(text_table(table_of([probe]), style=style, width=width).splitlines()) - 1
    rows = iter(rows)
    first = True
    while chunk := list(islice(rows, TABLE_ROWS)):
        lines = text_table(table_of([probe, *chunk]), style=style, width=width).splitlines()
        yield from (lines[:head] + lines[head + 1 :]) if first else lines[head + 1 :]
        first = False
    if first:
        yield from text_table(table_of([]), style=style, width=width).splitlines()


_RULE: dict[Align | None, str] = {None: "---", "left": ":---", "right": "---:"}


def github_table(table: Table, *, keep: int | None = None) -> str:
    """The table as GitHub-flavoured markdown, every cell escaped.

    `keep`: at most this many rows, half from each end, with one row saying how many were cut
    from the middle (a size cap).
    """
    rows = table.rows
    if keep is not None and keep < len(rows):
        head_n = (keep + 1) // 2
        tail_n = keep - head_n
        gap = [f"… {len(rows) - keep:,} rows omitted (size cap) …"]
        gap += [""] * (len(table.headers) - 1)
        rows = rows[:head_n] + [gap] + (rows[len(rows) - tail_n :] if tail_n else [])
    aligns: list[Align | None] = (
        [None] * len(table.headers) if table.align is None else list(table.align)
    )
    lines = [
        "| " + " | ".join(markdown_cell(h) for h in table.headers) + " |",
        "|" + "|".join(_RULE[a] for a in aligns) + "|",
    ]
    code, ready = set(table.code), set(table.markdown)
    lines += [
        "| "
        + " | ".join(
            c  # the size cap's gap row is ours too: plain words
            if i in ready
            else markdown_code(c)
            if i in code and c
            else markdown_cell(c)
            for i, c in enumerate(row)
        )
        + " |"
        for row in rows
    ]
    return "\n".join(lines)
