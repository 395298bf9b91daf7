"""Tables: the one `Table` type every renderer builds, and the only places they become text.

`text_table` is the only tabulate caller; `github_table` the only GitHub-markdown table builder;
`markdown_cell` the one markdown escaper (used for table cells and for the plain text markdown
renderers interpolate into headings and paragraphs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tabulate import tabulate

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


def markdown_code(text: str) -> str:
    """A code span (one line; a backtick inside becomes `'`, a pipe stays out of the table)."""
    # Inside a code span GitHub renders no HTML, link, mention or reference.
    return "`" + " ".join(text.split()).replace("`", "'").replace("|", "\\|") + "`"


def text_table(
    table: Table, *, numparse: bool = False, style: Literal["simple", "plain"] = "simple"
) -> str:
    """The table body (no title) for a terminal (tabulate `simple`).

    Cells are pre-rounded strings, so numbers are not re-parsed ("0.10" would become "0.1")
    unless `numparse` (tables of raw values, as `parse` prints them).
    """
    return tabulate(
        table.rows,
        headers=table.headers,
        tablefmt=style,
        disable_numparse=not numparse,
        colalign=table.align,
    )


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
    code = set(table.code)
    lines += [
        "| "
        + " | ".join(
            markdown_code(c) if i in code and c else markdown_cell(c) for i, c in enumerate(row)
        )
        + " |"
        for row in rows
    ]
    return "\n".join(lines)
