"""Diff two ledgers: rows matched by id, group totals, and where a state-pool difference comes from.

Pure: no I/O, no click/lark/tabulate. Every delta is head - base; Δ% = (head - base) / base in
percent. The state-pool analysis follows the seed article: per card, usable = fixed overhead +
state pool, so a smaller fixed overhead is a larger state pool, and the fixed-overhead delta splits
exactly (integer bytes) into the categories of `STATE_POOL_CATEGORIES`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import PurePath
from typing import Literal, TypeVar

from pydantic import Field, computed_field

from memledger.events import ParamValue
from memledger.ledger_model import (
    FIXED_OVERHEAD_GROUPS,
    Checkpoint,
    Interval,
    Ledger,
    Row,
    RowGroup,
    RowKind,
    Summary,
)
from memledger.units import GIB, FrozenModel

_Item = TypeVar("_Item", Row, Checkpoint, Interval)

DIFF_SCHEMA_VERSION = 1
DELTA_PCT_DEFINITION = "Δ% = (head - base) / base, in percent; empty when base is 0 or unknown"
MIN_TOLERANCE_BYTES = GIB // 100
"""Smallest difference that counts as a change: the 0.01 GiB SGLang prints its sizes at."""

ParamSource = Literal["server_args", "log", "ledger"]
"""Where a parameter was read: server_args, log lines (`log.*`), or derived (`ledger.*`)."""


def _gib(byte_count: int | None) -> float | None:
    return None if byte_count is None else round(byte_count / GIB, 6)


def delta_pct(base: int | float | None, head: int | float | None) -> float | None:
    """100 x (head - base) / base; None when either side is unknown or base is 0."""
    if base is None or head is None or base == 0:
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


class ByteChange(FrozenModel):
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
        return _gib(self.base_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def head_gib(self) -> float | None:
        return _gib(self.head_bytes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta_gib(self) -> float | None:
        return _gib(self.delta_bytes)


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


class GroupDiff(ByteChange):
    """One group's total (or the grand TOTAL): the sum of its partition rows on each side."""

    id: str
    """The group name, or `TOTAL`."""
    label: str
    n_rows: int
    unknown_rows: list[str] = Field(default_factory=list)
    """Rows whose bytes are unknown on some side (not summed; the total is then a lower bound)."""


class CheckpointDiff(ByteChange):
    """One avail-memory checkpoint (matched by id) on both sides."""

    id: str
    base_line: int | None
    head_line: int | None


class IntervalDiff(FrozenModel):
    """One interval (matched by from/to) on both sides, metric by metric."""

    from_id: str
    to_id: str
    status: DiffStatus
    drop: ByteChange
    logged: ByteChange
    named: ByteChange
    residual: ByteChange
    unexplained: ByteChange


class RowContribution(FrozenModel):
    """A row's share of a category delta."""

    id: str
    label: str
    group: RowGroup
    delta_bytes: int
    status: DiffStatus

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta_gib(self) -> float:
        return round(self.delta_bytes / GIB, 6)


class CategoryDiff(ByteChange):
    """A category of row groups in the fixed-overhead split (e.g. CUDA graphs + headroom)."""

    id: str
    label: str
    groups: list[RowGroup]
    rows: list[RowContribution]
    """Per-row contributions, largest |Δ| first; they sum exactly to delta_bytes."""


SummaryNumber = int | float | None


class SummaryField(FrozenModel):
    """One summary figure on both sides."""

    key: str
    label: str
    unit: Literal["GiB", "tokens", "count", "fraction"]
    base: SummaryNumber
    head: SummaryNumber
    delta: SummaryNumber
    delta_pct: float | None
    status: DiffStatus


class SummarySides(FrozenModel):
    """The two summaries and their difference, all in the ledger's `Summary` shape."""

    base: Summary
    head: Summary
    delta: Summary


class StatePoolAnalysis(FrozenModel):
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
    statement: str
    usable_note: str | None = None
    categories: list[CategoryDiff]
    destination: list[SummaryField]
    """Where the state pool goes: KV pools, tokens per rank / DP group / instance, slots."""
    state_rows: list[RowContribution]
    """State-pool rows that moved, largest |Δ| first."""
    incomplete_rows: list[str] = Field(default_factory=list)


class ParamDiff(FrozenModel):
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


class DiffInput(FrozenModel):
    """One side of the comparison: which input, startup and rank."""

    label: str
    path: str
    startup: int
    n_startups: int
    rank: str
    outcome: str
    stopped_at: str | None = None
    ledger_schema_version: int


class DiffInputs(FrozenModel):
    """Both sides' identities."""

    base: DiffInput
    head: DiffInput


class SideCoverage(FrozenModel):
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


class CoverageDiff(FrozenModel):
    """Coverage of both sides."""

    base: SideCoverage
    head: SideCoverage


class LedgerDiff(FrozenModel):
    """Two ledgers compared, head - base (schema: `LedgerDiff.model_json_schema()`)."""

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


# --------------------------------------------------------------------------------------------
# Data tables
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Category:
    """A named set of row groups for the fixed-overhead split."""

    id: str
    label: str
    groups: tuple[RowGroup, ...]


STATE_POOL_CATEGORIES: tuple[Category, ...] = (
    Category(
        "graphs_headroom",
        "CUDA graphs + runtime headroom",
        (RowGroup.CUDA_GRAPH, RowGroup.RUNTIME_HEADROOM),
    ),
    Category(
        "dcp_slots_comm_workspace",
        "DCP/per-slot structures + NCCL + workspace",
        (RowGroup.COMMUNICATION, RowGroup.WORKSPACE, RowGroup.UNEXPLAINED),
    ),
    Category(
        "weights_staging",
        "weights + weight staging",
        (RowGroup.WEIGHTS, RowGroup.WEIGHT_STAGING, RowGroup.DRAFT_WEIGHTS),
    ),
)
"""The article's three-way split of a fixed-overhead difference. Groups not listed (a future
RowGroup) fall into an `other` category so the split still adds up."""

OTHER_CATEGORY_ID = "other"

GROUP_LABELS: dict[RowGroup, str] = {
    RowGroup.WEIGHTS: "weights",
    RowGroup.WEIGHT_STAGING: "weight staging",
    RowGroup.DRAFT_WEIGHTS: "draft weights",
    RowGroup.COMMUNICATION: "communication (NCCL)",
    RowGroup.WORKSPACE: "workspace",
    RowGroup.UNEXPLAINED: "unexplained",
    RowGroup.CUDA_GRAPH: "CUDA graphs",
    RowGroup.RUNTIME_HEADROOM: "runtime headroom",
    RowGroup.STATE_POOL: "state pool",
}


def group_label(group: RowGroup) -> str:
    """Display name of a row group."""
    return GROUP_LABELS.get(group, group.value.replace("_", " "))


@dataclass(frozen=True)
class ParamEffect:
    """Which rows a server_args parameter plausibly moves (fnmatch pattern on the name)."""

    pattern: str
    row_ids: tuple[str, ...] = ()
    row_prefixes: tuple[str, ...] = ()
    groups: tuple[RowGroup, ...] = ()
    why: str = ""


PARAM_EFFECTS: tuple[ParamEffect, ...] = (
    ParamEffect(
        "mem_fraction_static",
        groups=(RowGroup.RUNTIME_HEADROOM, RowGroup.STATE_POOL),
        why="(1 - mem_fraction_static) is left to the runtime; the rest sizes the state pool",
    ),
    ParamEffect(
        "cuda_graph_max_bs", groups=(RowGroup.CUDA_GRAPH,), why="the largest captured batch"
    ),
    ParamEffect(
        "cuda_graph_bs", groups=(RowGroup.CUDA_GRAPH,), why="which batch sizes are captured"
    ),
    ParamEffect("disable_cuda_graph*", groups=(RowGroup.CUDA_GRAPH,), why="no graphs captured"),
    ParamEffect("*cuda_graph*", groups=(RowGroup.CUDA_GRAPH,), why="CUDA graph capture settings"),
    ParamEffect(
        "dcp_size",
        row_ids=("dcp_q_replica", "req_to_token", "draft_slot_map"),
        groups=(RowGroup.COMMUNICATION, RowGroup.CUDA_GRAPH),
        why="DCP replicates the Q projection, multiplies global KV slots and adds a comm group",
    ),
    ParamEffect(
        "dcp_replicate_q_proj", row_ids=("dcp_q_replica",), why="full-head Q projection per card"
    ),
    ParamEffect(
        "max_running_requests",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="slots = max_running_requests + extra slots + 1; per-slot state and req_to_token rows",
    ),
    ParamEffect(
        "disaggregation_decode_extra_slots",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="extra decode slots add per-slot state and req_to_token rows",
    ),
    ParamEffect(
        "extra_slots",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="extra decode slots add per-slot state and req_to_token rows",
    ),
    ParamEffect(
        "slots",
        row_ids=("req_to_token",),
        groups=(RowGroup.STATE_POOL,),
        why="per-slot state and req_to_token rows scale with the slot count",
    ),
    ParamEffect(
        "context_len*", row_ids=("req_to_token",), why="req_to_token columns = context length"
    ),
    ParamEffect("kv_tokens", groups=(RowGroup.STATE_POOL,), why="KV pool size in tokens"),
    ParamEffect(
        "enable_dp_lm_head",
        groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION),
        why="lm_head replicated per DP rank instead of vocab-parallel",
    ),
    ParamEffect(
        "speculative_*",
        row_prefixes=("draft",),
        groups=(RowGroup.DRAFT_WEIGHTS,),
        why="draft model weights, KV, graphs and slot map",
    ),
    ParamEffect(
        "dp_size",
        groups=(
            RowGroup.WEIGHTS,
            RowGroup.WEIGHT_STAGING,
            RowGroup.COMMUNICATION,
            RowGroup.CUDA_GRAPH,
        ),
        why="per-card share of weights, rows per card in graphs, communication groups",
    ),
    ParamEffect(
        "enable_dp_attention",
        groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION, RowGroup.CUDA_GRAPH),
        why="attention weights replicated per DP rank",
    ),
    ParamEffect(
        "tp_size", groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION), why="per-card weight share"
    ),
    ParamEffect(
        "ep_size", groups=(RowGroup.WEIGHTS, RowGroup.COMMUNICATION), why="per-card expert share"
    ),
    ParamEffect("kv_cache_dtype", groups=(RowGroup.STATE_POOL,), why="bytes per KV token"),
    ParamEffect("max_total_tokens", groups=(RowGroup.STATE_POOL,), why="caps the KV pool"),
    ParamEffect("page_size", groups=(RowGroup.STATE_POOL,), why="KV pool granularity"),
    ParamEffect("max_mamba_cache_size", groups=(RowGroup.STATE_POOL,), why="Mamba/KDA state slots"),
    ParamEffect(
        "chunked_prefill_size", groups=(RowGroup.WORKSPACE,), why="prefill activation workspace"
    ),
    ParamEffect("quantization", groups=(RowGroup.WEIGHTS,), why="weight bytes per parameter"),
    ParamEffect("*weight_shard*", groups=(RowGroup.WEIGHTS, RowGroup.WEIGHT_STAGING), why="shards"),
    ParamEffect(
        "*DRAFT_WEIGHT_SHARD*",
        groups=(RowGroup.DRAFT_WEIGHTS,),
        why="draft weight shard staging pool",
    ),
    ParamEffect(
        "*DEEPEP*", groups=(RowGroup.CUDA_GRAPH,), why="DeepEP buffer, allocated in graph warmup"
    ),
    ParamEffect(
        "*SWA_POOL_MULTIPLIER*", row_prefixes=("draft",), why="draft SWA pool size multiplier"
    ),
    ParamEffect(
        "*custom_all_reduce*", groups=(RowGroup.COMMUNICATION,), why="custom all-reduce buffers"
    ),
    # Settings the log reveals (`log.<name>`, from `memledger.engine.LOG_SETTINGS`).
    ParamEffect(
        "log.weight_shard*",
        row_ids=("weights", "weight_staging"),
        groups=(RowGroup.WEIGHTS, RowGroup.WEIGHT_STAGING),
        why="sharded layers keep 1/group of their weights and all-gather through the staging pool",
    ),
    ParamEffect(
        "log.requant_then_shard*",
        row_ids=("weights_load_peak", "weights_released", "weights"),
        why="sharded weights are loaded full, requantised, then sharded: a higher load peak",
    ),
    ParamEffect(
        "log.draft_weight_shard*",
        row_ids=("draft_weights", "draft_staging"),
        groups=(RowGroup.DRAFT_WEIGHTS,),
        why="SGLANG_ENABLE_K3_DRAFT_WEIGHT_SHARD: draft layers sharded, plus a draft staging pool",
    ),
    ParamEffect(
        "log.draft_hoisted_ag",
        row_ids=("draft_staging",),
        row_prefixes=("draft_cuda_graph",),
        why="draft all-gathers hoisted out of the CUDA graph run outside graph memory",
    ),
    ParamEffect(
        "log.hoisted_ag",
        row_ids=("weight_staging",),
        row_prefixes=("cuda_graph",),
        why="all-gathers hoisted out of the CUDA graph run outside graph memory",
    ),
    ParamEffect(
        "log.dspark_*",
        row_ids=("draft_kv", "draft_slot_map"),
        why="SGLANG_DSPARK_SWA_POOL_MULTIPLIER x window slots per request size the draft SWA pool",
    ),
    ParamEffect(
        "log.custom_all_reduce_*",
        row_ids=("nccl_init", "all_reduce_buffers"),
        why="one CustomAllReduceV2 (symmetric + local buffers) per intra-node group at dist init",
    ),
    ParamEffect(
        "log.deepep_*",
        row_ids=("deepep_buffer", "cuda_graph_largest_bucket"),
        why="SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK sizes the DeepEP buffer, allocated "
        "lazily in the largest graph's warmup",
    ),
    ParamEffect(
        "log.kv_cache_dtype",
        row_ids=("kv_pool", "swa_kv_pool"),
        why="bytes per KV token: the dtype the pool was allocated with",
    ),
    ParamEffect(
        "log.cuda_graph_bs",
        groups=(RowGroup.CUDA_GRAPH,),
        why="the batch sizes actually captured (server_args left them to SGLang)",
    ),
)
"""Entries whose pattern starts with `log.` match `log.*` names and win over the others; the
others match the name without its `ledger.`/`log.` prefix, first match wins. A parameter with
no entry is listed with no known effect."""


DERIVED_PREFIX = "ledger."
"""Prefix of the values the engine derived (per-DP requests, slots, KV tokens)."""
LOG_PREFIX = "log."
"""Prefix of the settings the engine read from log lines (env-driven values the log reveals)."""
DERIVED_ALIASES = {
    "extra_slots": "disaggregation_decode_extra_slots",
    "context_len": "context_length",
}
"""Derived values named differently from the server_args they restate."""


def param_source(name: str) -> ParamSource:
    """Where a parameter was read: `log` lines, `ledger` (derived by the engine) or server_args."""
    if name.startswith(LOG_PREFIX):
        return "log"
    if name.startswith(DERIVED_PREFIX):
        return "ledger"
    return "server_args"


def param_effect(name: str) -> ParamEffect | None:
    """The `PARAM_EFFECTS` entry for `name`: a `log.` entry for a `log.` name, else the first
    entry matching the name without its `ledger.`/`log.` prefix."""
    if name.startswith(LOG_PREFIX):
        exact = (e for e in PARAM_EFFECTS if e.pattern.startswith(LOG_PREFIX))
        found = next((e for e in exact if fnmatchcase(name, e.pattern)), None)
        if found is not None:
            return found
    bare = name.removeprefix(DERIVED_PREFIX).removeprefix(LOG_PREFIX)
    return next(
        (
            e
            for e in PARAM_EFFECTS
            if not e.pattern.startswith(LOG_PREFIX) and fnmatchcase(bare, e.pattern)
        ),
        None,
    )


def _effect_targets(effect: ParamEffect) -> list[str]:
    return (
        list(effect.row_ids)
        + [f"prefix:{p}" for p in effect.row_prefixes]
        + [f"group:{g.value}" for g in effect.groups]
    )


def _effect_matches(effect: ParamEffect, row: RowDiff) -> bool:
    if row.id in effect.row_ids:
        return True
    # Informational rows (load peak, a "reclaimed vs a hypothetical baseline") are not memory
    # that moved; they are only listed when named explicitly.
    return row.in_partition and (
        row.group in effect.groups or any(row.id.startswith(p) for p in effect.row_prefixes)
    )


SUMMARY_LABELS: dict[str, tuple[str, Literal["GiB", "tokens", "count", "fraction"]]] = {
    "usable": ("usable memory", "GiB"),
    "fixed_overhead": ("fixed overhead", "GiB"),
    "state_pool": ("state pool", "GiB"),
    "kv_pool": ("KV pool", "GiB"),
    "draft_kv": ("draft KV", "GiB"),
    "state_per_slot": ("state per slot", "GiB"),
    "slots": ("slots", "count"),
    "kv_tokens_per_rank": ("KV tokens per rank", "tokens"),
    "kv_tokens_per_dp_group": ("KV tokens per DP group", "tokens"),
    "kv_tokens_per_instance": ("KV tokens per instance", "tokens"),
    "nccl_init": ("NCCL at dist init", "GiB"),
    "weights_load_peak": ("weights: load peak", "GiB"),
    "weights_released": ("weights: released after load", "GiB"),
    "weights_resident": ("weights resident", "GiB"),
    "weight_staging": ("weight staging", "GiB"),
    "draft_weights": ("draft weights", "GiB"),
    "draft_staging": ("draft staging", "GiB"),
    "cuda_graph": ("CUDA graphs", "GiB"),
    "cuda_graph_largest_bucket": ("CUDA graph largest bucket", "GiB"),
    "cuda_graph_static": ("CUDA graph static buffers", "GiB"),
    "workspace": ("workspace (interval residuals)", "GiB"),
    "runtime_headroom": ("runtime headroom", "GiB"),
    "req_to_token": ("req_to_token", "GiB"),
    "mem_fraction_static": ("mem_fraction_static", "fraction"),
}
"""Display label and unit of every Summary key, in the order diff tables list them."""

DESTINATION_KEYS = (
    "kv_pool",
    "draft_kv",
    "state_per_slot",
    "slots",
    "kv_tokens_per_rank",
    "kv_tokens_per_dp_group",
    "kv_tokens_per_instance",
)
"""Summary keys that say where the state pool goes."""


# --------------------------------------------------------------------------------------------
# Building the diff
# --------------------------------------------------------------------------------------------


def _row_diff(base: Row | None, head: Row | None) -> RowDiff:
    some = head if head is not None else base
    assert some is not None
    notes = []
    for side, row in (("base", base), ("head", head)):
        if row is not None and row.bytes is None:
            notes.append(f"{side}: {row.evidence.note or 'unknown'}")
    if base is not None and head is not None and base.group != head.group:
        notes.append(f"group changed: {base.group.value} -> {head.group.value}")
    change = _byte_change(
        None if base is None else base.bytes,
        None if head is None else head.bytes,
        sum(r.error_bytes for r in (base, head) if r is not None),
        on_base=base is not None,
        on_head=head is not None,
    )
    return RowDiff(
        **change.model_dump(exclude=set(ByteChange.model_computed_fields)),
        id=some.id,
        label=some.label,
        group=some.group,
        base_kind=None if base is None else base.kind,
        head_kind=None if head is None else head.kind,
        base_in_partition=base is not None and base.in_partition,
        head_in_partition=head is not None and head.in_partition,
        interval=some.interval,
        note="; ".join(notes) or None,
    )


def _matched(
    base: Sequence[_Item], head: Sequence[_Item], key: Callable[[_Item], Hashable]
) -> list[tuple[_Item | None, _Item | None]]:
    """Pairs (base item | None, head item | None) by key: base order, then head-only items."""
    head_by_key = {key(item): item for item in head}
    base_keys = {key(item) for item in base}
    pairs: list[tuple[_Item | None, _Item | None]] = [
        (item, head_by_key.get(key(item))) for item in base
    ]
    pairs += [(None, item) for item in head if key(item) not in base_keys]
    return pairs


def _side_value(row: RowDiff, side: Literal["base", "head"]) -> int:
    """What a row adds to its side's totals: 0 when absent, unknown or not in the partition."""
    if side == "base":
        return (row.base_bytes or 0) if row.base_in_partition else 0
    return (row.head_bytes or 0) if row.head_in_partition else 0


def _sum_rows(rows: Iterable[RowDiff], *, side: Literal["base", "head"]) -> int:
    return sum(_side_value(row, side) for row in rows)


def _aggregate(rows: Sequence[RowDiff]) -> ByteChange:
    base = _sum_rows(rows, side="base")
    head = _sum_rows(rows, side="head")
    return _byte_change(base, head, sum(r.error_bytes for r in rows))


def _unknown_ids(rows: Iterable[RowDiff]) -> list[str]:
    """Rows present on a side whose bytes that side could not compute."""
    return [
        r.id
        for r in rows
        if (r.base_kind is not None and r.base_bytes is None)
        or (r.head_kind is not None and r.head_bytes is None)
    ]


def _group_diff(group_id: str, label: str, rows: Sequence[RowDiff]) -> GroupDiff:
    change = _aggregate(rows)
    return GroupDiff(
        **change.model_dump(exclude=set(ByteChange.model_computed_fields)),
        id=group_id,
        label=label,
        n_rows=len(rows),
        unknown_rows=_unknown_ids(rows),
    )


def _checkpoint_diff(base: Checkpoint | None, head: Checkpoint | None) -> CheckpointDiff:
    some = head if head is not None else base
    assert some is not None
    change = _byte_change(
        None if base is None else base.avail_bytes,
        None if head is None else head.avail_bytes,
        sum(c.error_bytes for c in (base, head) if c is not None),
        on_base=base is not None,
        on_head=head is not None,
    )
    return CheckpointDiff(
        **change.model_dump(exclude=set(ByteChange.model_computed_fields)),
        id=some.id,
        base_line=None if base is None else base.line,
        head_line=None if head is None else head.line,
    )


_INTERVAL_METRICS = ("drop", "logged", "named", "residual", "unexplained")


def _interval_diff(base: Interval | None, head: Interval | None) -> IntervalDiff:
    some = head if head is not None else base
    assert some is not None
    error = sum(i.error_bytes for i in (base, head) if i is not None)
    metrics: dict[str, ByteChange] = {}
    for metric in _INTERVAL_METRICS:
        metrics[metric] = _byte_change(
            None if base is None else getattr(base, f"{metric}_bytes"),
            None if head is None else getattr(head, f"{metric}_bytes"),
            error,
            on_base=base is not None,
            on_head=head is not None,
        )
    statuses = {m.status for m in metrics.values()}
    status = metrics["drop"].status
    if status is DiffStatus.UNCHANGED and DiffStatus.CHANGED in statuses:
        status = DiffStatus.CHANGED
    return IntervalDiff(
        from_id=some.from_id,
        to_id=some.to_id,
        status=status,
        drop=metrics["drop"],
        logged=metrics["logged"],
        named=metrics["named"],
        residual=metrics["residual"],
        unexplained=metrics["unexplained"],
    )


def _summary_sides(base: Summary, head: Summary) -> tuple[SummarySides, list[SummaryField]]:
    delta: dict[str, SummaryNumber] = {}
    fields: list[SummaryField] = []
    keys = list(SUMMARY_LABELS) + [k for k in Summary.model_fields if k not in SUMMARY_LABELS]
    for key in keys:
        label, unit = SUMMARY_LABELS.get(key, (key.replace("_", " "), "GiB"))
        base_value = getattr(base, key)
        head_value = getattr(head, key)
        if base_value is None or head_value is None:
            diff_value: SummaryNumber = None
            status = DiffStatus.UNKNOWN
            if base_value is None and head_value is not None:
                status = DiffStatus.NEW
            elif head_value is None and base_value is not None:
                status = DiffStatus.REMOVED
        else:
            diff_value = head_value - base_value
            if isinstance(diff_value, float):
                diff_value = round(diff_value, 6)
            threshold = MIN_TOLERANCE_BYTES / GIB if unit == "GiB" else 0
            status = DiffStatus.UNCHANGED if abs(diff_value) <= threshold else DiffStatus.CHANGED
        delta[key] = diff_value
        fields.append(
            SummaryField(
                key=key,
                label=label,
                unit=unit,
                base=base_value,
                head=head_value,
                delta=diff_value,
                delta_pct=delta_pct(base_value, head_value),
                status=status,
            )
        )
    return SummarySides(base=base, head=head, delta=Summary(**delta)), fields


def _contributions(rows: Iterable[RowDiff], *, to_totals: bool = True) -> list[RowContribution]:
    """Rows that moved, largest |Δ| first.

    With `to_totals`, each row's share of the totals (a side's unknown or non-partition value
    counts 0, as in the sums), so the shares add up exactly to the total's delta.
    """
    moved = []
    for r in rows:
        if to_totals:
            delta: int | None = _side_value(r, "head") - _side_value(r, "base")
        else:
            delta = r.delta_bytes
        if delta:
            moved.append(
                RowContribution(
                    id=r.id, label=r.label, group=r.group, delta_bytes=delta, status=r.status
                )
            )
    return sorted(moved, key=lambda c: (-abs(c.delta_bytes), c.id))


def _fmt_gib(byte_count: int) -> str:
    return f"{byte_count / GIB:.2f}"


def _state_pool_analysis(
    rows: Sequence[RowDiff],
    base: Ledger,
    head: Ledger,
    base_label: str,
    head_label: str,
    fields: Sequence[SummaryField],
) -> StatePoolAnalysis:
    partition = [r for r in rows if r.in_partition]
    fixed = [r for r in partition if r.group in FIXED_OVERHEAD_GROUPS]
    state = [r for r in partition if r.group is RowGroup.STATE_POOL]
    fixed_change = _aggregate(fixed)
    state_change = _aggregate(state)
    partition_change = _aggregate(partition)
    usable_change = _byte_change(
        base.usable_bytes,
        head.usable_bytes,
        base.tolerance_bytes + head.tolerance_bytes,
    )
    categories: list[CategoryDiff] = []
    categorised: set[RowGroup] = set()
    for category in STATE_POOL_CATEGORIES:
        categories.append(_category_diff(category, fixed))
        categorised.update(category.groups)
    leftover = tuple(sorted(set(FIXED_OVERHEAD_GROUPS) - categorised))
    if leftover:
        categories.append(_category_diff(Category(OTHER_CATEGORY_ID, "other", leftover), fixed))
    incomplete = sorted(_unknown_ids(partition))
    reasons = []
    if not state:
        reasons.append("neither ledger has state-pool rows")
    if not fixed:
        reasons.append("neither ledger has fixed-overhead rows")
    if incomplete:
        reasons.append(f"rows unknown on a side (counted as 0 there): {', '.join(incomplete)}")
    for side, ledger in (("base", base), ("head", head)):
        if ledger.stopped_at is not None:
            reasons.append(f"{side} ledger is partial (stopped at {ledger.stopped_at})")
    available = bool(state) and bool(fixed)
    delta_fixed = fixed_change.delta_bytes or 0
    delta_state = state_change.delta_bytes or 0
    delta_partition = partition_change.delta_bytes or 0
    larger: Literal["base", "head"] | None = None
    if abs(delta_state) > state_change.tolerance_bytes:
        larger = "head" if delta_state > 0 else "base"
    statement = _statement(
        larger,
        base_label,
        head_label,
        delta_state,
        delta_fixed,
        delta_partition,
        partition_change.tolerance_bytes,
        available=available,
    )
    usable_note = None
    if abs(delta_partition) > partition_change.tolerance_bytes or (
        usable_change.status is DiffStatus.CHANGED
    ):
        usable_note = (
            f"usable memory differs: head - base = {_fmt_gib(delta_partition)} GiB as the rows add "
            f"up (stated usable: {_fmt_opt(usable_change.delta_bytes)} GiB), so the state-pool "
            f"delta {_fmt_gib(delta_state)} = usable delta {_fmt_gib(delta_partition)} - "
            f"fixed-overhead delta {_fmt_gib(delta_fixed)} GiB"
        )
    by_key = {f.key: f for f in fields}
    return StatePoolAnalysis(
        available=available,
        reason="; ".join(reasons) or None,
        fixed_overhead=fixed_change,
        state_pool=state_change,
        partition=partition_change,
        usable=usable_change,
        larger_pool_side=larger,
        statement=statement,
        usable_note=usable_note,
        categories=categories,
        destination=[by_key[k] for k in DESTINATION_KEYS if k in by_key],
        state_rows=_contributions(state),
        incomplete_rows=incomplete,
    )


def _fmt_opt(byte_count: int | None) -> str:
    return "?" if byte_count is None else _fmt_gib(byte_count)


def _statement(
    larger: Literal["base", "head"] | None,
    base_label: str,
    head_label: str,
    delta_state: int,
    delta_fixed: int,
    delta_partition: int,
    partition_tolerance: int,
    *,
    available: bool,
) -> str:
    if not available:
        return "no state-pool comparison: one side has no state-pool or fixed-overhead rows"
    if larger is None:
        return (
            "the state pools are equal within printing precision "
            f"(head - base = {_fmt_gib(delta_state)} GiB)"
        )
    sign = 1 if larger == "head" else -1
    name = f"{larger} ({head_label if larger == 'head' else base_label})"
    text = f"{name}'s state pool is larger by {_fmt_gib(sign * delta_state)} GiB"
    fixed_smaller = -sign * delta_fixed
    usable_larger = sign * delta_partition
    parts = []
    if fixed_smaller != 0:
        word = "smaller" if fixed_smaller > 0 else "larger"
        parts.append(f"its fixed overhead is {word} by {_fmt_gib(abs(fixed_smaller))} GiB")
    if abs(delta_partition) > partition_tolerance:
        word = "larger" if usable_larger > 0 else "smaller"
        parts.append(f"its usable memory is {word} by {_fmt_gib(abs(usable_larger))} GiB")
    if parts:
        text += " because " + " and ".join(parts)
    return text


def _category_diff(category: Category, fixed_rows: Sequence[RowDiff]) -> CategoryDiff:
    members = [r for r in fixed_rows if r.group in category.groups]
    change = _aggregate(members)
    return CategoryDiff(
        **change.model_dump(exclude=set(ByteChange.model_computed_fields)),
        id=category.id,
        label=category.label,
        groups=list(category.groups),
        rows=_contributions(members),
    )


def _params_of(ledger: Ledger) -> dict[str, ParamValue]:
    """The ledger's parameters, plus parsed server_args when the ledger exposes them."""
    merged: dict[str, ParamValue] = {}
    server_args = getattr(ledger, "server_args", None)
    if isinstance(server_args, dict):
        merged.update({str(k): v for k, v in server_args.items()})
    merged.update(ledger.parameters)
    return merged


def _same_value(a: ParamValue, b: ParamValue) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _duplicates_server_arg(
    name: str, base_params: dict[str, ParamValue], head_params: dict[str, ParamValue]
) -> bool:
    """`ledger.dp_size` says nothing new when `dp_size` differs the same way."""
    if not name.startswith(DERIVED_PREFIX):
        return False
    bare = name.removeprefix(DERIVED_PREFIX)
    bare = DERIVED_ALIASES.get(bare, bare)
    if bare not in base_params or bare not in head_params:
        return False
    return all(_same_value(params.get(name), params[bare]) for params in (base_params, head_params))


def _parameter_diffs(base: Ledger, head: Ledger, rows: Sequence[RowDiff]) -> list[ParamDiff]:
    base_params = _params_of(base)
    head_params = _params_of(head)
    moved = [
        r for r in rows if r.status in (DiffStatus.CHANGED, DiffStatus.NEW, DiffStatus.REMOVED)
    ]
    diffs = []
    for name in sorted(set(base_params) | set(head_params)):
        on_base, on_head = name in base_params, name in head_params
        if on_base and on_head and _same_value(base_params[name], head_params[name]):
            continue
        if _duplicates_server_arg(name, base_params, head_params):
            continue
        status = (
            DiffStatus.CHANGED
            if on_base and on_head
            else DiffStatus.NEW
            if on_head
            else DiffStatus.REMOVED
        )
        effect = param_effect(name)
        diffs.append(
            ParamDiff(
                name=name,
                base=base_params.get(name),
                head=head_params.get(name),
                status=status,
                affects=[] if effect is None else _effect_targets(effect),
                why=None if effect is None else effect.why or None,
                moved_rows=[]
                if effect is None
                else _contributions(
                    (r for r in moved if _effect_matches(effect, r)), to_totals=False
                ),
            )
        )
    return diffs


def _input(ledger: Ledger, label: str) -> DiffInput:
    return DiffInput(
        label=label,
        path=ledger.source.path,
        startup=ledger.source.startup,
        n_startups=ledger.source.n_startups,
        rank=ledger.source.rank,
        outcome=ledger.outcome,
        stopped_at=ledger.stopped_at,
        ledger_schema_version=ledger.schema_version,
    )


def _coverage(ledger: Ledger) -> SideCoverage:
    return SideCoverage(
        outcome=ledger.outcome,
        stopped_at=ledger.stopped_at,
        n_checkpoints=len(ledger.checkpoints),
        n_intervals=len(ledger.intervals),
        n_rows=len(ledger.rows),
        unknown_rows=[r.id for r in ledger.rows if r.bytes is None],
        balance_error_bytes=ledger.balance_error_bytes,
        tolerance_bytes=ledger.tolerance_bytes,
        notes=list(ledger.notes),
    )


MAX_DEFAULT_LABEL = 24
"""Longer file stems make unreadable column headers: such sides are called `base`/`head`
(the inputs line still names the full path; --base-label/--head-label name them)."""


def default_labels(base: Ledger, head: Ledger) -> tuple[str, str]:
    """Short file stems of the two inputs, else `base`/`head` (also when the stems are equal)."""
    base_stem = PurePath(base.source.path).stem
    head_stem = PurePath(head.source.path).stem
    if base_stem == head_stem:
        return "base", "head"
    return (
        base_stem if 0 < len(base_stem) <= MAX_DEFAULT_LABEL else "base",
        head_stem if 0 < len(head_stem) <= MAX_DEFAULT_LABEL else "head",
    )


def diff_ledgers(
    base: Ledger,
    head: Ledger,
    *,
    base_label: str | None = None,
    head_label: str | None = None,
) -> LedgerDiff:
    """Compare two ledgers (head - base): rows, groups, checkpoints, intervals, pool, config."""
    default_base, default_head = default_labels(base, head)
    base_label = base_label or default_base
    head_label = head_label or default_head
    rows = [_row_diff(b, h) for b, h in _matched(base.rows, head.rows, lambda r: r.id)]
    partition = [r for r in rows if r.in_partition]
    present_groups = [g for g in RowGroup if any(r.group is g for r in partition)]
    groups = [
        _group_diff(g.value, group_label(g), [r for r in partition if r.group is g])
        for g in present_groups
    ]
    total = _group_diff("TOTAL", "TOTAL", partition)
    checkpoints = [
        _checkpoint_diff(b, h)
        for b, h in _matched(base.checkpoints, head.checkpoints, lambda c: c.id)
    ]
    intervals = [
        _interval_diff(b, h)
        for b, h in _matched(base.intervals, head.intervals, lambda i: (i.from_id, i.to_id))
    ]
    summary, fields = _summary_sides(base.summary, head.summary)
    counts = {status.value: sum(1 for r in rows if r.status is status) for status in DiffStatus}
    mover_group, mover_row = _biggest_mover(groups, partition)
    return LedgerDiff(
        inputs=DiffInputs(base=_input(base, base_label), head=_input(head, head_label)),
        rows=rows,
        groups=groups,
        total=total,
        checkpoints=checkpoints,
        intervals=intervals,
        summary=summary,
        summary_fields=fields,
        state_pool=_state_pool_analysis(rows, base, head, base_label, head_label, fields),
        parameters=_parameter_diffs(base, head, rows),
        coverage=CoverageDiff(base=_coverage(base), head=_coverage(head)),
        counts=counts,
        biggest_mover_group=mover_group,
        biggest_mover=mover_row,
    )


def _biggest_mover(
    groups: Sequence[GroupDiff], partition: Sequence[RowDiff]
) -> tuple[str | None, str | None]:
    """The moved group with the largest |Δ| (fixed-overhead groups first) and its top row."""
    moved = [g for g in groups if g.status is DiffStatus.CHANGED and g.delta_bytes]
    fixed = [g for g in moved if g.id != RowGroup.STATE_POOL.value]
    candidates = fixed or moved
    if not candidates:
        return None, None
    group = max(candidates, key=lambda g: (abs(g.delta_bytes or 0), g.id))
    shares = _contributions(r for r in partition if r.group.value == group.id)
    return group.id, shares[0].id if shares else None


def sort_rows(rows: Iterable[RowDiff], key: SortKey = SortKey.DELTA) -> list[RowDiff]:
    """Rows in display order: by |Δ|, id, base or head value (unknown values last).

    In the value orders, informational rows (the load peak, "reclaimed vs a baseline") come after
    the partition rows: they are in no total, so they must not top a list read as "what moved".
    The id order stays plainly alphabetical, for looking rows up.
    """
    big = 1 << 62

    def order(row: RowDiff) -> tuple[bool, int, str]:
        informational = not row.in_partition
        if key is SortKey.DELTA:
            delta = -abs(row.delta_bytes) if row.delta_bytes is not None else big
            return (informational, delta, row.id)
        if key is SortKey.BASE:
            return (informational, -row.base_bytes if row.base_bytes is not None else big, row.id)
        if key is SortKey.HEAD:
            return (informational, -row.head_bytes if row.head_bytes is not None else big, row.id)
        return (False, 0, row.id)

    return sorted(rows, key=order)
