"""Evaluate a budget against ledgers (and an optional baseline ledger): a pure function.

No I/O here: the caller loads the budget file and the ledgers, and passes "today" so waivers
are reproducible. Sizes are compared in bytes; counts as plain numbers. The report's model is
`memledger.model.check`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import replace
from datetime import date
from fnmatch import fnmatch
from pathlib import PurePath
from typing import NamedTuple, TypedDict

from memledger.checking.budget import SUMMARY_ITEM_KINDS, Budget, BudgetEntry, IfAbsent
from memledger.checking.optional_inputs import InputMix, ModelInputs, input_dependency, model_inputs
from memledger.model.check import (
    BaselineInfo,
    Bound,
    Check,
    CheckedInput,
    CheckReport,
    CheckStatus,
    ItemKind,
    Level,
    Quantity,
)
from memledger.model.ledger import Ledger, Row, RowKind
from memledger.record import record
from memledger.units import GIB

FREE_MEMORY_ITEMS = frozenset({"runtime_headroom"})
"""Items that are memory nothing uses: a `min` on one is a safety floor, and a value far above
it is memory the KV/state pools could have had (SGLang sizes them from mem_fraction_static),
not a level to lock in by raising the floor."""
SPARE_HINT = "spare: raise mem_fraction_static"
"""The hint on a free-memory item far above its floor (the headroom column shows how much),
instead of "could be tightened"."""


# ---------------------------------------------------------------------------------------------
# Reading an item from a ledger
# ---------------------------------------------------------------------------------------------


@record
class ItemReading:
    """An item's value in one ledger, or why it has none."""

    value: Quantity | None
    error: Quantity = 0
    reason: str | None = None


def read_item(ledger: Ledger, item: str, kind: ItemKind) -> ItemReading:
    """The value of a summary key or row id in a ledger (bytes for sizes).

    A summary key wins (its ± is the row's when a row of the same id has the same bytes); a
    row stands in when the summary has no value.
    """
    row = ledger.row(item)
    value = getattr(ledger.summary, item, None) if item in SUMMARY_ITEM_KINDS else None
    if value is not None:
        if kind is ItemKind.COUNT:
            return ItemReading(value=value)
        error = row.error_bytes if row is not None and row.bytes == value else 0
        return ItemReading(value=value, error=error)
    if row is None or row.bytes is None or kind is ItemKind.COUNT:
        return ItemReading(value=None, reason=_why_unknown(ledger, item, row))
    return ItemReading(value=row.bytes, error=row.error_bytes)


def _entry_reading(entry: BudgetEntry, ledger: Ledger) -> ItemReading:
    """The item's reading, with `if_absent = "zero"` applied on a complete ledger (the reason
    then says the value was counted as 0)."""
    reading = read_item(ledger, entry.item, entry.kind)
    if reading.value is not None or entry.if_absent is not IfAbsent.ZERO or ledger.stopped_at:
        return reading
    return ItemReading(value=0, reason=f'counted as 0 (if_absent = "zero"): {reading.reason}')


def _why_unknown(ledger: Ledger, item: str, row: Row | None) -> str:
    parts: list[str] = []
    if row is not None and row.kind is RowKind.UNKNOWN and row.evidence.note:
        parts.append(row.evidence.note)
    elif item in SUMMARY_ITEM_KINDS:
        if ledger.stopped_at:  # why it has none: said once, not "no value for X" before it
            return f"the startup stopped {ledger.stopped_at}"
        parts.append(f"the ledger has no value for {item}")
    else:
        similar = difflib.get_close_matches(item, [r.id for r in ledger.rows], n=3, cutoff=0.6)
        hint = f" (similar: {', '.join(similar)})" if similar else ""
        parts.append(f"the ledger has no row {item!r}{hint}")
    if ledger.stopped_at:
        parts.append(f"the startup stopped {ledger.stopped_at}")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Evaluating a budget
# ---------------------------------------------------------------------------------------------


def applies_to(entry: BudgetEntry, path: str, ledger: Ledger) -> bool:
    """Whether the entry's `logs` glob matches the input path (or the ledger's source log)."""
    if entry.logs is None:
        return True
    names = {path, PurePath(path).name, ledger.source.path, PurePath(ledger.source.path).name}
    return any(fnmatch(name, entry.logs) for name in names)


class LogChecks(NamedTuple):
    """One input's checks per budget entry, computed where its ledger was built (a worker)."""

    checked: CheckedInput
    failure: Check | None
    per_entry: list[list[Check]]
    matched: list[bool]
    models: ModelInputs
    """The rows whose size needs --model-config: sized in this ledger, or not."""


def check_log(
    budget: Budget, path: str, ledger: Ledger, *, today: date, baseline: Ledger | None = None
) -> LogChecks:
    """Every budget entry on one ledger; a failed startup gets only its FAIL (the finding), an
    unfinished one its MISSING startup beside its checks."""
    failed = _failed(ledger)
    checked = CheckedInput(
        path=path, source=ledger.source, outcome=ledger.outcome, diagnosis=ledger.diagnosis
    )
    matched = [applies_to(entry, path, ledger) for entry in budget.entries]
    per_entry = [
        _check_entry(entry, path, ledger, baseline, today, budget.tighten_headroom_pct)
        if hit and not failed
        else []
        for entry, hit in zip(budget.entries, matched, strict=True)
    ]
    failure = _startup_failure(path, ledger) if failed else _unfinished_startup(path, ledger)
    return LogChecks(checked, failure, per_entry, matched, model_inputs(ledger))


def add_inputs(mix: InputMix, log: LogChecks) -> None:
    """One log's model inputs, and which of its entries' figures depend on --model-config."""
    mix.add(log.models, [any(c.depends_on for c in found) for found in log.per_entry])


def input_warnings(budget: Budget, mix: InputMix, baseline: Ledger | None) -> list[str]:
    """The warnings of entries that compare figures computed with different inputs."""
    entries = [(e.item, e.line, e.has_relative) for e in budget.entries]
    return mix.warnings(entries, baseline)


def check_budget(
    budget: Budget,
    inputs: Iterable[tuple[str, Ledger] | LogChecks],
    *,
    today: date,
    baseline: Ledger | None = None,
    baseline_info: BaselineInfo | None = None,
    strict: bool = False,
) -> CheckReport:
    """Evaluate every budget entry on every input ledger (or `check_log` result); never raises
    on a breach. `inputs` is read once, one at a time, so a fleet's ledgers need not all be in
    memory. Checks: each failed startup's FAIL, then entry by entry, logs in input order."""
    failures: list[Check] = []
    per_entry: list[list[Check]] = [[] for _ in budget.entries]
    matched = [False] * len(budget.entries)
    checked: list[CheckedInput] = []
    mix = InputMix(len(budget.entries))
    for item in inputs:
        log = (
            item
            if isinstance(item, LogChecks)
            else check_log(budget, *item, today=today, baseline=baseline)
        )
        checked.append(log.checked)
        add_inputs(mix, log)
        if log.failure is not None:
            failures.append(log.failure)
        for index, (found, hit) in enumerate(zip(log.per_entry, log.matched, strict=True)):
            matched[index] = matched[index] or hit
            per_entry[index].extend(found)
    checks = failures + [check for found in per_entry for check in found]
    info = baseline_info or BaselineInfo(source=None if baseline is None else baseline.source)
    notes, warnings = report_notes(budget, matched, baseline=baseline, info=info)
    warnings += input_warnings(budget, mix, baseline)
    return CheckReport(
        budget_path=budget.path,
        today=today,
        strict=strict,
        inputs=checked,
        baseline=info,
        checks=checks,
        notes=notes,
        warnings=warnings,
    )


def report_notes(
    budget: Budget, matched: list[bool], *, baseline: Ledger | None, info: BaselineInfo
) -> tuple[list[str], list[str]]:
    """The report's notes (an entry that applied to no log, relative limits not compared) and
    warnings (a --baseline given but not found)."""
    notes = [
        f"budget for {entry.item!r} (line {entry.line}) applies to no given log "
        f"(logs = {entry.logs!r})"
        for entry, hit in zip(budget.entries, matched, strict=True)
        if not hit
    ]
    warnings: list[str] = []
    if baseline is None and info.path is not None:
        # a --baseline that was given but not found: a typo must not pass as "no comparison"
        warnings.append(info.note or f"baseline {info.path} not found: no comparison")
    elif baseline is None and any(entry.has_relative for entry in budget.entries):
        notes.append(info.note or "no baseline given: relative limits (max_increase) not compared")
    return notes, warnings


def _failed(ledger: Ledger) -> bool:
    """The startup ran out of memory or crashed (memledger.diagnosis said so)."""
    return ledger.diagnosis is not None and ledger.diagnosis.outcome in ("oom", "crash")


def _startup_failure(path: str, ledger: Ledger) -> Check:
    """One FAIL for a startup that did not come up, naming the phase and the shortfall: a
    change that makes the server OOM is the regression a memory budget exists for."""
    diagnosis = ledger.diagnosis
    assert diagnosis is not None
    short = (
        "unknown"
        if diagnosis.shortfall_bytes is None
        else f"{diagnosis.shortfall_bytes / GIB:.2f} GiB"
    )
    return _startup_check(
        path, CheckStatus.FAIL, f"{diagnosis.verdict} [phase {diagnosis.phase}, shortfall {short}]"
    )


def _unfinished_startup(path: str, ledger: Ledger) -> Check | None:
    """A startup whose log ends before the server was ready (outcome `truncated`: it hung, or
    was killed without a word, or the log was cut) is `missing` (exit 3): the log cannot show
    that the startup the budget is for came up, so no budget passes it, yet nothing measured
    failed (an OOM or a crash is exit 1). Its budget checks are reported beside it."""
    if ledger.outcome != "truncated":
        return None
    where = (
        f"stopped {ledger.stopped_at}"
        if ledger.stopped_at
        else "the log ends before the server was ready (truncated)"
    )
    return _startup_check(path, CheckStatus.MISSING, f"startup did not finish: {where}")


def _startup_check(path: str, status: CheckStatus, note: str) -> Check:
    """The one `startup` check a log gets beside its budget items (failed or unfinished)."""
    return Check(
        item="startup",
        kind=ItemKind.SIZE,
        bound=Bound.READY,
        log=path,
        status=status,
        level=Level.FAIL,
        note=note,
        message=None,
        waived_until=None,
        reason=None,
        budget_line=None,
    )


class _CheckBase(TypedDict):
    """The fields every check of one entry on one log shares."""

    item: str
    kind: ItemKind
    log: str
    level: Level
    message: str | None
    waived_until: date | None
    reason: str | None
    budget_line: int | None


def _check_entry(
    entry: BudgetEntry,
    path: str,
    ledger: Ledger,
    baseline: Ledger | None,
    today: date,
    tighten_headroom_pct: float,
) -> list[Check]:
    reading = _entry_reading(entry, ledger)
    common = _CheckBase(
        item=entry.item,
        kind=entry.kind,
        log=path,
        level=entry.level,
        message=entry.message,
        waived_until=entry.waived_until,
        reason=entry.reason,
        budget_line=entry.line,
    )
    bounds = [
        bound
        for bound, present in (
            (Bound.MAX, entry.max is not None),
            (Bound.MIN, entry.min is not None),
            (Bound.MAX_INCREASE, entry.has_relative),
        )
        if present
    ]
    if reading.value is None and entry.if_absent is IfAbsent.SKIP and not ledger.stopped_at:
        return [
            Check(
                **common,
                bound=bounds[0],
                status=CheckStatus.SKIPPED,
                note=f'not in this log (if_absent = "skip"): {reading.reason}',
            )
        ]
    if reading.value is None:
        # One line per entry, not per bound: the item is missing whatever the limit.
        return [
            Check(
                **common,
                bound=bounds[0],
                status=CheckStatus.MISSING,
                note=f"this log cannot provide {entry.item}: {reading.reason}",
            )
        ]
    actual = reading.value
    depends = input_dependency(ledger, entry.item)
    checks: list[Check] = []
    for bound in bounds:
        if bound is Bound.MAX_INCREASE:
            found = _check_increase(entry, common, reading, baseline, today)
            checks.append(replace(found, depends_on=depends) if depends else found)
            continue
        limit = entry.max if bound is Bound.MAX else entry.min
        assert limit is not None
        margin = limit - actual if bound is Bound.MAX else actual - limit
        status = _status(entry, breached=margin < 0, today=today)
        tighten = (
            tighten_to(entry.kind, bound is Bound.MAX, actual, limit, tighten_headroom_pct)
            if status is CheckStatus.PASS
            else None
        )
        spare = bound is Bound.MIN and entry.item in FREE_MEMORY_ITEMS and tighten is not None
        if spare:
            tighten = None
        checks.append(
            Check(
                **common,
                bound=bound,
                status=status,
                actual=actual,
                actual_error=reading.error,
                limit=limit,
                margin=margin,
                tighten_to=tighten,
                hint=SPARE_HINT if spare else None,
                note=_waiver_note(entry, status, today) or reading.reason,
                depends_on=depends,
            )
        )
    return checks


def _check_increase(
    entry: BudgetEntry,
    common: _CheckBase,
    reading: ItemReading,
    baseline: Ledger | None,
    today: date,
) -> Check:
    actual = reading.value
    assert actual is not None

    def skipped(note: str) -> Check:
        return Check(
            **common,
            limit=entry.max_increase,
            limit_pct=entry.max_increase_pct,
            bound=Bound.MAX_INCREASE,
            status=CheckStatus.SKIPPED,
            actual=actual,
            actual_error=reading.error,
            note=note,
        )

    if baseline is None:
        return skipped("no baseline to compare against")
    base = _entry_reading(entry, baseline)
    if base.value is None:
        return skipped(f"the baseline cannot provide {entry.item}: {base.reason}")
    increase = actual - base.value
    increase_pct = increase / base.value * 100 if base.value else None
    exceeded: list[bool] = []
    margin: Quantity | None = None
    margin_pct: float | None = None
    if entry.max_increase is not None:
        margin = entry.max_increase - increase
        exceeded.append(margin < 0)
    if entry.max_increase_pct is not None:
        # From a zero baseline any growth is an infinite percentage.
        pct = increase_pct if increase_pct is not None else (math.inf if increase > 0 else 0.0)
        margin_pct = entry.max_increase_pct - pct
        exceeded.append(margin_pct < 0)
    # With both limits given, the entry is breached only when BOTH are exceeded (a large % of a
    # tiny item, or a large absolute growth of a huge one, alone is not a regression).
    status = _status(entry, breached=all(exceeded), today=today)
    return Check(
        **common,
        limit=entry.max_increase,
        limit_pct=entry.max_increase_pct,
        bound=Bound.MAX_INCREASE,
        status=status,
        actual=actual,
        actual_error=reading.error,
        baseline=base.value,
        increase=increase,
        increase_pct=increase_pct,
        margin=margin,
        margin_pct=None if margin_pct is None or math.isinf(margin_pct) else margin_pct,
        note=_waiver_note(entry, status, today),
    )


def _status(entry: BudgetEntry, *, breached: bool, today: date) -> CheckStatus:
    if not breached:
        return CheckStatus.PASS
    if entry.waived_until is not None:
        return CheckStatus.WAIVED if today <= entry.waived_until else CheckStatus.EXPIRED_WAIVER
    return CheckStatus.FAIL if entry.level is Level.FAIL else CheckStatus.WARN


def _waiver_note(entry: BudgetEntry, status: CheckStatus, today: date) -> str | None:
    if entry.waived_until is None or status is not CheckStatus.PASS:
        return None
    if today > entry.waived_until:
        return f"within budget; the waiver (expired {entry.waived_until}) can be removed"
    return f"within budget; the waiver until {entry.waived_until} is no longer needed"


# --- the tighter limit suggested for an item far inside its budget ------------------------------

TIGHTEN_SLACK = 0.10
"""The suggested limit sits this far beyond the actual value (10 %), rounded to 2 digits."""


def tighten_to(
    kind: ItemKind, is_max: bool, actual: Quantity, limit: Quantity, headroom_pct: float
) -> Quantity | None:
    """A rounded limit near the actual value when the item sits far inside its budget."""
    if limit <= 0 or actual <= 0:
        return None
    headroom = (limit - actual) / limit if is_max else (actual - limit) / limit
    if headroom * 100 <= headroom_pct:
        return None
    scale = GIB if kind is ItemKind.SIZE else 1
    if is_max:
        target = round_significant(actual * (1 + TIGHTEN_SLACK) / scale, up=True) * scale
        suggestion = target if target < limit else None
    else:
        target = round_significant(actual * (1 - TIGHTEN_SLACK) / scale, up=False) * scale
        suggestion = target if target > limit else None
    if suggestion is None:
        return None
    if kind is ItemKind.SIZE or (isinstance(actual, int) and float(suggestion).is_integer()):
        return round(suggestion)
    return suggestion


def round_significant(value: float, *, up: bool, digits: int = 2) -> float:
    """Round to `digits` significant digits, upwards or downwards."""
    if value <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(value)) - digits + 1)
    steps = math.ceil(value / step - 1e-9) if up else math.floor(value / step + 1e-9)
    return float(round(steps * step, 12))
