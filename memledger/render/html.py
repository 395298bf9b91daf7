"""`--format html`: one self-contained report (ledger, diff, check) that opens offline.

The verdict first, then the pictures as inline SVG (`memledger.render.svg`: the startup
timeline and where the memory went; for check, each budget item against its limit, drawn by
`memledger.render.check` on this page), then the tables the text format prints. No script,
stylesheet, font or image is loaded from anywhere.

Templating is Jinja2 with autoescape on (`templates/report.html.j2`): every string a template
writes, log text included, is HTML-escaped by Jinja2 (MarkupSafe), and the output then passes
the html destination's last pass (`memledger.render.escape`). Jinja2 is imported only here, on
the html path: `ledger`'s text output does not load it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from memledger.render.tables import Table

if TYPE_CHECKING:
    import jinja2

    from memledger.compare.models import LedgerDiff
    from memledger.model.ledger import Ledger
    from memledger.render.svg import Drawing
    from memledger.render.timeline import Bar, Timeline


@dataclass(frozen=True)
class Chart:
    heading: str
    drawing: Drawing
    captions: list[str] = field(default_factory=list)


@cache
def _environment() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("memledger.render", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
    )


def page(**context: Any) -> str:
    """The report page (templates/report.html.j2) around a verdict, charts and tables."""
    text: str = _environment().get_template("report.html.j2").render(**context)
    return text + "\n"


def _pictures(
    timelines: Sequence[Timeline], bars: Sequence[Bar], names: Sequence[str]
) -> list[Chart]:
    from memledger.render.mermaid import drawable, timeline_legend
    from memledger.render.svg import bars_drawing, timeline_drawing

    charts: list[Chart] = []
    if drawable(timelines):
        charts.append(
            Chart(
                "Free memory at each checkpoint",
                timeline_drawing(timelines, names),
                [timeline_legend(timelines, names)],
            )
        )
    charts.append(Chart("Where the usable memory went", bars_drawing(bars)))
    from memledger.render.mermaid import negative_note

    note = negative_note(bars)
    if note:
        charts[-1].captions.append(note)
    return charts


def _steps_tables(timelines: Sequence[Timeline], names: Sequence[str]) -> list[Table]:
    from memledger.render.mermaid import drawable, steps_table

    if not drawable(timelines):
        return []
    table = steps_table(timelines, names)
    return [
        Table(table.headers, table.rows, table.align, title="Timeline steps (the chart's points)")
    ]


def render_ledger_html(ledger: Ledger) -> str:
    """One ledger: verdict, timeline, composition bar, then the ledger's tables."""
    from memledger.render.rows import headline, ledger_tables
    from memledger.render.timeline import bar_of, timeline_of

    head = headline(ledger)
    name = ledger.source.path.rsplit("/", 1)[-1]
    timelines = [timeline_of(ledger, name)]
    diagnosis = ledger.diagnosis
    verdict = (
        diagnosis.verdict
        if diagnosis is not None
        else f"{ledger.outcome}: " + "; ".join(f"{k} {v}" for k, v in head.facts[-2:])
    )
    return page(
        title=head.title,
        verdict=verdict,
        bad=diagnosis is not None,
        facts=head.facts,
        charts=_pictures(timelines, [bar_of(ledger, name)], [name]),
        tables=[*_steps_tables(timelines, [name]), *ledger_tables(ledger)],
        notes=ledger.notes,
    )


def render_diff_html(diff: LedgerDiff, sides: tuple[Ledger, Ledger] | None = None) -> str:
    """Two ledgers: the headline, both timelines on one chart, both bars, then the tables."""
    from memledger.compare.models import SortKey
    from memledger.render.diff_common import (
        category_table,
        checkpoints_table,
        groups_table,
        headline,
        input_line,
        intervals_table,
        params_table,
        rows_view,
        summary_table,
    )
    from memledger.render.diff_markdown import diff_bars
    from memledger.render.timeline import timeline_of

    bars = diff_bars(diff)
    names = [bar.name for bar in bars]
    timelines = (
        [timeline_of(ledger, n) for ledger, n in zip(sides, names, strict=True)] if sides else []
    )
    tables = [
        _titled(summary_table(diff), "Summary"),
        _titled(category_table(diff), "Fixed overhead + headroom by category"),
    ]
    if timelines:
        tables += _steps_tables(timelines, names)
    tables += [
        _titled(groups_table(diff), "Group totals"),
        _titled(rows_view(diff, sort=SortKey.DELTA, show_unchanged=True).table, "Every row"),
        _titled(checkpoints_table(diff), "Checkpoints"),
        _titled(intervals_table(diff), "Intervals"),
    ]
    if diff.parameters:
        tables.append(_titled(params_table(diff), "Configuration diff"))
    return page(
        title="memledger diff: " + " vs ".join(names),
        verdict=headline(diff),
        bad=False,
        facts=[
            ("base", input_line("base", diff.inputs.base)),
            ("head", input_line("head", diff.inputs.head)),
        ],
        charts=_pictures(timelines, bars, names),
        tables=tables,
        notes=[],
    )


def _titled(table: Table, title: str) -> Table:
    return Table(
        table.headers, table.rows, table.align, title=table.title or title, footnote=table.footnote
    )
