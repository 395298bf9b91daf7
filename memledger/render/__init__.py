"""Renderers: a `Ledger` in, a string out. They import tabulate, never click or lark."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from memledger.errors import ConfigError
from memledger.ledger_model import Ledger
from memledger.render.csvfmt import render_csv
from memledger.render.explain import UnknownRowError, explain_json, explain_text
from memledger.render.jsonfmt import render_json
from memledger.render.markdown import render_markdown
from memledger.render.text import render_text

__all__ = ["RENDERERS", "OutputFormat", "UnknownRowError", "render_ledger"]


class OutputFormat(StrEnum):
    """The formats `memledger ledger --format` accepts."""

    TEXT = "text"
    """Tables for a terminal (tabulate `simple`)."""
    MARKDOWN = "markdown"
    """The same tables as GitHub-flavoured markdown."""
    JSON = "json"
    """The full ledger model, versioned."""
    CSV = "csv"
    """One record per ledger row."""


RENDERERS: dict[OutputFormat, Callable[[Ledger], str]] = {
    OutputFormat.TEXT: render_text,
    OutputFormat.MARKDOWN: render_markdown,
    OutputFormat.JSON: render_json,
    OutputFormat.CSV: render_csv,
}


def output_format(name: str) -> OutputFormat:
    """The format called `name`; ConfigError listing the choices otherwise."""
    try:
        return OutputFormat(name)
    except ValueError:
        choices = ", ".join(fmt.value for fmt in OutputFormat)
        raise ConfigError(f"unknown format {name!r}; choose one of {choices}") from None


def render_ledger(ledger: Ledger, fmt: str, *, explain: str | None = None) -> str:
    """Render a ledger in `fmt`; with `explain`, only the arithmetic behind that row."""
    chosen = output_format(fmt)
    if explain is None:
        return RENDERERS[chosen](ledger)
    match chosen:
        case OutputFormat.TEXT:
            return explain_text(ledger, explain)
        case OutputFormat.MARKDOWN:
            return f"```text\n{explain_text(ledger, explain)}```\n"
        case OutputFormat.JSON:
            return explain_json(ledger, explain)
        case OutputFormat.CSV:
            raise ConfigError("--explain prints text, markdown or json, not csv")
