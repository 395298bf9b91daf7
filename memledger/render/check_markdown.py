"""`memledger check --format markdown` (and the GitHub step summary): a pull-request comment,
written in pieces from `CheckResults` (see `memledger.render.check`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memledger.checking.results import CheckResults, results_of
from memledger.model.check import Bound, Check, CheckReport, CheckStatus
from memledger.render.check import (
    CHECK_MARKER,
    context_lines,
    headline,
    margin_text,
    pass_row,
    tighten_text,
    value_text,
)
from memledger.render.tables import Table, github_table, markdown_cell, markdown_code

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
        if details:
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
            row = [*pass_row(check), tighten_text(check)]
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
