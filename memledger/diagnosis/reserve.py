"""What a startup left outside its KV pool, against what SGLang's own default keeps on a GPU over
96 GiB (18 GiB: 15 GB for activations plus 3 GB for the bs-256 CUDA graphs; see
`memledger.sglang.failure_rules.LARGE_GPU_RESERVE_GIB`).

The outside part is read off the log: free memory at `Memory pool end` when it is there, else the
last graph capture's `mem usage` plus the `avail mem` after it (a paste of the capture lines).
"""

from __future__ import annotations

from dataclasses import dataclass

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence
from memledger.events import EventKind
from memledger.sglang.failure_rules import (
    LARGE_GPU_CONTEXT_ALLOWANCE_GIB,
    LARGE_GPU_MIB,
    LARGE_GPU_RESERVE_GIB,
)
from memledger.units import GIB, MIB

LARGE_GPU_BYTES = LARGE_GPU_MIB * MIB
RESERVE_BYTES = LARGE_GPU_RESERVE_GIB * GIB
ALLOWANCE_BYTES = LARGE_GPU_CONTEXT_ALLOWANCE_GIB * GIB


@dataclass(frozen=True)
class Outside:
    """Memory outside the KV pool: how much, how it was read, and the log line."""

    bytes: int
    text: str
    line: int
    known_large: bool
    """The log shows a GPU over 96 GiB (P, free before loading, above it)."""
    after_graphs: bool
    """Read after the graphs (their usage + free after them), not at Memory pool end."""

    @property
    def missing(self) -> int:
        """How far below SGLang's large-GPU reserve it is; 0 within the context allowance."""
        short = RESERVE_BYTES - self.bytes
        return short if short > ALLOWANCE_BYTES else 0


def outside_pool(evidence: Evidence) -> Outside | None:
    """The memory left outside the KV pool, or None where the log cannot say or the GPU is
    known to be 96 GiB or smaller (the large-GPU reserve does not apply there)."""
    pre = evidence.budget.pre_load
    if pre is not None and pre.avail_bytes <= LARGE_GPU_BYTES:
        return None
    known_large = pre is not None
    pool = evidence.budget.pool_end
    if pool is not None:
        return Outside(
            pool.avail_bytes,
            "free at Memory pool end",
            pool.line,
            known_large,
            False,
        )
    captures = [
        e
        for e in evidence.before_failure({EventKind.CAPTURE_END})
        if "usage" in e.sizes and "avail" in e.sizes
    ]
    if not captures:
        return None
    last = captures[-1]
    usage, avail = last.sizes["usage"], last.sizes["avail"]
    total = usage.bytes + avail.bytes
    return Outside(
        total,
        f"{g(usage.bytes)} of CUDA graphs + {g(avail.bytes)} free after them",
        last.line,
        known_large,
        True,
    )
