"""SVG charts for the HTML report: geometry only. Each chart is a `Drawing` (a size and a list of
`Shape`s: tag, attributes, text, tooltip); the HTML template writes them out with Jinja2's
autoescape, so no label or tooltip (log text) is ever interpolated unescaped.

The numbers are `memledger.render.timeline`'s, like the Mermaid charts': the timeline draws the
same steps (`mermaid.shown_steps`), each point with a `<title>` giving the checkpoint's exact
bytes, its log line and what the step took (rows, bytes, source); the bars draw each group's
bytes with its exact bytes in the tooltip; the budget draws each check's share of its limit.
Each shape also carries `data-*` attributes with the exact values (tests read them back).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from memledger.compare.categories import group_label
from memledger.render.mermaid import RESERVE_COLOURS, SIDE_COLOURS, gib, plotted, shown_steps
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

FONT = 12
LABEL_CHAR_WIDTH = 6.3
"""About the width of a character of an 11 px label (to keep labels apart)."""
LABELLED_SHARE = 0.03
"""A single timeline labels the steps that move at least this share of the usable memory
(every step has its tooltip, and the table under the chart names them all)."""
FAILED_COLOUR = "#e15759"
RESERVE_DASH = "6 4"


@dataclass(frozen=True)
class Shape:
    """One SVG element: `tag` and attribute names are memledger's; values and text are escaped
    by the template (they may hold log text)."""

    tag: str
    attrs: tuple[tuple[str, str], ...]
    text: str = ""
    title: str = ""
    """A tooltip (`<title>` child): exact bytes and source line."""


@dataclass(frozen=True)
class Drawing:
    """A chart: its size, its shapes in paint order, and a one-line description."""

    width: int
    height: int
    label: str
    shapes: list[Shape] = field(default_factory=list)

    def add(self, tag: str, text: str = "", title: str = "", **attrs: object) -> None:
        pairs = tuple((k.rstrip("_").replace("_", "-"), _value(v)) for k, v in attrs.items())
        self.shapes.append(Shape(tag, pairs, text, title))


def _value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value)


def _bytes(byte_count: int) -> str:
    return f"{byte_count / GIB:.2f} GiB ({byte_count:,} B)"


def _nice_top(value: float) -> float:
    """An axis end at or above `value` GiB: a multiple of 1, 2, 5 x 10^k."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return float(step * power)
    return float(10 * power)


def _axis_end(value: float, count: int = 6) -> float:
    """The axis end just above `value`: a multiple of a round tick step."""
    step = _nice_top(value / count)
    return max(step, math.ceil(value / step) * step)


def _ticks(low: float, high: float, count: int = 6) -> list[float]:
    step = _nice_top((high - low) / count)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step) + 1)]


def step_tooltip(step: Step, timeline: Timeline, name: str) -> str:
    """A point's tooltip: the reading's exact bytes and line, and what the step took."""
    where = f"line {step.line}" if step.line is not None else "the usable memory"
    lines = [f"{name}: {phase_name(step.phase)}: {_bytes(step.free_bytes)} free ({where})"]
    if step.text:
        lines.append(f"  {step.text}")
    failure = timeline.failure
    if step.failed and failure is not None:
        lines.append(f"  {failure.verdict}")
    if step.drop_bytes:
        verb = "took" if step.drop_bytes > 0 else "gave back"
        lines.append(f"  the step {verb} {_bytes(abs(step.drop_bytes))}:")
    for take in sorted(step.takes, key=lambda t: -abs(t.bytes)):
        source = f", {take.source}" if take.source else ""
        lines.append(f"    {take.label} ({take.row_id}): {_bytes(take.bytes)}{source}")
    return "\n".join(lines)


def timeline_drawing(timelines: Sequence[Timeline], names: Sequence[str]) -> Drawing:
    """Free memory at each phase, one line per timeline, reserve lines dashed, an OOM's
    shortfall as a red bar below its last point; a label at each point of a single timeline."""
    drawn = [
        Timeline(t.name, t.path, t.usable_bytes, tuple(shown_steps(t)), failure=t.failure)
        for t in timelines
    ]
    phases = aligned_phases(drawn)
    width, height = 960, 460
    left, right, top, bottom = 64, 24, 40, 120
    values = [plotted(s, t) for t in drawn for s in t.steps]
    values += [t.usable_bytes or 0 for t in timelines]
    values += [t.reserve_bytes or 0 for t in timelines]
    high = _axis_end(max(values, default=0) / GIB)
    low = min(0.0, min(values, default=0) / GIB)
    if low < 0:
        low = -_axis_end(-low * 1.2)
    drawing = Drawing(width, height, "free GiB at each checkpoint: " + " vs ".join(names))
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(index: int) -> float:
        return left + plot_w * (index + 0.5) / max(1, len(phases))

    def y(value_gib: float) -> float:
        return top + plot_h * (high - value_gib) / (high - low)

    for tick in _ticks(low, high):
        drawing.add("line", x1=left, x2=width - right, y1=y(tick), y2=y(tick), class_="grid")
        drawing.add(
            "text", f"{tick:g}", x=left - 6, y=y(tick) + 4, class_="tick", text_anchor="end"
        )
    drawing.add(
        "text",
        "free GiB",
        x=14,
        y=top + plot_h / 2,
        class_="axis",
        transform=f"rotate(-90 14 {top + plot_h / 2:.0f})",
        text_anchor="middle",
    )
    for index, phase in enumerate(phases):
        px, py = x(index), float(height - bottom + 14)
        drawing.add(
            "text",
            _phase_label(phase, drawn),
            x=px,
            y=py,
            class_="tick",
            text_anchor="end",
            transform=f"rotate(-35 {px:.1f} {py:.1f})",
        )
    for side, (timeline, full, name) in enumerate(zip(drawn, timelines, names, strict=True)):
        colour = SIDE_COLOURS[side % 2]
        if full.reserve_bytes is not None:
            ry = y(full.reserve_bytes / GIB)
            mfs = full.mem_fraction_static
            what = (
                f"{name}: reserve P x (1 - mem_fraction_static{'' if mfs is None else f' {mfs}'})"
            )
            drawing.add(
                "line",
                title=f"{what} = {_bytes(full.reserve_bytes)}: {full.reserve_formula}",
                x1=left,
                x2=width - right,
                y1=ry,
                y2=ry,
                stroke=RESERVE_COLOURS[side % 2],
                stroke_dasharray=RESERVE_DASH,
                class_="reserve",
                data_bytes=full.reserve_bytes,
            )
            drawing.add(
                "text",
                f"{name} reserve {gib(full.reserve_bytes)}",
                x=width - right - 4 if side == 0 else left + 4,
                y=ry - 4,
                class_="note",
                text_anchor="end" if side == 0 else "start",
                fill=colour,
            )
        points = [(phases.index(s.phase), s) for s in timeline.steps]
        coords = " ".join(f"{x(i):.1f},{y(plotted(s, full) / GIB):.1f}" for i, s in points)
        drawing.add("polyline", points=coords, stroke=colour, class_="series")
        usable = full.usable_bytes or max((abs(s.free_bytes) for s in timeline.steps), default=1)
        placed: list[tuple[float, float, float]] = []  # labels drawn: x from, x to, y
        for i, step in points:
            value = plotted(step, full)
            px, py = x(i), y(value / GIB)
            tooltip = step_tooltip(step, full, name)
            if step.failed and full.failure is not None and full.failure.shortfall_bytes:
                free_y = y(step.free_bytes / GIB)
                drawing.add(
                    "rect",
                    title=tooltip,
                    x=px - 9,
                    y=free_y,
                    width=18,
                    height=max(1.0, py - free_y),
                    fill=FAILED_COLOUR,
                    class_="shortfall",
                    data_bytes=full.failure.shortfall_bytes,
                    data_phase=step.phase,
                )
                drawing.add(
                    "text",
                    f"OOM: {gib(full.failure.shortfall_bytes)} GiB short",
                    x=px + 12,
                    y=py + 4,
                    class_="label",
                    fill=FAILED_COLOUR,
                )
            drawing.add(
                "circle",
                title=tooltip,
                cx=px,
                cy=py,
                r=5,
                fill=colour,
                class_="point",
                data_bytes=value,
                data_phase=step.phase,
                data_side=side,
            )
            big = abs(step.drop_bytes) >= LABELLED_SHARE * usable
            if len(timelines) == 1 and step.takes and not step.failed and big:
                sign = "−" if step.drop_bytes > 0 else "+"
                text = f"{sign}{gib(abs(step.drop_bytes))}: {step.label(1)}"
                late = i >= 0.6 * len(phases)  # right of the middle: the label goes left
                span = LABEL_CHAR_WIDTH * len(text)
                x0 = px - 8 - span if late else px + 8
                ly = py - 8
                # up by a line while it would overlap a label already drawn
                while any(a < x0 + span and x0 < b and abs(ly - y0) < 14 for a, b, y0 in placed):
                    ly -= 15
                placed.append((x0, x0 + span, ly))
                drawing.add(
                    "text",
                    text,
                    x=px - 8 if late else px + 8,
                    y=ly,
                    class_="label",
                    text_anchor="end" if late else "start",
                )
    return drawing


def _phase_label(phase: str, timelines: Sequence[Timeline]) -> str:
    for timeline in timelines:
        step = timeline.step(phase)
        if step is not None and step.failed and timeline.failure is not None:
            return f"OOM in {timeline.failure.phase_name}"
    return phase_name(phase)


def bars_drawing(bars: Sequence[Bar]) -> Drawing:
    """One horizontal bar per deployment, stacked by group, on one scale; a legend under it."""
    groups = [g for g in GROUP_ORDER if any(g in dict(b.parts) for b in bars)]
    left, right, top, row = 150, 24, 16, 46
    width = 960
    height = top + row * len(bars) + 30 + 22 * math.ceil(len(groups) / 4)
    drawing = Drawing(
        width, height, "where the usable memory went: " + " vs ".join(b.name for b in bars)
    )
    high = _nice_top(max((b.total for b in bars), default=0) / GIB)
    plot_w = width - left - right

    def x(value_gib: float) -> float:
        return left + plot_w * value_gib / high

    for index, bar in enumerate(bars):
        y0 = top + row * index
        name = bar.name if len(bar.name) <= 22 else "…" + bar.name[-21:]
        drawing.add("text", name, x=left - 8, y=y0 + 22, class_="tick", text_anchor="end")
        start = 0
        for group, value in bar.parts:
            share = value / bar.total if bar.total else 0
            x0, x1 = x(start / GIB), x((start + value) / GIB)
            drawing.add(
                "rect",
                title=f"{bar.name}: {group_label(group)}: {_bytes(value)}, {share:.1%} of the bar",
                x=x0,
                y=y0,
                width=max(0.5, x1 - x0),
                height=row - 12,
                fill=GROUP_COLOURS[group],
                class_="segment",
                data_bytes=value,
                data_group=group.value,
                data_bar=index,
            )
            if x1 - x0 > 56:
                drawing.add(
                    "text",
                    f"{group_label(group)} {value / GIB:.1f}",
                    x=x0 + 4,
                    y=y0 + 21,
                    class_="inbar",
                )
            start += value
        drawing.add(
            "text", f"{gib(bar.total)} GiB", x=x(start / GIB) + 4, y=y0 + 21, class_="label"
        )
    legend_y = top + row * len(bars) + 14
    for index, group in enumerate(groups):
        lx, ly = left + (index % 4) * 190, legend_y + 22 * (index // 4)
        drawing.add("rect", x=lx, y=ly, width=12, height=12, fill=GROUP_COLOURS[group])
        drawing.add("text", group_label(group), x=lx + 18, y=ly + 11, class_="tick")
    return drawing


STATUS_COLOURS = {True: "#e15759", False: "#59a14f"}


def budget_drawing(found: Sequence[Gauge], several_logs: bool) -> Drawing:
    """Each check as a share of its limit, a line at 100 %; a tooltip with actual and limit."""
    left, right, top, row = 300, 60, 28, 26
    width = 960
    height = top + row * len(found) + 30
    high = max(100.0, *(g.percent for g in found)) if found else 100.0
    high = _axis_end(high * 1.05, 5)
    drawing = Drawing(width, height, "each budget item as % of its limit")
    plot_w = width - left - right

    def x(percent: float) -> float:
        return left + plot_w * percent / high

    for tick in _ticks(0, high, 5):
        drawing.add("line", x1=x(tick), x2=x(tick), y1=top - 6, y2=height - 24, class_="grid")
        drawing.add(
            "text", f"{tick:g}%", x=x(tick), y=top - 10, class_="tick", text_anchor="middle"
        )
    for index, gauge in enumerate(found):
        y0 = top + row * index
        name = f"{gauge.item} ({gauge.bound})"
        if several_logs:
            name += " " + gauge.log.rsplit("/", 1)[-1]
        drawing.add("text", name, x=left - 8, y=y0 + 15, class_="tick", text_anchor="end")
        state = "breached" if gauge.breached else "within budget"
        drawing.add(
            "rect",
            title=(
                f"{gauge.item} on {gauge.log}: {_quantity(gauge.actual, gauge.size)} against "
                f"{gauge.bound} {_quantity(gauge.limit, gauge.size)} = {gauge.percent:.1f} % "
                f"({state})"
            ),
            x=left,
            y=y0 + 3,
            width=max(0.5, x(gauge.percent) - left),
            height=row - 8,
            fill=STATUS_COLOURS[gauge.breached],
            class_="gauge",
            data_percent=f"{gauge.percent:.1f}",
            data_item=gauge.item,
        )
        drawing.add(
            "text", f"{gauge.percent:.1f}%", x=x(gauge.percent) + 4, y=y0 + 15, class_="label"
        )
    drawing.add("line", x1=x(100), x2=x(100), y1=top - 6, y2=height - 24, class_="limit")
    drawing.add("text", "limit", x=x(100) + 4, y=height - 10, class_="note")
    return drawing


def _quantity(value: int | float, size: bool) -> str:
    if size:
        return _bytes(int(value))
    return f"{value:,}" if isinstance(value, int) else f"{value:.2f}"
