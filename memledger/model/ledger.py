"""The ledger model: what memledger concluded about one rank's GPU memory at one startup.

Pure data (records: memledger.record); built by `memledger.engine`, rendered by
`memledger.render`. Bytes are integers; every `*_gib` is a display view of a byte field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field, fields
from enum import StrEnum
from typing import Any

from memledger.errors import NoSuchRowError
from memledger.model.sizing import SizingResult
from memledger.record import before_validation, computed_field, record, to_dict, validate
from memledger.units import GIB, gib_view

LEDGER_SCHEMA_VERSION = 2
"""2: `Summary` sizes are integer bytes (with `*_gib` views) and `Ledger.groups` holds the
group totals. Version 1 files (GiB floats, no groups) are upgraded on load."""


LOG_PARAM_PREFIX = "log."
"""`Ledger.parameters` names the engine read from log lines (env-driven values the log reveals)."""
LEDGER_PARAM_PREFIX = "ledger."
"""`Ledger.parameters` names the engine derived (per-DP requests, slots, KV tokens)."""


class RowKind(StrEnum):
    """Where a row's number comes from."""

    LOGGED = "logged"
    """Read from a log line (file:line in evidence)."""
    DERIVED = "derived"
    """Computed by a formula from parsed parameters / model dims (formula + inputs in evidence)."""
    RESIDUAL = "residual"
    """What is left of an avail drop after logged and derived rows (never hidden)."""
    UNKNOWN = "unknown"
    """Could not be computed; evidence.note says why. bytes is None."""


class RowGroup(StrEnum):
    """Aggregation groups; a row belongs to exactly one."""

    COMMUNICATION = "communication"
    WEIGHTS = "weights"
    WEIGHT_STAGING = "weight_staging"
    DRAFT_WEIGHTS = "draft_weights"
    STATE_POOL = "state_pool"
    WORKSPACE = "workspace"
    CUDA_GRAPH = "cuda_graph"
    RUNTIME_HEADROOM = "runtime_headroom"
    UNEXPLAINED = "unexplained"


FIXED_OVERHEAD_GROUPS = frozenset(RowGroup) - {RowGroup.STATE_POOL}
"""Everything that is not state pool counts as fixed overhead (runtime headroom included)."""


@record
class SourceLine:
    """A log line that a number was read from."""

    path: str
    line: int
    text: str


@record
class Evidence:
    """Why a row has the number it has."""

    sources: list[SourceLine] = field(default_factory=list)
    formula: str | None = None
    """Human-readable arithmetic, e.g. `209 rows x 1048580 cols x 4 B`."""
    inputs: dict[str, int | float | str | None] = field(default_factory=dict)
    note: str | None = None
    """For unknown rows: the reason; otherwise an optional one-line why."""


@record
class Row:
    """One line of the account. Rows with `in_partition` form a flat partition of usable memory."""

    id: str
    label: str
    group: RowGroup
    kind: RowKind
    bytes: int | None
    """None only for unknown rows."""
    error_bytes: int = 0
    """± bound from the printing precision of the numbers it came from."""
    interval: str | None = None
    """`from_id->to_id` of the interval this row was carved out of, if any."""
    interval_parts: dict[str, int] = field(default_factory=dict)
    """For a row carved from more than one interval (resident weights = the load's part + the
    negative part released right after it): bytes per `from->to`, summing to `bytes`; `interval`
    is the first. Empty for every other row."""
    in_partition: bool = True
    """False for informational rows (e.g. the load peak) that must not be summed."""
    in_budget: bool | None = None
    """Whether the engine's memory budget holds the row: SGLang's mem_fraction_static (weights
    and pools), vLLM's gpu_memory_utilization (weights, non-torch, activation peak, KV, and the
    CUDA-graph estimate since 0.21.0). None in ledgers saved before it existed."""
    evidence: Evidence = field(default_factory=Evidence)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gib(self) -> float | None:
        return gib_view(self.bytes)


@record
class Checkpoint:
    """An avail-memory reading at a known point of the startup."""

    id: str
    """Stable id: dist_init_end, load_begin, load_end, draft_load_begin, ..., capture_end, ..."""
    avail_bytes: int
    error_bytes: int
    line: int
    text: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def avail_gib(self) -> float:
        return gib_view(self.avail_bytes)


@record
class Interval:
    """The span between two consecutive checkpoints and how its avail drop is explained."""

    from_id: str = field(metadata={"alias": "from"})
    to_id: str = field(metadata={"alias": "to"})
    drop_bytes: int
    logged_bytes: int
    named_bytes: int
    error_bytes: int = 0

    @property
    def residual_bytes(self) -> int:
        return self.drop_bytes - self.logged_bytes

    @property
    def unexplained_bytes(self) -> int:
        return self.residual_bytes - self.named_bytes

    @computed_field  # type: ignore[prop-decorator]
    @property
    def drop_gib(self) -> float:
        return gib_view(self.drop_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def logged_gib(self) -> float:
        return gib_view(self.logged_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def named_gib(self) -> float:
        return gib_view(self.named_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def residual_gib(self) -> float:
        return gib_view(self.residual_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unexplained_gib(self) -> float:
        return gib_view(self.unexplained_bytes)


class SummaryUnit(StrEnum):
    """What a summary figure counts (each field carries its unit as metadata)."""

    BYTES = "bytes"
    SLOTS = "slots"
    TOKENS = "tokens"
    FRACTION = "fraction"


def _figure(unit: SummaryUnit) -> Any:
    return field(default=None, metadata={"json_schema_extra": {"unit": unit.value}})


@record
class Summary:
    """Headline figures: sizes in integer bytes (each with a `*_gib` view), counts as counts;
    None when not applicable or unknown."""

    usable: int | None = _figure(SummaryUnit.BYTES)
    nccl_init: int | None = _figure(SummaryUnit.BYTES)
    weights_load_peak: int | None = _figure(SummaryUnit.BYTES)
    weights_released: int | None = _figure(SummaryUnit.BYTES)
    weights_resident: int | None = _figure(SummaryUnit.BYTES)
    weight_staging: int | None = _figure(SummaryUnit.BYTES)
    draft_weights: int | None = _figure(SummaryUnit.BYTES)
    draft_staging: int | None = _figure(SummaryUnit.BYTES)
    cuda_graph: int | None = _figure(SummaryUnit.BYTES)
    cuda_graph_largest_bucket: int | None = _figure(SummaryUnit.BYTES)
    cuda_graph_static: int | None = _figure(SummaryUnit.BYTES)
    workspace: int | None = _figure(SummaryUnit.BYTES)
    runtime_headroom: int | None = _figure(SummaryUnit.BYTES)
    fixed_overhead: int | None = _figure(SummaryUnit.BYTES)
    state_pool: int | None = _figure(SummaryUnit.BYTES)
    kv_pool: int | None = _figure(SummaryUnit.BYTES)
    draft_kv: int | None = _figure(SummaryUnit.BYTES)
    state_per_slot: int | None = _figure(SummaryUnit.BYTES)
    slots: int | None = _figure(SummaryUnit.SLOTS)
    req_to_token: int | None = _figure(SummaryUnit.BYTES)
    mem_fraction_static: float | None = _figure(SummaryUnit.FRACTION)
    kv_tokens_per_rank: int | None = _figure(SummaryUnit.TOKENS)
    kv_tokens_per_dp_group: int | None = _figure(SummaryUnit.TOKENS)
    kv_tokens_per_instance: int | None = _figure(SummaryUnit.TOKENS)

    @classmethod
    def unit(cls, name: str) -> SummaryUnit:
        """The unit of a summary field."""
        extra = _FIELDS[name].metadata["json_schema_extra"]
        assert isinstance(extra, dict)
        return SummaryUnit(str(extra["unit"]))

    @classmethod
    def byte_fields(cls) -> list[str]:
        return [name for name in _FIELDS if cls.unit(name) is SummaryUnit.BYTES]

    def gib(self, name: str) -> float | None:
        """A size field in GiB (6 decimals), for display."""
        assert Summary.unit(name) is SummaryUnit.BYTES, name
        value: int | None = getattr(self, name)
        return gib_view(value)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def usable_gib(self) -> float | None:
        return gib_view(self.usable)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def nccl_init_gib(self) -> float | None:
        return gib_view(self.nccl_init)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def weights_load_peak_gib(self) -> float | None:
        return gib_view(self.weights_load_peak)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def weights_released_gib(self) -> float | None:
        return gib_view(self.weights_released)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def weights_resident_gib(self) -> float | None:
        return gib_view(self.weights_resident)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def weight_staging_gib(self) -> float | None:
        return gib_view(self.weight_staging)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def draft_weights_gib(self) -> float | None:
        return gib_view(self.draft_weights)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def draft_staging_gib(self) -> float | None:
        return gib_view(self.draft_staging)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cuda_graph_gib(self) -> float | None:
        return gib_view(self.cuda_graph)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cuda_graph_largest_bucket_gib(self) -> float | None:
        return gib_view(self.cuda_graph_largest_bucket)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cuda_graph_static_gib(self) -> float | None:
        return gib_view(self.cuda_graph_static)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def workspace_gib(self) -> float | None:
        return gib_view(self.workspace)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def runtime_headroom_gib(self) -> float | None:
        return gib_view(self.runtime_headroom)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fixed_overhead_gib(self) -> float | None:
        return gib_view(self.fixed_overhead)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def state_pool_gib(self) -> float | None:
        return gib_view(self.state_pool)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def kv_pool_gib(self) -> float | None:
        return gib_view(self.kv_pool)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def draft_kv_gib(self) -> float | None:
        return gib_view(self.draft_kv)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def state_per_slot_gib(self) -> float | None:
        return gib_view(self.state_per_slot)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def req_to_token_gib(self) -> float | None:
        return gib_view(self.req_to_token)


_FIELDS = {f.name: f for f in fields(Summary)}
"""Summary's fields by name (their metadata says each figure's unit)."""


@record
class GroupTotal:
    """One row group's total over the partition rows (computed once, by the engine)."""

    group: RowGroup
    bytes: int
    error_bytes: int = 0
    rows: int = 0
    """Rows of the group (informational and unknown ones included)."""
    unknown: int = 0
    """Unknown rows of the group (not in `bytes`)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gib(self) -> float:
        return gib_view(self.bytes)


def group_totals(rows: list[Row]) -> list[GroupTotal]:
    """Every group that has rows, in `RowGroup` order: partition bytes, ±, row counts."""
    totals: list[GroupTotal] = []
    for group in RowGroup:
        chosen = [row for row in rows if row.group == group]
        if not chosen:
            continue
        summed = [row for row in chosen if row.in_partition and row.bytes is not None]
        totals.append(
            GroupTotal(
                group=group,
                bytes=sum(row.bytes for row in summed if row.bytes is not None),
                error_bytes=sum(row.error_bytes for row in summed),
                rows=len(chosen),
                unknown=sum(1 for row in chosen if row.kind == RowKind.UNKNOWN),
            )
        )
    return totals


def _row_base_id(row_id: str) -> str:
    return row_id.split(".", 1)[0]


def summary_from_rows(rows: list[Row]) -> dict[str, int | None]:
    """The summary figures that are sums of rows, computed as the engine computes them
    (`engine/summary.py:summarise`; tests/security/test_saved_ledger.py holds the two equal on
    every sample and real log). The other figures (weights peak, slots, KV tokens, kv_pool by
    figure) come from log lines a saved ledger does not keep, so they are not re-derived."""
    partition = [row for row in rows if row.in_partition and row.bytes is not None]

    def total(predicate: Callable[[Row], bool]) -> int | None:
        chosen = [row.bytes for row in partition if predicate(row) and row.bytes is not None]
        return sum(chosen) if chosen else None

    def by_id(row_id: str) -> int | None:
        return total(lambda row: _row_base_id(row.id) == row_id)

    return {
        "nccl_init": by_id("nccl_init"),
        "weight_staging": by_id("weight_staging"),
        "draft_staging": by_id("draft_staging"),
        "cuda_graph": total(lambda row: row.group == RowGroup.CUDA_GRAPH),
        "cuda_graph_largest_bucket": by_id("cuda_graph_largest_bucket"),
        "cuda_graph_static": by_id("cuda_graph_static"),
        "workspace": total(lambda row: row.group in (RowGroup.WORKSPACE, RowGroup.UNEXPLAINED)),
        "runtime_headroom": by_id("runtime_headroom"),
        "fixed_overhead": total(lambda row: row.group in FIXED_OVERHEAD_GROUPS),
        "state_pool": total(lambda row: row.group == RowGroup.STATE_POOL),
        "req_to_token": next(
            (row.bytes for row in rows if row.id == "req_to_token" and row.bytes is not None), None
        ),
    }


@record
class LedgerSource:
    """Which input this ledger describes."""

    path: str
    startup: int
    n_startups: int
    rank: str


@record
class LedgerDiagnosis:
    """The diagnosis of a failed or starved startup in brief (`memledger diagnose` has it all)."""

    outcome: str
    """`oom`, `crash` or `starved`."""
    phase: str
    """`dist_init`, `load`, `kv_sizing`, `memory_pool`, `after_pool`, `graph_capture`,
    `warmup`, `serving` or `unknown`."""
    shortfall_bytes: int | None = None
    verdict: str
    """One line: what went wrong, how much was missing, which knob."""


@record
class Ledger:
    """The full account for one rank of one startup."""

    schema_version: int = LEDGER_SCHEMA_VERSION
    engine: str = "sglang"
    """The engine that wrote the log: `sglang` or `vllm` (a saved ledger without it: sglang)."""
    source: LedgerSource
    outcome: str
    stopped_at: str | None = None
    """For partial ledgers: the last checkpoint reached and why the account stops there."""
    checkpoints: list[Checkpoint]
    intervals: list[Interval]
    rows: list[Row]
    summary: Summary
    groups: list[GroupTotal] = field(default_factory=list)
    """Per-group totals of the partition rows, in `RowGroup` order (groups with rows only)."""
    usable_bytes: int | None
    """The total the partition sums to (None when it cannot be known)."""
    balance_error_bytes: int = 0
    """sum(partition rows) - usable_bytes."""
    tolerance_bytes: int = 0
    """Accumulated ± printing precision of every number the partition used."""
    parameters: dict[str, int | float | str | bool | None] = field(default_factory=dict)
    """Parameters the engine used (dp_size, dcp_size, mem_fraction_static, ...), for diffs."""
    notes: list[str] = field(default_factory=list)
    """Degradations: missing checkpoints, missing parameters, why a row is unknown."""
    sizing: SizingResult | None = None
    """SGLang's KV-pool sizing redone with this log's numbers (memledger.sizing); None in
    ledgers saved before it existed."""
    diagnosis: LedgerDiagnosis | None = None
    """Set when the startup failed (oom, crash) or came out starved; None otherwise."""

    @before_validation
    @classmethod
    def _groups_from_rows(cls, data: Any) -> Any:
        # A ledger built by hand (tests, API users) gets the same group totals the engine
        # writes; a ledger that carries its groups (engine, saved file) keeps them.
        if isinstance(data, dict) and "groups" not in data and isinstance(data.get("rows"), list):
            rows = [row if isinstance(row, Row) else validate(Row, row) for row in data["rows"]]
            return {**data, "groups": group_totals(rows)}
        return data

    def group(self, group: RowGroup) -> GroupTotal | None:
        """The total of one group, if the ledger has rows in it."""
        return next((g for g in self.groups if g.group == group), None)

    def row(self, row_id: str) -> Row | None:
        """The row with this id, or None when the ledger has none (`ledger[row_id]` raises)."""
        return next((r for r in self.rows if r.id == row_id), None)

    def __getitem__(self, row_id: str) -> Row:
        """The row with this id; a `NoSuchRowError` (a KeyError) naming the ledger's row ids
        when it has none, so a mistyped id is an error that says what exists, not a None."""
        found = self.row(row_id)
        if found is None:
            ids = ", ".join(r.id for r in self.rows) or "(none)"
            raise NoSuchRowError(
                f"no row {row_id!r} in the ledger of {self.source.path}; its rows: {ids}"
            )
        return found


def upgrade_document(document: dict[str, Any]) -> dict[str, Any]:
    """A saved ledger's JSON object in the current schema (version 1 -> 2), else unchanged.

    Version 1 summaries hold GiB floats rounded to 6 decimals: sizes become bytes (exact for
    `usable`, which v1 also saved as `usable_bytes`, and for the sums of rows the v1 value rounds
    from; within ~1 KiB otherwise) and the group totals are computed from the saved rows.
    """
    if document.get("schema_version") != 1:
        return document
    upgraded = dict(document)
    summary = dict(upgraded.get("summary") or {})
    if not isinstance(upgraded.get("summary"), dict):
        return {**upgraded, "schema_version": LEDGER_SCHEMA_VERSION}  # validation reports it
    for name in Summary.byte_fields():
        value = summary.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            summary[name] = round(value * GIB)
    if isinstance(upgraded.get("usable_bytes"), int):
        summary["usable"] = upgraded["usable_bytes"]
    for name in list(summary):
        if name.endswith("_gib"):
            del summary[name]
    upgraded["summary"] = summary
    rows = upgraded.get("rows")
    if isinstance(rows, list):
        try:
            parsed = [validate(Row, row) for row in rows]
        except ValueError:
            return {**upgraded, "schema_version": LEDGER_SCHEMA_VERSION}
        upgraded["groups"] = [to_dict(g) for g in group_totals(parsed)]
        # A figure that is a sum of rows takes the rows' exact bytes when the v1 GiB value is
        # that sum at v1's precision (6 decimals); otherwise it stays, and validation refuses it.
        v1_summary = document["summary"]
        for name, exact in summary_from_rows(parsed).items():
            stated = v1_summary.get(name)
            if (
                exact is not None
                and isinstance(stated, int | float)
                and not isinstance(stated, bool)
            ):
                if round(exact / GIB, 6) == round(stated, 6):
                    summary[name] = exact
    upgraded["schema_version"] = LEDGER_SCHEMA_VERSION
    return upgraded
