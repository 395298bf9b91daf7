"""CUDA graphs that took more memory than SGLang plans for them, with the known cause at the log's
release: FA3's page table copied for every captured batch size up to 0.4.10.post1
(sglang#8538, fixed by sglang PRs #8567 and #8579)."""

from __future__ import annotations

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.levers import graph_cap_knob
from memledger.diagnosis.model import Direction, Finding, Severity, Suggestion
from memledger.model.events import EventKind
from memledger.sglang.failure_rules import (
    FA3_DEFAULT_CITATION,
    FA3_GRAPH_FIX_RELEASE,
    GRAPH_MEMORY_NOTE_GIB,
)
from memledger.sglang.release_markers import version_code
from memledger.units import GIB

FA3_FIX = "0.4.10.post2"
FA3_FIX_PRS = "sglang PRs #8567 and #8579"


def graph_memory(evidence: Evidence) -> tuple[list[Finding], list[Suggestion]]:
    """The note, and the graph cap, for graphs over GRAPH_MEMORY_NOTE_GIB at a release and with
    an attention backend where FA3's per-bs page tables may be the cause (nothing otherwise: a
    large model's graphs can be large for reasons the log does not show)."""
    captures = [e for e in evidence.before_failure({EventKind.CAPTURE_END}) if "usage" in e.sizes]
    if not captures:
        return [], []
    largest = max(captures, key=lambda e: e.sizes["usage"].bytes)
    usage = largest.sizes["usage"].bytes
    if usage <= GRAPH_MEMORY_NOTE_GIB * GIB:
        return [], []
    backend = evidence.param("attention_backend")
    if backend is not None and backend != "fa3":
        return [], []
    version = evidence.sizing.version if evidence.sizing is not None else None
    if version is not None and version.lower > version_code(FA3_GRAPH_FIX_RELEASE):
        return [], []  # the release is past the fix
    seen = version.text if version is not None else "unknown"
    conditions = []
    if backend is None:
        conditions.append(f"the attention backend is FA3 ({FA3_DEFAULT_CITATION})")
    conditions.append(f"the release is {FA3_GRAPH_FIX_RELEASE}.post1 or older (this log's: {seen})")
    message = (
        f"the CUDA graphs took {g(usage)}, more than the {GRAPH_MEMORY_NOTE_GIB} GiB SGLang's "
        "default keeps for bs-256 graphs (v0.4.6.post2 server_args.py:241-247): if "
        + " and ".join(conditions)
        + ", that is FA3's page table copied for every captured batch size (v0.4.10.post1 "
        "layers/attention/flashattention_backend.py:1463-1465, kept per bs at :1470; "
        f"sglang#8538: 6.19 GB on Llama-4 Maverick), fixed in {FA3_FIX} ({FA3_FIX_PRS}: 5.16 "
        "GB -> 0.95 GB on GLM-4.5-Air): upgrade, or capture fewer graphs"
    )
    finding = Finding(
        id="graph_memory",
        severity=Severity.INFO,
        message=message,
        bytes=usage,
        evidence=[evidence.at(largest.line)],
    )
    knob, spelled = graph_cap_knob(evidence)
    current = evidence.int_param(knob)
    lever = Suggestion(
        knob=knob,
        direction=Direction.LOWER,
        value=current // 2 if current and current > 1 else None,
        why=(
            f"graph memory grows with the largest captured batch ({current or 'not in the log'}"
            f"); upgrading to {FA3_FIX} or later removes FA3's per-bs copies instead{spelled}"
        ),
    )
    return [finding], [lever]


def graph_memory_verdict(finding: Finding) -> str:
    """The verdict's words for graphs that took much: the condition, then the fix."""
    return (
        f"the CUDA graphs took {g(finding.bytes or 0)}: with FA3 up to "
        f"{FA3_GRAPH_FIX_RELEASE}.post1 that is its per-bs page tables (sglang#8538), fixed in "
        f"{FA3_FIX}; else lower --cuda-graph-max-bs"
    )
