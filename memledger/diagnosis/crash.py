"""Crashes with a known cause that is not GPU memory: the host's shared memory (/dev/shm), and
the error texts of `memledger.sglang.failure_rules.CRASH_CAUSES` (each with its fix)."""

from __future__ import annotations

from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.model import Direction, Finding, Severity, Suggestion, with_value
from memledger.model.events import Event, EventKind
from memledger.sglang.failure_rules import (
    CRASH_CAUSE,
    DRIVER_RESULTS,
    SHM_SHAPE,
    CrashCause,
)
from memledger.sizing.host_pool import refused_room
from memledger.units import GIB, MIB


def shm_exhausted(evidence: Evidence) -> Event | None:
    """The first sign that the host's /dev/shm ran out (NCCL segment, SIGBUS, PyTorch worker)."""
    return next((e for e in evidence.exhausted if e.values.get("pool") == SHM_SHAPE), None)


def shm_finding(event: Event, evidence: Evidence) -> Finding:
    size = event.values.get("size")
    amount = size if isinstance(size, int) and size > 0 else None
    segment = f" (a {amount / MIB:.1f} MiB segment)" if amount else ""
    return evidence.said("shared_memory", event.line, bytes=amount, segment=segment)


def known_cause(evidence: Evidence) -> tuple[CrashCause, Event] | None:
    """The first traceback (the chosen one first) whose error text is a known crash cause."""
    tracebacks = [e for e in evidence.events if e.kind is EventKind.TRACEBACK]
    if evidence.traceback is not None:
        tracebacks.insert(0, evidence.traceback)
    for event in tracebacks:
        cause = CRASH_CAUSE.get(str(event.values.get("cause")))
        if cause is not None:
            return cause, event
    return None


def cause_numbers(event: Event) -> tuple[int | None, str]:
    """What the input layer read off a known cause's text (the event's values: the balance
    check's two free figures, a driver's result code): the bytes it measures, in words."""
    low, local = event.values.get("min_per_gpu_memory"), event.values.get("local_gpu_memory")
    code = event.values.get("result_code")
    if isinstance(low, int | float) and isinstance(local, int | float):
        return round((local - low) * GIB), (
            f"the fullest rank had {low:.2f} GiB free against this rank's {local:.2f} GiB: "
            f"{local - low:.2f} GiB held on it that this rank does not hold"
        )
    if isinstance(code, int):
        return None, f"code {code}: {DRIVER_RESULTS.get(code, 'a driver error')}"
    return None, ""


def cause_finding(cause: CrashCause, event: Event, evidence: Evidence) -> Finding:
    """The cause's finding, with the numbers the input layer read off its text."""
    amount, said = cause_numbers(event)
    message = f"{cause.message}{'; here ' if said else ''}{said} ({cause.source})"
    return evidence.finding(cause.finding_id, Severity.ERROR, message, event.line, bytes=amount)


def cause_levers(
    cause: CrashCause, event: Event | None = None, evidence: Evidence | None = None
) -> list[Suggestion]:
    """The cause's launch flags as suggestions, in its order, each with its fix as the reason; a
    value where the text's own numbers give one (HiCache's refusal: sizing.host_pool)."""
    args = (event.values, evidence.server_args, evidence.version) if event and evidence else None
    room = refused_room(*args) if args else None
    levers = [
        Suggestion(knob=knob, direction=Direction(direction), value=None, why=cause.fix)
        for knob, direction in cause.knobs
    ]
    return levers if room is None else with_value(levers, "hicache_size", *room)
