"""Mermaid charts for GitHub markdown: the startup timeline and where the memory went.

GitHub renders ```` ```mermaid ```` blocks; `xychart-beta` (Mermaid 10.3 and later, GitHub
included) draws both pictures:

- the timeline: one `line` per deployment over the checkpoints (aligned by phase), a flat line
  per deployment at SGLang's reserve P x (1 - mem_fraction_static); a failed startup's line
  ends at the failing phase, below zero by the shortfall (what the allocation asked beyond the
  free memory); a line ends at its last reading (Mermaid draws a shorter series only up to its
  last point);
- the composition: one horizontal bar per deployment, stacked by group. xychart-beta has no
  stacked bars, so each group's bar is drawn as the running total up to it, the longest first:
  each later (shorter) bar covers the start of the one before, which leaves one segment of
  each colour, in `GROUP_ORDER` from the left (checked in Chromium with mermaid 11.17.2).

Every number a chart draws is a GiB value of the ledger's bytes (2 decimals), and every label
passes `mermaid_label`; the markdown around the charts names what the colours are and each
step's rows, since xychart-beta has no legend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from memledger.compare.categories import group_label
from memledger.model.ledger import RowGroup
from memledger.render.escape import mermaid_label
from memledger.render.tables import Align, Table, github_table
from memledger.render.timeline import (
    GROUP_COLOURS,
    GROUP_ORDER,
    Bar,
    Gauge,
    Step,
    Timeline,
    aligned_phases,
    phase_name,
)
from memledger.units import GIB

SIDE_COLOURS = ("#4e79a7", "#f28e2b")
"""The line of the first and second deployment (base, head)."""
RESERVE_COLOURS = ("#a0cbe8", "#ffbe7d")
"""Their reserve lines, lighter."""
DRAWN_BYTES = GIB // 200
"""A step that moves free memory by less than this (0.01 GiB printed) is left out of the
Mermaid timeline unless it is the first or last (the SVG draws every step)."""


def gib(byte_count: int) -> str:
    """A chart value: GiB, 2 decimals (what the tables print)."""
    return f"{byte_count / GIB:.2f}"


def _block(
    palette: Sequence[str], body: Sequence[str], *, width: int = 900, height: int = 500
) -> str:
    config = '"themeVariables": {"xyChart": {"plotColorPalette": "' + ", ".join(palette) + '"}}'
    config += (
        f', "xyChart": {{"width": {width}, "height": {height}, "xAxis": {{"labelFontSize": 12}}}}'
    )
    return "\n".join(["```mermaid", "%%{init: {" + config + "}}%%", *body, "```"])


def _axis_top(values: Sequence[int]) -> int:
    """The y axis' top: the largest value rounded up to a multiple of 10 GiB (of 1 below)."""
    top = max(values, default=0) / GIB
    step = 10 if top > 20 else 1
    return max(step, math.ceil(top / step) * step)


def shown_steps(timeline: Timeline) -> list[Step]:
    """The steps a Mermaid timeline draws: the first, the last and every one that moved free
    memory by 0.01 GiB or more."""
    steps = list(timeline.steps)
    return [
        s
        for i, s in enumerate(steps)
        if i in (0, len(steps) - 1) or abs(s.drop_bytes) >= DRAWN_BYTES or s.failed
    ]


def plotted(step: Step, timeline: Timeline) -> int:
    """The value a step is drawn at: its free bytes; at an OOM with a known shortfall, minus
    the shortfall (the allocation asked that much more than was free)."""
    failure = timeline.failure
    if step.failed and failure is not None and failure.shortfall_bytes:
        return -failure.shortfall_bytes
    return step.free_bytes


def series(timeline: Timeline, phases: Sequence[str]) -> list[int]:
    """The timeline's plotted bytes at each phase up to its last step: a phase it did not
    reach (or read) carries the free memory before it, since nothing was taken there."""
    free = {s.phase: plotted(s, timeline) for s in timeline.steps}
    last = timeline.steps[-1].phase if timeline.steps else None
    values: list[int] = []
    for phase in phases:
        if phase in free:
            values.append(free[phase])
        elif values:
            values.append(values[-1])
        else:
            continue
        if phase == last:
            break
    return values


def drawable(timelines: Sequence[Timeline]) -> bool:
    """Whether the timelines have something to draw: two readings on one side at least."""
    return any(len(t.steps) >= 2 for t in timelines)


def timeline_phases(timelines: Sequence[Timeline]) -> list[str]:
    """The phases the chart's x axis shows: every drawn step of any side, aligned."""
    drawn = [Timeline(t.name, t.path, t.usable_bytes, tuple(shown_steps(t))) for t in timelines]
    return aligned_phases(drawn)


def timeline_chart(timelines: Sequence[Timeline], title: str) -> str:
    """A Mermaid xychart of free memory at each phase, one line per timeline (two at most)."""
    phases = timeline_phases(timelines)
    palette: list[str] = []
    body = [
        "xychart-beta",
        f'    title "{mermaid_label(title, 80)}"',
        "    x-axis ["
        + ", ".join(f'"{mermaid_label(_axis_name(p, timelines))}"' for p in phases)
        + "]",
    ]
    tops = [t.usable_bytes or 0 for t in timelines]
    tops += [s.free_bytes for t in timelines for s in t.steps]
    low = min((min(series(t, phases), default=0) for t in timelines), default=0)
    bottom = 0 if low >= 0 else -_axis_top([-low])
    body.append(f'    y-axis "free GiB" {bottom} --> {_axis_top(tops)}')
    lines: list[str] = []
    for index, timeline in enumerate(timelines):
        values = series(timeline, phases)
        if values:
            lines.append("    line [" + ", ".join(gib(v) for v in values) + "]")
            palette.append(SIDE_COLOURS[index % 2])
        if timeline.reserve_bytes is not None:
            flat = ", ".join(gib(timeline.reserve_bytes) for _ in phases)
            lines.append(f"    line [{flat}]")
            palette.append(RESERVE_COLOURS[index % 2])
    return _block(palette, body + lines)


AXIS_NAMES: dict[str, str] = {
    "start": "start",
    "dist_init_end": "dist init",
    "load_begin": "load start",
    "load_end": "load end",
    "draft_load_begin": "draft start",
    "draft_load_end": "draft load",
    "memory_pool_end": "KV pool",
    "draft_memory_pool_end": "draft KV",
    "attention_backend_begin": "attn start",
    "attention_backend_end": "attn",
    "draft_attention_backend_begin": "d. attn start",
    "draft_attention_backend_end": "draft attn",
    "capture_begin": "pre-graphs",
    "capture_end": "graphs",
    "draft_capture_begin": "pre-d. graphs",
    "draft_capture_end": "draft graphs",
    "prefill_capture_begin": "pre-prefill",
    "prefill_capture_end": "prefill gr.",
}
"""Short x-axis names (the table under the chart gives each phase's full name)."""


def _axis_name(phase: str, timelines: Sequence[Timeline], *, short: bool = True) -> str:
    name = AXIS_NAMES.get(phase, phase_name(phase)[:12]) if short else phase_name(phase)
    steps = [t.step(phase) for t in timelines]
    for timeline, step in zip(timelines, steps, strict=True):
        if step is not None and step.failed and timeline.failure is not None:
            oom = "OOM" if short else f"OOM in {timeline.failure.phase_name}"
            reached = any(s is not None and not s.failed for s in steps)
            return f"{name}/{oom}" if reached else oom
    return name


def timeline_legend(timelines: Sequence[Timeline], names: Sequence[str]) -> str:
    """What the timeline's lines are (xychart-beta has no legend)."""
    colours = ("blue", "orange")
    light = ("light blue", "light orange")
    parts: list[str] = []
    for index, (timeline, name) in enumerate(zip(timelines, names, strict=True)):
        part = f"{colours[index % 2]}: {name}'s free memory"
        if timeline.reserve_bytes is not None:
            mfs = timeline.mem_fraction_static
            fraction = "" if mfs is None else f" = {1 - mfs:.2f}"
            part += (
                f"; {light[index % 2]}: its reserve P × (1 − mem_fraction_static{fraction}) "
                f"= {gib(timeline.reserve_bytes)} GiB, what the pools leave for graphs and "
                "runtime"
            )
        failure = timeline.failure
        last = timeline.steps[-1] if timeline.steps else None
        if failure is not None and last is not None and last.failed:
            short = (
                f" at −{gib(failure.shortfall_bytes)} GiB: the allocation asked that much more "
                f"than the {gib(last.free_bytes)} GiB free"
                if failure.shortfall_bytes
                else f" ({gib(last.free_bytes)} GiB free)"
            )
            part += f"; it ends at the OOM in {failure.phase_name}{short}"
        parts.append(part)
    return ". ".join(parts) + "."


def steps_table(timelines: Sequence[Timeline], names: Sequence[str]) -> Table:
    """Each drawn phase: the free memory on each side and what the step into it took, by the
    ledger's row names (GiB), with the line it was read from."""
    phases = timeline_phases(timelines)
    headers = ["phase"]
    for name in names:
        headers += [f"{name} free GiB", f"{name}: what the step took"]
    rows: list[list[str]] = []
    for phase in phases:
        row = [f"{_axis_name(phase, timelines)}: {_axis_name(phase, timelines, short=False)}"]
        for timeline in timelines:
            step = timeline.step(phase)
            if step is None:
                row += ["-", ""]
                continue
            line = "" if step.line is None else f" (line {step.line})"
            took = step.label(3) or "-"
            if step.failed and timeline.failure is not None:
                took = f"{took}; {timeline.failure.verdict}"
            row += [gib(step.free_bytes), took + line]
        rows.append(row)
    pair: list[Align] = ["right", "left"]
    align: list[Align] = ["left", *(pair * len(timelines))]
    return Table(headers=headers, rows=rows, align=align)


def bars_chart(bars: Sequence[Bar], title: str) -> str:
    """One horizontal bar per deployment, stacked by group (see the module doc)."""
    order = _groups(bars)
    totals = {b.name: dict(b.parts) for b in bars}
    body = [
        "xychart-beta horizontal",
        f'    title "{mermaid_label(title, 80)}"',
        "    x-axis [" + ", ".join(f'"{mermaid_label(b.name)}"' for b in bars) + "]",
        f'    y-axis "GiB" 0 --> {_axis_top([b.total for b in bars])}',
    ]
    palette: list[str] = []
    for cut in range(len(order), 0, -1):
        running = [sum(totals[b.name].get(g, 0) for g in order[:cut]) for b in bars]
        body.append("    bar [" + ", ".join(gib(v) for v in running) + "]")
        palette.append(GROUP_COLOURS[order[cut - 1]])
    return _block(palette, body, height=170 + 60 * len(bars))


def _groups(bars: Sequence[Bar]) -> list[RowGroup]:
    """The groups any bar has, in `GROUP_ORDER`."""
    seen = {group for bar in bars for group, _ in bar.parts}
    return [g for g in GROUP_ORDER if g in seen]


COLOUR_NAMES = {
    "#4e79a7": "dark blue",
    "#a0cbe8": "light blue",
    "#76b7b2": "teal",
    "#f28e2b": "orange",
    "#ffbe7d": "light orange",
    "#e15759": "red",
    "#b07aa1": "purple",
    "#bab0ac": "grey",
    "#59a14f": "green",
}


def bars_table(bars: Sequence[Bar]) -> Table:
    """The bars' segments left to right: group, colour, GiB per deployment."""
    order = _groups(bars)
    rows = []
    for group in order:
        row = [group_label(group), COLOUR_NAMES.get(GROUP_COLOURS[group], "")]
        row += [gib(dict(b.parts).get(group, 0)) for b in bars]
        rows.append(row)
    rows.append(["usable (sum)", ""] + [gib(b.total) for b in bars])
    headers = ["group (left to right)", "colour", *(f"{b.name} GiB" for b in bars)]
    right: list[Align] = ["right"] * len(bars)
    align: list[Align] = ["left", "left", *right]
    return Table(headers=headers, rows=rows, align=align)


def negative_note(bars: Sequence[Bar]) -> str | None:
    """Groups a bar cannot draw (they sum below zero), named so nothing goes without a word."""
    parts = [f"{bar.name}: {group_label(g)} {gib(v)} GiB" for bar in bars for g, v in bar.negative]
    if not parts:
        return None
    return "Not drawn (negative, memory given back): " + "; ".join(parts) + "."


def pictures_markdown(
    timelines: Sequence[Timeline], bars: Sequence[Bar], names: Sequence[str], what: str
) -> tuple[list[str], list[str]]:
    """The timeline and the composition as markdown: the charts with their legends (to show),
    and the tables behind them (each step's rows and source line; each bar's segments)."""
    from memledger.render.tables import markdown_cell

    shown: list[str] = []
    behind: list[str] = []
    if not drawable(timelines):
        timelines = []  # no reading to draw (a vLLM ledger has no checkpoints)
    if timelines:
        shown += [
            timeline_chart(timelines, f"Free GiB at each checkpoint: {what}"),
            "_" + markdown_cell(timeline_legend(timelines, names)) + "_",
        ]
        behind.append(github_table(steps_table(timelines, names)))
    shown.append(bars_chart(bars, f"Where the usable memory went (GiB): {what}"))
    shown.append("_" + markdown_cell(bars_legend(bars)) + "_")
    behind.append(github_table(bars_table(bars)))
    note = negative_note(bars)
    if note:
        shown.append(markdown_cell(note))
    return shown, behind


def bars_legend(bars: Sequence[Bar]) -> str:
    """The bars' colours, left to right (xychart-beta has no legend)."""
    return "left to right: " + ", ".join(
        f"{group_label(g)} ({COLOUR_NAMES.get(GROUP_COLOURS[g], '')})" for g in _groups(bars)
    )


GAUGE_COLOUR = "#4e79a7"
LIMIT_COLOUR = "#e15759"


def budget_chart(found: Sequence[Gauge], several_logs: bool) -> str:
    """Each budget item against its limit: a bar per check at its share of the limit, a red
    line at 100 (the limit); a breached check's name starts with BREACH. (One bar series: a
    second series of zeros would draw stubs, since Mermaid starts bars at the axis, not at 0.)"""
    names = [_gauge_name(g, several_logs) for g in found]
    top = math.ceil(max(100.0, *(g.percent for g in found)) / 50) * 50
    body = [
        "xychart-beta horizontal",
        '    title "Each budget item as % of its limit"',
        "    x-axis [" + ", ".join(f'"{n}"' for n in names) + "]",
        f'    y-axis "% of limit" 0 --> {top}',
        "    bar [" + ", ".join(f"{g.percent:.1f}" for g in found) + "]",
        "    line [" + ", ".join("100" for _ in found) + "]",
    ]
    return _block([GAUGE_COLOUR, LIMIT_COLOUR], body, height=120 + 40 * len(found))


def _gauge_name(gauge: Gauge, several_logs: bool) -> str:
    name = f"{gauge.item} ({gauge.bound})"
    if several_logs:
        name += " " + gauge.log.rsplit("/", 1)[-1]
    if gauge.breached:
        name = "BREACH " + name
    return mermaid_label(name)


def budget_legend() -> str:
    return (
        "red line: the limit (100 %). A max limit passes under it, a min limit over it; a "
        "max_increase bar is the increase as % of the allowed increase."
    )
