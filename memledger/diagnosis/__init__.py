"""Why a startup failed or came out small: which phase, by how much, which knob.

`diagnose(parsed, ledger)` is a pure function of the parsed log (its error events included)
and the ledger built from it; renderers turn the `Diagnosis` into text, markdown or JSON.
A failure without memory evidence gets no memory knob.
"""

from __future__ import annotations

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence, gather
from memledger.diagnosis.health import free_rose_after_pool, mfs_below_default, zero_headroom
from memledger.diagnosis.memory import (
    after_pool_oom,
    capture_point,
    kv_refusal,
    load_oom,
    oom_findings,
    shortfall,
    site_finding,
)
from memledger.diagnosis.model import (
    Diagnosis,
    Direction,
    Finding,
    Severity,
    Suggestion,
)
from memledger.diagnosis.phase import failure_phase, milestone
from memledger.events import ParsedLog
from memledger.ledger_model import Ledger, LedgerDiagnosis
from memledger.sglang.failure_rules import PHASE_TEXT, Phase

__all__ = [
    "Diagnosis",
    "Direction",
    "Finding",
    "Severity",
    "Suggestion",
    "brief",
    "diagnose",
]

MESSAGE_CLIP = 70


def diagnose(parsed: ParsedLog, ledger: Ledger) -> Diagnosis:
    """The diagnosis of the parsed startup (the ledger must be built from the same parse)."""
    evidence = gather(parsed, ledger)
    if evidence.memory_evidence:
        return _out_of_memory(evidence)
    if evidence.outcome == "crash":
        return _crash(evidence)
    if evidence.outcome == "truncated":
        return _truncated(evidence)
    return _ready(evidence)


def brief(diagnosis: Diagnosis) -> LedgerDiagnosis | None:
    """What a ledger carries of its diagnosis: only a failed or starved startup has one."""
    if diagnosis.outcome not in ("oom", "crash", "starved"):
        return None
    return LedgerDiagnosis(
        outcome=diagnosis.outcome,
        phase=diagnosis.phase.value,
        shortfall_bytes=diagnosis.shortfall_bytes,
        verdict=diagnosis.verdict,
    )


def _diagnosis(evidence: Evidence, **fields: object) -> Diagnosis:
    return Diagnosis(path=evidence.path, rank=evidence.rank, **fields)


def _phrase(suggestion: Suggestion) -> str:
    value = suggestion.value
    flag = suggestion.flag
    if suggestion.direction is Direction.ENABLE:
        return f"set {flag}"
    if value is None:
        return f"{suggestion.direction.value} {flag}"
    if suggestion.knob == "cuda_graph_max_bs":
        return f"cap {flag} at {value:g}"
    return f"{suggestion.direction.value} {flag} to {value:g}"


def _out_of_memory(evidence: Evidence) -> Diagnosis:
    phase = failure_phase(evidence)
    missing = shortfall(evidence)
    findings = oom_findings(evidence)
    if evidence.refusal is not None:
        extra, suggestions = kv_refusal(evidence)
    elif phase in (Phase.LOAD, Phase.DIST_INIT):
        extra, suggestions = load_oom(evidence)
    else:
        extra, suggestions = after_pool_oom(evidence, phase)
    findings += extra + site_finding(evidence) + free_rose_after_pool(evidence)
    if evidence.refusal is not None:
        head = "SGLang refused to size the KV cache"
    else:
        head = f"OOM during {PHASE_TEXT[phase]}"
    if missing:
        head += f": {g(missing)} short"
    levers = [_phrase(s) for s in suggestions if s.value is not None][:2]
    blocking = next((f for f in findings if f.id == "unsharded_fallback"), None)
    if levers:
        verdict = head + f"; {' or '.join(levers)}"
    elif blocking is not None:
        verdict = head + "; the Transformers fallback builds the whole model on each GPU"
    else:
        verdict = head
    return _diagnosis(
        evidence,
        outcome="oom",
        phase=phase,
        verdict=verdict,
        shortfall_bytes=missing,
        failed_rank=_failed_rank(evidence),
        findings=findings,
        suggestions=suggestions,
    )


def _failed_rank(evidence: Evidence) -> str | None:
    for event in (evidence.oom, evidence.refusal, evidence.traceback, evidence.exit):
        if event is not None:
            return event.rank
    return None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_CLIP else text[: MESSAGE_CLIP - 3] + "..."


def _crash(evidence: Evidence) -> Diagnosis:
    phase = failure_phase(evidence)
    traceback = evidence.traceback
    findings: list[Finding] = []
    if traceback is not None and traceback.values.get("exception"):
        what = f"{traceback.values['exception']}: {traceback.values.get('message') or ''}"
        where = f"{traceback.rank}, " if traceback.rank else ""
        cause = f"{_clip(what)} ({where}line {traceback.line})"
    elif traceback is not None:
        where = f"{traceback.rank}, " if traceback.rank else ""
        cause = f"the traceback is cut off before its exception ({where}line {traceback.line})"
    else:
        cause = _clip(evidence.ledger.stopped_at or "no traceback in the log")
    exit_event = evidence.exit
    if exit_event is not None and exit_event.values.get("killed"):
        findings.append(
            Finding(
                id="killed",
                severity=Severity.WARNING,
                message=(
                    "the process was killed (SIGKILL): often the host's OOM killer (host RAM, "
                    "see dmesg); the log has no GPU out-of-memory text"
                ),
                evidence=[evidence.at(exit_event.line)],
            )
        )
    findings.append(
        Finding(
            id="not_memory",
            severity=Severity.INFO,
            message=f"not a memory problem: {cause}; no out-of-memory text in the log",
            evidence=[evidence.at(traceback.line if traceback else evidence.outcome_line)],
        )
    )
    findings += site_finding(evidence) + free_rose_after_pool(evidence)
    return _diagnosis(
        evidence,
        outcome="crash",
        phase=phase,
        verdict=f"crash during {PHASE_TEXT[phase]}: {cause} - not a memory problem",
        failed_rank=_failed_rank(evidence),
        findings=findings,
    )


def _truncated(evidence: Evidence) -> Diagnosis:
    phase, last = milestone(evidence)
    at = f" (last memory line: {last.line})" if last is not None else ""
    findings = [
        Finding(
            id="truncated",
            severity=Severity.INFO,
            message=(
                f"the log ends during {PHASE_TEXT[phase]}{at} with no error and no ready line: "
                "whether the startup failed is not in the log"
            ),
            evidence=[evidence.at(last.line)] if last is not None else [],
        )
    ]
    if phase is Phase.GRAPH_CAPTURE:
        findings += capture_point(evidence)[0]
    findings += free_rose_after_pool(evidence)
    return _diagnosis(
        evidence,
        outcome="truncated",
        phase=phase,
        verdict=f"log ends during {PHASE_TEXT[phase]}{at}: no error text, outcome unknown",
        findings=findings,
    )


def _ready(evidence: Evidence) -> Diagnosis:
    headroom, suggestions = zero_headroom(evidence)
    findings = headroom + free_rose_after_pool(evidence) + mfs_below_default(evidence)
    warnings = [f for f in findings if f.severity is Severity.WARNING]
    phase = Phase.SERVING if evidence.outcome == "ready" else Phase.UNKNOWN
    if warnings:
        verdict = f"ready, but starved: {warnings[0].message}"
        levers = [_phrase(s) for s in suggestions if s.value is not None][:1]
        verdict += f"; {levers[0]}" if levers else ""
        outcome = "starved"
    else:
        verdict = "ready: no memory problem found"
        outcome = evidence.outcome
    return _diagnosis(
        evidence,
        outcome=outcome,
        phase=phase,
        verdict=verdict,
        findings=findings,
        suggestions=suggestions,
    )
