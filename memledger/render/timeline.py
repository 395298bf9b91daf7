"""The pictures' numbers: a startup's free memory at each checkpoint, what each step took, and
where the usable memory went by group. Pure data from a `Ledger`; every drawing (Mermaid,
SVG, terminal) reads these and nothing else, so a chart's numbers are the ledger's.

A `Timeline` starts at the usable memory (before distributed init) and has one `Step` per
checkpoint the ledger read, in order; each step names the partition rows carved out of the
interval that ends there (the ledger's row labels, with their bytes and first source line).
A failed startup (OOM) ends with a step at the failing phase: the free memory when it struck,
and the shortfall (what the allocation asked for beyond it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memledger.model.ledger import Ledger, Row, RowGroup

if TYPE_CHECKING:
    from memledger.model.check import Check

PHASE_NAMES: dict[str, str] = {
    "start": "start (usable)",
    "dist_init_end": "distributed init",
    "load_begin": "load begin",
    "load_end": "load end",
    "draft_load_begin": "draft load begin",
    "draft_load_end": "draft load end",
    "memory_pool_end": "KV pool",
    "draft_memory_pool_end": "draft KV pool",
    "attention_backend_begin": "attention backend begin",
    "attention_backend_end": "attention backend",
    "draft_attention_backend_begin": "draft attention backend begin",
    "draft_attention_backend_end": "draft attention backend",
    "capture_begin": "capture begin",
    "capture_end": "capture end",
    "draft_capture_begin": "draft capture begin",
    "draft_capture_end": "draft capture end",
    "prefill_capture_begin": "prefill capture begin",
    "prefill_capture_end": "prefill capture end",
    "ready": "ready",
}
"""Display names of checkpoint ids (others: the id with spaces)."""

DIAGNOSIS_PHASES: dict[str, str] = {
    "dist_init": "distributed init",
    "load": "weight loading",
    "kv_sizing": "KV sizing",
    "memory_pool": "memory pool",
    "after_pool": "after the pools",
    "graph_capture": "CUDA graph capture",
    "warmup": "warmup",
    "serving": "serving",
    "unknown": "unknown phase",
}
"""Display names of `LedgerDiagnosis.phase`."""

GROUP_ORDER: tuple[RowGroup, ...] = (
    RowGroup.WEIGHTS,
    RowGroup.WEIGHT_STAGING,
    RowGroup.DRAFT_WEIGHTS,
    RowGroup.STATE_POOL,
    RowGroup.CUDA_GRAPH,
    RowGroup.COMMUNICATION,
    RowGroup.WORKSPACE,
    RowGroup.RUNTIME_HEADROOM,
    RowGroup.UNEXPLAINED,
)
"""The composition bars' order, left to right (every `RowGroup`, weights first)."""

GROUP_COLOURS: dict[RowGroup, str] = {
    RowGroup.WEIGHTS: "#4e79a7",
    RowGroup.WEIGHT_STAGING: "#a0cbe8",
    RowGroup.DRAFT_WEIGHTS: "#76b7b2",
    RowGroup.COMMUNICATION: "#f28e2b",
    RowGroup.WORKSPACE: "#ffbe7d",
    RowGroup.UNEXPLAINED: "#e15759",
    RowGroup.CUDA_GRAPH: "#b07aa1",
    RowGroup.RUNTIME_HEADROOM: "#bab0ac",
    RowGroup.STATE_POOL: "#59a14f",
}
"""One colour per group in every picture (Tableau 10: distinct, none near white)."""

RESERVE_ROW = "mem_fraction_static_reserve"
"""The ledger row that holds SGLang's reserve, P x (1 - mem_fraction_static)."""

SHOWN_BYTES = 1 << 20
"""A step's row smaller than this (either sign) is not named in its label."""


FAILED_AT: dict[str, str] = {
    "dist_init": "dist_init_end",
    "load": "load_end",
    "kv_sizing": "memory_pool_end",
    "memory_pool": "memory_pool_end",
    "after_pool": "attention_backend_end",
    "graph_capture": "capture_end",
    "warmup": "ready",
    "serving": "ready",
}
"""The checkpoint a failing phase would have reached: where its OOM sits on the timeline."""


def phase_name(phase: str) -> str:
    """The display name of a checkpoint id."""
    return PHASE_NAMES.get(phase, phase.replace("_", " "))


def short_label(row: Row) -> str:
    """A row's label without its parenthesised explanation (`KV cache`, `weights`)."""
    label = row.label.split(" (", 1)[0].strip()
    if label.startswith("target weights"):
        return "weights"
    if row.group == RowGroup.UNEXPLAINED:
        return "unexplained"
    return label or row.id


@dataclass(frozen=True)
class Take:
    """One row's part of a step: `bytes` > 0 took memory, < 0 gave it back."""

    row_id: str
    label: str
    group: RowGroup
    bytes: int
    source: str
    """`path:line` of the row's first source line ('' for a derived row without one)."""


@dataclass(frozen=True)
class Step:
    """A checkpoint: the free memory there and what the step into it took."""

    phase: str
    """A checkpoint id, `start`, or `failed` (the failing phase of an OOM)."""
    free_bytes: int
    error_bytes: int
    line: int | None
    text: str
    """The log line the reading comes from (untrusted text)."""
    takes: tuple[Take, ...] = ()
    drop_bytes: int = 0
    """Free memory at the previous step minus here (what the step took, net)."""
    failed: bool = False
    """The step of a failed startup's failing phase: `free_bytes` is what was free then."""

    @property
    def name(self) -> str:
        return phase_name(self.phase)

    def label(self, most: int = 2) -> str:
        """What the step took, by the ledger's row names: `KV cache 41.10, Mamba/KDA SSM state
        13.81, +6 more` (GiB; a release is `released 47.70`)."""
        shown = [t for t in self.takes if abs(t.bytes) >= SHOWN_BYTES]
        shown.sort(key=lambda t: -abs(t.bytes))
        parts = [
            f"{t.label} {t.bytes / GIB_F:.2f}"
            if t.bytes > 0
            else f"{t.label} released {-t.bytes / GIB_F:.2f}"
            for t in shown[:most]
        ]
        if len(shown) > most:
            parts.append(f"+{len(shown) - most} more")
        return ", ".join(parts)


GIB_F = float(1 << 30)


@dataclass(frozen=True)
class Failure:
    """How a failed startup ended."""

    outcome: str
    phase: str
    """`LedgerDiagnosis.phase` (load, graph_capture, ...)."""
    shortfall_bytes: int | None
    verdict: str

    @property
    def phase_name(self) -> str:
        return DIAGNOSIS_PHASES.get(self.phase, self.phase.replace("_", " "))


@dataclass(frozen=True)
class Timeline:
    """One startup's free memory, checkpoint by checkpoint."""

    name: str
    path: str
    usable_bytes: int | None
    steps: tuple[Step, ...]
    reserve_bytes: int | None = None
    """SGLang's reserve P x (1 - mem_fraction_static), when the ledger has it."""
    reserve_formula: str = ""
    mem_fraction_static: float | None = None
    failure: Failure | None = None
    stopped_at: str | None = None

    @property
    def phases(self) -> list[str]:
        return [step.phase for step in self.steps]

    def step(self, phase: str) -> Step | None:
        return next((s for s in self.steps if s.phase == phase), None)


def _source(row: Row) -> str:
    sources = row.evidence.sources
    return f"{sources[-1].path}:{sources[-1].line}" if sources else ""


def _parts(row: Row) -> dict[str, int]:
    if row.interval_parts:
        return dict(row.interval_parts)
    if row.interval and row.bytes is not None:
        return {row.interval: row.bytes}
    return {}


def timeline_of(ledger: Ledger, name: str = "") -> Timeline:
    """The ledger's checkpoints as a timeline, each step labelled with the rows it took."""
    checkpoints = ledger.checkpoints
    by_end: dict[str, list[Take]] = {}
    loose: list[Row] = []
    for row in ledger.rows:
        if not row.in_partition or row.bytes is None:
            continue
        parts = _parts(row)
        if not parts:
            loose.append(row)
            continue
        for interval, part in parts.items():
            end = interval.split("->", 1)[-1]
            take = Take(row.id, short_label(row), row.group, part, _source(row))
            by_end.setdefault(end, []).append(take)
    steps: list[Step] = []
    usable = ledger.usable_bytes
    first = checkpoints[0] if checkpoints else None
    if usable is not None:
        steps.append(Step("start", usable, ledger.tolerance_bytes, None, "usable memory"))
    failed = ledger.diagnosis is not None and ledger.diagnosis.outcome == "oom"
    for checkpoint in checkpoints:
        takes = by_end.get(checkpoint.id, [])
        if checkpoint is first:
            # rows read before the first reading (distributed init) have no interval
            takes = takes + [
                Take(r.id, short_label(r), r.group, r.bytes or 0, _source(r))
                for r in loose
                if r.group == RowGroup.COMMUNICATION
            ]
        previous = steps[-1].free_bytes if steps else checkpoint.avail_bytes
        steps.append(
            Step(
                checkpoint.id,
                checkpoint.avail_bytes,
                checkpoint.error_bytes,
                checkpoint.line,
                checkpoint.text,
                tuple(takes),
                previous - checkpoint.avail_bytes,
            )
        )
    failure = None
    if ledger.diagnosis is not None:
        diagnosis = ledger.diagnosis
        failure = Failure(
            diagnosis.outcome, diagnosis.phase, diagnosis.shortfall_bytes, diagnosis.verdict
        )
    if failed and steps:
        free = next((r for r in loose if r.group == RowGroup.RUNTIME_HEADROOM), None)
        took = [
            Take(r.id, short_label(r), r.group, r.bytes or 0, _source(r))
            for r in loose
            if r.group not in (RowGroup.RUNTIME_HEADROOM, RowGroup.COMMUNICATION)
        ]
        assert ledger.diagnosis is not None
        at = FAILED_AT.get(ledger.diagnosis.phase, "failed")
        if any(step.phase == at for step in steps):
            at = f"{at}_failed"
        if free is not None and free.bytes is not None:
            line = free.evidence.sources[-1].line if free.evidence.sources else None
            text = free.evidence.sources[-1].text if free.evidence.sources else ""
            steps.append(
                Step(
                    at,
                    free.bytes,
                    free.error_bytes,
                    line,
                    text,
                    tuple(took),
                    steps[-1].free_bytes - free.bytes,
                    failed=True,
                )
            )
    reserve = ledger.row(RESERVE_ROW)
    mfs = ledger.summary.mem_fraction_static
    return Timeline(
        name=name or ledger.source.path,
        path=ledger.source.path,
        usable_bytes=usable,
        steps=tuple(steps),
        reserve_bytes=reserve.bytes if reserve is not None else None,
        reserve_formula=(reserve.evidence.formula or "") if reserve is not None else "",
        mem_fraction_static=mfs,
        failure=failure,
        stopped_at=ledger.stopped_at,
    )


def aligned_phases(timelines: Sequence[Timeline]) -> list[str]:
    """Every phase of the timelines once, in startup order: a phase one side lacks goes after
    the last phase before it that both have (alignment by phase, not by line number)."""
    order: list[str] = []
    for timeline in timelines:
        previous: str | None = None
        for phase in timeline.phases:
            if phase not in order:
                at = order.index(previous) + 1 if previous in order else len(order)
                if previous is None:
                    at = 0
                order.insert(at, phase)
            previous = phase
    return order


@dataclass(frozen=True)
class Bar:
    """One deployment's usable memory split by group (bytes per group in `GROUP_ORDER`)."""

    name: str
    parts: tuple[tuple[RowGroup, int], ...]
    negative: tuple[tuple[RowGroup, int], ...] = field(default=())
    """Groups whose rows sum below zero (memory freed): not drawn, named under the bar."""

    @property
    def total(self) -> int:
        return sum(b for _, b in self.parts)


def bar_of(ledger: Ledger, name: str = "") -> Bar:
    """Where the ledger's usable memory went: one part per group that has bytes."""
    totals = {g.group: g.bytes for g in ledger.groups}
    parts = tuple((g, totals[g]) for g in GROUP_ORDER if totals.get(g, 0) > 0)
    negative = tuple((g, totals[g]) for g in GROUP_ORDER if totals.get(g, 0) < 0)
    return Bar(name or ledger.source.path, parts, negative)


@dataclass(frozen=True)
class Gauge:
    """One budget check as a share of its limit (100 = at the limit)."""

    item: str
    log: str
    bound: str
    """`max`, `min` or `max_increase`: under 100 passes a max, over 100 a min."""
    percent: float
    breached: bool
    actual: int | float
    limit: int | float
    size: bool = False
    """`actual` and `limit` are bytes (else counts, or percents for max_increase_pct)."""


MAX_GAUGES = 40
"""A check run with more checks than this draws no budget chart (a fleet's report)."""


def gauges(checks: Iterable[Check]) -> list[Gauge]:
    """Each check that compares a number with a limit, as its share of the limit: max and min
    bounds by actual / limit, a max_increase by the increase / the allowed increase (absolute,
    else in percent). Missing, skipped and startup checks have no number: left out."""
    found: list[Gauge] = []
    for check in checks:
        bound = check.bound.value
        size = check.kind.value == "size"
        if bound in ("max", "min") and check.actual is not None and check.limit:
            actual, limit = check.actual, check.limit
        elif bound == "max_increase" and check.increase is not None and check.limit:
            actual, limit = check.increase, check.limit
        elif bound == "max_increase" and check.increase_pct is not None and check.limit_pct:
            actual, limit = check.increase_pct, check.limit_pct
            size = False
        else:
            continue
        found.append(
            Gauge(
                check.item,
                check.log,
                bound,
                100.0 * actual / limit,
                check.breached,
                actual,
                limit,
                size,
            )
        )
    first = {g.item: i for i, g in reversed(list(enumerate(found)))}
    return sorted(found, key=lambda g: first[g.item])  # one item's logs side by side
