"""The CI formats of `memledger check`: JSON, JUnit XML and GitHub workflow annotations, each
written in pieces of whole lines from `CheckResults` (see `memledger.render.check`)."""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import PurePath

from memledger.checking.results import CheckResults
from memledger.model.check import Check, CheckStatus
from memledger.render.check import STATUS_LABEL, breach_line, text_chunks, tighten_text
from memledger.render.escape import terminal_text


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
            title = "memledger: baseline not found"
            yield annotation("warning", warning, file=budget, line=None, title=title) + "\n"
    # The text after the annotations is untrusted text too: none of its lines may start a
    # workflow command (a saved ledger's strings can hold newlines).
    yield from (terminal_text(line) for line in text_chunks(results, full=True))
