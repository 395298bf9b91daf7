"""The diff's models (what `memledger diff --format json` writes): pure records, no prose.

Every delta is head - base; Δ% = (head - base) / base in percent.
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Literal

from memledger.compare.engines import EngineComparison
from memledger.compare.upgrade_models import UpgradeExplanation
from memledger.errors import NoSuchRowError
from memledger.model.events import ParamValue
from memledger.model.ledger import (
    RowGroup,
    RowKind,
    Summary,
)
from memledger.record import computed_field, record
from memledger.sglang.effects import ParamSource, param_source
from memledger.units import GIB, gib_view

DIFF_SCHEMA_VERSION = 1
DELTA_PCT_DEFINITION = "Δ% = (head - base) / base, in percent; empty when base is 0 or unknown"
MIN_TOLERANCE_BYTES = GIB // 100
"""Smallest difference that counts as a change: the 0.01 GiB SGLang prints its sizes at."""


def delta_pct(base: int | float | None, head: int | float | None) -> float | None:
    """100 x (head - base) / base; None when either side is unknown or base is 0 or less (a
    negative base, memory freed, would flip the sign: -2.06 -> 0.00 is not -100 %)."""
    if base is None or head is None or base <= 0:
        return None
    return round(100.0 * (head - base) / base, 4)


class DiffStatus(StrEnum):
    """How one matched item moved between base and head."""

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    """|Δ| within the printing precision of both sides (at least 0.01 GiB)."""
    NEW = "new"
    """Only in head."""
    REMOVED = "removed"
    """Only in base."""
    UNKNOWN = "unknown"
    """On both sides, but at least one side could not compute it."""
    NOT_COMPARABLE = "not_comparable"
    """A ledger row on one side only (a startup that stopped earlier, a fork's own row): its
    bytes count in that side's totals, but there is nothing to compare it with, so it is never
    the biggest mover."""


class SortKey(StrEnum):
    """Row orders for diff tables."""

    DELTA = "delta"
    """Largest |Δ| first (the default)."""
    ID = "id"
    BASE = "base"
    """Largest base value first."""
    HEAD = "head"
    """Largest head value first."""


def _status(
    base: int | None, head: int | None, tolerance: int, *, on_base: bool, on_head: bool
) -> DiffStatus:
    if not on_base:
        return DiffStatus.NEW
    if not on_head:
        return DiffStatus.REMOVED
    if base is None or head is None:
        return DiffStatus.UNKNOWN
    return DiffStatus.UNCHANGED if abs(head - base) <= tolerance else DiffStatus.CHANGED


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


@record
class ByteChange:
    """One byte quantity on both sides."""

    base_bytes: int | None
    head_bytes: int | None
    delta_bytes: int | None
    delta_pct: float | None
    error_bytes: int = 0
    """Sum of both sides' ± printing precision."""
    status: DiffStatus

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tolerance_bytes(self) -> int:
        """|Δ| at or below this is `unchanged`: the error bound, at least 0.01 GiB."""
        return max(MIN_TOLERANCE_BYTES, self.error_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def base_gib(self) -> float | None:
        return gib_view(self.base_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def head_gib(self) -> float | None:
        return gib_view(self.head_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta_gib(self) -> float | None:
        return gib_view(self.delta_bytes)


def _byte_change(
    base: int | None, head: int | None, error: int, *, on_base: bool = True, on_head: bool = True
) -> ByteChange:
    delta = None
    if on_base and on_head:
        delta = None if base is None or head is None else head - base
    elif on_head:
        delta = head
    elif on_base:
        delta = None if base is None else -base
    return ByteChange(
        base_bytes=base,
        head_bytes=head,
        delta_bytes=delta,
        delta_pct=delta_pct(base, head) if on_base and on_head else None,
        error_bytes=error,
        status=_status(
            base, head, max(MIN_TOLERANCE_BYTES, error), on_base=on_base, on_head=on_head
        ),
    )


@record
class RowDiff(ByteChange):
    """One ledger row (matched by id) on both sides."""

    id: str
    label: str
    group: RowGroup
    """Head's group (base's for removed rows)."""
    base_kind: RowKind | None
    """None when the row is not in base."""
    head_kind: RowKind | None
    base_in_partition: bool
    """Base's row is summed into totals (False for informational rows and absent rows)."""
    head_in_partition: bool

    @computed_field  # type: ignore[prop-decorator]
    @property
    def in_partition(self) -> bool:
        """Summed on at least one side (informational rows such as the load peak are not)."""
        return self.base_in_partition or self.head_in_partition

    interval: str | None = None
    note: str | None = None
    """Why a side is unknown, or that the row changed group between sides."""


@record
class GroupDiff(ByteChange):
    """One group's total (or the grand TOTAL): the sum of its partition rows on each side."""

    id: str
    """The group name, or `TOTAL`."""
    label: str
    n_rows: int
    unknown_rows: list[str] = field(default_factory=list)
    """Rows whose bytes are unknown on some side (not summed; the total is then a lower bound)."""


@record
class CheckpointDiff(ByteChange):
    """One avail-memory checkpoint (matched by id) on both sides."""

    id: str
    base_line: int | None
    head_line: int | None


@record
class IntervalDiff:
    """One interval (matched by from/to) on both sides, metric by metric."""

    from_id: str
    to_id: str
    status: DiffStatus
    drop: ByteChange
    logged: ByteChange
    named: ByteChange
    residual: ByteChange
    unexplained: ByteChange


@record
class RowContribution:
    """A row's share of a category delta."""

    id: str
    label: str
    group: RowGroup
    delta_bytes: int
    status: DiffStatus

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta_gib(self) -> float:
        return gib_view(self.delta_bytes)


@record
class CategoryDiff(ByteChange):
    """A category of row groups in the fixed-overhead split (e.g. CUDA graphs + headroom)."""

    id: str
    label: str
    groups: list[RowGroup]
    rows: list[RowContribution]
    """Per-row contributions, largest |Δ| first; they sum exactly to delta_bytes."""


SummaryNumber = int | float | None


@record
class SummaryField:
    """One summary figure on both sides."""

    key: str
    label: str
    unit: Literal["GiB", "tokens", "count", "fraction"]
    base: SummaryNumber
    head: SummaryNumber
    delta: SummaryNumber
    delta_pct: float | None
    status: DiffStatus


@record
class SummarySides:
    """The two summaries and their difference, all in the ledger's `Summary` shape."""

    base: Summary
    head: Summary
    delta: Summary


@record
class KvTokenSplit:
    """KV tokens per rank = KV pool bytes / bytes per KV token, on each side; the change in
    tokens split into the pool growing or shrinking (at base's cost per token) and each token
    costing more or less (at head's pool). The two parts add up to the change exactly."""

    base_pool_bytes: int
    head_pool_bytes: int
    base_tokens: int
    head_tokens: int
    base_bytes_per_token: float
    head_bytes_per_token: float
    from_pool_tokens: int
    """Tokens gained (+) or lost (-) because the pool grew or shrank: (head pool - base pool) /
    base bytes per token."""
    from_cost_tokens: int
    """Tokens gained (+) or lost (-) because each token costs less or more: the rest of the
    change (head pool / head cost - head pool / base cost)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta_tokens(self) -> int:
        """head - base."""
        return self.head_tokens - self.base_tokens


@record
class StatePoolAnalysis:
    """Why one side's state pool is larger: the fixed-overhead delta, split into categories."""

    available: bool
    reason: str | None = None
    """Why the analysis is missing or incomplete."""
    fixed_overhead: ByteChange
    state_pool: ByteChange
    partition: ByteChange
    """Sum of every partition row: fixed overhead + state pool, exactly."""
    usable: ByteChange
    """Usable memory as each ledger states it (partition = usable + balance error)."""
    larger_pool_side: Literal["base", "head"] | None
    categories: list[CategoryDiff]
    destination: list[SummaryField]
    """Where the state pool goes: KV pools, tokens per rank / DP group / instance, slots."""
    state_rows: list[RowContribution]
    """State-pool rows that moved, largest |Δ| first."""
    incomplete_rows: list[str] = field(default_factory=list)
    kv_tokens: KvTokenSplit | None = None
    """Bytes per KV token on each side and the token change split (None without a KV pool and
    its token count on both sides)."""


@record
class ParamDiff:
    """A server_args / engine parameter that differs, with the rows it plausibly moved."""

    name: str
    """The server_args name, `ledger.<name>` for a value the engine derived (per DP group), or
    `log.<name>` for a setting read from log lines (`memledger.engine.LOG_SETTINGS`)."""
    base: ParamValue = None
    head: ParamValue = None
    status: DiffStatus
    affects: list[str]
    """What the parameter drives, from `PARAM_EFFECTS` (row ids, `group:<name>`, `prefix:<p>`)."""
    why: str | None = None
    moved_rows: list[RowContribution]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def source(self) -> ParamSource:
        """`server_args`, `log` (read from log lines) or `ledger` (derived by the engine)."""
        return param_source(self.name)


@record
class DiffInput:
    """One side of the comparison: which input, startup and rank."""

    label: str
    path: str
    startup: int
    n_startups: int
    rank: str
    outcome: str
    stopped_at: str | None = None
    ledger_schema_version: int


@record
class DiffInputs:
    """Both sides' identities."""

    base: DiffInput
    head: DiffInput


@record
class SideCoverage:
    """How complete one side's ledger is."""

    outcome: str
    stopped_at: str | None
    n_checkpoints: int
    n_intervals: int
    n_rows: int
    unknown_rows: list[str]
    balance_error_bytes: int
    tolerance_bytes: int
    notes: list[str]


@record
class CoverageDiff:
    """Coverage of both sides."""

    base: SideCoverage
    head: SideCoverage


@record
class LedgerDiff:
    """Two ledgers compared, head - base (schema: `json_schema(LedgerDiff)`)."""

    schema_version: int = DIFF_SCHEMA_VERSION
    delta_definition: str = DELTA_PCT_DEFINITION
    inputs: DiffInputs
    rows: list[RowDiff]
    """Base order, then head-only rows; renderers sort (`sort_rows`)."""
    groups: list[GroupDiff]
    total: GroupDiff
    """The grand TOTAL over every partition row (equals the sum of `groups`)."""
    checkpoints: list[CheckpointDiff]
    intervals: list[IntervalDiff]
    summary: SummarySides
    summary_fields: list[SummaryField]
    state_pool: StatePoolAnalysis
    parameters: list[ParamDiff]
    coverage: CoverageDiff
    counts: dict[str, int]
    """Rows per status."""
    biggest_mover_group: str | None
    """The fixed-overhead group with the largest |Δ| (the state pool when no fixed group moved;
    None when nothing moved). Groups, not rows: a ledger may split one cost into rows that
    offset each other (weights at load end and weights released)."""
    biggest_mover: str | None
    """Id of the row with the largest |Δ| share inside `biggest_mover_group`."""
    upgrade: UpgradeExplanation | None = None
    """Why KV tokens per rank changed, when the releases or the sizing server_args differ
    (None, and left out of the JSON, when they agree)."""
    engines: EngineComparison | None = None
    """Why the KV cache differs when the sides are different engines (SGLang and vLLM); None,
    and left out of the JSON, for two logs of one engine."""

    def row(self, row_id: str) -> RowDiff | None:
        """The diff of the row with this id, or None when neither side has it (`diff[row_id]`
        raises), as `Ledger.row` is."""
        return next((r for r in self.rows if r.id == row_id), None)

    def __getitem__(self, row_id: str) -> RowDiff:
        """The diff of the row with this id; a `NoSuchRowError` (a KeyError) naming the rows
        when neither side has it, as `ledger[row_id]` does."""
        found = self.row(row_id)
        if found is None:
            ids = ", ".join(r.id for r in self.rows) or "(none)"
            raise NoSuchRowError(f"no row {row_id!r} in the diff; its rows: {ids}")
        return found
