"""The diff output formats and one entry point that renders a `LedgerDiff` in any of them."""

from __future__ import annotations

from enum import StrEnum

from memledger.diffing import LedgerDiff, SortKey
from memledger.errors import ConfigError
from memledger.render.diff_csv import render_diff_csv
from memledger.render.diff_json import render_diff_json
from memledger.render.diff_markdown import DEFAULT_MARKER, DEFAULT_MAX_CHARS, render_diff_markdown
from memledger.render.diff_text import render_diff_text


class DiffFormat(StrEnum):
    """The formats `memledger diff --format` accepts."""

    TEXT = "text"
    """Tables and composition bars for a terminal."""
    MARKDOWN = "markdown"
    """A pull-request comment (marker, headline, summary, collapsed details, size cap)."""
    JSON = "json"
    """The full `LedgerDiff` model, versioned."""
    CSV = "csv"
    """One record per (section, id) with base, head and delta."""


def diff_format(name: str) -> DiffFormat:
    """The format called `name`; ConfigError listing the choices otherwise."""
    try:
        return DiffFormat(name)
    except ValueError:
        choices = ", ".join(fmt.value for fmt in DiffFormat)
        raise ConfigError(f"unknown format {name!r}; choose one of {choices}") from None


def render_diff(
    diff: LedgerDiff,
    fmt: DiffFormat | str = DiffFormat.TEXT,
    *,
    sort: SortKey | str = SortKey.DELTA,
    show_unchanged: bool = False,
    marker: str = DEFAULT_MARKER,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """Render a diff; `show_unchanged` applies to text and markdown (json/csv list every row)."""
    chosen = diff_format(fmt) if isinstance(fmt, str) else fmt
    try:
        order = SortKey(sort)
    except ValueError:
        choices = ", ".join(key.value for key in SortKey)
        raise ConfigError(f"unknown sort {sort!r}; choose one of {choices}") from None
    match chosen:
        case DiffFormat.TEXT:
            return render_diff_text(diff, sort=order, show_unchanged=show_unchanged)
        case DiffFormat.MARKDOWN:
            return render_diff_markdown(
                diff,
                sort=order,
                show_unchanged=show_unchanged,
                marker=marker,
                max_chars=max_chars,
            )
        case DiffFormat.JSON:
            return render_diff_json(diff, sort=order)
        case DiffFormat.CSV:
            return render_diff_csv(diff, sort=order)
