"""Renderers: a `Ledger` in, a string out. They import tabulate, never click or lark.

`FORMATS` is the registry of `memledger ledger --format`: its choices, help and renderers.

Modules:

- `brief`: The short text view of a ledger (the default.
- `check`: Renderers for `memledger check` reports.
- `csvfmt`: The CSV renderer.
- `diagnose`: `memledger diagnose` output.
- `diff_common`: Table data shared by the diff renderers.
- `diff_csv`: CSV rendering of a ledger diff.
- `diff_formats`: The diff output formats (`FORMATS`, the registry `memledger diff --format` comes
  from) and one entry point that renders a `LedgerDiff` in any of them.
- `diff_json`: JSON rendering of a ledger diff.
- `diff_markdown`: Markdown rendering of a ledger diff for a pull-request comment.
- `diff_prose`: The diff's sentences.
- `diff_release`: `memledger diff LOG --against-release X`.
- `diff_text`: Terminal rendering of a ledger diff.
- `diff_upgrade`: The diff's explanation of a KV-token change (an upgrade, or other server_args).
- `escape`: Escaping by destination.
- `explain`: `--explain ROW`.
- `fleet`: The fleet view.
- `formats`: Format registries.
- `html`: `--format html`: one self-contained report (ledger, diff, check), charts as inline SVG.
- `jsonfmt`: The JSON renderer.
- `markdown`: The markdown renderer.
- `mermaid`: Mermaid charts (xychart-beta) of the pictures, for GitHub markdown.
- `parse`: `memledger parse` output.
- `rows`: Row builders.
- `schema`: JSON Schemas of memledger's JSON outputs (what `memledger schema` prints).
- `svg`: SVG chart geometry of the pictures (shapes with tooltips), for the HTML report.
- `sizing`: Tables of the sizing section (ledger) and of `whatif`, as plain strings (no
  recomputation).
- `tables`: Tables.
- `terminal`: Text output for a terminal.
- `text`: The text renderer.
- `timeline`: The pictures' numbers: a startup's free memory per checkpoint, bars, gauges.
- `timeline_text`: The startup timeline as terminal bars (`--full`).
- `vllm_parse`: `memledger parse` of a vLLM log.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from memledger.errors import ConfigError
from memledger.model.ledger import Ledger
from memledger.render.formats import Format, Formats
from memledger.render.terminal import Terminal

if TYPE_CHECKING:
    from memledger.render.explain import UnknownRowError

__all__ = ["FORMATS", "LedgerView", "OutputFormat", "UnknownRowError", "render_ledger"]


def __getattr__(name: str) -> Any:
    # Importing any renderer module runs this package first: the format modules (tabulate,
    # csv, ...) load when a format is used, so `parse --format json` does not pay for them.
    if name == "UnknownRowError":
        from memledger.render.explain import UnknownRowError

        return UnknownRowError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class OutputFormat(StrEnum):
    """The formats `memledger ledger --format` accepts."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"
    CSV = "csv"
    HTML = "html"


@dataclass(frozen=True)
class LedgerView:
    """What to show of a ledger: all of it, or only the arithmetic behind one row."""

    explain: str | None = None
    terminal: Terminal = Terminal()
    """Width and colour of text output."""
    full: bool = False
    """Text: every table (`--full`); default: the verdict and the rows that matter."""


LedgerRenderer = Callable[[Ledger], str]
Explainer = Callable[[Ledger, str], str]


def _made(
    view: LedgerView, whole: LedgerRenderer, explain: Explainer | None, fmt: str
) -> LedgerRenderer:
    target = view.explain
    if target is None:
        return whole
    if explain is None:
        raise ConfigError(f"--explain prints text, markdown or json, not {fmt}")
    return lambda ledger: explain(ledger, target)


def _text(view: LedgerView) -> LedgerRenderer:
    from memledger.render.explain import explain_text
    from memledger.render.text import render_text

    def whole(ledger: Ledger) -> str:
        return render_text(ledger, view.terminal, full=view.full)

    def explain(ledger: Ledger, target: str) -> str:
        return explain_text(ledger, target, view.terminal.width)

    return _made(view, whole, explain, "text")


def _markdown(view: LedgerView) -> LedgerRenderer:
    from memledger.render.markdown import render_markdown

    return _made(view, render_markdown, _explain_markdown, "markdown")


def _json(view: LedgerView) -> LedgerRenderer:
    from memledger.render.explain import explain_json
    from memledger.render.jsonfmt import render_json

    return _made(view, render_json, explain_json, "json")


def _csv(view: LedgerView) -> LedgerRenderer:
    from memledger.render.csvfmt import render_csv

    return _made(view, render_csv, None, "csv")


def _html(view: LedgerView) -> LedgerRenderer:
    from memledger.render.html import render_ledger_html

    return _made(view, render_ledger_html, None, "html")


def _explain_markdown(ledger: Ledger, target: str) -> str:
    from memledger.render.explain import explain_text

    text = explain_text(ledger, target)
    # a fence longer than any backtick run in the text: a saved ledger's ``` cannot close it
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return f"{fence}text\n{text}{fence}\n"


FORMATS: Formats[OutputFormat, LedgerView, Ledger] = Formats(
    OutputFormat,
    {
        OutputFormat.TEXT: Format(
            _text, "for a terminal: the verdict and the rows that matter (--full: every table)"
        ),
        OutputFormat.MARKDOWN: Format(_markdown, "the same tables as GitHub markdown"),
        OutputFormat.JSON: Format(_json, "the full ledger, versioned"),
        OutputFormat.CSV: Format(_csv, "one CSV record per ledger row"),
        OutputFormat.HTML: Format(
            _html, "one self-contained file: verdict, timeline and bar charts (SVG), tables"
        ),
    },
)


def render_ledger(
    ledger: Ledger, fmt: str = "text", *, explain: str | None = None, full: bool = False
) -> str:
    """Render a ledger in `fmt`; with `explain`, only the arithmetic behind that row; `full`:
    every table in text (as `--full`), not only the verdict and the rows that matter."""
    return FORMATS.renderer(fmt, LedgerView(explain=explain, full=full))(ledger)
