"""`--explain ROW`: the arithmetic and source lines behind one row (or group, or interval)."""

from __future__ import annotations

import json

from memledger.errors import ConfigError
from memledger.model.ledger import FIXED_OVERHEAD_GROUPS, Interval, Ledger, Row, RowGroup, RowKind
from memledger.record import to_dict
from memledger.render.rows import (
    ERROR_DIGITS,
    error_cell,
    gib_cell,
    group_blocks,
    shorten,
    source_cell,
)
from memledger.render.terminal import fit_lines, wrap
from memledger.units import GIB

SOURCE_TEXT_WIDTH = 240
"""Source lines are quoted up to this length (server_args lines run to kilobytes)."""


FIXED_OVERHEAD = "fixed_overhead"
"""The one aggregate above groups that --explain accepts (the article's headline figure)."""


class UnknownRowError(ConfigError):
    """`--explain` named something the ledger does not have; the message lists what it has."""


def interval_key(interval: Interval) -> str:
    """The `from->to` id rows use to point at their interval."""
    return f"{interval.from_id}->{interval.to_id}"


def explain_text(ledger: Ledger, target: str, width: int | None = None) -> str:
    """Explain a row id, a group, `fixed_overhead` or an interval `from->to`, as plain text;
    `width`: the terminal's columns to fit (None: lines as long as they come, in a markdown
    code block)."""
    row = ledger.row(target)
    if row is not None:
        return _explain_row(ledger, row, width)
    if target in {block.group.value for block in group_blocks(ledger)}:
        return _explain_group(ledger, RowGroup(target))
    if target == FIXED_OVERHEAD:
        return _explain_fixed_overhead(ledger)
    interval = _find_interval(ledger, target)
    if interval is not None:
        return "\n".join(_interval_lines(ledger, interval, width)) + "\n"
    raise _unknown(ledger, target)


def explain_json(ledger: Ledger, target: str) -> str:
    """The row (or a group's rows, or an interval) with intervals and checkpoints, as JSON."""
    row = ledger.row(target)
    if row is not None:
        rows = [row]
    elif target == FIXED_OVERHEAD:
        rows = [candidate for candidate in ledger.rows if candidate.group in FIXED_OVERHEAD_GROUPS]
    else:
        rows = [candidate for candidate in ledger.rows if candidate.group.value == target]
    interval = _find_interval(ledger, target)
    if not rows and interval is None:
        raise _unknown(ledger, target)
    interval_ids = {candidate.interval for candidate in rows if candidate.interval}
    interval_ids |= {key for candidate in rows for key in candidate.interval_parts}
    intervals = [i for i in ledger.intervals if interval_key(i) in interval_ids or i == interval]
    point_ids = {i.from_id for i in intervals} | {i.to_id for i in intervals}
    document = {
        "schema_version": ledger.schema_version,
        "source": to_dict(ledger.source),
        "target": target,
        "rows": [to_dict(candidate, mode="json") for candidate in rows],
        "intervals": [to_dict(i, mode="json", by_alias=True) for i in intervals],
        "checkpoints": [
            to_dict(point, mode="json") for point in ledger.checkpoints if point.id in point_ids
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def _unknown(ledger: Ledger, target: str) -> UnknownRowError:
    row_ids = ", ".join(row.id for row in ledger.rows) or "(none)"
    group_ids = [block.group.value for block in group_blocks(ledger)]
    groups = ", ".join(group_ids)
    known = [row.id for row in ledger.rows] + group_ids + [FIXED_OVERHEAD]
    return UnknownRowError(
        f"--explain: no row {target!r} in this ledger{_did_you_mean(target, known)}; "
        f"rows: {row_ids}"
        + (f"; groups: {groups}, {FIXED_OVERHEAD}" if groups else "")
        + ("; or an interval as from->to" if ledger.intervals else "")
    )


def _did_you_mean(word: str, choices: list[str]) -> str:
    """` (did you mean 'x'?)` for the closest choice, or an empty string."""
    import difflib

    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _find_interval(ledger: Ledger, target: str) -> Interval | None:
    return next((i for i in ledger.intervals if interval_key(i) == target), None)


def _bytes_text(byte_count: int | None, error_bytes: int = 0) -> str:
    if byte_count is None:
        return "unknown"
    exact = f"{byte_count / GIB:.{ERROR_DIGITS}f} GiB = {byte_count:,} B"
    return exact + (f" ({error_cell(error_bytes)} GiB)" if error_bytes else "")


SOURCE_TEXT_ROOM = 30
"""A quoted source line with less room than this beside its `path:line` goes on a line of its
own below it."""


def _source_line(path: str, line: int, text: str, width: int | None) -> str:
    """`  path:line: text`: the quoted text is cut to fit `width`, never the `path:line` that
    says where the number came from (a long path gets the text on the next line)."""
    where = f"  {path}:{line}:"
    if width is None:
        return f"{where} {shorten(text, SOURCE_TEXT_WIDTH)}"
    room = width - len(where) - 1
    if room >= SOURCE_TEXT_ROOM:
        return f"{where} {shorten(text, min(room, SOURCE_TEXT_WIDTH))}"
    return f"{where}\n    {shorten(text, min(width - 4, SOURCE_TEXT_WIDTH))}"


def _explain_row(ledger: Ledger, row: Row, width: int | None = None) -> str:
    evidence = row.evidence
    lines = [
        f"{row.id}: {row.label}",
        f"  group  {row.group.value}",
        f"  kind   {row.kind.value}"
        + ("" if row.in_partition else " (informational: not part of any sum)"),
        f"  value  {_bytes_text(row.bytes, row.error_bytes)}",
    ]
    if evidence.formula:
        arithmetic = evidence.formula
        if row.bytes is not None and "=" not in arithmetic:
            arithmetic += f" = {row.bytes:,} B = {row.bytes / GIB:.{ERROR_DIGITS}f} GiB"
        lines += ["", "Arithmetic", f"  {arithmetic}"]
    if evidence.inputs:
        lines += ["", "Inputs"]
        name_width = max(len(name) for name in evidence.inputs)
        lines += [f"  {name:<{name_width}} = {value}" for name, value in evidence.inputs.items()]
    if evidence.note:
        lines += [
            "",
            "Why unknown" if row.kind == RowKind.UNKNOWN else "Note",
            f"  {evidence.note}",
        ]
    if evidence.sources:
        lines += ["", "Source lines"]
        lines += [_source_line(src.path, src.line, src.text, width) for src in evidence.sources]
    for key in row.interval_parts or ([row.interval] if row.interval else []):
        interval = _find_interval(ledger, key)
        if interval is not None:
            lines += ["", *_interval_lines(ledger, interval, width)]
        else:
            lines += ["", f"Interval {key}: not in this ledger"]
    text = "\n".join(lines)
    # the prose (note, arithmetic, inputs) wraps under its indentation; the source lines and
    # the interval's columns were fitted above
    return (text if width is None else fit_lines(text, width)) + "\n"


def _explain_fixed_overhead(ledger: Ledger) -> str:
    blocks = [block for block in group_blocks(ledger) if block.group in FIXED_OVERHEAD_GROUPS]
    total = sum(block.subtotal_bytes for block in blocks)
    error = sum(block.subtotal_error_bytes for block in blocks)
    lines = [
        f"{FIXED_OVERHEAD} (fixed overhead + headroom): every group but the state pool, the free "
        f"runtime headroom included: {_bytes_text(total, error)}"
    ]
    width = max((len(block.group.value) for block in blocks), default=0)
    lines += [
        f"  {block.group.value:<{width}}  {gib_cell(block.subtotal_bytes):>8}" for block in blocks
    ]
    lines.append("Use --explain GROUP for the rows of a group.")
    return "\n".join(lines) + "\n"


def _explain_group(ledger: Ledger, group: RowGroup) -> str:
    block = next(block for block in group_blocks(ledger) if block.group == group)
    lines = [
        f"group {group.value}: {_bytes_text(block.subtotal_bytes, block.subtotal_error_bytes)}"
    ]
    width = max(len(row.id) for row in block.rows)
    for row in block.rows:
        mark = "" if row.in_partition else "  (not summed)"
        lines.append(
            f"  {row.id:<{width}}  {gib_cell(row.bytes):>8}  {row.kind.value:<8}  "
            f"{source_cell(row)}{mark}"
        )
    if block.unknown_count:
        lines.append(f"  {block.unknown_count} unknown row(s) are not in the subtotal")
    lines.append("Use --explain ROW on any of these rows for its arithmetic.")
    return "\n".join(lines) + "\n"


def _interval_lines(ledger: Ledger, interval: Interval, width: int | None = None) -> list[str]:
    """drop - logged = residual; residual - named = unexplained, with the rows behind each
    (a detail too long for `width` continues under itself)."""
    key = interval_key(interval)
    points = {point.id: point for point in ledger.checkpoints}
    start, end = points.get(interval.from_id), points.get(interval.to_id)
    drop_detail = ""
    if start is not None and end is not None:
        drop_detail = (
            f"avail {gib_cell(start.avail_bytes)} at {start.id} (line {start.line})"
            f" - {gib_cell(end.avail_bytes)} at {end.id} (line {end.line})"
        )
    # Partition rows carved from this interval; a row carved from two intervals (resident
    # weights and its release) is listed in each with its part.
    members = [
        row
        for row in ledger.rows
        if row.in_partition and (row.interval == key or key in row.interval_parts)
    ]

    def entry(row: Row) -> str:
        part = row.interval_parts.get(key)
        if part is None:
            return f"{row.id} {gib_cell(row.bytes)}"
        return f"{row.id} {gib_cell(part)} (its part of {gib_cell(row.bytes)})"

    def listing(kind: RowKind) -> str:
        chosen = [row for row in members if row.kind == kind]
        return ", ".join(entry(row) for row in chosen) or "(none)"

    steps = [
        ("  drop", interval.drop_bytes, drop_detail),
        ("- logged", interval.logged_bytes, listing(RowKind.LOGGED)),
        ("= residual", interval.residual_bytes, ""),
        ("- named", interval.named_bytes, listing(RowKind.DERIVED)),
        ("= unexplained", interval.unexplained_bytes, error_cell(interval.error_bytes)),
    ]
    label_width = max(len(label) for label, _, _ in steps)
    number_width = max(len(gib_cell(value)) for _, value, _ in steps)
    lines = [f"Interval {interval.from_id} -> {interval.to_id} (GiB)"]
    for label, value, detail in steps:
        text = f"  {label:<{label_width}}  {gib_cell(value):>{number_width}}   "
        if width is None or len(text) + len(detail) <= width or not detail:
            lines.append(f"{text}{detail}".rstrip())
        else:
            lines += wrap(detail, width, text, " " * len(text), break_long_words=False)
    return lines
