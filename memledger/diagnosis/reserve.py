"""What a startup left outside its KV pool, against what SGLang's own default keeps there at the
log's release: P x (1 - default mem_fraction_static), by the sizing model's one default rule
(memledger.sglang.mfs_defaults, read by memledger.sizing.defaults).

The outside part is read off the log: free memory at `Memory pool end` when it is there, else the
last graph capture's `mem usage` plus the `avail mem` after it (a paste of the capture lines).
The 18 GiB of 0.4.6.post2 - 0.4.7 on a GPU over 96 GiB (not in the sizing model: those releases
differ by post release above 80 GiB) is used only where the log's release may be one of them, and
then as a condition named in the finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.model import Finding
from memledger.model.events import EventKind
from memledger.sglang.backend_defaults import LARGE_GPU_MFS_RULES, LARGE_GPU_RESERVE_MIB
from memledger.sglang.failure_rules import LARGE_GPU_CONTEXT_ALLOWANCE_GIB, LARGE_GPU_MIB
from memledger.sglang.mfs_defaults import LAST_BUCKETS
from memledger.sglang.releases import version_code
from memledger.sglang.sizing_rules import RULE
from memledger.sizing.defaults import DefaultMfs, capacity_pieces, default_mem_fraction_static
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.settings import base_settings
from memledger.units import GIB, MIB

LARGE_GPU_BYTES = LARGE_GPU_MIB * MIB
RESERVE_RULES = tuple(r for r in LARGE_GPU_MFS_RULES if r.id.startswith("mfs_large_gpu_48g"))
"""The sizing model's 0.4.x rules that keep LARGE_GPU_RESERVE_MIB (18 GiB) or more outside the
static pool on a GPU over 96 GiB: mfs = min(0.88 + 48 GiB x 0.12 / G, (G - 18 GiB) / G)."""
RESERVE_RELEASES = f"{RESERVE_RULES[0].releases[0]} - {RESERVE_RULES[-1].releases[-1]}"
RESERVE_SOURCE = "; ".join(rule.source for rule in RESERVE_RULES)
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


@dataclass(frozen=True)
class DefaultReserve:
    """What SGLang's default keeps outside the static pool for this log (bytes), low to high
    over the GPU capacities the log allows (P <= capacity), and where it comes from."""

    low: int
    high: int
    text: str
    """The release and rule it is of (`at release 0.5.20 (P x (1 - 0.93), rule ...)`)."""
    condition: str = ""
    """Empty when the rule is this log's release's; else the release range it holds for."""

    def missing(self, outside: int) -> int:
        """How far below the reserve `outside` is for every capacity (0: not for every one, or
        within the CUDA context's allowance)."""
        short = self.low - outside
        return short if short > ALLOWANCE_BYTES else 0

    @property
    def shown(self) -> str:
        return g(self.low) if self.low == self.high else f"{g(self.low)} - {g(self.high)}"


def outside_pool(evidence: Evidence) -> Outside | None:
    """The memory left outside the KV pool, or None where the log cannot say or the GPU is
    known to be 96 GiB or smaller (SGLang's 0.4.x default keeps a fixed reserve only above that:
    v0.4.6.post2 server_args.py:241)."""
    pre = evidence.budget.pre_load
    if pre is not None and pre.avail_bytes <= LARGE_GPU_BYTES:
        return None
    known_large = pre is not None
    pool = evidence.budget.pool_end
    if pool is not None:
        return Outside(pool.avail_bytes, "free at Memory pool end", pool.line, known_large, False)
    captures = [
        e
        for e in evidence.before_failure({EventKind.CAPTURE_END})
        if "usage" in e.sizes and "avail" in e.sizes
    ]
    if not captures:
        return None
    last = captures[-1]
    usage, avail = last.sizes["usage"], last.sizes["avail"]
    text = f"{g(usage.bytes)} of CUDA graphs + {g(avail.bytes)} free after them"
    return Outside(usage.bytes + avail.bytes, text, last.line, known_large, True)


def _rule_known(inputs: SizingInputs) -> bool:
    """The log's release range is under one default rule of the sizing model: 0.5.3 - 0.5.13,
    0.5.14+, or wholly before 0.5.3 (where mfs_defaults gives a value only if it is one)."""
    version = inputs.version
    if version.within(RULE["mfs_default"]) or version.within(RULE["mfs_default_graphs"]):
        return True
    return version.first is not None and version.last is not None and version.last <= LAST_BUCKETS


def default_reserve(evidence: Evidence) -> DefaultReserve | None:
    """SGLang's own reserve outside the static pool at this log's release, or None where the
    log's release and numbers give none (no finding is better than another release's)."""
    inputs = evidence.sizing
    pre = evidence.budget.pre_load
    if inputs is not None and pre is not None and pre.avail_bytes > 0 and _rule_known(inputs):
        modelled = _modelled(evidence, inputs, pre.avail_bytes)
        if modelled is not None:
            return modelled
    version = inputs.version if inputs is not None else None
    codes = {version_code(name) for rule in RESERVE_RULES for name in rule.releases}
    if version is not None and not any(version.allows(code) for code in codes):
        return None  # the 18 GiB is not this release's rule, and no other can be computed
    reserve = LARGE_GPU_RESERVE_MIB * MIB
    seen = version.text if version is not None else "unknown"
    return DefaultReserve(
        reserve,
        reserve,
        f"({RESERVE_SOURCE})",
        f"the release is {RESERVE_RELEASES} (this log's: {seen})",
    )


def _modelled(evidence: Evidence, inputs: SizingInputs, p: int) -> DefaultReserve | None:
    """P x (1 - default) by the sizing model, for the OOM's capacity or every one from P."""
    settings = base_settings(inputs)
    release, capacity = inputs.version.text, evidence.capacity
    gpu = math.ceil(capacity.bytes / MIB) if capacity is not None else None
    found = default_mem_fraction_static(inputs, replace(settings, gpu_memory_mib=gpu))
    if found is not None:  # a capacity was given, or the rule needs none (a tp step)
        reserve = round(p * (1 - found.value))
        source = RULE[found.rule].source
        return DefaultReserve(
            reserve,
            reserve,
            f"at release {release} (P x (1 - {found.value:g}), rule {found.rule}: {source})",
        )
    pieces = capacity_pieces(inputs, settings, math.ceil(p / MIB))
    if not pieces:
        return None
    ends = [
        round(p * (1 - piece.default_at(size)))
        for piece in pieces
        for size in (piece.first_mib, piece.last_mib)
    ]
    rule = pieces[0].rule
    return DefaultReserve(
        min(ends),
        max(ends),
        f"at release {release} for a GPU of {pieces[0].first_mib:,}"
        f" MiB (P) or more (P x (1 - default), rule {rule}: {RULE[rule].source})",
    )


def sglang_default(evidence: Evidence, gpu_bytes: int) -> DefaultMfs | None:
    """SGLang's default mem_fraction_static for this log on a GPU of `gpu_bytes`, by the sizing
    model at the log's release (memledger.sizing.defaults; None where the release gives none)."""
    inputs = evidence.sizing
    if inputs is None or gpu_bytes <= 0:
        return None
    gpu = math.ceil(gpu_bytes / MIB)
    return default_mem_fraction_static(inputs, replace(base_settings(inputs), gpu_memory_mib=gpu))


def stuck_between(evidence: Evidence, value: float) -> Finding | None:
    """At the first mfs that sizes a KV pool, is the slack P x (1 - mfs) below what SGLang's own
    default keeps for activations and graphs at the log's release? Raising mfs past the minimum
    viable shrinks that slack: when even the minimum leaves less, no fraction fits both (an OOM
    above it, the refusal below). The GPU's capacity is not in a refusal log: P (free before
    loading) stands in, a lower bound, as the reserve only grows with the capacity."""
    pre = evidence.budget.pre_load
    default = sglang_default(evidence, pre.avail_bytes) if pre is not None else None
    if pre is None or default is None:
        return None
    reserve = round(pre.avail_bytes * (1 - default.value))
    slack = round(pre.avail_bytes * (1 - value))
    if slack >= reserve:
        return None
    numbers = {"value": value, "slack": g(slack), "reserve": g(reserve), "p": g(pre.avail_bytes)}
    rule = {"default": default.value, "basis": default.basis, "rule": default.rule}
    rule["rule_source"] = RULE[default.rule].source
    return evidence.said(
        "no_fraction_fits.stuck", pre.line, bytes=reserve - slack, **numbers, **rule
    )
