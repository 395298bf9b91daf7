"""`memledger diff LOG --against-release X`: this log's KV pool at another release (text, JSON,
markdown). Renderers return strings; the numbers come from memledger.compare.upgrade_against."""

from __future__ import annotations

import textwrap

from memledger.compare.upgrade_models import AgainstRelease
from memledger.render.formats import Formats, ReportFormat, report_formats
from memledger.render.tables import (
    Table,
    github_table,
    inert_block_start,
    markdown_cell,
    text_table,
)
from memledger.render.terminal import PLAIN, Terminal, fit_lines


def _release(answer: AgainstRelease) -> str:
    side = answer.log_release
    return f"{side.text} ({'given' if side.given else 'from its line formats'})"


def verdict(answer: AgainstRelease) -> str:
    """One line: the logged pool, the other release's, the change and its direction."""
    other = answer.other_release
    logged = answer.logged_tokens
    head = f"KV tokens per rank {logged:,}" if logged is not None else "KV tokens per rank -"
    head += f" at {_release(answer)}"
    if answer.predicted_tokens is None:
        return f"{head}; at {other}: not predicted ({answer.missing or 'unknown'})"
    span = ""
    if answer.low is not None and answer.high is not None and answer.low != answer.high:
        span = f" ({answer.low:,} - {answer.high:,})"
    text = f"{head}; at {other} SGLang would size {answer.predicted_tokens:,}{span}"
    kept = next((s for s in answer.settings if s.setting == "mem_fraction_static"), None)
    if kept is not None and kept.status == "unknown":
        text += f" if mem_fraction_static {kept.used} was given, not SGLang's default"
    if answer.candidates:
        text += f" (first of {len(answer.candidates)} candidates: see Candidates)"
    if answer.delta_pct is not None and answer.delta_tokens is not None:
        moved = {"upgrade": "since", "downgrade": "compared with"}.get(answer.direction, "vs")
        text += f": {answer.delta_pct:+.1f} % ({answer.delta_tokens:+,}) {moved} {other}"
    return text


def settings_table(answer: AgainstRelease) -> Table:
    """Each default that sizes the pool: this log's value, the two defaults, what is used."""
    log = answer.log_release.text
    rows = [
        [
            s.setting,
            s.logged,
            s.log_default or "?",
            s.other_default or "?",
            s.status,
            s.used,
        ]
        for s in answer.settings
    ]
    return Table(
        headers=["setting", "this log", f"default at {log}", f"at {answer.other_release}"]
        + ["status", "used"],
        rows=rows,
        title=f"Defaults that size the pool, for this log (status: default -> the "
        f"{answer.other_release} default is used, set -> kept)",
        keep=(0,),
    )


def crossed_lines(answer: AgainstRelease) -> list[str]:
    lines = []
    for c in answer.defaults_crossed:
        certain = "" if c.certain else " (maybe: the log's release range straddles it)"
        lines.append(
            f"{c.release} {c.setting}: {c.title}{certain}: {c.old} -> {c.new} "
            f"[{c.old_source} -> {c.new_source}]"
        )
    return lines


def _setting_notes(answer: AgainstRelease) -> list[str]:
    return [f"{s.setting}: {s.note} [{s.source}]" for s in answer.settings if s.note]


def _candidate_lines(answer: AgainstRelease) -> list[str]:
    return [
        f"{c.label}: mem_fraction_static {c.mem_fraction_static:.3f} -> {c.tokens:,} tokens"
        for c in answer.candidates
    ]


def _gpu_line(answer: AgainstRelease) -> str:
    if answer.gpu_source == "given":
        return f"GPU {answer.gpu_memory_mib:,} MiB (given)"
    if answer.gpu_source:
        return f"GPU capacity {answer.gpu_source}"
    return "GPU capacity unknown (--gpu-memory-mib gives it)"


def _sections(answer: AgainstRelease) -> list[tuple[str, list[str]]]:
    other, log = answer.other_release, answer.log_release.text
    crossed = crossed_lines(answer) or ["none for this GPU and this log's features"]
    return [
        (f"Defaults that changed between {log} and {other} (this GPU, this log)", crossed),
        ("Candidates", _candidate_lines(answer)),
        ("Settings", _setting_notes(answer)),
        ("Assumptions", answer.assumptions),
        ("Notes", answer.notes),
    ]


def render_text(answer: AgainstRelease, terminal: Terminal = PLAIN) -> str:
    width = terminal.width
    table = settings_table(answer)
    # The verdict is wrapped, never cut: its figures are the answer.
    head = textwrap.wrap(verdict(answer), width, subsequent_indent="  ", break_on_hyphens=False)
    parts = [
        *head,
        _gpu_line(answer),
        "",
        table.title,
        "-" * min(len(table.title), width),
    ]
    parts.append(text_table(table, width=width))
    for title, lines in _sections(answer):
        if not lines:
            continue
        parts += ["", title, "-" * min(len(title), width)]
        parts += [textwrap.fill(f"- {line}", width, subsequent_indent="  ") for line in lines]
    return fit_lines("\n".join(parts), width, whole=frozenset(head)) + "\n"


def render_markdown(answer: AgainstRelease) -> str:
    table = settings_table(answer)
    parts = [f"## {markdown_cell(verdict(answer))}", "", markdown_cell(_gpu_line(answer)), ""]
    parts += [f"### {markdown_cell(table.title)}", "", github_table(table)]
    for title, lines in _sections(answer):
        if lines:
            parts += ["", f"### {markdown_cell(title)}", ""]
            parts += [f"- {inert_block_start(markdown_cell(line))}" for line in lines]
    return "\n".join(parts) + "\n"


AGAINST_RELEASE_FORMATS: Formats[ReportFormat, Terminal, AgainstRelease] = report_formats(
    render_text, render_markdown
)
"""`memledger diff LOG --against-release X --format` choices."""
