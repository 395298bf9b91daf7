"""The diff output formats (`FORMATS`, the registry `memledger diff --format` comes from) and
one entry point that renders a `LedgerDiff` in any of them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from functools import partial

from memledger.compare.models import LedgerDiff, SortKey
from memledger.model.ledger import Ledger
from memledger.render.diff_csv import render_diff_csv
from memledger.render.diff_json import render_diff_json
from memledger.render.diff_markdown import DEFAULT_MARKER, DEFAULT_MAX_CHARS, render_diff_markdown
from memledger.render.diff_text import render_diff_text
from memledger.render.formats import Format, Formats, choose
from memledger.render.terminal import Terminal


class DiffFormat(StrEnum):
    """The formats `memledger diff --format` accepts."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"
    CSV = "csv"
    HTML = "html"


def _html(diff: LedgerDiff, sides: tuple[Ledger, Ledger] | None) -> str:
    from memledger.render.html import render_diff_html

    return render_diff_html(diff, sides)


SORT_KEYS = [key.value for key in SortKey]
"""`--sort` choices; the first is the default."""


@dataclass(frozen=True)
class DiffView:
    """The render options of a diff; each format's constructor takes the ones it understands
    (`marker` and `max_chars` only mean something to markdown)."""

    sort: SortKey = SortKey.DELTA
    show_unchanged: bool = False
    """Text and markdown: list unchanged rows instead of a count (json/csv list every row)."""
    marker: str = DEFAULT_MARKER
    max_chars: int = DEFAULT_MAX_CHARS
    terminal: Terminal = Terminal()
    """Text: the width to fit and whether to colour."""
    full: bool = False
    """Text: every table (`--full`); default: the verdict and the rows that matter."""
    sides: tuple[Ledger, Ledger] | None = None
    """The two ledgers (base, head): the pictures' timeline steps (markdown, html)."""


FORMATS: Formats[DiffFormat, DiffView, LedgerDiff] = Formats(
    DiffFormat,
    {
        DiffFormat.TEXT: Format(
            lambda v: partial(
                render_diff_text,
                sort=v.sort,
                show_unchanged=v.show_unchanged,
                terminal=v.terminal,
                full=v.full,
            ),
            "for a terminal: the verdict, the summary and the largest movers (--full: every table)",
        ),
        DiffFormat.MARKDOWN: Format(
            lambda v: partial(
                render_diff_markdown,
                sort=v.sort,
                show_unchanged=v.show_unchanged,
                marker=v.marker,
                max_chars=v.max_chars,
                sides=v.sides,
            ),
            "a pull-request comment (marker, headline, summary, collapsed details, size cap)",
        ),
        DiffFormat.JSON: Format(
            lambda v: partial(render_diff_json, sort=v.sort), "the full diff, versioned"
        ),
        DiffFormat.CSV: Format(
            lambda v: partial(render_diff_csv, sort=v.sort),
            "one record per (section, id) with base, head and delta",
        ),
        DiffFormat.HTML: Format(
            lambda v: partial(_html, sides=v.sides),
            "one self-contained file: headline, both timelines, both bars (SVG), tables",
        ),
    },
)


def diff_view(
    *,
    sort: SortKey | str = SortKey.DELTA,
    show_unchanged: bool = False,
    marker: str = DEFAULT_MARKER,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> DiffView:
    """The render options, with the sort key checked (ConfigError for an unknown one)."""
    return DiffView(choose(SortKey, sort, "sort"), show_unchanged, marker, max_chars)


def render_diff(
    diff: LedgerDiff,
    fmt: DiffFormat | str = DiffFormat.TEXT,
    *,
    sort: SortKey | str = SortKey.DELTA,
    show_unchanged: bool = False,
    marker: str = DEFAULT_MARKER,
    max_chars: int = DEFAULT_MAX_CHARS,
    full: bool = False,
) -> str:
    """Render a diff in `fmt` (the Python-API convenience over `FORMATS`); `full`: every table
    in text."""
    view = diff_view(sort=sort, show_unchanged=show_unchanged, marker=marker, max_chars=max_chars)
    return FORMATS.renderer(fmt, replace(view, full=full))(diff)
