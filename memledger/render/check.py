"""Renderers for `memledger check` reports: text, json, junit, github annotations, markdown.

Each renderer reads `CheckResults` (`memledger.checking.results`: the API's in-memory report, or
the CLI's spooled one) one check at a time and yields the report in pieces of whole lines, so
`memledger check` over 10,000 logs writes its report as it reads it back, in memory that does
not grow with the number of logs. `FORMATS` gives the `CheckReport -> str` renderers of the API
and the tests; `check_stream` the CLI's streaming ones; both run the same code. Writing files
(the GitHub step summary included) is the command's job. `breach_line` is THE one-line form of
a breach, shared by the CLI text output, the GitHub annotations and
`memledger.testing.assert_budget`.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from itertools import islice
from pathlib import PurePath

from memledger.checking.results import CheckResults, results_of
from memledger.errors import CHECK_VERDICTS
from memledger.model.check import Bound, Check, CheckReport, CheckStatus, ItemKind, Quantity
from memledger.render.escape import finish, one_line, terminal_text
from memledger.render.formats import Format, Formats, pieces
from memledger.render.tables import (
    TABLE_ROWS,
    Table,
    github_table,
    markdown_cell,
    markdown_code,
    text_table,
    text_table_in_chunks,
)
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
    HTML = "html"


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
    head = f"{STATUS_LABEL[check.status]} {check.item} [{one_line(check.log)}]"
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
    if check.depends_on:
        parts.append(check.depends_on)
    return " -- ".join(parts)


def headline(report: CheckReport | CheckResults) -> str:
    """One line: the verdict, the exit code and the count of each outcome."""
    results = results_of(report)
    verdict = CHECK_VERDICTS[results.exit_code]
    counts = results.counts
    parts = [
        f"{counts[status.value]} {HEADLINE_WORDS[status]}"
        for status in HEADLINE_WORDS
        if counts[status.value]
    ]
    total = results.n_checks
    logs = results.n_inputs
    return (
        f"memledger check: {verdict} (exit {results.exit_code}) -- "
        f"{', '.join(parts) or 'nothing'}"
        f" of {total} check{'s' if total != 1 else ''} on {logs} log{'s' if logs != 1 else ''}"
        f"; budget {results.budget_path}"
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


def pass_row(check: Check) -> list[str]:
    """A pass as the text table shows it: item, log, actual vs limit, headroom."""
    return [check.item, one_line(check.log), value_text(check), margin_text(check)]


_PASS_HEADERS = ["item", "log", "actual vs limit", "headroom"]
_PASS_KEEP = (0, 2, 3)  # the log's path gives way first


def _table_lines(rows: Callable[[], Iterator[list[str]]], width: int) -> Iterator[str]:
    """The table of passes as `text_table` lays it out, read twice from `rows` when long (more
    than `TABLE_ROWS`, a fleet's `--full` report): the widest cell of each column, then the
    rows a chunk at a time (`text_table_in_chunks`)."""
    first = list(islice(rows(), TABLE_ROWS + 1))
    if len(first) <= TABLE_ROWS:
        table = Table(_PASS_HEADERS, first, keep=_PASS_KEEP)
        yield from text_table(table, style="plain", width=width).splitlines()
        return
    widest = [0] * len(_PASS_HEADERS)
    for row in rows():
        widest = [max(w, len(cell)) for w, cell in zip(widest, row, strict=True)]
    yield from text_table_in_chunks(
        lambda chunk: Table(_PASS_HEADERS, chunk, keep=_PASS_KEEP),
        ["x" * w for w in widest],
        rows(),
        style="plain",
        width=width,
    )


def text_lines(results: CheckResults, width: int, *, full: bool = False) -> Iterator[str]:
    """The text report's lines (unfitted; `render_text` fits them): breaches first (one line
    each), then passes with their headroom, then notes. Without `full`, only the passes closest
    to their limit and the first not-compared checks are listed, with counts."""
    yield headline(results)
    yield from (f"warning: {warning}" for warning in results.warnings)
    yield from (breach_line(check) for check in results.breaches())
    n_passes = results.counts[CheckStatus.PASS.value]
    if n_passes:
        shown = None if full else results.closest_passes(BRIEF_PASSES)

        def listed() -> Iterator[Check]:
            return results.passes() if shown is None else iter(shown)

        yield ""
        if shown is None or len(shown) == n_passes:
            yield f"within budget ({n_passes}):"
        else:
            yield (
                f"within budget ({n_passes}; the {len(shown)} closest to their limit, "
                "--full lists all):"
            )
        table = _table_lines(lambda: (pass_row(check) for check in listed()), width - 2)
        yield from ("  " + row.rstrip() for row in table)
        # hints under the table, whole: a cut "could be tightened to m…" says nothing
        for check in listed():
            hint = tighten_text(check)
            if hint:
                yield f"  hint {check.item} [{one_line(check.log)}]: {hint}"
            if check.depends_on:
                yield f"  input {check.item} [{one_line(check.log)}]: {check.depends_on}"
    n_skipped = results.counts[CheckStatus.SKIPPED.value]
    if n_skipped:
        n_listed = n_skipped if full else min(n_skipped, BRIEF_SKIPPED)
        more = "" if n_listed == n_skipped else f"; the first {n_listed}, --full lists all"
        yield ""
        yield f"not compared ({n_skipped}{more}):"
        for check in islice(results.skipped(), n_listed):
            yield f"  {check.item} [{one_line(check.log)}]: {check.note}"
    yield from context_lines(results)


def text_chunks(
    results: CheckResults, terminal: Terminal = PLAIN, *, full: bool = False
) -> Iterator[str]:
    """`text_lines` fitted to the terminal's width, as newline-ended lines."""
    for line in text_lines(results, terminal.width, full=full):
        yield fit_lines(line, terminal.width) + "\n"


def render_text(
    report: CheckReport | CheckResults, terminal: Terminal = PLAIN, *, full: bool = False
) -> str:
    """The text report (`text_lines`) fitted to the terminal's width."""
    return "".join(text_chunks(results_of(report), terminal, full=full))


def context_lines(results: CheckResults) -> list[str]:
    """A blank line, the baseline compared against and the notes (nothing when neither)."""
    lines = [""]
    baseline = results.baseline
    if baseline.source is not None:
        lines.append(
            f"baseline: {baseline.path or baseline.source.path} "
            f"(startup {baseline.source.startup}, rank {baseline.source.rank})"
        )
    lines.extend(f"note: {note}" for note in results.notes)
    return lines if len(lines) > 1 else []


# --- the CI formats: JSON, JUnit XML, GitHub workflow annotations ---------------------------


def json_chunks(results: CheckResults) -> Iterator[str]:
    """The full report (pydantic, versioned): budget, actual, margin and status per check."""
    return results.json_chunks()


def _classname(log: str) -> str:
    return "memledger." + PurePath(log).name.replace(".", "_")


_JUNIT_COUNTS = ("tests", "failures", "errors", "skipped")


def junit_chunks(results: CheckResults) -> Iterator[str]:
    """JUnit XML: one testsuite per log, one testcase per check. The suites are written to a
    private temporary file as they are built: the totals on `<testsuites>` come first."""
    totals = dict.fromkeys(_JUNIT_COUNTS, 0)
    with tempfile.TemporaryFile("w+", encoding="utf-8") as suites:
        previous: ET.Element | None = None
        for checked, checks in results.by_log():
            suite = _suite(results, checked.path, checks)
            for key in _JUNIT_COUNTS:
                totals[key] += int(suite.get(key, "0"))
            if previous is not None:
                previous.tail = "\n  "
                suites.write(ET.tostring(previous, encoding="unicode"))
            previous = suite
        root = ET.Element("testsuites", name="memledger check")
        for key, value in totals.items():
            root.set(key, str(value))
        if previous is None:
            yield ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
            return
        previous.tail = "\n"
        suites.write(ET.tostring(previous, encoding="unicode"))
        root.text = "\n  "
        opening = ET.tostring(root, encoding="unicode", xml_declaration=True)
        yield opening[: opening.rindex("</testsuites>")].rstrip(" ") + "  "
        suites.seek(0)
        yield from suites
        yield "</testsuites>\n"


def _suite(results: CheckResults, log: str, checks: list[Check]) -> ET.Element:
    """One log's testsuite, indented as `ET.indent` indents it under `<testsuites>`."""
    suite = ET.Element("testsuite", name=f"memledger check: {log}")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="budget", value=results.budget_path)
    for warning in results.warnings:
        ET.SubElement(properties, "property", name="warning", value=warning)
    baseline = results.baseline
    if baseline.source is not None:
        ET.SubElement(
            properties, "property", name="baseline", value=baseline.path or baseline.source.path
        )
    counts = {"tests": len(checks), "failures": 0, "errors": 0, "skipped": 0}
    for check in checks:
        case = ET.SubElement(
            suite, "testcase", classname=_classname(log), name=f"{check.item} {check.bound.value}"
        )
        kind = _junit_outcome(results, check)
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
    ET.indent(suite, level=1)
    return suite


def _junit_outcome(results: CheckResults, check: Check) -> str:
    if check.status is CheckStatus.MISSING:
        return "error"
    if results.is_failing(check):
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


def github_chunks(results: CheckResults) -> Iterator[str]:
    """Workflow annotations on the budget file's entries, then the text report for the log."""
    budget = results.budget_path
    for check in results.breaches():
        if check.status is CheckStatus.MISSING or results.is_failing(check):
            command = "error"
        elif check.status is CheckStatus.WAIVED:
            command = "notice"
        else:
            command = "warning"
        title = f"memledger: {check.item} {STATUS_LABEL[check.status].lower()}"
        line = annotation(
            command, breach_line(check), file=budget, line=check.budget_line, title=title
        )
        yield line + "\n"
    # Fail-open cases are warnings in the job, not only a note at the end of the text: a
    # baseline that did not download, a budget entry that applies to no given log. No --baseline
    # at all (a push to main: nothing to compare with) is a notice: the run asked for none.
    skipped = bool(results.counts[CheckStatus.SKIPPED.value])
    if results.baseline.source is None and skipped:
        note = results.baseline.note or "no baseline: relative limits not compared"
        title = "memledger: relative limits not compared"
        command = "notice" if results.baseline.path is None else "warning"
        yield annotation(command, note, file=budget, line=None, title=title) + "\n"
    if not results.n_checks:
        message = "no budget entry applies to the given logs: nothing was checked"
        title = "memledger: nothing checked"
        yield annotation("error", message, file=budget, line=None, title=title) + "\n"
    # a --baseline given but not found, when the warning above did not already say it
    covered = results.baseline.source is None and skipped
    for warning in results.warnings:
        if not (covered and warning == results.baseline.note):
            title = (
                "memledger: figures computed with different inputs"
                if warning.startswith("budget for ")
                else "memledger: baseline not found"
            )
            yield annotation("warning", warning, file=budget, line=None, title=title) + "\n"
    # The text after the annotations is untrusted text too: none of its lines may start a
    # workflow command (a saved ledger's strings can hold newlines).
    yield from (terminal_text(line) for line in text_chunks(results, full=True))


# --- markdown: a pull-request comment (and the GitHub step summary) --------------------------

_STATUS_ICON = {
    CheckStatus.FAIL: "❌ fail",
    CheckStatus.EXPIRED_WAIVER: "❌ waiver expired",
    CheckStatus.WARN: "⚠️ warn",
    CheckStatus.WAIVED: "🟦 waived",
    CheckStatus.MISSING: "❓ missing",
    CheckStatus.PASS: "✅ pass",
    CheckStatus.SKIPPED: "➖ skipped",
}
_BREACH_HEADERS = ["Status", "Item", "Log", "Actual vs limit", "Margin", "Note"]
_BREACH_CODE = (1, 2)
_DETAIL_HEADERS = ["Item", "Log", "Actual vs limit", "Headroom", "Hint"]
_DETAIL_CODE = (0, 1)


def _table_head(headers: list[str]) -> str:
    return github_table(Table(headers, []))


def _table_row(headers: list[str], row: list[str], code: tuple[int, ...]) -> str:
    return github_table(Table(headers, [row], code=code)).split("\n", 2)[2]


def _joined(lines: Iterable[str]) -> Iterator[str]:
    """`"\\n".join(lines).rstrip() + "\\n"`, without holding the lines."""
    pending, first = "", True
    for line in lines:
        piece = line if first else "\n" + line
        first = False
        kept = piece.rstrip()
        if kept:
            yield pending + kept
            pending = piece[len(kept) :]
        else:
            pending += piece
    yield "\n"


def render_markdown(report: CheckReport | CheckResults, max_chars: int | None = None) -> str:
    """A PR-comment / step-summary report (`markdown_chunks`), whole."""
    return "".join(markdown_chunks(results_of(report), max_chars))


def markdown_chunks(results: CheckResults, max_chars: int | None = None) -> Iterator[str]:
    """A PR-comment / step-summary report: marker, headline, breaches table, passes in details.

    With `max_chars`, the report fits in that many characters: the passes and the not-compared
    list give way first (named by count), then breach rows from the end; the marker and the
    headline are never cut. Under a cap at most `max_chars` characters of rows are held; without
    one, the report is written as it is read.
    """
    icon = {0: "✅", 1: "❌", 3: "❓"}[results.exit_code]
    top = [CHECK_MARKER, f"### {icon} {markdown_cell(headline(results))}", ""]
    top += [f"> ⚠️ {markdown_cell(warning)}\n" for warning in results.warnings]
    n_breaches = sum(results.counts[status.value] for status in BREACH_LISTED)
    n_passes = results.counts[CheckStatus.PASS.value]
    n_skipped = results.counts[CheckStatus.SKIPPED.value]
    context = [
        line[len("note: ") :] if line.startswith("note: ") else line
        for line in context_lines(results)
        if line
    ]
    footer = [f"_{markdown_cell(line)}_  " for line in context]
    chart = _chart(results)

    def assemble(rows: Iterable[list[str]], n_shown: int, details: bool) -> Iterator[str]:
        yield from top
        if n_breaches:
            yield _table_head(_BREACH_HEADERS)
            yield from (_table_row(_BREACH_HEADERS, row, _BREACH_CODE) for row in rows)
            if n_shown < n_breaches:
                yield (
                    f"_... {n_breaches - n_shown} more breaches not shown (size cap): "
                    "`memledger check --format text` lists them all_"
                )
            yield ""
        if details:  # the chart gives way with the passes under a size cap
            yield from chart
            yield from _details_sections(results, n_passes, n_skipped)
        elif n_passes or n_skipped:
            yield f"_{n_passes} within budget and {n_skipped} not compared: not listed (size cap)_"
            yield ""
        yield from footer

    every_row = (_breach_row(check) for check in results.breaches())
    if max_chars is None:
        yield from _joined(assemble(every_row, n_breaches, details=True))
        return
    # Rows beyond the first max_chars characters of them can never be shown: hold only those.
    rows: list[list[str]] = []
    size = 0
    for row in every_row:
        rows.append(row)
        size += len(_table_row(_BREACH_HEADERS, row, _BREACH_CODE)) + 1
        if size > max_chars:
            break
    if len(rows) == n_breaches:
        whole, size = [], 0
        for piece in _joined(assemble(rows, n_breaches, details=True)):
            whole.append(piece)
            size += len(piece)
            if size > max_chars:
                break
        else:
            yield from whole
            return
        text = "".join(_joined(assemble(rows, n_breaches, details=False)))
        if len(text) <= max_chars:
            yield text
            return

    def brief(n: int) -> str:
        return "".join(_joined(assemble(rows[:n], n, details=False)))

    fits, cut = 0, len(rows)  # the most rows that fit: brief(fits) fits, brief(cut) not
    while cut - fits > 1:
        middle = (fits + cut) // 2
        fits, cut = (middle, cut) if len(brief(middle)) <= max_chars else (fits, middle)
    yield brief(fits)


def _chart(results: CheckResults) -> list[str]:
    """Each budget item against its limit (Mermaid), for a run of at most `MAX_GAUGES` checks."""
    from memledger.render.mermaid import budget_chart, budget_legend
    from memledger.render.timeline import MAX_GAUGES, gauges

    if results.n_checks > MAX_GAUGES:
        return []
    found = gauges([*results.breaches(), *results.passes()])
    if not found:
        return []
    return [budget_chart(found, results.n_inputs > 1), "", f"_{budget_legend()}_", ""]


BREACH_LISTED = (
    CheckStatus.MISSING,
    CheckStatus.FAIL,
    CheckStatus.EXPIRED_WAIVER,
    CheckStatus.WARN,
    CheckStatus.WAIVED,
)
"""The statuses `CheckResults.breaches` lists."""


def _breach_row(check: Check) -> list[str]:
    detail = check.message or ""
    if check.status is CheckStatus.WAIVED:
        detail = f"waived until {check.waived_until}: {check.reason}"
    elif check.status is CheckStatus.EXPIRED_WAIVER:
        detail = f"waiver expired {check.waived_until} ({check.reason}) {detail}".strip()
    elif check.status is CheckStatus.MISSING or check.bound is Bound.READY:
        detail = check.note or ""
    if check.depends_on:
        detail = f"{detail} ({check.depends_on})".strip()
    return [
        _STATUS_ICON[check.status],
        check.item,
        check.log,
        value_text(check),
        margin_text(check),
        detail,
    ]


def _details_sections(results: CheckResults, n_passes: int, n_skipped: int) -> Iterator[str]:
    if n_passes:
        yield f"<details><summary>Within budget ({n_passes})</summary>"
        yield ""
        yield _table_head(_DETAIL_HEADERS)
        for check in results.passes():
            hint = " ".join(filter(None, (tighten_text(check), check.depends_on)))
            row = [*pass_row(check), hint]
            yield _table_row(_DETAIL_HEADERS, row, _DETAIL_CODE)
        yield ""
        yield "</details>"
        yield ""
    if n_skipped:
        yield f"<details><summary>Not compared ({n_skipped})</summary>"
        yield ""
        yield from (
            f"- {markdown_code(c.item)} ({markdown_code(c.log)}): {markdown_cell(c.note or '')}"
            for c in results.skipped()
        )
        yield ""
        yield "</details>"
        yield ""


Stream = Callable[[CheckResults], Iterator[str]]
"""A streaming renderer: the report in pieces of whole lines."""


def _streams(view: CheckView, max_chars: int | None) -> dict[CheckFormat, Stream]:
    return {
        CheckFormat.TEXT: lambda results: text_chunks(results, view.terminal, full=view.full),
        CheckFormat.JSON: json_chunks,
        CheckFormat.JUNIT: junit_chunks,
        CheckFormat.GITHUB: github_chunks,
        CheckFormat.MARKDOWN: lambda results: markdown_chunks(results, max_chars),
        CheckFormat.HTML: _html_chunks,
    }


def render_html(results: CheckResults) -> str:
    """A check run: the verdict, each budget item against its limit, then every check."""
    from memledger.render.html import Chart, page
    from memledger.render.svg import budget_drawing
    from memledger.render.timeline import MAX_GAUGES, gauges

    checks = [*results.breaches(), *results.passes(), *results.skipped()]
    charts: list[Chart] = []
    found = gauges(checks) if results.n_checks <= MAX_GAUGES else []
    if found:
        charts.append(
            Chart(
                "Each budget item against its limit",
                budget_drawing(found, results.n_inputs > 1),
                [
                    "Bars are each value as % of its limit (100 % = the limit, red line): a max "
                    "limit passes under it, a min limit over it; red: breached, green: within.",
                ],
            )
        )
    table = Table(
        headers=["status", "item", "log", "actual vs limit", "margin", "message / note"],
        rows=[
            [
                STATUS_LABEL[c.status],
                c.item,
                c.log,
                value_text(c),
                margin_text(c),
                (c.message if c.breached else None) or c.note or c.hint or "",
            ]
            for c in checks
        ],
        title="Every check",
    )
    return page(
        title=f"memledger check: {results.budget_path}",
        verdict=headline(results),
        bad=results.exit_code != 0,
        facts=[],
        charts=charts,
        tables=[table],
        notes=[line for line in context_lines(results) if line],
    )


def _html_chunks(results: CheckResults) -> Iterator[str]:
    yield render_html(results)


def check_stream(
    fmt: CheckFormat | str, view: CheckView | None = None, max_chars: int | None = None
) -> Stream:
    """The streaming renderer of a format: its output in pieces of whole lines, each passed
    through the format's escaping; text is coloured for a colour terminal."""
    member = FORMATS.pick(fmt)
    view = view or CheckView()
    make = _streams(view, max_chars)[member]
    destination = FORMATS.destinations[member]
    colour = member is CheckFormat.TEXT and view.terminal.colour

    def stream(results: CheckResults) -> Iterator[str]:
        for piece in pieces(make(results)):
            text = finish(destination, piece)
            yield view.terminal.colourise(text) if colour else text

    return stream


def _whole(fmt: CheckFormat) -> Callable[[CheckView | None], Callable[[CheckReport], str]]:
    def make(view: CheckView | None) -> Callable[[CheckReport], str]:
        render = _streams(view or CheckView(), None)[fmt]
        return lambda report: "".join(render(results_of(report)))

    return make


FORMATS: Formats[CheckFormat, CheckView | None, CheckReport] = Formats(
    CheckFormat,
    {
        CheckFormat.TEXT: Format(
            _whole(CheckFormat.TEXT),
            "breaches first, then the passes closest to their limit (--full: every pass)",
        ),
        CheckFormat.JSON: Format(_whole(CheckFormat.JSON), "the full report"),
        CheckFormat.JUNIT: Format(_whole(CheckFormat.JUNIT), "JUnit XML for CI test reports"),
        CheckFormat.GITHUB: Format(
            _whole(CheckFormat.GITHUB),
            "workflow annotations, plus the markdown report appended to $GITHUB_STEP_SUMMARY",
        ),
        CheckFormat.MARKDOWN: Format(_whole(CheckFormat.MARKDOWN), "a pull-request comment"),
        CheckFormat.HTML: Format(
            _whole(CheckFormat.HTML),
            "one self-contained file: verdict, each item against its limit (SVG), every check",
        ),
    },
)
"""The registry `memledger check --format` comes from (whole-string renderers of a report)."""


def check_format(name: str) -> CheckFormat:
    """The check format called `name`; ConfigError listing the choices otherwise."""
    return FORMATS.pick(name)


def render_check(
    report: CheckReport, fmt: CheckFormat | str = CheckFormat.TEXT, *, full: bool = False
) -> str:
    """Render a check report in one of the formats (`full`: every pass in text)."""
    return FORMATS.renderer(fmt, CheckView(PLAIN, full))(report)


def render_json(report: CheckReport | CheckResults) -> str:
    """The full report (pydantic, versioned): budget, actual, margin and status per check."""
    return "".join(json_chunks(results_of(report)))


def render_junit(report: CheckReport | CheckResults) -> str:
    """JUnit XML: one testsuite per log, one testcase per check."""
    return "".join(junit_chunks(results_of(report)))


def render_github(report: CheckReport | CheckResults) -> str:
    """Workflow annotations on the budget file's entries, then the text report for the log."""
    return "".join(github_chunks(results_of(report)))
