"""One allocation of tens of GiB while much memory is still free: a long prefill's working set
(its size grows with the chunk's tokens), where the chunk, not the fraction, is the lever."""

from __future__ import annotations

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.model import Direction, Finding, FindingId, Result, Severity, Suggestion
from memledger.sglang.failure_rules import (
    FORWARD_ASK_MIN_GIB,
    FORWARD_FREE_MIN_GIB,
    PREFILL_ASK_CITATION,
    Phase,
)
from memledger.units import GIB

SERVING_PHASES = (Phase.UNKNOWN, Phase.SERVING, Phase.WARMUP)


def oversized_forward(evidence: Evidence, phase: Phase) -> Result | None:
    """An ask of FORWARD_ASK_MIN_GIB or more with FORWARD_FREE_MIN_GIB or more free, after the
    pools (or where the paste does not say): the chunk scales it; lowering mfs by the whole
    shortfall would give up that much KV pool for one tensor."""
    oom = evidence.oom
    if oom is None or evidence.refusal is not None or phase not in SERVING_PHASES:
        return None
    requested, free = oom.sizes.get("requested"), oom.sizes.get("free")
    if requested is None or free is None or requested.bytes <= free.bytes:
        return None
    if requested.bytes < FORWARD_ASK_MIN_GIB * GIB or free.bytes < FORWARD_FREE_MIN_GIB * GIB:
        return None
    share = free.bytes / requested.bytes
    finding = Finding(
        id=FindingId.OVERSIZED_FORWARD,
        severity=Severity.ERROR,
        message=(
            f"one allocation of {requested.text} with {free.text} still free: the pools left "
            "room, and one tensor that large is a forward's working set sized by its tokens, a "
            "long prefill chunk (a decode step holds one token a request), such as a sparse "
            "attention indexer's [chunk tokens x context] logits, which no KV budget counts; a "
            f"smaller chunk shrinks it in proportion ({PREFILL_ASK_CITATION})"
        ),
        bytes=requested.bytes - free.bytes,
        evidence=[evidence.at(oom.line)],
    )
    chunk = evidence.int_param("chunked_prefill_size")
    value = None
    if chunk is not None and chunk > 0:
        fit = int(chunk * share)
        value = 1 << (fit.bit_length() - 1) if fit >= 1 else None  # a power of two below
    origin = f"{chunk} x {share:.2f} = {int(chunk * share)} -> {value}" if value and chunk else ""
    lever = Suggestion(
        knob="chunked_prefill_size",
        direction=Direction.LOWER,
        value=value,
        why=(
            f"the allocation grows with the prefill chunk's tokens: {g(free.bytes)} free of "
            f"{g(requested.bytes)} asked is {share:.2f} of it"
            + (f"; {origin}, a power of two" if origin else "; the chunk is not in the log")
            + "; or a release whose kernel chunks it under a free-memory budget (sglang PR #38507 "
            "for the DSA indexer)"
        ),
    )
    return [finding], [lever]
