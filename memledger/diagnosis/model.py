"""The diagnosis of one startup: a verdict, the phase, the shortfall, findings and suggestions.

Pure data; built by `memledger.diagnosis.diagnose`. The JSON keys are a contract other tools read:
`outcome`, `phase`, `shortfall_bytes`, `findings` [{id, severity, message, bytes, evidence}],
`suggestions` [{knob, direction, value, why}].
"""

from __future__ import annotations

from dataclasses import field, replace
from enum import StrEnum

from memledger.record import record
from memledger.sglang.failure_rules import Phase
from memledger.sglang.levers import flag_of


class Severity(StrEnum):
    ERROR = "error"
    """Why the startup failed."""
    WARNING = "warning"
    """A memory problem the startup survived (it will bite later, or it wastes memory)."""
    INFO = "info"


class Direction(StrEnum):
    RAISE = "raise"
    LOWER = "lower"
    DISABLE = "disable"
    ENABLE = "enable"


class FindingId(StrEnum):
    """Every finding diagnose's own rules can report, by the id its JSON carries (`findings[].id`);
    a failure table's row reports its own id (memledger.sglang.failure_rules: a `CrashCause`'s or a
    `LoadSite`'s `finding_id`), so adding a row needs no member here."""

    # findings of memledger.diagnosis' own rules
    AFTER_POOL_DROP = "after_pool_drop"
    ALLOCATION_EXCEEDS_GPU = "allocation_exceeds_gpu"
    ALLOCATION_EXCEEDS_SLACK = "allocation_exceeds_slack"
    CAPTURE_POINT = "capture_point"
    DP_AUTO_FRACTION = "dp_auto_fraction"
    ERROR_NOT_IN_LOG = "error_not_in_log"
    FAILURE_SITE = "failure_site"
    FRAGMENTATION = "fragmentation"
    FREE_ROSE_AFTER_POOL = "free_rose_after_pool"
    GRAPH_MEMORY = "graph_memory"
    HOST_MEMORY = "host_memory"
    INDEXER_LEFT_OUT = "indexer_left_out"
    KILLED = "killed"
    KV_CAPACITY = "kv_capacity"
    KV_POOL_FULL = "kv_pool_full"
    LAUNCH_COMMAND = "launch_command"
    MFS_FAR_BELOW_DEFAULT = "mfs_far_below_default"
    MFS_NOT_THE_LEVER = "mfs_not_the_lever"
    NO_FRACTION_FITS = "no_fraction_fits"
    NOT_MEMORY = "not_memory"
    OOM_MESSAGE = "oom_message"
    OOM_OTHER_RANKS = "oom_other_ranks"
    OTHER_PROCESSES = "other_processes"
    OVERSIZED_FORWARD = "oversized_forward"
    PHASE_FROM_GRAPHS = "phase_from_graphs"
    POOL_NOT_FULL = "pool_not_full"
    POOL_RAN_OUT = "pool_ran_out"
    REQ_TO_TOKEN_TABLE = "req_to_token_table"
    REQUEST_EXCEEDS_POOL = "request_exceeds_pool"
    ROOM_AT_READY = "room_at_ready"
    SHARED_MEMORY = "shared_memory"
    SWA_POOL_RAN_OUT = "swa_pool_ran_out"
    THIN_HEADROOM = "thin_headroom"
    TRUNCATED = "truncated"
    WEIGHTS_EXCEED_BUDGET = "weights_exceed_budget"
    ZERO_HEADROOM = "zero_headroom"
    EMBEDDED_IN_FRAMEWORK = "embedded_in_framework"
    TRAINER_OOM = "trainer_oom"
    # findings of a vLLM log (memledger.diagnosis.vllm)
    FAILED_AT_KV_CHECK = "failed_at_kv_check"
    IN_USE_AT_START = "in_use_at_start"
    KV_CACHE_MEMORY_SUGGESTION = "kv_cache_memory_suggestion"
    KV_SHORT_OF_ONE_REQUEST = "kv_short_of_one_request"
    NO_KV_BUDGET = "no_kv_budget"
    OOM = "oom"
    REPORTED = "reported"
    SETTING_ADJUSTED = "setting_adjusted"


@record
class Finding:
    id: str
    """A `FindingId`, or the `finding_id` of the failure-table row the finding is."""
    severity: Severity
    message: str
    bytes: int | None = None
    """The amount the finding quantifies, when it quantifies one."""
    evidence: list[str] = field(default_factory=list)
    """`file:line` of every log line the finding rests on."""


@record
class Suggestion:
    knob: str
    """The server-arg name with underscores (`mem_fraction_static`)."""
    direction: Direction
    value: int | float | None = None
    why: str
    """The arithmetic behind the value, with where each number came from."""

    @property
    def flag(self) -> str:
        return flag_of(self.knob)


def leading(first: list[Suggestion], rest: list[Suggestion]) -> list[Suggestion]:
    """`first`, then those of `rest` whose knob none of `first` moves (one suggestion a knob, the
    firmer answer's)."""
    knobs = {s.knob for s in first}
    return [*first, *(s for s in rest if s.knob not in knobs)]


def with_value(
    suggestions: list[Suggestion], knob: str, value: int | None, arithmetic: str
) -> list[Suggestion]:
    """`suggestions` where `knob`'s carries `value` (None: still none) and the `arithmetic`
    behind it after its reason."""
    return [
        replace(s, value=value, why=f"{s.why}; {arithmetic}") if s.knob == knob else s
        for s in suggestions
    ]


DIAGNOSIS_SCHEMA_VERSION = 1


@record
class Diagnosis:
    schema_version: int = DIAGNOSIS_SCHEMA_VERSION
    path: str
    rank: str
    """The rank the ledger describes (the failing rank may differ: see findings)."""
    outcome: str
    """`ready`, `starved` (ready, with a memory warning), `oom`, `crash` or `truncated`."""
    phase: Phase
    verdict: str
    """One line, the first thing to print."""
    shortfall_bytes: int | None = None
    """Requested minus free at the failure, where the evidence gives both."""
    failed_rank: str | None = None
    """The rank whose error text the diagnosis used."""
    findings: list[Finding] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.outcome in ("oom", "crash")

    @property
    def memory_problem(self) -> bool:
        return self.outcome in ("oom", "starved")


Result = tuple[list[Finding], list[Suggestion]]
"""What a phase rule returns: its findings and its suggestions, in order."""
