"""Renderers for `memledger check` reports: text, json, junit, github annotations, markdown.

Each renderer is a pure `CheckReport -> str`; writing files (the GitHub step summary included)
is the command's job. `breach_line` is THE one-line form of a breach, shared by the CLI text
output, the GitHub annotations and `memledger.testing.assert_budget`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from pathlib import PurePath

from memledger.budget import ItemKind, Quantity
from memledger.checking import Bound, Check, CheckReport, CheckStatus
from memledger.errors import CHECK_VERDICTS
from memledger.render.escape import terminal_text
from memledger.render.formats import Format, Formats
from memledger.render.tables import Table, github_table, markdown_cell, markdown_code, text_table
from memledger.render.terminal import PLAIN, Terminal, fit_lines
from memledger.units import GIB

CHECK_MARKER = "<!-- memledger-check -->"
"""Hidden marker at the top of the markdown report, so CI can find and update its own comment."""

STATUS_LABEL: dict[CheckStatus, str] = {
    CheckStatus.PASS: "PASS",
    CheckStatus.FAIL: "FAIL",
    CheckStatus.WARN: "WARN",
    CheckStatus.WAIVED: "WAIVED",
    CheckStatus.EXPIRED_WAIVER: "EXPIRED",
    CheckStatus.SKIPPED: "SKIP",
    CheckStatus.MISSING: "MISSING",
}


class CheckFormat(StrEnum):
    """Output formats of `memledger check` (their help: `FORMATS`)."""

    TEXT = "text"
    JSON = "json"
    JUNIT = "junit"
    GITHUB = "github"
    MARKDOWN = "markdown"


# ---------------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------------


def format_quantity(
    value: Quantity, kind: ItemKind, *, decimals: int = 2, sign: bool = False
) -> str:
    """A size as GiB (`7.19 GiB`) or a count with thousands separators (`45,000,000`)."""
    plus = "+" if sign else ""
    if kind is ItemKind.SIZE:
        if decimals > 6:
            return f"{int(value):{plus},} bytes"
        return f"{value / GIB:{plus}.{decimals}f} GiB"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):{plus},}"
    return f"{value:{plus}.{max(decimals, 3)}g}"


def _distinct_decimals(kind: ItemKind, *values: Quantity) -> int:
    # Print enough digits that values which differ do not look equal (size-limit's lesson).
    if kind is ItemKind.COUNT:
        return 2
    for decimals in range(2, 8):
        shown = {format_quantity(value, kind, decimals=decimals) for value in values}
        if len(shown) == len(set(values)):
            return decimals
    return 7


def _limit_text(check: Check, decimals: int) -> str:
    if check.bound is Bound.MAX_INCREASE:
        parts = []
        if check.limit is not None:
            parts.append(format_quantity(check.limit, check.kind, decimals=decimals, sign=True))
        if check.limit_pct is not None:
            parts.append(f"+{check.limit_pct:g}%")
        return "max_increase " + " and ".join(parts)
    assert check.limit is not None
    return f"{check.bound.value} {format_quantity(check.limit, check.kind, decimals=decimals)}"


def _increase_text(check: Check, decimals: int) -> str:
    assert check.increase is not None
    text = format_quantity(check.increase, check.kind, decimals=decimals, sign=True)
    if check.increase_pct is not None:
        text += f" ({check.increase_pct:+.1f}%)"
    assert check.baseline is not None
    return f"{text} vs baseline {format_quantity(check.baseline, check.kind, decimals=decimals)}"


def value_text(check: Check) -> str:
    """`actual OP limit (over by X)` for a check with a value."""
    if check.actual is None:
        return ""
    if check.bound is Bound.MAX_INCREASE:
        if check.increase is None:
            return format_quantity(check.actual, check.kind)
        values = [v for v in (check.increase, check.limit, check.baseline) if v is not None]
        decimals = _distinct_decimals(check.kind, *values)
        relation = ">" if check.breached else "<="
        return f"{_increase_text(check, decimals)} {relation} {_limit_text(check, decimals)}"
    assert check.limit is not None and check.margin is not None
    decimals = _distinct_decimals(check.kind, check.actual, check.limit)
    actual = format_quantity(check.actual, check.kind, decimals=decimals)
    if check.bound is Bound.MAX:
        relation = ">" if check.breached else "<="
    else:
        relation = "<" if check.breached else ">="
    return f"{actual} {relation} {_limit_text(check, decimals)}"


def margin_text(check: Check) -> str:
    """`over by X` / `short by X` for breaches, the headroom for passes, '' when unknown."""
    decimals = 2
    if (
        check.actual is not None
        and check.limit is not None
        and check.bound is not Bound.MAX_INCREASE
    ):
        decimals = _distinct_decimals(check.kind, check.actual, check.limit)
    if check.margin is None:
        if check.margin_pct is None:
            return ""
        return (
            f"over by {-check.margin_pct:.1f} points"
            if check.margin_pct < 0
            else f"{check.margin_pct:.1f} points to spare"
        )
    amount = format_quantity(abs(check.margin), check.kind, decimals=decimals)
    if check.margin >= 0:
        return amount
    return f"short by {amount}" if check.bound is Bound.MIN else f"over by {amount}"


def tighten_text(check: Check) -> str:
    """`could be tightened to max = "7.9 GiB"`, another hint of the check's, or ''."""
    if check.tighten_to is None:
        return check.hint or ""
    if check.kind is ItemKind.SIZE:
        gib = check.tighten_to / GIB
        value = f'"{gib:.{_hint_decimals(gib)}f} GiB"'
    else:
        value = format_quantity(check.tighten_to, check.kind).replace(",", "_")
    return f"could be tightened to {check.bound.value} = {value}"


def _hint_decimals(gib: float) -> int:
    for decimals in range(0, 7):
        if abs(round(gib, decimals) - gib) < 1e-9:
            return decimals
    return 6


# ---------------------------------------------------------------------------------------------
# The one-line breach message
# ---------------------------------------------------------------------------------------------


def breach_line(check: Check) -> str:
    """One line per breach or missing item: status, item, log, actual vs limit, margin, message."""
    head = f"{STATUS_LABEL[check.status]} {check.item} [{check.log}]"
    if check.status is CheckStatus.MISSING or check.actual is None:
        return f"{head}: {check.note or 'no value'}"
    parts = [f"{head}: {value_text(check)}"]
    margin = margin_text(check)
    if margin and check.breached:
        parts[0] += f" ({margin})"
    if check.status is CheckStatus.WAIVED:
        parts.append(f"waived until {check.waived_until}: {check.reason}")
    elif check.status is CheckStatus.EXPIRED_WAIVER:
        parts.append(f"waiver expired {check.waived_until} ({check.reason})")
    elif check.status is CheckStatus.SKIPPED and check.note:
        parts.append(check.note)
    if check.message and check.breached:
        parts.append(check.message)
    return " -- ".join(parts)


def headline(report: CheckReport) -> str:
    """One line: the verdict, the exit code and the count of each outcome."""
    verdict = CHECK_VERDICTS[report.exit_code]
    counts = report.counts
    parts = [
        f"{counts[status.value]} {HEADLINE_WORDS[status]}"
        for status in HEADLINE_WORDS
        if counts[status.value]
    ]
    total = len(report.checks)
    logs = len(report.inputs)
    return (
        f"memledger check: {verdict} (exit {report.exit_code}) -- {', '.join(parts) or 'nothing'}"
        f" of {total} check{'s' if total != 1 else ''} on {logs} log{'s' if logs != 1 else ''}"
        f"; budget {report.budget_path}"
    )


HEADLINE_WORDS: dict[CheckStatus, str] = {
    CheckStatus.MISSING: "not provided by the log",
    CheckStatus.FAIL: "failed",
    CheckStatus.EXPIRED_WAIVER: "waiver expired",
    CheckStatus.WARN: "warned",
    CheckStatus.WAIVED: "waived",
    CheckStatus.PASS: "passed",
    CheckStatus.SKIPPED: "not compared",
}


# ---------------------------------------------------------------------------------------------
# Formats
# ---------------------------------------------------------------------------------------------


CHECK_MAX_CHARS = 60_000
"""`check --format markdown`'s default size cap, as `diff`'s (GitHub: 65,536 characters)."""

BRIEF_PASSES, BRIEF_SKIPPED = 5, 3
"""Passes (the closest to their limit) and not-compared checks the short text view lists."""


@dataclass(frozen=True)
class CheckView:
    """Text options: the terminal, and whether every pass and skip is listed (`--full`)."""

    terminal: Terminal = PLAIN
    full: bool = False


def _closeness(check: Check) -> float:
    """How close a pass is to its limit: its headroom as a share of the limit (smaller first)."""
    if check.margin is not None and check.limit:
        return abs(check.margin) / abs(check.limit)
    if check.margin_pct is not None and check.limit_pct:
        return abs(check.margin_pct) / abs(check.limit_pct)
    return float("inf")


def render_text(report: CheckReport, terminal: Terminal = PLAIN, *, full: bool = False) -> str:
    """Breaches first (one line each), then passes with their headroom, then notes; fitted to
    the terminal's width, FAIL and WARN coloured on a colour terminal. Without `full`, only the
    passes closest to their limit and the first not-compared checks are listed, with counts."""
    lines = [headline(report)]
    lines.extend(f"warning: {warning}" for warning in report.warnings)
    lines.extend(breach_line(check) for check in report.breaches())
    checks = report.passes()
    if checks:
        shown = checks if full else sorted(checks, key=_closeness)[:BRIEF_PASSES]
        order = {id(check): i for i, check in enumerate(checks)}
        shown = sorted(shown, key=lambda check: order[id(check)])  # in budget order
        rows = [[check.item, check.log, value_text(check), margin_text(check)] for check in shown]
        lines.append("")
        if len(shown) == len(checks):
            lines.append(f"within budget ({len(checks)}):")
        else:
            lines.append(
                f"within budget ({len(checks)}; the {len(shown)} closest to their limit, "
                "--full lists all):"
            )
        headers = ["item", "log", "actual vs limit", "headroom"]
        table = Table(headers, rows, keep=(0, 2, 3))  # the log's path gives way first
        lines.extend(
            "  " + row.rstrip()
            for row in text_table(table, style="plain", width=terminal.width - 2).splitlines()
        )
        # hints under the table, whole: a cut "could be tightened to m…" says nothing
        lines.extend(
            f"  hint {check.item} [{check.log}]: {tighten_text(check)}"
            for check in shown
            if tighten_text(check)
        )
    skipped = report.skipped()
    if skipped:
        listed = skipped if full else skipped[:BRIEF_SKIPPED]
        more = "" if len(listed) == len(skipped) else f"; the first {len(listed)}, --full lists all"
        lines.append("")
        lines.append(f"not compared ({len(skipped)}{more}):")
        lines.extend(f"  {check.item} [{check.log}]: {check.note}" for check in listed)
    lines.extend(_context_lines(report))
    return fit_lines("\n".join(lines), terminal.width) + "\n"


def _context_lines(report: CheckReport) -> list[str]:
    lines = [""]
    baseline = report.baseline
    if baseline.source is not None:
        lines.append(
            f"baseline: {baseline.path or baseline.source.path} "
            f"(startup {baseline.source.startup}, rank {baseline.source.rank})"
        )
    lines.extend(f"note: {note}" for note in report.notes)
    return lines if len(lines) > 1 else []


def render_json(report: CheckReport) -> str:
    """The full report (pydantic, versioned): budget, actual, margin and status per check."""
    return report.model_dump_json(indent=2) + "\n"


def _classname(log: str) -> str:
    return "memledger." + PurePath(log).name.replace(".", "_")


def render_junit(report: CheckReport) -> str:
    """JUnit XML: one testsuite per log, one testcase per check."""
    suites = ET.Element("testsuites", name="memledger check")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    logs = [checked.path for checked in report.inputs]
    for log in logs:
        checks = [check for check in report.checks if check.log == log]
        suite = ET.SubElement(suites, "testsuite", name=f"memledger check: {log}")
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="budget", value=report.budget_path)
        for warning in report.warnings:
            ET.SubElement(properties, "property", name="warning", value=warning)
        if report.baseline.source is not None:
            ET.SubElement(
                properties,
                "property",
                name="baseline",
                value=report.baseline.path or report.baseline.source.path,
            )
        counts = {"tests": len(checks), "failures": 0, "errors": 0, "skipped": 0}
        for check in checks:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=_classname(log),
                name=f"{check.item} {check.bound.value}",
            )
            kind = _junit_outcome(report, check)
            if kind == "failure":
                counts["failures"] += 1
                element = ET.SubElement(
                    case, "failure", message=breach_line(check), type=check.status.value
                )
                element.text = breach_line(check)
            elif kind == "error":
                counts["errors"] += 1
                element = ET.SubElement(case, "error", message=breach_line(check), type="missing")
                element.text = breach_line(check)
            elif kind == "skipped":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=breach_line(check))
            else:
                out = breach_line(check) if check.breached else tighten_text(check)
                if out:
                    ET.SubElement(case, "system-out").text = out
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _junit_outcome(report: CheckReport, check: Check) -> str:
    if check.status is CheckStatus.MISSING:
        return "error"
    if report.is_failing(check):
        return "failure"
    if check.status in {CheckStatus.SKIPPED, CheckStatus.WAIVED}:
        return "skipped"
    return "passed"


def escape_data(text: str) -> str:
    """Escape a workflow-command message (GitHub: %, CR and LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow-command property value (GitHub: also ':' and ',')."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(command: str, message: str, *, file: str, line: int | None, title: str) -> str:
    """`::command file=F,line=L,title=T::message`, escaped as GitHub's workflow commands require."""
    properties = [f"file={escape_property(file)}"]
    if line is not None:
        properties.append(f"line={line}")
    properties.append(f"title={escape_property(title)}")
    return f"::{command} {','.join(properties)}::{escape_data(message)}"


def render_github(report: CheckReport) -> str:
    """Workflow annotations on the budget file's entries, then the text report for the log."""
    lines: list[str] = []
    for check in report.breaches():
        if check.status is CheckStatus.MISSING or report.is_failing(check):
            command = "error"
        elif check.status is CheckStatus.WAIVED:
            command = "notice"
        else:
            command = "warning"
        lines.append(
            annotation(
                command,
                breach_line(check),
                file=report.budget_path,
                line=check.budget_line,
                title=f"memledger: {check.item} {STATUS_LABEL[check.status].lower()}",
            )
        )
    # Fail-open cases are warnings in the job, not only a note at the end of the text: a
    # baseline that did not download, a budget entry that applies to no given log.
    if report.baseline.source is None and report.skipped():
        note = report.baseline.note or "no baseline: relative limits not compared"
        lines.append(
            annotation(
                "warning",
                note,
                file=report.budget_path,
                line=None,
                title="memledger: relative limits not compared",
            )
        )
    if not report.checks:
        lines.append(
            annotation(
                "error",
                "no budget entry applies to the given logs: nothing was checked",
                file=report.budget_path,
                line=None,
                title="memledger: nothing checked",
            )
        )
    # a --baseline given but not found, when the warning above did not already say it
    covered = report.baseline.source is None and bool(report.skipped())
    lines.extend(
        annotation(
            "warning",
            warning,
            file=report.budget_path,
            line=None,
            title="memledger: baseline not found",
        )
        for warning in report.warnings
        if not (covered and warning == report.baseline.note)
    )
    # The text after the annotations is untrusted text too: none of its lines may start a
    # workflow command (a saved ledger's strings can hold newlines).
    text = terminal_text(render_text(report, full=True))
    return "\n".join(lines) + ("\n" if lines else "") + text


_STATUS_ICON = {
    CheckStatus.FAIL: "❌ fail",
    CheckStatus.EXPIRED_WAIVER: "❌ waiver expired",
    CheckStatus.WARN: "⚠️ warn",
    CheckStatus.WAIVED: "🟦 waived",
    CheckStatus.MISSING: "❓ missing",
    CheckStatus.PASS: "✅ pass",
    CheckStatus.SKIPPED: "➖ skipped",
}


def render_markdown(report: CheckReport, max_chars: int | None = None) -> str:
    """A PR-comment / step-summary report: marker, headline, breaches table, passes in details.

    With `max_chars`, the report fits in that many characters: the passes and the not-compared
    list give way first (named by count), then breach rows from the end; the marker and the
    headline are never cut.
    """
    icon = {0: "✅", 1: "❌", 3: "❓"}[report.exit_code]
    top = [CHECK_MARKER, f"### {icon} {markdown_cell(headline(report))}", ""]
    top += [f"> ⚠️ {markdown_cell(warning)}\n" for warning in report.warnings]
    breach_rows = [_breach_row(check) for check in report.breaches()]
    passes = [
        [check.item, check.log, value_text(check), margin_text(check), tighten_text(check)]
        for check in report.passes()
    ]
    skipped = report.skipped()
    context = [
        line[len("note: ") :] if line.startswith("note: ") else line
        for line in _context_lines(report)
        if line
    ]
    footer = [f"_{markdown_cell(line)}_  " for line in context]

    def assemble(n_breaches: int, details: bool) -> str:
        lines = list(top)
        if breach_rows:
            headers = ["Status", "Item", "Log", "Actual vs limit", "Margin", "Note"]
            shown = breach_rows[:n_breaches]
            lines.append(github_table(Table(headers, shown, code=(1, 2))))
            if n_breaches < len(breach_rows):
                lines.append(
                    f"_... {len(breach_rows) - n_breaches} more breaches not shown (size cap): "
                    "`memledger check --format text` lists them all_"
                )
            lines.append("")
        if details:
            lines.extend(_details_sections(passes, skipped))
        elif passes or skipped:
            lines.append(
                f"_{len(passes)} within budget and {len(skipped)} not compared: "
                "not listed (size cap)_"
            )
            lines.append("")
        lines.extend(footer)
        return "\n".join(lines).rstrip() + "\n"

    text = assemble(len(breach_rows), details=True)
    if max_chars is None or len(text) <= max_chars:
        return text
    text = assemble(len(breach_rows), details=False)
    if len(text) <= max_chars:
        return text
    fits, cut = 0, len(breach_rows)  # the most rows that fit: assemble(fits) fits, (cut) not
    while cut - fits > 1:
        middle = (fits + cut) // 2
        fits, cut = (middle, cut) if len(assemble(middle, False)) <= max_chars else (fits, middle)
    return assemble(fits, details=False)


def _breach_row(check: Check) -> list[str]:
    detail = check.message or ""
    if check.status is CheckStatus.WAIVED:
        detail = f"waived until {check.waived_until}: {check.reason}"
    elif check.status is CheckStatus.EXPIRED_WAIVER:
        detail = f"waiver expired {check.waived_until} ({check.reason}) {detail}".strip()
    elif check.status is CheckStatus.MISSING or check.bound is Bound.READY:
        detail = check.note or ""
    return [
        _STATUS_ICON[check.status],
        check.item,
        check.log,
        value_text(check),
        margin_text(check),
        detail,
    ]


def _details_sections(passes: list[list[str]], skipped: list[Check]) -> list[str]:
    lines: list[str] = []
    if passes:
        lines.append(f"<details><summary>Within budget ({len(passes)})</summary>")
        lines.append("")
        headers = ["Item", "Log", "Actual vs limit", "Headroom", "Hint"]
        lines.append(github_table(Table(headers, passes, code=(0, 1))))
        lines.append("")
        lines.append("</details>")
        lines.append("")
    if skipped:
        lines.append(f"<details><summary>Not compared ({len(skipped)})</summary>")
        lines.append("")
        lines.extend(
            f"- {markdown_code(c.item)} ({markdown_code(c.log)}): {markdown_cell(c.note or '')}"
            for c in skipped
        )
        lines.append("")
        lines.append("</details>")
        lines.append("")
    return lines


def _text_renderer(view: CheckView) -> Callable[[CheckReport], str]:
    return partial(render_text, terminal=view.terminal, full=view.full)


FORMATS: Formats[CheckFormat, CheckView | None, CheckReport] = Formats(
    CheckFormat,
    {
        CheckFormat.TEXT: Format(
            lambda view: _text_renderer(view or CheckView()),
            "breaches first, then the passes closest to their limit (--full: every pass)",
        ),
        CheckFormat.JSON: Format(lambda _: render_json, "the full report"),
        CheckFormat.JUNIT: Format(lambda _: render_junit, "JUnit XML for CI test reports"),
        CheckFormat.GITHUB: Format(
            lambda _: render_github,
            "workflow annotations, plus the markdown report appended to $GITHUB_STEP_SUMMARY",
        ),
        CheckFormat.MARKDOWN: Format(lambda _: render_markdown, "a pull-request comment"),
    },
)
"""The registry `memledger check --format` comes from."""


def check_format(name: str) -> CheckFormat:
    """The check format called `name`; ConfigError listing the choices otherwise."""
    return FORMATS.pick(name)


def render_check(
    report: CheckReport, fmt: CheckFormat | str = CheckFormat.TEXT, *, full: bool = False
) -> str:
    """Render a check report in one of the formats (`full`: every pass in text)."""
    return FORMATS.renderer(fmt, CheckView(PLAIN, full))(report)
