"""The check report's model: one `Check` per limit per log, the `CheckReport` of a run (the JSON
contract of `memledger check --format json`), and the rules that order and count its checks
(failing, breach order, exit code), shared by the in-memory report and the spooled one
(`memledger.checking.results`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from datetime import date
from enum import StrEnum

from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK
from memledger.model.ledger import LedgerDiagnosis, LedgerSource
from memledger.record import computed_field, record
from memledger.units import gib_view

CHECK_SCHEMA_VERSION = 1


class Level(StrEnum):
    """How a breach counts: `fail` exits 1, `warn` is reported but exits 0 (unless --strict)."""

    FAIL = "fail"
    WARN = "warn"


class ItemKind(StrEnum):
    """Whether an item is a size (bytes, written with a unit) or a plain count/number."""

    SIZE = "size"
    COUNT = "count"


Quantity = int | float
"""Bytes (int) for size items; a plain number for count items."""


class Bound(StrEnum):
    """Which limit of an entry a check evaluates."""

    MAX = "max"
    MIN = "min"
    MAX_INCREASE = "max_increase"
    """max_increase and/or max_increase_pct against the baseline (both must be exceeded)."""
    READY = "ready"
    """The startup itself must come up: an OOM or a crash fails it (item `startup`)."""


class CheckStatus(StrEnum):
    """The outcome of one check."""

    PASS = "pass"
    FAIL = "fail"
    """A fail-level breach (exit 1)."""
    WARN = "warn"
    """A warn-level breach (exit 0, or 1 with --strict)."""
    WAIVED = "waived"
    """A breach accepted until `waived_until` (exit 0, also with --strict)."""
    EXPIRED_WAIVER = "expired_waiver"
    """A breach whose waiver has lapsed: counts at the entry's level (fail -> exit 1)."""
    SKIPPED = "skipped"
    """A relative limit with nothing to compare against (no baseline, or the baseline lacks it)."""
    MISSING = "missing"
    """The log cannot provide the item (exit 3)."""


BREACH_STATUSES = frozenset(
    {CheckStatus.FAIL, CheckStatus.WARN, CheckStatus.WAIVED, CheckStatus.EXPIRED_WAIVER}
)


@record
class Check:
    """One limit of one budget entry, evaluated on one log."""

    item: str
    kind: ItemKind
    """`size` (actual/limit/margin in bytes) or `count` (plain numbers)."""
    bound: Bound
    log: str
    """The input the value was read from, as given on the command line."""
    status: CheckStatus
    level: Level
    actual: Quantity | None = None
    actual_error: Quantity = 0
    """± printing precision of the actual value (bytes), when the ledger knows it."""
    limit: Quantity | None = None
    """max / min, or the allowed absolute increase for max_increase."""
    limit_pct: float | None = None
    """The allowed increase in percent of the baseline (max_increase_pct)."""
    baseline: Quantity | None = None
    increase: Quantity | None = None
    """actual - baseline."""
    increase_pct: float | None = None
    """(actual - baseline) / baseline x 100; None when the baseline is 0."""
    margin: Quantity | None = None
    """Headroom in the item's unit: positive = within budget, negative = over by that much."""
    margin_pct: float | None = None
    """For max_increase_pct: allowed % minus actual %."""
    message: str | None = None
    waived_until: date | None = None
    reason: str | None = None
    tighten_to: Quantity | None = None
    """A tighter limit that would still pass with slack, when the item sits far inside budget."""
    hint: str | None = None
    """Advice on a passing check other than a tighter limit: free memory far above its floor
    (`runtime_headroom`) is spare for the pools, not a floor to raise."""
    note: str | None = None
    """Why a check is missing or skipped, or a remark (a waiver no longer needed...)."""
    budget_line: int | None = None
    """Line of the entry in the budget file."""
    depends_on: str | None = None
    """The optional input this figure depends on and the run lacked (--model-config): without
    it the figure includes a buffer it cannot size, so it reads larger than with it."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def breached(self) -> bool:
        """Whether the value is outside its limit (whatever the level or waiver)."""
        return self.status in BREACH_STATUSES

    def _gib(self, value: Quantity | None) -> float | None:
        return None if value is None or self.kind is ItemKind.COUNT else gib_view(value)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def actual_gib(self) -> float | None:
        """`actual` in GiB, for size items."""
        return self._gib(self.actual)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def limit_gib(self) -> float | None:
        """`limit` in GiB, for size items."""
        return self._gib(self.limit)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def margin_gib(self) -> float | None:
        """`margin` in GiB, for size items."""
        return self._gib(self.margin)


@record
class CheckedInput:
    """A log (or saved ledger) the budget was checked on."""

    path: str
    source: LedgerSource
    outcome: str
    diagnosis: LedgerDiagnosis | None = None
    """Why the startup failed, when it did (its budget entries are then not checked)."""


@record
class BaselineInfo:
    """What the relative limits were compared against."""

    path: str | None = None
    source: LedgerSource | None = None
    """None when there was no baseline to compare against."""
    note: str | None = None


BREACH_ORDER: dict[CheckStatus, int] = {
    CheckStatus.MISSING: 0,
    CheckStatus.FAIL: 1,
    CheckStatus.EXPIRED_WAIVER: 1,
    CheckStatus.WARN: 2,
    CheckStatus.WAIVED: 3,
}
"""The order breaches and missing items are reported in (failing ones first within each)."""


def is_failing(check: Check, *, strict: bool) -> bool:
    """Whether this check makes the run fail (exit 1); `strict`: warnings fail too."""
    if check.status is CheckStatus.FAIL:
        return True
    if check.status in {CheckStatus.WARN, CheckStatus.EXPIRED_WAIVER}:
        return strict or check.level is Level.FAIL
    return False


def breach_rank(check: Check, *, strict: bool) -> int:
    """A breach's place in the report (0-7, as (BREACH_ORDER, not failing) sorts)."""
    return 2 * BREACH_ORDER[check.status] + (not is_failing(check, strict=strict))


def exit_code_of(*, n_checks: int, missing: bool, failing: bool) -> int:
    """3 if an item could not be read or nothing was checked, else 1 on a failing breach,
    else 0."""
    if not n_checks or missing:
        return EXIT_INPUT
    return EXIT_BUDGET_FAILED if failing else EXIT_OK


def closeness(check: Check) -> float:
    """How close a pass is to its limit: its headroom as a share of the limit (smaller first)."""
    if check.margin is not None and check.limit:
        return abs(check.margin) / abs(check.limit)
    if check.margin_pct is not None and check.limit_pct:
        return abs(check.margin_pct) / abs(check.limit_pct)
    return float("inf")


@record
class CheckReport:
    """Every check of one `memledger check` run, and its exit code."""

    schema_version: int = CHECK_SCHEMA_VERSION
    budget_path: str
    today: date
    strict: bool = False
    inputs: list[CheckedInput]
    baseline: BaselineInfo = field(default_factory=BaselineInfo)
    checks: list[Check]
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Things the user asked for that did not happen (a --baseline file that does not exist):
    shown in every format, though they do not change the exit code."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[str, int]:
        """Number of checks per status."""
        tally = Counter(check.status.value for check in self.checks)
        return {status.value: tally.get(status.value, 0) for status in CheckStatus}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        """3 if an item could not be read or nothing was checked, else 1 on a failing breach,
        else 0. A budget that applies to none of the given logs (a `logs` glob matching no
        file) checks nothing: that is no pass."""
        return exit_code_of(
            n_checks=len(self.checks),
            missing=any(check.status is CheckStatus.MISSING for check in self.checks),
            failing=any(self.is_failing(check) for check in self.checks),
        )

    def is_failing(self, check: Check) -> bool:
        """Whether this check makes the run fail (exit 1)."""
        return is_failing(check, strict=self.strict)

    def breaches(self) -> list[Check]:
        """Checks to report first: missing items, then breaches; failing ones first."""
        found = [check for check in self.checks if check.status in BREACH_ORDER]
        return sorted(found, key=lambda check: breach_rank(check, strict=self.strict))

    def passes(self) -> list[Check]:
        """Checks within budget."""
        return [check for check in self.checks if check.status is CheckStatus.PASS]

    def skipped(self) -> list[Check]:
        """Relative checks that had nothing to compare against."""
        return [check for check in self.checks if check.status is CheckStatus.SKIPPED]
