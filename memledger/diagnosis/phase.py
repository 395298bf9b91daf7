"""Which startup phase a failure (or the end of a truncated log) falls in.

The failing rank's traceback decides when one of its frames is a known phase function (the
innermost such frame wins); otherwise the last startup milestone the ledger's rank printed
before the failure does.
"""

from __future__ import annotations

from memledger.diagnosis.crash import known_cause
from memledger.diagnosis.evidence import Evidence, frames_of
from memledger.diagnosis.model import Finding
from memledger.model.events import Event, EventKind
from memledger.sglang.failure_rules import (
    CAPTURE_FAILED_TEXT,
    PHASE_FRAMES,
    SERVED,
    SERVING_SHAPES,
    WARMUP_CONTEXT,
    Phase,
    beyond_warmup,
)
from memledger.sglang.lifecycle import DRAFT_START, DRAFT_STEPS, MILESTONE_PHASE
from memledger.sglang.lines import READY_TEXT


def traceback_phase(traceback: Event) -> Phase | None:
    """The phase a traceback's frames name: its innermost startup frame's (PHASE_FRAMES), the
    draft's when a draft worker's frame encloses a target step, else its innermost serving frame's
    (the serving loop calls no startup step, so a startup frame is where it failed)."""
    if WARMUP_CONTEXT in str(traceback.values.get("context") or ""):
        return Phase.WARMUP
    placed: list[Phase] = []
    for frame in frames_of(traceback):
        for row in PHASE_FRAMES:
            if frame.function == row.function and row.fragment in frame.path:
                placed.append(row.phase)
                break
    startup = [p for p in placed if p is not Phase.SERVING]
    if Phase.DRAFT in startup and startup[-1] in DRAFT_STEPS:
        return Phase.DRAFT
    return (startup or placed)[-1] if placed else None


def is_ready_line(event: Event) -> bool:
    """The `fired up` line (not the summary line, which the outcome also counts as ready)."""
    return event.kind is EventKind.READY and event.values.get("reason") == READY_TEXT


def milestone(evidence: Evidence) -> tuple[Phase, Event | None]:
    """The phase the ledger's rank was in at the failure (or at the end of the log)."""
    stop = evidence.failure_line
    phase, last = Phase.UNKNOWN, None
    captured = False
    for event in evidence.events:
        if stop is not None and event.line > stop:
            break
        if is_ready_line(event):
            phase, last = Phase.SERVING, event
        elif captured and event.kind in DRAFT_START:
            # a worker starting again after the target's graphs: the speculative draft's own
            # startup (lifecycle stage DRAFT, v0.5.8 speculative/eagle_worker.py:80-201)
            phase, last = Phase.DRAFT, event
        elif event.kind in MILESTONE_PHASE:  # the ledger rank's own lines (and its bars)
            phase, last = MILESTONE_PHASE[event.kind], event
            if phase is Phase.DRAFT or event.values.get("role") == "draft":
                phase = Phase.DRAFT
        captured = captured or event.kind is EventKind.CAPTURE_END
    return phase, last


def failure_phase(evidence: Evidence) -> Phase:
    phase = _placed(evidence)
    if phase in SERVED and not _ready_before(evidence) and milestone(evidence)[1]:
        # the server never said it was up: the request that failed was the warmup request (a
        # traceback pasted alone, without startup lines, says nothing about that), unless a
        # batch held more requests than the warmup's
        phase = Phase.SERVING if beyond_warmup(evidence.serving_batch) else Phase.WARMUP
    return phase


def _placed(evidence: Evidence) -> Phase:
    """The phase every evidence but the OOM text's private-pool figure places the failure in:
    frames, milestones, the error text, a serving line, the cause's check."""
    if evidence.refusal is not None:
        return Phase.KV_SIZING
    phase: Phase | None = None
    if evidence.traceback is not None:
        phase = traceback_phase(evidence.traceback)
    if phase is None and evidence.traceback is not None and not frames_of(evidence.traceback):
        # the failing text came without frames; frames pasted apart from it (after the OOM
        # line, a second fragment) of the same rank still name the phase
        rank = evidence.traceback.rank
        placed = (
            traceback_phase(e)
            for e in evidence.events
            if e.kind is EventKind.TRACEBACK and e.rank == rank and e is not evidence.traceback
        )
        phase = next((p for p in placed if p is not None), None)
    if phase is None:
        phase = milestone(evidence)[0]
    declared = evidence.oom.values.get("phase") if evidence.oom is not None else None
    said = str(evidence.traceback.values.get("message") or "") if evidence.traceback else ""
    cause = _cause_phase(evidence)  # the phase whose check prints the text
    weaker = (  # what else places it, strongest first
        # an error text only one phase prints names it
        Phase(str(declared)) if declared in set(Phase) else None,
        # a request was refused or retracted, or a serving batch logged: the server was serving
        Phase.SERVING
        if any(e.values.get("shape") in SERVING_SHAPES for e in evidence.exhausted)
        or evidence.serving_batch is not None
        else None,
        # SGLang's own re-raise names the phase
        Phase.GRAPH_CAPTURE if said.startswith(CAPTURE_FAILED_TEXT) else None,
        cause,
    )
    if phase is Phase.UNKNOWN:
        phase = next((p for p in weaker if p is not None), Phase.UNKNOWN)
    if cause is Phase.DIST_INIT and phase is Phase.GRAPH_CAPTURE:
        # a distributed-init check after the target's graphs: the only later dist init in the
        # lifecycle is the speculative draft worker's (memledger.sglang.lifecycle)
        last = milestone(evidence)[1]
        if last is not None and last.kind is EventKind.CAPTURE_END:
            phase = Phase.DRAFT
    return phase


def _ready_before(evidence: Evidence) -> bool:
    stop = evidence.failure_line
    return any(is_ready_line(e) and (stop is None or e.line < stop) for e in evidence.events)


def placed_by_graphs(evidence: Evidence) -> list[Finding]:
    """The finding that places the failure after the weights by the private-pool memory the OOM
    text shows (`with X allocated in private pools`), when nothing else places it (frames of any
    fragment, startup lines, the error text, a serving line, the cause's check: `_placed`): SGLang
    allocates into private pools only after the weights; which stage after them it does not say
    (memledger.sglang.findings `phase_from_graphs`)."""
    oom = evidence.oom
    pools = oom.sizes.get("private_pools") if oom is not None else None
    if oom is None or pools is None or pools.bytes <= 0:
        return []
    if _placed(evidence) is not Phase.UNKNOWN:  # the weakest evidence: anything else places it
        return []
    return [evidence.said("phase_from_graphs", oom.line, bytes=pools.bytes, pools=pools.text)]


def _cause_phase(evidence: Evidence) -> Phase | None:
    known = known_cause(evidence)  # of any traceback: a chained one's first may hold the text
    return known[0].phase if known is not None else None
