"""The diagnosis of one startup: a verdict, the phase, the shortfall, findings and suggestions.

Pure data; built by `memledger.diagnosis.diagnose`. The JSON keys are a contract other tools read:
`outcome`, `phase`, `shortfall_bytes`, `findings` [{id, severity, message, bytes, evidence}],
`suggestions` [{knob, direction, value, why}].
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum

from memledger.record import record
from memledger.sglang.failure_rules import Phase


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


@record
class Finding:
    id: str
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
        return "--" + self.knob.replace("_", "-")


MEMORY_KNOBS = frozenset(
    {
        "mem_fraction_static",
        "cuda_graph_max_bs",
        "cuda_graph_max_bs_decode",
        "context_length",
        "max_running_requests",
        "chunked_prefill_size",
        "disable_cuda_graph",
        "tp_size",
        "cpu_offload_gb",
        "max_total_tokens",
    }
)
"""Knobs that trade memory; a diagnosis without memory evidence suggests none of them."""


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
