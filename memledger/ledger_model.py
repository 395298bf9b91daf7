"""The ledger model: what memledger concluded about one rank's GPU memory at one startup.

Pure data (pydantic); built by `memledger.engine`, rendered by `memledger.render`. Bytes are
integers; every `*_gib` is a display view of a byte field.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field, computed_field

from memledger.sizing.result import SizingResult
from memledger.units import GIB, FrozenModel

LEDGER_SCHEMA_VERSION = 1


def _gib(byte_count: int | None) -> float | None:
    return None if byte_count is None else round(byte_count / GIB, 6)


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


class SourceLine(FrozenModel):
    """A log line that a number was read from."""

    path: str
    line: int
    text: str


class Evidence(FrozenModel):
    """Why a row has the number it has."""

    sources: list[SourceLine] = Field(default_factory=list)
    formula: str | None = None
    """Human-readable arithmetic, e.g. `209 rows x 1048580 cols x 4 B`."""
    inputs: dict[str, int | float | str | None] = Field(default_factory=dict)
    note: str | None = None
    """For unknown rows: the reason; otherwise an optional one-line why."""


class Row(FrozenModel):
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
    interval_parts: dict[str, int] = Field(default_factory=dict)
    """For a row carved from more than one interval (resident weights = the load's part + the
    negative part released right after it): bytes per `from->to`, summing to `bytes`; `interval`
    is the first. Empty for every other row."""
    in_partition: bool = True
    """False for informational rows (e.g. the load peak) that must not be summed."""
    evidence: Evidence = Field(default_factory=Evidence)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gib(self) -> float | None:
        return _gib(self.bytes)


class Checkpoint(FrozenModel):
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
        return round(self.avail_bytes / GIB, 6)


class Interval(FrozenModel):
    """The span between two consecutive checkpoints and how its avail drop is explained."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    from_id: str = Field(alias="from")
    to_id: str = Field(alias="to")
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
        return round(self.drop_bytes / GIB, 6)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def logged_gib(self) -> float:
        return round(self.logged_bytes / GIB, 6)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def named_gib(self) -> float:
        return round(self.named_bytes / GIB, 6)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def residual_gib(self) -> float:
        return round(self.residual_bytes / GIB, 6)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def unexplained_gib(self) -> float:
        return round(self.unexplained_bytes / GIB, 6)


class Summary(FrozenModel):
    """Headline figures (GiB unless noted; None when not applicable or unknown)."""

    usable: float | None = None
    nccl_init: float | None = None
    weights_load_peak: float | None = None
    weights_released: float | None = None
    weights_resident: float | None = None
    weight_staging: float | None = None
    draft_weights: float | None = None
    draft_staging: float | None = None
    cuda_graph: float | None = None
    cuda_graph_largest_bucket: float | None = None
    cuda_graph_static: float | None = None
    workspace: float | None = None
    runtime_headroom: float | None = None
    fixed_overhead: float | None = None
    state_pool: float | None = None
    kv_pool: float | None = None
    draft_kv: float | None = None
    state_per_slot: float | None = None
    slots: int | None = None
    req_to_token: float | None = None
    mem_fraction_static: float | None = None
    kv_tokens_per_rank: int | None = None
    kv_tokens_per_dp_group: int | None = None
    kv_tokens_per_instance: int | None = None


class LedgerSource(FrozenModel):
    """Which input this ledger describes."""

    path: str
    startup: int
    n_startups: int
    rank: str


class Ledger(FrozenModel):
    """The full account for one rank of one startup."""

    schema_version: int = LEDGER_SCHEMA_VERSION
    source: LedgerSource
    outcome: str
    stopped_at: str | None = None
    """For partial ledgers: the last checkpoint reached and why the account stops there."""
    checkpoints: list[Checkpoint]
    intervals: list[Interval]
    rows: list[Row]
    summary: Summary
    usable_bytes: int | None
    """The total the partition sums to (None when it cannot be known)."""
    balance_error_bytes: int = 0
    """sum(partition rows) - usable_bytes."""
    tolerance_bytes: int = 0
    """Accumulated ± printing precision of every number the partition used."""
    parameters: dict[str, int | float | str | bool | None] = Field(default_factory=dict)
    """Parameters the engine used (dp_size, dcp_size, mem_fraction_static, ...), for diffs."""
    notes: list[str] = Field(default_factory=list)
    """Degradations: missing checkpoints, missing parameters, why a row is unknown."""
    sizing: SizingResult | None = None
    """SGLang's KV-pool sizing redone with this log's numbers (memledger.sizing); None in
    ledgers saved before it existed."""

    def row(self, row_id: str) -> Row | None:
        """The row with this id, if any."""
        return next((r for r in self.rows if r.id == row_id), None)
