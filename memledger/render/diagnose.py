"""`memledger diagnose` output: the verdict first, then phase, shortfall, findings, suggestions.

`FORMATS` is the registry of `memledger diagnose --format`.
"""

from __future__ import annotations

from enum import StrEnum

from memledger.diagnosis.model import Diagnosis, Direction, Finding, Suggestion
from memledger.model.ledger import Ledger
from memledger.record import to_json
from memledger.render.escape import Destination, finish
from memledger.render.formats import Format, Formats
from memledger.render.tables import Table, github_table, markdown_cell
from memledger.render.terminal import PLAIN, Terminal, fit_lines, shorten_long_tokens, wrap
from memledger.units import format_gib

INDENT = "    "


class DiagnoseFormat(StrEnum):
    """The formats `memledger diagnose --format` accepts."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"


def _bytes(byte_count: int | None) -> str:
    return "" if byte_count is None else f"{format_gib(byte_count)} GiB"


def suggestion_title(suggestion: Suggestion) -> str:
    """`lower --mem-fraction-static to 0.8`, `set --disable-cuda-graph`."""
    if suggestion.direction is Direction.ENABLE:
        return f"set {suggestion.flag}"
    if suggestion.value is None:
        return f"{suggestion.direction.value} {suggestion.flag}"
    value = suggestion.value
    # an int stays an int (a token count of 1,743,556 is not 1.74356e+06)
    shown = f"{value}" if isinstance(value, int) else f"{value:g}"
    return f"{suggestion.direction.value} {suggestion.flag} to {shown}"


def command_change(suggestion: Suggestion) -> str | None:
    """The launch-flag change a valued suggestion makes (`--mem-fraction-static 0.83`)."""
    if suggestion.direction is Direction.ENABLE:
        return suggestion.flag
    value = suggestion.value
    if value is None or not suggestion.flag.startswith("--"):  # a request's field: no flag
        return None
    return f"{suggestion.flag} {value if isinstance(value, int) else f'{value:g}'}"


def _changes(diagnosis: Diagnosis) -> str | None:
    """Each valued suggestion as the flag to pass, alternatives apart (`A | B`), first knob wins."""
    seen: set[str] = set()
    changes: list[str] = []
    for suggestion in diagnosis.suggestions:
        change = command_change(suggestion)
        if change is not None and suggestion.knob not in seen:
            seen.add(suggestion.knob)
            changes.append(change)
    if len(changes) > 1:
        return " | ".join(changes) + " (alternatives: each alone)"
    return changes[0] if changes else None


def _facts(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    rank = diagnosis.rank or "(untagged)"
    if diagnosis.failed_rank is not None and diagnosis.failed_rank != diagnosis.rank:
        owner = f"{diagnosis.failed_rank}'s" if diagnosis.failed_rank else "untagged"
        rank += f"; the error text is {owner}"
    facts = [
        ("log", diagnosis.path),
        ("outcome", diagnosis.outcome),
        ("phase", diagnosis.phase.value),
        ("rank", rank),
    ]
    if diagnosis.shortfall_bytes is not None:
        facts.append(("shortfall", f"{_bytes(diagnosis.shortfall_bytes)} (requested - free)"))
    # a ready startup's suggestions are for a later OOM (under Suggestions), not the answer; an
    # unknown phase's are conditional on where it failed (the verdict says which way): no flag
    answer = diagnosis.outcome != "ready" and diagnosis.phase.value != "unknown"
    changes = _changes(diagnosis) if answer else None
    if changes is not None:
        facts.append(("try", changes))
    return facts


def _wrap(text: str, indent: str, width: int) -> list[str]:
    return wrap(text, width, indent, indent)


def evidence_text(evidence: list[str]) -> str:
    """`path:1, 6, 7`: each file named once, its lines after it (a finding citing eight ranks'
    lines of one log printed the log's path eight times)."""
    lines: dict[str, list[str]] = {}
    for place in evidence:
        path, colon, line = place.rpartition(":")
        if colon and line.isdigit():
            lines.setdefault(path, []).append(line)
        else:
            lines.setdefault(place, [])
    return ", ".join(f"{path}:{', '.join(at)}" if at else path for path, at in lines.items())


def _finding_lines(finding: Finding, width: int) -> list[str]:
    amount = f" [{_bytes(finding.bytes)}]" if finding.bytes is not None else ""
    text = f"{finding.severity.value}[{finding.id}]: {finding.message}{amount}"
    # a path in the message is cut in its middle, not split over lines at column 100
    lines = _wrap(shorten_long_tokens(text, width - 2), "  ", width)
    if finding.evidence:
        lines += _wrap("at " + evidence_text(finding.evidence), INDENT, width)
    return lines


def render_text(diagnosis: Diagnosis, terminal: Terminal = PLAIN) -> str:
    """The verdict, the key facts, findings with evidence, suggestions with their arithmetic,
    wrapped to the terminal's width."""
    width = terminal.width
    lines = [diagnosis.verdict, ""]
    label_width = max(len(label) for label, _ in _facts(diagnosis))
    lines += [f"{label + ':':<{label_width + 1}} {value}" for label, value in _facts(diagnosis)]
    if diagnosis.findings:
        lines += ["", "Findings"]
        for finding in diagnosis.findings:
            lines += _finding_lines(finding, width)
    lines += ["", "Suggestions"]
    if not diagnosis.suggestions:
        lines.append("  none: no memory knob helps with what the log shows")
    for suggestion in diagnosis.suggestions:
        lines += _wrap(suggestion_title(suggestion), "  ", width)
        lines += _wrap(suggestion.why, INDENT, width)
    return fit_lines("\n".join(lines), width) + "\n"  # a long verdict wraps too


def render_markdown(diagnosis: Diagnosis) -> str:
    """The same as GitHub markdown: the verdict in bold, tables of findings and suggestions."""
    parts = [
        f"## memledger diagnose: {markdown_cell(diagnosis.path)}",
        "",
        f"**{markdown_cell(diagnosis.verdict)}**",
        "",
    ]
    parts += [f"- **{label}**: {markdown_cell(value)}" for label, value in _facts(diagnosis)]
    if diagnosis.findings:
        findings = Table(
            headers=["severity", "finding", "message", "GiB", "evidence"],
            rows=[
                [
                    f.severity.value,
                    f.id,
                    f.message,
                    "" if f.bytes is None else format_gib(f.bytes),
                    evidence_text(f.evidence),
                ]
                for f in diagnosis.findings
            ],
            align=["left", "left", "left", "right", "left"],
            code=(1,),
        )
        parts += ["", "### Findings", "", github_table(findings)]
    parts += ["", "### Suggestions", ""]
    if diagnosis.suggestions:
        suggestions = Table(
            headers=["change", "why"],
            rows=[[suggestion_title(s), s.why] for s in diagnosis.suggestions],
        )
        parts.append(github_table(suggestions))
    else:
        parts.append("None: no memory knob helps with what the log shows.")
    return "\n".join(parts) + "\n"


def pictures_markdown(ledger: Ledger) -> str:
    """The diagnosed startup's timeline (ending at the failing phase, with the shortfall) and
    where its memory went, as a markdown section of Mermaid charts (made inert like the rest)."""
    from memledger.render.markdown import pictures

    return finish(Destination.MARKDOWN, "\n".join(pictures(ledger)) + "\n")


def render_json(diagnosis: Diagnosis) -> str:
    """The diagnosis model as indented JSON (`schema_version` versions it)."""
    return to_json(diagnosis, indent=2) + "\n"


FORMATS: Formats[DiagnoseFormat, Terminal, Diagnosis] = Formats(
    DiagnoseFormat,
    {
        DiagnoseFormat.TEXT: Format(
            lambda terminal: lambda diagnosis: render_text(diagnosis, terminal),
            "verdict, findings, suggestions",
        ),
        DiagnoseFormat.MARKDOWN: Format(lambda _: render_markdown, "the same as GitHub markdown"),
        DiagnoseFormat.JSON: Format(
            lambda _: render_json,
            "outcome, phase, shortfall_bytes, findings, suggestions (versioned)",
        ),
    },
)
