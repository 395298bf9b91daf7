"""Findings and suggestions for a startup that ran out of memory, by phase.

Every suggested value comes with its arithmetic: SGLang sizes the KV budget as
`rest = A - P x (1 - mfs)` (see `memledger.sglang.failure_rules.BUDGET_SOURCES`), so lowering
mfs by d frees d x P for everything sized after the pool, and the weights fit only while
`W < mfs x P`.
"""

from __future__ import annotations

from memledger.diagnosis.arithmetic import (
    above_step,
    floor_step,
    g,
    gib_ceil,
    half,
    next_power_of_two,
    power_of_two_below,
)
from memledger.diagnosis.evidence import Evidence, frames_of, innermost_sglang_frame
from memledger.diagnosis.levers import (
    failed_in_prefill,
    graph_cap_knob,
    kv_cap_lever,
    table_value,
)
from memledger.diagnosis.model import Direction, Finding, FindingId, Result, Severity, Suggestion
from memledger.diagnosis.pools import unknown_budget_mfs
from memledger.diagnosis.reserve import stuck_between
from memledger.diagnosis.stages import model_lever, valued
from memledger.model.events import Event, EventKind
from memledger.sglang.failure_rules import (
    BUDGET_SOURCES,
    CAPTURE_ORDER_CITATION,
    LOAD_SITES,
    LoadSite,
    Phase,
)
from memledger.sglang.lifecycle import SERVING_BATCH_COUNT, SERVING_BATCH_LEVERS
from memledger.sizing.adjustment_values import refusal_levers
from memledger.units import float_or


def _budget(evidence: Evidence) -> str:
    """Where SGLang computes the KV budget, at the release nearest the log's own."""
    return f"SGLang's budget rest = A - P x (1 - mfs): {evidence.cite(BUDGET_SOURCES)}"


def shortfall(evidence: Evidence) -> int | None:
    """Requested minus free at the failure (an allocator OOM), or the KV budget's deficit
    P x (mfs_min - mfs) when SGLang refused to size the pool."""
    oom = evidence.oom
    if oom is not None and "requested" in oom.sizes and "free" in oom.sizes:
        return max(0, oom.sizes["requested"].bytes - oom.sizes["free"].bytes)
    refusal = evidence.refusal
    budget = evidence.budget
    if refusal is not None and budget.pre_load is not None:
        said = refusal.values
        minimum = float_or(said.get("minimum_viable"), None) or budget.minimum_viable
        current = float_or(said.get("mem_fraction_static"), None) or budget.mem_fraction_static
        if minimum is not None and current is not None:
            return max(0, round(budget.pre_load.avail_bytes * (minimum - current)))
    return None


_OOM_SIZES = {
    "requested": ": asked for {}",
    "free": " with {} free",
    "capacity": " of {}",
    "allocated": "; {} allocated by PyTorch",
    "private_pools": " ({} in private pools: CUDA graphs)",
}
"""How the OOM finding says each size the allocator's text printed, in this order."""


def oom_findings(evidence: Evidence) -> list[Finding]:
    """What the allocator's own message says, rank by rank."""
    oom = evidence.oom
    if oom is None:
        return []
    sizes = oom.sizes
    rank = oom.rank or "the process"
    device = f" ({oom.values['device']})" if "device" in oom.values else ""
    if "runtime" in oom.values:
        # a text that names no device (torch_memory_saver's, a runtime's error code) says none
        where = f"{oom.values['device']} runtime" if "device" in oom.values else "runtime"
        device = f" ({where}: {oom.values['runtime']})"
    said = [form.format(sizes[key].text) for key, form in _OOM_SIZES.items() if key in sizes]
    findings = [
        evidence.finding(
            FindingId.OOM_MESSAGE,
            Severity.ERROR,
            "".join([f"{rank} ran out of GPU memory{device}", *said]),
            oom.line,
            bytes=shortfall(evidence),
        )
    ]
    others = sorted({e.rank for e in evidence.oom_messages if e.rank and e.rank != oom.rank})
    if others:
        lines = [e.line for e in evidence.oom_messages if e is not oom][:8]
        findings.append(
            evidence.said("oom_other_ranks", *lines, count=len(others), ranks=", ".join(others))
        )
    unallocated = sizes.get("reserved_unallocated")
    requested = sizes.get("requested")
    if unallocated and requested and unallocated.bytes >= requested.bytes:
        texts = {"unallocated": unallocated.text, "requested": requested.text}
        findings.append(evidence.said("fragmentation", oom.line, bytes=unallocated.bytes, **texts))
    return findings


def site_finding(evidence: Evidence) -> list[Finding]:
    """Where in SGLang the failing call was made (the innermost SGLang frame)."""
    traceback = evidence.traceback
    frame = innermost_sglang_frame(traceback) if traceback is not None else None
    if traceback is None or frame is None:
        return []
    rank = traceback.rank or "untagged"
    return [evidence.said("failure_site", traceback.line, frame=frame.text, rank=rank)]


def _load_site(evidence: Evidence) -> tuple[LoadSite, str] | None:
    """A known frame of the failing traceback that explains the load OOM, with its message."""
    if evidence.traceback is None:
        return None
    frames = {(f.path, f.function) for f in frames_of(evidence.traceback)}
    quantization = evidence.param("quantization")
    for site in LOAD_SITES:
        if (site.path, site.function) not in frames:
            continue
        if site.needs_quantization and not quantization:
            continue
        return site, site.message.format(quantization=repr(quantization))
    return None


def load_oom(evidence: Evidence) -> Result:
    """Weights did not fit: only fewer bytes per rank help (more ranks, offload), not mfs."""
    oom, budget = evidence.oom, evidence.budget
    site = _load_site(evidence)
    at = [evidence.traceback.line] if evidence.traceback else []
    findings = [evidence.finding(site[0].finding_id, Severity.ERROR, site[1], *at)] if site else []
    findings.append(evidence.said("mfs_not_the_lever"))
    named = evidence.weights_by_name
    if named is not None and named.over and budget.pre_load is None:  # no size printed: the name's
        found = evidence.finding(FindingId.WEIGHTS_EXCEED_BUDGET, Severity.ERROR, named.says)
        return [*findings, found], valued(named.levers)
    if oom is None or "allocated" not in oom.sizes or "requested" not in oom.sizes:
        return findings, []
    allocated, requested = oom.sizes["allocated"], oom.sizes["requested"]
    weights = allocated.bytes + requested.bytes
    pre = budget.pre_load
    mfs = budget.mem_fraction_static
    room = round(pre.avail_bytes * mfs) if pre and mfs else pre.avail_bytes if pre else None
    room_text = (
        f"mfs x P = {mfs:g} x {g(pre.avail_bytes)} = {g(room)}" if pre and mfs else f"P = {g(room)}"
    )
    free = f"; {g(pre.avail_bytes)} was free before loading" if pre is not None else ""
    loaded = {"allocated": allocated.text, "requested": requested.text, "free": free}
    over = weights - room if room is not None else None
    lines = [oom.line, *([pre.line] if pre else [])]
    findings.append(
        evidence.said(
            "weights_exceed_budget.load", *lines, bytes=over, weights=g(weights), **loaded
        )
    )
    if room is None or room <= 0 or weights <= room:
        return findings, []
    if site is not None and not site[0].more_ranks_help:
        return findings, []
    tp = evidence.tp_size
    # no value for a knob whose current value is unknown: "2" to a user already on 2 GPUs
    ranks = next_power_of_two(tp * weights / room) if tp is not None else None
    sizes = {"weights": g(weights), "room": g(room), "over": g(weights - room)}
    suggestions = []
    if tp is None or (ranks is not None and ranks > tp):
        name = "tp_size.weights" if tp is not None else "tp_size.weights_no_tp"
        said = {"room_text": room_text, "budget": _budget(evidence), "tp": tp}
        ratio, at_least = (tp or 1) * weights / room, next_power_of_two(weights / room)
        suggestions.append(
            evidence.advice(name, value=ranks, ratio=ratio, at_least=at_least, **sizes, **said)
        )
    offload = gib_ceil(weights - room)
    suggestions.append(
        evidence.advice("cpu_offload_gb.weights", value=offload, room_text=room_text, **sizes)
    )
    return findings, suggestions


def kv_refusal(evidence: Evidence) -> Result:
    refusal, budget = evidence.refusal, evidence.budget
    assert refusal is not None
    said = refusal.values
    minimum = float_or(said.get("minimum_viable"), None) or budget.minimum_viable
    current = float_or(said.get("mem_fraction_static"), None) or budget.mem_fraction_static
    current_text = f"={current:g}" if current is not None else " in effect"
    notes = [] if current is not None else ["its value is not in the log"]
    if minimum is not None:
        notes.append(f"minimum viable {minimum:.4f}")
    profiled = refusal.values.get("profiled_tokens")
    if isinstance(profiled, int):
        # v0.4.8 model_executor/model_runner.py:914-932: a pool of <= 0 tokens is refused
        notes.append(
            f"the profiled pool was {profiled:,} tokens: the budget A - P x (1 - mfs) is "
            "negative, and --max-total-tokens only lowers it"
        )
    noted = f" ({'; '.join(notes)})" if notes else ""
    refused = {"current": current_text, "notes": noted, "bytes": shortfall(evidence)}
    findings = [evidence.said("weights_exceed_budget.refused", refusal.line, **refused)]
    shape = str(refusal.values.get("shape"))  # SGLang's own lever besides the fraction first
    own = valued(refusal_levers(shape, refusal.values, evidence.server_args))
    if minimum is None:
        # SGLang's own advice, without a value: the log lacks P or A (1 - A/P)
        needs = f"{_budget(evidence)}; a value needs the `Load weight begin`/`end` readings"
        return findings, [*own, model_lever("mem_fraction_static", "raise", after=needs)]
    value = above_step(minimum)
    stuck = stuck_between(evidence, value)
    if stuck is not None:
        findings.append(stuck)
    working = f"minimum viable = 1 - A/P = {minimum:.4f}"
    if refusal.values.get("shape") == "said":
        working = (
            f"the paste says it starts only above {minimum:g}, SGLang's minimum viable 1 - A/P"
        )
    elif budget.pre_load is not None and budget.after_load is not None:
        working = (
            f"minimum viable = 1 - A/P = 1 - {g(budget.after_load.avail_bytes)} / "
            f"{g(budget.pre_load.avail_bytes)} = {minimum:.4f}"
        )
    pre = budget.pre_load.avail_bytes if budget.pre_load else None
    gain = f"; each further 0.01 adds {g(pre * 0.01)} of KV" if pre else ""
    kv = g(pre * (value - minimum)) if pre else f"{value - minimum:.4f} x P"
    suggestions = [
        evidence.advice(
            "mem_fraction_static.refused", value=value, working=working, budget=kv, gain=gain
        ),
        model_lever("tp_size", "raise", after="that leaves a KV budget at this mfs"),
    ]
    return findings, own + suggestions


def lower_mfs(evidence: Evidence, missing: int, reason: str) -> Suggestion | None:
    """The largest mfs that leaves `missing` more bytes free after the pool, if still viable."""
    budget = evidence.budget
    mfs, pre = budget.mem_fraction_static, budget.pre_load
    if mfs is None or pre is None or pre.avail_bytes <= 0 or missing <= 0:
        return None
    delta = missing / pre.avail_bytes
    value = floor_step(mfs - delta)
    minimum = budget.minimum_viable
    if minimum is not None and value <= minimum:
        return None
    kv = budget.kv_budget_bytes
    loss = round((mfs - value) * pre.avail_bytes)
    share = f" ({100 * loss / kv:.0f}% of its {g(kv)})" if kv and kv > 0 else ""
    floor_text = f"; stays above the minimum viable {minimum:.4f}" if minimum is not None else ""
    numbers = {"missing": g(missing), "p": g(pre.avail_bytes), "delta": delta, "mfs": mfs}
    said = {"reason": reason, "budget": _budget(evidence), "loss": g(loss), "share": share}
    raw, floor = mfs - delta, floor_text
    return evidence.advice(
        "mem_fraction_static.lower", value=value, raw=raw, floor=floor, **numbers, **said
    )


def _capture_state(evidence: Evidence) -> tuple[Event | None, list[int], Event | None]:
    """The last graph capture begun before the failure, its batch sizes, the last bar state."""
    begins = evidence.before_failure({EventKind.CAPTURE_BEGIN})
    begin = begins[-1] if begins else None
    sizes: list[int] = []
    if begin is not None and isinstance(begin.values.get("bs"), list):
        sizes = list(begin.values["bs"])  # type: ignore[arg-type]
    for event in evidence.before_failure({EventKind.CAPTURE_BS}):
        if begin is not None and event.line >= begin.line and isinstance(event.value("bs"), list):
            sizes = list(event.values["bs"])  # type: ignore[arg-type]
    bars = [
        e
        for e in evidence.before_failure({EventKind.CAPTURE_PROGRESS})
        if begin is None or e.line >= begin.line
    ]
    return begin, sizes, bars[-1] if bars else None


def capture_point(evidence: Evidence) -> tuple[list[Finding], int | None, list[int]]:
    """Which graph and bucket the failure hit, and the free memory there."""
    begin, sizes, bar = _capture_state(evidence)
    if begin is None:
        return [], None, sizes
    role = str(begin.values.get("role") or "target")
    kind = str(begin.values.get("phase") or "decode")
    failing = bar.values.get("bs") if bar is not None else None
    failing_bs = failing if isinstance(failing, int) else None
    tokens = bar.values.get("num_tokens") if bar is not None else None
    where = f"the {role} {kind} graph"
    if isinstance(tokens, int):
        where += f" at num_tokens={tokens}"
    if failing_bs is not None:
        where += f" at bs={failing_bs}"
    if failing_bs is not None and failing_bs in sizes:
        where += f" (bucket {sizes[::-1].index(failing_bs) + 1} of {len(sizes)})"
    free = bar.sizes.get("avail") if bar is not None else None
    free = free or begin.sizes.get("avail")
    at = f", {free.text} free at that point" if free else ""
    lines = [begin.line] + ([bar.line] if bar else [])
    amount = free.bytes if free else None
    finding = evidence.said("capture_point", *lines, bytes=amount, where=where, at=at)
    return [finding], failing_bs, sizes


def after_pool_oom(evidence: Evidence, phase: Phase) -> Result:
    """Something sized after the pool did not fit in the slack mfs left."""
    missing = shortfall(evidence)
    budget = evidence.budget
    findings: list[Finding] = []
    suggestions: list[Suggestion] = []
    slack = budget.slack_bytes
    if slack is not None and budget.pre_load is not None and budget.mem_fraction_static:
        pool = budget.pool_end
        at_end = f"; {pool.avail_gib:.2f} GiB was free at Memory pool end" if pool else ""
        numbers = {"p": g(budget.pre_load.avail_bytes), "rest": 1 - budget.mem_fraction_static}
        lines, said = [pool.line] if pool else [], {"slack": g(slack), "at_end": at_end}
        findings.append(
            evidence.said("allocation_exceeds_slack", *lines, bytes=missing, **numbers, **said)
        )
    failing_bs: int | None = None
    sizes: list[int] = []
    if phase is Phase.GRAPH_CAPTURE:
        point, failing_bs, sizes = capture_point(evidence)
        findings.extend(point)
    if missing is not None:
        lowered = lower_mfs(evidence, missing, f"{g(missing)} was missing")
        if lowered is not None:
            suggestions.append(lowered)
        elif budget.mem_fraction_static is None or budget.pre_load is None:
            # no P or mfs in the log: the lever without a value (never a tp claim it cannot make)
            suggestions.append(unknown_budget_mfs(evidence, missing, phase))
    elif evidence.oom is not None and "requested" not in evidence.oom.sizes:
        # an OOM text without sizes (ROCm's HSA runtime): the direction, no value
        suggestions.append(unknown_budget_mfs(evidence, None, phase))
    if phase is Phase.GRAPH_CAPTURE:
        suggestions.extend(_graph_levers(evidence, failing_bs, sizes))
        if not any(s.knob == "mem_fraction_static" for s in suggestions):  # the stage's lever:
            # first if shown, no cap valued (v0.5.8 cuda_graph_runner.py:931-938 lists it first)
            known = evidence.budget.mem_fraction_static is not None and not suggestions[0].value
            suggestions.insert(int(not known), unknown_budget_mfs(evidence, None, phase))
    elif phase in (Phase.WARMUP, Phase.SERVING):
        logged = _serving_batch_levers(evidence)
        # the logged batch's numbers name the lever first; the fraction after it
        suggestions[:0], batch = logged, _batch_levers(evidence)
        suggestions.extend(s for s in batch if s.knob not in {s.knob for s in logged})
        if not any(s.knob == "mem_fraction_static" for s in suggestions):
            # no OOM text with sizes: the serving stage's fraction lever still holds, after its
            # batch levers (memledger.sglang.lifecycle), without a value
            suggestions.append(unknown_budget_mfs(evidence, None, phase))
    capped = kv_cap_lever(evidence, missing) if missing else None
    if capped is not None:
        # after the phase's own valued levers (graph cap, chunk), before the value-less ones
        last = next(
            (i for i, s in enumerate(suggestions) if s.value is None or s.knob == "tp_size"),
            len(suggestions),
        )
        suggestions.insert(last, capped)
    if not any(s.knob == "mem_fraction_static" for s in suggestions) and missing:
        why = "a lower --mem-fraction-static cannot free that and leave a KV budget (1 - A/P)"
        suggestions.append(model_lever("tp_size", "raise", before=why))
    return findings, suggestions


def _graph_levers(evidence: Evidence, failing_bs: int | None, sizes: list[int]) -> list[Suggestion]:
    """The graph cap (below the failing bucket, else half the largest batch, else without a
    value), then no graphs at all."""
    smaller = sorted(bs for bs in sizes if failing_bs is not None and bs < failing_bs)
    knob, spelled = graph_cap_knob(evidence)
    current = evidence.int_param(knob) or (max(sizes) if sizes else None)
    value, largest, origin = table_value(evidence, knob, now=current) or (None, current, "")
    if smaller:
        value = smaller[-1]
        why = (
            f"it failed at bs={failing_bs}"
            + (f" after the buckets up to {current} were captured" if current else "")
            + f": a cap of {value} skips bs={failing_bs} and every larger bucket"
        )
    elif largest is not None:
        why = f"graph memory grows with the largest batch ({origin or f'{largest} now'}); the "
        why += "failing bucket is not in the log"
        why += f", so {value} (half) is a first step, not a computed fit" if value else ""
    else:
        why = (
            "graph memory grows with the largest batch; neither the captured batch sizes nor the "
            "GPU's capacity are in the log"
        )
    why = f"{CAPTURE_ORDER_CITATION}; {why}{spelled}"
    return [
        Suggestion(knob=knob, direction=Direction.LOWER, value=value, why=why),
        model_lever("disable_cuda_graph", "enable", after="the last resort"),
    ]


def _serving_batch_levers(evidence: Evidence) -> list[Suggestion]:
    """The levers of the last serving-batch line before the failure, valued from its count
    (lifecycle.SERVING_BATCH_LEVERS and SERVING_BATCH_COUNT: the prefill's #new-token, the
    decode's #running-req)."""
    batch = evidence.serving_batch
    stage = str(batch.values.get("stage")) if batch is not None else ""
    key, what = SERVING_BATCH_COUNT.get(stage, ("", ""))
    logged = batch.values.get(key) if batch is not None else None
    if batch is None or not isinstance(logged, int) or logged < 2:
        return []
    at = evidence.at(batch.line)
    usage = batch.values.get("token_usage")
    pool = f", KV pool {float(usage):.0%} used" if isinstance(usage, (int, float)) else ""
    one = batch.values.get("new_seq") == 1  # the cap admits one request whatever its length
    value = power_of_two_below(logged)
    note = "; it was one request, which the cap admits whatever its length: the chunk splits it"
    levers = [
        Suggestion(
            knob=lever.knob,
            direction=Direction.LOWER,
            value=value,
            why=(
                f"{logged} {what} before the OOM ({at}{pool}); {value}, the power of two "
                f"below {logged}, keeps the next one at most {value} ({lever.effect})"
                + (note if one and lever.knob == "max_prefill_tokens" else "")
            ),
        )
        for lever in SERVING_BATCH_LEVERS[stage]
        if lever.knob != "mem_fraction_static"  # valued from the shortfall, where P is logged
    ]
    if one and levers and levers[0].knob == "max_prefill_tokens":
        levers.reverse()  # one request: the chunk first
    return levers


def _batch_levers(evidence: Evidence) -> list[Suggestion]:
    levers: list[Suggestion] = []
    shown = evidence.int_param("chunked_prefill_size") is not None
    known = (
        table_value(evidence, "chunked_prefill_size")
        if shown or failed_in_prefill(evidence)
        else None
    )
    if known is not None:
        value, chunk, origin = known
        origin = f" ({origin})" if origin else ""  # the text has no parentheses
        halves = f"{chunk}{origin} -> {value} halves the largest forward's (an estimate)"
        levers.append(model_lever("chunked_prefill_size", before=halves, value=value))
    running = evidence.int_param("max_running_requests")
    vlm = "a VLM's image encoder runs over the batch's images too"
    levers.append(model_lever("max_running_requests", after=vlm, value=half(running)))
    if len(levers) == 1 and (evidence.traceback is None or not frames_of(evidence.traceback)):
        # no frames: prefill or decode is not in the paste, so both of the guide's levers
        unset = "if the OOM was in a prefill (--chunked-prefill-size is not in the log)"
        levers.append(model_lever("chunked_prefill_size", before=unset))
    return levers
