"""Renderers: a `Ledger` in, a string out. They import tabulate, never click or lark.

`FORMATS` is the registry of `memledger ledger --format`: its choices, help and renderers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from memledger.errors import ConfigError
from memledger.ledger_model import Ledger
from memledger.render.csvfmt import render_csv
from memledger.render.explain import UnknownRowError, explain_json, explain_text
from memledger.render.formats import Format, Formats
from memledger.render.jsonfmt import render_json
from memledger.render.markdown import render_markdown
from memledger.render.terminal import Terminal
from memledger.render.text import render_text

__all__ = ["FORMATS", "LedgerView", "OutputFormat", "UnknownRowError", "render_ledger"]


class OutputFormat(StrEnum):
    """The formats `memledger ledger --format` accepts."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"
    CSV = "csv"


@dataclass(frozen=True)
class LedgerView:
    """What to show of a ledger: all of it, or only the arithmetic behind one row."""

    explain: str | None = None
    terminal: Terminal = Terminal()
    """Width and colour of text output."""
    full: bool = False
    """Text: every table (`--full`); default: the verdict and the rows that matter."""


LedgerRenderer = Callable[[Ledger], str]


def _with_explain(
    whole: LedgerRenderer | Callable[[Ledger, Terminal], str],
    explain: Callable[[Ledger, str], str] | None,
    fmt: str,
) -> Callable[[LedgerView], LedgerRenderer]:
    def make(view: LedgerView) -> LedgerRenderer:
        target = view.explain
        if target is None:
            if whole is render_text:
                return lambda ledger: render_text(ledger, view.terminal, full=view.full)
            return whole  # type: ignore[return-value]
        if explain is None:
            raise ConfigError(f"--explain prints text, markdown or json, not {fmt}")
        return lambda ledger: explain(ledger, target)

    return make


def _explain_markdown(ledger: Ledger, target: str) -> str:
    text = explain_text(ledger, target)
    # a fence longer than any backtick run in the text: a saved ledger's ``` cannot close it
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return f"{fence}text\n{text}{fence}\n"


FORMATS: Formats[OutputFormat, LedgerView, Ledger] = Formats(
    OutputFormat,
    {
        OutputFormat.TEXT: Format(
            _with_explain(render_text, explain_text, "text"),
            "for a terminal: the verdict and the rows that matter (--full: every table)",
        ),
        OutputFormat.MARKDOWN: Format(
            _with_explain(render_markdown, _explain_markdown, "markdown"),
            "the same tables as GitHub markdown",
        ),
        OutputFormat.JSON: Format(
            _with_explain(render_json, explain_json, "json"), "the full ledger, versioned"
        ),
        OutputFormat.CSV: Format(
            _with_explain(render_csv, None, "csv"), "one CSV record per ledger row"
        ),
    },
)


def render_ledger(
    ledger: Ledger, fmt: str = "text", *, explain: str | None = None, full: bool = False
) -> str:
    """Render a ledger in `fmt`; with `explain`, only the arithmetic behind that row; `full`:
    every table in text (as `--full`), not only the verdict and the rows that matter."""
    return FORMATS.renderer(fmt, LedgerView(explain=explain, full=full))(ledger)
