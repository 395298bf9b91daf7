"""Formatting `Table`s with tabulate: the only place renderers call it."""

from __future__ import annotations

from enum import StrEnum

from tabulate import tabulate

from memledger.render.rows import Table


class TableStyle(StrEnum):
    """The tabulate formats memledger uses."""

    TEXT = "simple"
    MARKDOWN = "github"


def markdown_cell(text: str) -> str:
    """Escape what would break a GitHub table cell or turn into markup."""
    flat = " ".join(text.split())
    for char, escaped in (("\\", "\\\\"), ("|", "\\|"), ("*", "\\*"), ("`", "\\`")):
        flat = flat.replace(char, escaped)
    # A `<word>` would be taken for an HTML tag and hidden by GitHub.
    return flat.replace("<", "&lt;")


def format_table(table: Table, style: TableStyle) -> str:
    """The table body (no title) in the given style; numbers are kept exactly as built."""
    rows = table.rows
    headers = table.headers
    if style is TableStyle.MARKDOWN:
        rows = [[markdown_cell(cell) for cell in row] for row in rows]
        headers = [markdown_cell(header) for header in headers]
    return tabulate(
        rows,
        headers=headers,
        tablefmt=style.value,
        # The cells are pre-rounded strings; re-parsing would turn "0.10" into "0.1".
        disable_numparse=True,
        colalign=table.align,
    )
