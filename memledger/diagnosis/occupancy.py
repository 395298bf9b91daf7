"""What a paste says about memory SGLang's own arithmetic did not plan for: another process on the
same GPU, the free memory to restore after a serving OOM when the log shows no fraction, and the
automatic fraction DP attention over-reserved (the numbers in each message are the paste's own).
"""

from __future__ import annotations

import math

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.model import Finding, Suggestion
from memledger.model.events import EventKind
from memledger.sglang.env_reports import held_by_others
from memledger.sglang.failure_rules import (
    AFTER_POOL_DROP_MIN_GIB,
    HEADROOM_DOCS_CAP_GIB,
    HEADROOM_FLOOR_MIN_GIB,
    MFS_STEP,
    OTHER_PROCESS_MIN_GIB,
    OWN_BELOW_PYTORCH,
    OWN_FROM_PYTORCH,
    PHASE_TEXT,
    Phase,
)
from memledger.sglang.findings import smi_said
from memledger.sglang.fraction_rules import MFS_ACTIVATION_MIB_PER_TOKEN, MFS_ACTIVATION_MIN_TOKENS
from memledger.sglang.lifecycle import STAGE
from memledger.units import GIB, MIB


def other_processes(evidence: Evidence, phase: Phase = Phase.UNKNOWN) -> Finding | None:
    """The GPU memory the OOM text shows held outside this process, when it would have covered
    the allocation that failed: capacity - free - `this process has X memory in use`."""
    oom = evidence.oom
    if oom is None:  # a refusal's own lever is a higher fraction: diagnose() names it alone
        return smi_others(evidence, True, phase) if evidence.refusal is None else None
    sizes = oom.sizes
    capacity, free, own = sizes.get("capacity"), sizes.get("free"), sizes.get("process_in_use")
    own_bytes, own_text = (own.bytes, f"{own.text} this process has") if own else (None, "")
    allocated, spare = sizes.get("allocated"), sizes.get("reserved_unallocated")
    reserve = allocated.bytes + (spare.bytes if spare else 0) if allocated else None
    why = OWN_FROM_PYTORCH if own is None and "listed_process" in sizes else None
    if own is not None and reserve is not None and own.bytes < reserve:
        why = OWN_BELOW_PYTORCH
    if why is not None and reserve is not None:  # its PyTorch reserve stands for it
        own, own_bytes = None, reserve
        own_text = f"{g(reserve)} this process's PyTorch reserve, {why}"
    if capacity is None or free is None or own_bytes is None:
        return smi_others(evidence, True, phase)
    held = capacity.bytes - free.bytes - own_bytes
    requested = sizes.get("requested")
    missing = max(0, requested.bytes - free.bytes) if requested is not None else 0
    if held < OTHER_PROCESS_MIN_GIB * GIB or held < missing:
        return None
    if own is None and own_bytes >= held:
        return None  # a lower bound of its own use says only that it is the small one
    # the process that ran out is the small one: a pipeline's own model beside a server
    name = "other_processes.small" if own_bytes < held else "other_processes"
    numbers = {"held": g(held), "capacity": capacity.text, "free": free.text, "own": own_text}
    return evidence.said(name, oom.line, bytes=held, own_bytes=g(own_bytes), **numbers)


def smi_others(evidence: Evidence, failed: bool, phase: Phase) -> Finding | None:
    """Memory nvidia-smi's process table shows held by processes not this server's, at least
    OTHER_PROCESS_MIN_GIB (env_reports.held_by_others: the OOM's GPU, else the most held)."""
    rows = [(e.line, e.values) for e in evidence.events if e.kind is EventKind.GPU_NAMED]
    gpu, held = evidence.oom.values.get("gpu") if evidence.oom else None, held_by_others(rows)
    found = next((h for h in held if h.gpu == gpu), held[0] if held else None)
    if found is None or found.mib * MIB < OTHER_PROCESS_MIN_GIB * GIB:
        return None
    pre, mfs = evidence.budget.pre_load, evidence.budget.mem_fraction_static
    said = smi_said(
        found, pre.avail_bytes if pre else None, mfs, phase in (Phase.LOAD, Phase.DIST_INIT)
    )
    name = "other_processes.smi" if failed else "other_processes.smi_ready"
    return evidence.said(name, *found.lines, bytes=found.mib * MIB, **said)


def headroom_floor_step(evidence: Evidence, missing: int | None, phase: Phase) -> float | None:
    """How far mfs must drop at least, after an OOM after loading on a GPU of 40 GiB or more
    with no fraction in the log: to restore the tuning guide's 5 GiB free (d x P frees d x P and
    P is at most the capacity, so d >= needed / capacity), rounded up to MFS_STEP."""
    if phase in (Phase.LOAD, Phase.DIST_INIT, Phase.KV_SIZING, Phase.MEMORY_POOL):
        return None
    oom = evidence.oom
    if oom is None:
        return None
    capacity, free = oom.sizes.get("capacity"), oom.sizes.get("free")
    if capacity is None or free is None or capacity.bytes < HEADROOM_FLOOR_MIN_GIB * GIB:
        return None
    needed = max(missing or 0, HEADROOM_DOCS_CAP_GIB * GIB - free.bytes)
    if needed <= 0:
        return None
    return round(math.ceil(round(needed / capacity.bytes / MFS_STEP, 9)) * MFS_STEP, 4)


def dp_auto_fraction(evidence: Evidence) -> tuple[list[Finding], Suggestion | None]:
    """A KV refusal under DP attention where the fraction may be SGLang's automatic one: that
    one reserved prefill activations for the undivided chunk (sglang#28884); the fraction to set
    by hand adds back the difference over the GPU's memory (no value: the log has no capacity
    where SGLang refuses)."""
    dp = evidence.int_param("dp_size")
    chunk = evidence.int_param("chunked_prefill_size")
    mfs = evidence.param("mem_fraction_static")
    attention = evidence.param("enable_dp_attention")  # a bool, or its text in a pasted command
    if evidence.refusal is None or (attention is not True and attention != "True"):
        return [], None
    if dp is None or dp <= 1 or chunk is None or chunk <= 0 or not isinstance(mfs, float):
        return [], None
    low = MFS_ACTIVATION_MIN_TOKENS  # the default rule's max(chunk, 2048) x 1.5 MiB
    over = round((max(chunk * dp, low) - max(chunk, low)) * MFS_ACTIVATION_MIB_PER_TOKEN * MIB)
    if over <= 0:
        return [], None
    target = f"{mfs:g} + {g(over)} / the GPU's memory"
    numbers = {"mfs": mfs, "chunk": chunk, "dp": dp, "over": g(over), "target": target}
    finding = evidence.said("dp_auto_fraction", evidence.refusal.line, bytes=over, **numbers)
    suggestion = evidence.advice("mem_fraction_static.dp_auto", over=g(over), target=target)
    return [finding], suggestion


def after_pool_drop(evidence: Evidence) -> Finding | None:
    """Free memory that fell by several GiB between `Memory pool end` and the first reading of
    the graph capture (its begin line, else its first progress bar): what the lifecycle's stage
    after the pool allocated, outside the KV budget (memledger.sglang.lifecycle)."""
    pool = evidence.budget.pool_end
    if pool is None:
        return None
    readings = [
        e
        for e in evidence.before_failure({EventKind.CAPTURE_BEGIN, EventKind.CAPTURE_PROGRESS})
        if e.line > pool.line and "avail" in e.sizes
    ]
    if not readings:
        return None
    first = readings[0]
    drop = pool.avail_bytes - first.sizes["avail"].bytes
    bar = (
        ", a progress bar's: it may include graphs captured before it"
        if first.kind is EventKind.CAPTURE_PROGRESS
        else ""
    )
    if drop < AFTER_POOL_DROP_MIN_GIB * GIB:
        return None
    pre = evidence.budget.pre_load
    step = (
        f"; lowering mfs by {math.ceil(drop / pre.avail_bytes / MFS_STEP) * MFS_STEP:.2f} gives it "
        f"that room (P {g(pre.avail_bytes)})"
        if pre is not None and pre.avail_bytes > 0
        else ""
    )
    stage, phase = STAGE[Phase.AFTER_POOL], PHASE_TEXT[Phase.AFTER_POOL]
    numbers = {"drop": g(drop), "pool": pool.avail_gib, "first": g(first.sizes["avail"].bytes)}
    said = {"stage": stage, "phase": phase, "bar": bar, "step": step}
    return evidence.said("after_pool_drop", pool.line, first.line, bytes=drop, **numbers, **said)
