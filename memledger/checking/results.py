"""A check run's results, read one check at a time, so a report can be written as it is read.

`CheckResults` is what the check renderers read: the run's totals (counts, exit code, notes) and
iterators over its checks in report order. Two kinds provide it:

- `ReportResults`: the in-memory `CheckReport` of the Python API;
- `SpooledChecks`: what `memledger check` builds (`CheckSpool`). Each log's checks are written
  to a spool (`memledger.checking.spool`: a private temporary file, unlinked at creation, so no
  other process can open it, and gone when the process ends) as they arrive from the workers;
  memory keeps only the totals and a count per (budget entry, outcome). A format that puts totals
  first (the headline, JUnit's testsuites attributes) reads the file back after the last log.

Report order is that of `check_budget`: each failed startup's FAIL, then entry by entry, logs in
input order. The file holds them log by log, so reading one entry's checks is a pass over the
file that skips (by a fixed-size header) what it does not want; passes are skipped for an
(entry, outcome) with no check.
"""

from __future__ import annotations

import heapq
import json
import struct
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from datetime import date
from typing import TYPE_CHECKING, NamedTuple

from memledger.checking.optional_inputs import InputMix
from memledger.checking.spool import Spool
from memledger.model.check import (
    BREACH_ORDER,
    BaselineInfo,
    Bound,
    Check,
    CheckedInput,
    CheckReport,
    CheckStatus,
    ItemKind,
    Level,
    breach_rank,
    closeness,
    exit_code_of,
    is_failing,
)
from memledger.record import computed_names, to_json, validate_json

if TYPE_CHECKING:
    from memledger.checking.budget import Budget
    from memledger.checking.evaluate import LogChecks
    from memledger.model.ledger import Ledger

PASS_RANK = 8
SKIPPED_RANK = 9
"""A check's place in the text report: breaches 0-7 (`breach_rank`), then passes, then skipped
checks."""
_STATUSES = list(CheckStatus)
_HEADER = struct.Struct("<IIBBdI")
"""A spooled check: input index, segment (0: the startup's FAIL, 1 + entry index), status,
report rank, closeness (`closeness`, for the passes closest to their limit), payload length."""


def report_rank(check: Check, *, strict: bool) -> int:
    """Where a check is listed: breaches in `BREACH_ORDER`, failing ones first, then passes,
    then skipped checks."""
    if check.status in BREACH_ORDER:
        return breach_rank(check, strict=strict)
    return PASS_RANK if check.status is CheckStatus.PASS else SKIPPED_RANK


class CheckResults(ABC):
    """What a check report shows, readable one check at a time (see the module docstring)."""

    budget_path: str
    today: date
    strict: bool
    baseline: BaselineInfo
    notes: list[str]
    warnings: list[str]
    counts: dict[str, int]
    """Number of checks per status (every status, in `CheckStatus` order)."""
    exit_code: int
    n_checks: int
    n_inputs: int

    def is_failing(self, check: Check) -> bool:
        """Whether this check makes the run fail (exit 1)."""
        return is_failing(check, strict=self.strict)

    @abstractmethod
    def ranked(self, rank: int) -> Iterator[Check]:
        """The checks of one `report_rank`, in report order."""

    def breaches(self) -> Iterator[Check]:
        """Missing items, then breaches; failing ones first (`CheckReport.breaches`)."""
        for rank in range(PASS_RANK):
            yield from self.ranked(rank)

    def passes(self) -> Iterator[Check]:
        """Checks within budget, in report order."""
        return self.ranked(PASS_RANK)

    def skipped(self) -> Iterator[Check]:
        """Relative checks that had nothing to compare against, in report order."""
        return self.ranked(SKIPPED_RANK)

    @abstractmethod
    def closest_passes(self, n: int) -> list[Check]:
        """The `n` passes closest to their limit (ties in report order), in report order."""

    @abstractmethod
    def by_log(self) -> Iterator[tuple[CheckedInput, list[Check]]]:
        """Each input in the order given, with its checks."""

    @abstractmethod
    def json_chunks(self) -> Iterator[str]:
        """The report as `to_json(report, indent=2)` writes it, in pieces."""


class ReportResults(CheckResults):
    """An in-memory `CheckReport` (the Python API's) as `CheckResults`."""

    def __init__(self, report: CheckReport) -> None:
        self.report = report
        self.budget_path = report.budget_path
        self.today = report.today
        self.strict = report.strict
        self.baseline = report.baseline
        self.notes = report.notes
        self.warnings = report.warnings
        self.counts = report.counts
        self.exit_code = report.exit_code
        self.n_checks = len(report.checks)
        self.n_inputs = len(report.inputs)

    def ranked(self, rank: int) -> Iterator[Check]:
        return (c for c in self.report.checks if report_rank(c, strict=self.strict) == rank)

    def closest_passes(self, n: int) -> list[Check]:
        checks = self.report.passes()
        order = {id(check): i for i, check in enumerate(checks)}
        return sorted(sorted(checks, key=closeness)[:n], key=lambda check: order[id(check)])

    def by_log(self) -> Iterator[tuple[CheckedInput, list[Check]]]:
        of_log: defaultdict[str, list[Check]] = defaultdict(list)
        for check in self.report.checks:
            of_log[check.log].append(check)
        return ((checked, of_log[checked.path]) for checked in self.report.inputs)

    def json_chunks(self) -> Iterator[str]:
        yield to_json(self.report, indent=2) + "\n"


def results_of(report: CheckReport | CheckResults) -> CheckResults:
    """The report as `CheckResults` (an in-memory report is wrapped)."""
    return ReportResults(report) if isinstance(report, CheckReport) else report


# --- the spool -----------------------------------------------------------------------------------


class _Record(NamedTuple):
    log: int
    segment: int
    status: int
    rank: int
    closeness: float
    offset: int
    """Where the record starts in the file (its order there)."""
    payload: bytes


def _records(spool: Spool) -> Iterator[_Record]:
    """Every record of the checks spool, in file order."""
    for (log, segment, status, rank, close), offset, payload in spool.records():
        yield _Record(log, segment, status, rank, close, offset, payload)


def _indented(dumped: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in dumped.split("\n"))


class CheckSpool:
    """Collects a run's checks log by log on a private temporary file; `finish` gives the
    `SpooledChecks` to render. Use as a context manager (the files close with it)."""

    def __init__(self, budget: Budget, *, strict: bool) -> None:
        self.budget = budget
        self.strict = strict
        self._checks = Spool(_HEADER)
        self._inputs = Spool()
        self._matched = [False] * len(budget.entries)
        self._tally: Counter[str] = Counter()
        self._per_rank: Counter[tuple[int, int]] = Counter()
        """Checks per (report rank, segment): a pass over the file is made only for a pair
        that has some, and stops at its last."""
        self._missing = self._failing = False
        self._n_inputs = self._n_checks = 0
        self._mix = InputMix(len(budget.entries))

    def __enter__(self) -> CheckSpool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close (and so delete) the spool files."""
        self._checks.close()
        self._inputs.close()

    def add(self, log: LogChecks) -> None:
        """One input's checks (`checking.check_log`), written out; only counts stay here."""
        index = self._n_inputs
        self._n_inputs += 1
        dumped = to_json(log.checked, indent=2).encode()
        self._inputs.append(dumped)
        from memledger.checking.evaluate import add_inputs

        add_inputs(self._mix, log)
        if log.failure is not None:
            self._write(index, 0, log.failure)
        for entry, (found, hit) in enumerate(zip(log.per_entry, log.matched, strict=True)):
            self._matched[entry] = self._matched[entry] or hit
            for check in found:
                self._write(index, entry + 1, check)

    def _write(self, log: int, segment: int, check: Check) -> None:
        rank = report_rank(check, strict=self.strict)
        dumped = to_json(check, indent=2).encode()
        status = _STATUSES.index(check.status)
        self._checks.append(dumped, log, segment, status, rank, closeness(check))
        self._tally[check.status.value] += 1
        self._per_rank[rank, segment] += 1
        self._n_checks += 1
        self._missing = self._missing or check.status is CheckStatus.MISSING
        self._failing = self._failing or is_failing(check, strict=self.strict)

    def finish(
        self, *, today: date, baseline: Ledger | None, baseline_info: BaselineInfo
    ) -> SpooledChecks:
        """The results, once every input was added."""
        from memledger.checking.evaluate import input_warnings, report_notes

        notes, warnings = report_notes(
            self.budget, self._matched, baseline=baseline, info=baseline_info
        )
        warnings += input_warnings(self.budget, self._mix, baseline)
        return SpooledChecks(
            self, today=today, baseline=baseline_info, notes=notes, warnings=warnings
        )


class SpooledChecks(CheckResults):
    """`CheckResults` read back from a `CheckSpool`'s files."""

    def __init__(
        self,
        spool: CheckSpool,
        *,
        today: date,
        baseline: BaselineInfo,
        notes: list[str],
        warnings: list[str],
    ) -> None:
        self._spool = spool
        self._segments = len(spool.budget.entries) + 1
        self.budget_path = spool.budget.path
        self.today = today
        self.strict = spool.strict
        self.baseline = baseline
        self.notes = notes
        self.warnings = warnings
        self.counts = {status.value: spool._tally.get(status.value, 0) for status in CheckStatus}
        self.n_checks = spool._n_checks
        self.n_inputs = spool._n_inputs
        self.exit_code = exit_code_of(
            n_checks=self.n_checks, missing=spool._missing, failing=spool._failing
        )

    def close(self) -> None:
        """Close (and so delete) the spool files."""
        self._spool.close()

    def _all(self) -> Iterator[_Record]:
        return _records(self._spool._checks)

    def ranked(self, rank: int) -> Iterator[Check]:
        for segment in range(self._segments):
            left = self._spool._per_rank[rank, segment]
            if not left:
                continue
            for record in self._all():
                if record.segment == segment and record.rank == rank:
                    yield _check(record.payload)
                    left -= 1
                    if not left:
                        break

    def closest_passes(self, n: int) -> list[Check]:
        passes = (r for r in self._all() if r.rank == PASS_RANK)
        closest = heapq.nsmallest(n, passes, key=lambda r: (r.closeness, r.segment, r.offset))
        closest.sort(key=lambda r: (r.segment, r.offset))
        return [_check(record.payload) for record in closest]

    def _inputs(self) -> Iterator[CheckedInput]:
        return (validate_json(CheckedInput, item) for item in self._spool._inputs.payloads())

    def by_log(self) -> Iterator[tuple[CheckedInput, list[Check]]]:
        records = self._all()
        pending = next(records, None)
        for index, checked in enumerate(self._inputs()):
            checks: list[Check] = []
            while pending is not None and pending.log == index:
                checks.append(_check(pending.payload))
                pending = next(records, None)
            yield checked, checks

    def json_chunks(self) -> Iterator[str]:
        # The report with empty lists as its model writes it (indent 2), each list written in
        # its place from the files, and the totals (computed fields, last) from the counts. A
        # string in JSON holds no raw newline: `\n  "key": ` is the top-level key alone.
        empty = to_json(
            CheckReport(
                budget_path=self.budget_path,
                today=self.today,
                strict=self.strict,
                inputs=[],
                baseline=self.baseline,
                checks=[],
                notes=self.notes,
                warnings=self.warnings,
            ),
            indent=2,
        )
        head, rest = empty.split('\n  "inputs": []', 1)
        middle, rest = rest.split('\n  "checks": []', 1)
        tail = rest[: rest.index(',\n  "counts": ')]
        yield head + '\n  "inputs": '
        yield from _json_list(item.decode() for item in self._spool._inputs.payloads())
        yield middle + '\n  "checks": '
        yield from _json_list(
            record.payload.decode()
            for segment in range(self._segments)
            if any(self._spool._per_rank[rank, segment] for rank in range(SKIPPED_RANK + 1))
            for record in self._all()
            if record.segment == segment
        )
        counts = ",\n".join(f'    "{status}": {n}' for status, n in self.counts.items())
        yield f'{tail},\n  "counts": {{\n{counts}\n  }},\n  "exit_code": {self.exit_code}\n}}\n'


def _json_list(items: Iterable[str]) -> Iterator[str]:
    """A JSON list of dumped items (indent 2) as the second level of a document."""
    first = True
    for item in items:
        yield ("[\n" if first else ",\n") + _indented(item, "    ")
        first = False
    yield "[]" if first else "\n  ]"


def _check(payload: bytes) -> Check:
    """A spooled check back (it was written by `to_json`: its enums and date are read back,
    its computed fields dropped)."""
    fields = json.loads(payload)
    for name in computed_names(Check):
        del fields[name]
    fields["kind"] = ItemKind(fields["kind"])
    fields["bound"] = Bound(fields["bound"])
    fields["status"] = CheckStatus(fields["status"])
    fields["level"] = Level(fields["level"])
    if fields.get("waived_until") is not None:
        fields["waived_until"] = date.fromisoformat(fields["waived_until"])
    return Check(**fields)
