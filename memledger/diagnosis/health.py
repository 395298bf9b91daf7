"""Memory problems a startup can survive: memory freed after sizing, no headroom after the
graphs, graphs that took more than SGLang plans for them (where a known defect of the log's
release explains it: memledger.sglang.known_bugs), a fraction far below SGLang's default. Checked
on every startup, failed or not."""

from __future__ import annotations

from dataclasses import replace

from memledger.diagnosis.arithmetic import floor_step, g
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.levers import graph_cap_knob, kv_cap_lever
from memledger.diagnosis.memory import lower_mfs
from memledger.diagnosis.model import Direction, Finding, FindingId, Severity, Suggestion
from memledger.diagnosis.reserve import (
    RESERVE_SOURCE,
    default_reserve,
    outside_pool,
    sglang_default,
)
from memledger.diagnosis.stages import model_lever, stage_levers, valued
from memledger.model.events import EventKind
from memledger.sglang.failure_rules import (
    DRAFT_OWN_HEAD_TYPE,
    GRAPH_MEMORY_NOTE_GIB,
    HEADROOM_DOCS_CAP_GIB,
    MAX_REQ_INPUT_LEN_SOURCES,
    SUMMARY_LINE_SOURCES,
    Phase,
)
from memledger.sglang.known_bugs import bug_words
from memledger.sglang.lifecycle import READY_ROOM, READY_ROOM_KEEP_GIB, READY_ROOM_MIN_GIB
from memledger.sglang.sizing_rules import RULE
from memledger.sizing.adjustment_values import formula_levers
from memledger.sizing.cell import indexer_left_out as indexer_left_out_of
from memledger.units import GIB, MIB

MFS_CEILING = 0.95
"""A fraction at or above this leaves too little for graphs and activations to suggest."""

RISE_THRESHOLD = 64 * MIB
"""A rise of free memory smaller than this is allocator noise, not a release."""
ZERO_HEADROOM = 256 * MIB
"""Free memory after capture below this: the first large batch will not fit."""
HEADROOM_TARGET_FRACTION = 0.10
HEADROOM_TARGET_CAP = HEADROOM_DOCS_CAP_GIB * GIB
"""The headroom to restore: 10% of P, at most 5 GiB, the low end of SGLang's own 5-8 GB advice
(memledger.sglang.failure_rules.HEADROOM_DOCS_CAP_GIB); 10% keeps a small GPU's pool."""
FAR_BELOW_DEFAULT = 0.10
_DEFAULT_KNOBS = ("chunked_prefill_size", "max_prefill_tokens", "cuda_graph_max_bs")
"""The knobs SGLang's default is computed from, which a server_args line shows."""


def free_rose_after_pool(evidence: Evidence) -> list[Finding]:
    """Free memory that rose after a `Memory pool end`: sized-away memory that never reaches
    the pool (e.g. draft embedding/head released after the draft pool was sized); without such
    a rise in the log, a draft loaded before the pool's lines (`draft_before_pool`)."""
    points = evidence.ledger.checkpoints
    findings: list[Finding] = []
    for index, point in enumerate(points):
        if not point.id.endswith("memory_pool_end"):
            continue
        later = points[index + 1 :]
        stop = next((i for i, c in enumerate(later) if c.id.endswith("memory_pool_end")), None)
        span = later[:stop] if stop is not None else later
        if not span:
            continue
        peak = max(span, key=lambda c: c.avail_bytes)
        rise = peak.avail_bytes - point.avail_bytes
        if rise < RISE_THRESHOLD + point.error_bytes + peak.error_bytes:
            continue
        numbers = {"rise": g(rise), "point": point, "peak": peak}
        findings.append(
            evidence.said("free_rose_after_pool", point.line, peak.line, bytes=rise, **numbers)
        )
    return (findings or draft_before_pool(evidence)) + indexer_left_out(evidence)


def indexer_left_out(evidence: Evidence) -> list[Finding]:
    """A DSA pool's KV line (MLA's one `KV size`) at a release whose sizing left the indexer's
    keys out (rule dsa_indexer_left_out): what the pool held beyond its budget."""
    kv = [e for e in evidence.events if e.kind is EventKind.KV_ALLOCATED and "kv" in e.sizes]
    model, tokens = evidence.server_args.get("model_path"), kv[0].values.get("tokens") if kv else 0
    left = (
        indexer_left_out_of(kv[0].sizes["kv"].bytes, tokens, model, evidence.version)
        if kv
        else None
    )
    return [evidence.said("indexer_left_out", kv[0].line, **left.words)] if left else []


def draft_before_pool(evidence: Evidence) -> list[Finding]:
    """A draft model with a head of its own (DRAFT_OWN_HEAD_TYPE) loaded before the KV pool's
    lines, in a log that stops before a reading after the pool could show the head's release:
    its embed/lm_head were held while the pool was sized (DRAFT_BEFORE_POOL_CAUSE)."""
    pools = (EventKind.KV_ALLOCATED, EventKind.MEMORY_POOL_END, EventKind.KV_REFUSAL)
    lines = [e.line for e in evidence.events if e.kind in pools]
    if not lines or any(c.line > max(lines) for c in evidence.ledger.checkpoints):
        return []  # no pool, or a reading after it: free_rose_after_pool saw what was released
    first_pool = min(lines)
    draft = next(
        (
            e
            for e in evidence.events
            if e.kind is EventKind.LOAD_END
            and DRAFT_OWN_HEAD_TYPE.search(str(e.values.get("type") or ""))
            and e.line < first_pool
        ),
        None,
    )
    if draft is None:
        return []
    usage = draft.size("usage")
    held = f", {usage.gib:.2f} GiB" if usage is not None else ""
    draft_type = draft.values.get("type")
    return [
        evidence.said(
            "free_rose_after_pool.draft", draft.line, first_pool, type=draft_type, held=held
        )
    ]


def free_at_ready(evidence: Evidence) -> tuple[int, int, str] | None:
    """Free memory once startup is done (bytes, line, the reading): the least `available_gpu_mem`
    of the summary lines (each rank prints its own after its graphs: SUMMARY_LINE_SOURCES; the
    least-free rank runs out first), else the last checkpoint; None when the log does not reach
    that point (a ready line, or a paste that stops after the graphs)."""
    points = evidence.ledger.checkpoints
    last = points[-1] if points else None
    after_capture = evidence.outcome == "truncated" and last and last.id.endswith("capture_end")
    if evidence.outcome != "ready" and not after_capture:
        return None
    gpu = "available_gpu_mem"
    summaries = [e for e in evidence.events if e.kind is EventKind.SUMMARY and gpu in e.sizes]
    if summaries:
        return (*min((e.sizes[gpu].bytes, e.line) for e in summaries), f"the summary line's {gpu}")
    return (last.avail_bytes, last.line, last.id) if last else None


def headroom_after_startup(evidence: Evidence) -> tuple[list[Finding], list[Suggestion]]:
    """What a startup left free once done. No free memory: the first batch's activations will
    OOM. Some free, but less outside the KV pool than SGLang's own default keeps there at this
    release, on a GPU over 96 GiB: the headroom serving batches run out of; a note (the startup
    survived) whose lever is conditional on a later OOM, and on the release where the log's is not
    one the reserve can be computed for."""
    after = free_at_ready(evidence)
    if after is None:
        return [], []
    free, line, point = after
    if free >= ZERO_HEADROOM:
        return large_gpu_reserve(evidence, Severity.INFO, free)
    finding = evidence.said("zero_headroom", line, bytes=free, free=g(free), point=point)
    pre = evidence.budget.pre_load
    suggestions: list[Suggestion] = []
    if pre is not None:
        target = min(HEADROOM_TARGET_CAP, round(pre.avail_bytes * HEADROOM_TARGET_FRACTION))
        reason = (
            f"to leave {g(target)} free (min(5 GiB, 10% of P); SGLang's tuning guide advises "
            f"5-8 GB), {g(target - free)} must move"
        )
        suggestions = _freeing(evidence, target - free, reason)
    # without P the amount has no value, the direction stands: the serving stage's levers
    return [finding], suggestions or stage_levers(Phase.SERVING, bound=True)


LATER_OOM = "serving runs out of memory later"
"""A ready startup's lever is conditional: it came up and served; the note says what to do if
it does not keep serving."""


def large_gpu_reserve(
    evidence: Evidence, severity: Severity, free: int | None = None
) -> tuple[list[Finding], list[Suggestion]]:
    """The finding and the levers that bring the memory outside the KV pool up to what SGLang's
    default keeps there at this release (nothing when it is there, when the GPU is known to be
    96 GiB or less, or when this release's reserve cannot be computed nor conditioned on). Only
    where the log shows a GPU over 96 GiB, or `free` after startup (the GPU's size not in the
    paste) meets the tuning guide's 5 GiB: below it, the large-GPU reserve is not the question."""
    outside = outside_pool(evidence)
    large = outside is not None and (outside.known_large or (free or 0) >= HEADROOM_TARGET_CAP)
    reserve = default_reserve(evidence) if outside is not None and large else None
    if outside is None or reserve is None or not reserve.missing(outside.bytes):
        return [], []
    free_text = "" if outside.after_graphs or free is None else f", {g(free)} free after startup"
    missing = reserve.missing(outside.bytes)
    short = f"{g(missing)} below" if reserve.low == reserve.high else f"at least {g(missing)} below"
    kept = f"{reserve.shown} SGLang's default keeps there {reserve.text}"
    head = f"{g(outside.bytes)} outside the KV pool ({outside.text}{free_text}): "
    message = f"{head}{short} the {kept}"
    reason = (
        f"SGLang's default keeps {reserve.shown} outside the static pool for activations "
        f"and graphs {reserve.text}: {g(missing)} must move to restore it"
    )
    if reserve.condition:  # the release is open: the 0.4.x large-GPU rule is a condition
        where = (
            f"this GPU is over 96 GiB; if {reserve.condition}"
            if outside.known_large
            else f"if this GPU is over 96 GiB and {reserve.condition}"
        )
        message = f"{head}{where}, that is {short} the {kept}"
        reason = (
            f"SGLang's default keeps {reserve.shown} outside the static pool on a GPU over 96 GiB "
            f"(15 GB for activations + 3 GB for the bs-256 graphs; {RESERVE_SOURCE}), or serving "
            f"batches run out of memory: {g(missing)} must move"
        )
    if not outside.known_large:
        message += "; the paste does not show the GPU's size"
    found = evidence.finding(
        FindingId.THIN_HEADROOM, severity, message, outside.line, bytes=missing
    )
    conditions = [LATER_OOM] if severity is Severity.INFO else []
    conditions += [reserve.condition] if reserve.condition else []
    prefix = f"if {' and '.join(conditions)}: " if conditions else ""
    reason = prefix + reason
    suggestions = _freeing(evidence, missing, reason, prefix)
    if not suggestions or suggestions[0].knob != "mem_fraction_static":  # no value: the direction
        lacks = f"the log lacks P (free before loading) or the fraction: d = {g(missing)} / P"
        suggestions.insert(0, model_lever("mem_fraction_static", before=reason, after=lacks))
    return [found], suggestions


def _freeing(evidence: Evidence, missing: int, reason: str, prefix: str = "") -> list[Suggestion]:
    """The two valued ways to free `missing` bytes after the pool: a lower fraction (`reason`
    leads its working) and a cap on the KV pool's tokens (`prefix` leads its working)."""
    capped = kv_cap_lever(evidence, missing)
    capped = capped and replace(capped, why=prefix + capped.why)
    return [s for s in (lower_mfs(evidence, missing, reason), capped) if s is not None]


def mfs_below_default(evidence: Evidence) -> list[Finding]:
    """mfs far below what SGLang would pick for this GPU: the pool came out small by choice."""
    budget = evidence.budget
    mfs, pre = budget.mem_fraction_static, budget.pre_load
    device = evidence.param("device")
    if mfs is None or pre is None or (isinstance(device, str) and device not in ("cuda", "")):
        return []
    if any(evidence.int_param(k) is None for k in _DEFAULT_KNOBS):
        return []  # a server_args line that shows the knobs the default is computed from
    # without the capacity, P (free before loading) is a lower bound: the default only grows
    gpu_bytes = evidence.capacity.bytes if evidence.capacity is not None else pre.avail_bytes
    found = sglang_default(evidence, gpu_bytes)
    if found is None or mfs > found.value - FAR_BELOW_DEFAULT:
        return []
    default = found.value
    kv_gain = round((floor_step(default) - mfs) * pre.avail_bytes)
    numbers = {"mfs": mfs, "default": default, "gpu": g(gpu_bytes), "gain": g(kv_gain)}
    rule = {"rule": found.rule, "rule_source": RULE[found.rule].source}
    return [evidence.said("mfs_far_below_default", bytes=kv_gain, **numbers, **rule)]


def kv_capacity(evidence: Evidence) -> tuple[list[Finding], list[Suggestion]]:
    """What the summary line says the KV pool holds ("why only N KV tokens?"): its tokens a rank,
    how many full-context requests fit in them, and the request cap beside it. A pool that cannot
    hold one full-context request is a warning, whose levers keep or grow the pool: a context no
    longer than the pool holds, a bigger fraction where the GPU has it, more ranks; never a lower
    fraction or token cap, which would shrink it further."""
    summary = next((e for e in evidence.events if e.kind is EventKind.SUMMARY), None)
    if summary is None:
        return [], []
    tokens, context = summary.values.get("max_total_num_tokens"), summary.values.get("context_len")
    if not isinstance(tokens, int) or tokens <= 0:
        return [], []
    running = summary.values.get("max_running_requests")
    fit = cap = ""
    if isinstance(context, int) and context > 0:
        fit = (
            f"; {tokens / context:,.1f} requests of the full {context:,}-token context fit at once"
        )
    if isinstance(running, int):
        cap = f"; max_running_requests={running} caps how many run at once (SGLang's request slots)"
    short = isinstance(context, int) and tokens < context
    numbers = {"tokens": tokens, "context": context, "fit": fit, "cap": cap}
    cited = evidence.cite(SUMMARY_LINE_SOURCES)
    name = "kv_capacity.short" if short else "kv_capacity"
    finding = evidence.said(name, summary.line, cited=cited, **numbers)
    if not short or not isinstance(context, int):
        return [finding], []
    return [finding], _pool_levers(evidence, tokens, context)


def room_at_ready(
    evidence: Evidence, suggestions: list[Suggestion]
) -> tuple[list[Finding], list[Suggestion]]:
    """More free on a ready summary line (the least the rank printed) than SGLang's tuning guide
    keeps, where no --max-total-tokens cap sized the pool and no other lever moves the fraction:
    a note, and after the `suggestions` the fraction that moves the rest into the KV pool
    (lifecycle.READY_ROOM); never the verdict, nothing failed."""
    free, line, point = free_at_ready(evidence) or (0, 0, "")
    if any(s.knob == READY_ROOM.knob for s in suggestions) or evidence.outcome != "ready":
        return [], suggestions
    if free < READY_ROOM_MIN_GIB * GIB:
        return [], suggestions
    if evidence.int_param("max_total_tokens"):
        return [], suggestions  # the cap, not the fraction, sized the pool
    pre, spare = evidence.budget.pre_load, free - READY_ROOM_KEEP_GIB * GIB
    numbers = {"free_gib": round(free / GIB, 2)}
    numbers |= {"p_gib": round(pre.avail_bytes / GIB, 2)} if pre is not None else {}
    settings = {**evidence.server_args, "mem_fraction_static": evidence.budget.mem_fraction_static}
    found = evidence.said(
        "room_at_ready", line, bytes=spare, free=g(free), spare=g(spare), point=point
    )
    return [found], suggestions + valued(formula_levers((READY_ROOM,), numbers, settings))


def _pool_levers(evidence: Evidence, tokens: int, context: int) -> list[Suggestion]:
    """A context the pool holds, a bigger fraction where the GPU has room for it, more ranks."""
    shorter = tokens // 1024 * 1024 or tokens
    cited = evidence.cite(MAX_REQ_INPUT_LEN_SOURCES)
    levers = [evidence.advice("context_length.pool", value=shorter, cited=cited, tokens=tokens)]
    ledger, budget = evidence.ledger, evidence.budget
    cell = ledger.sizing.bytes_per_token if ledger.sizing is not None else None
    if cell is None and ledger.summary.kv_pool:
        cell = ledger.summary.kv_pool / tokens
    mfs, pre = budget.mem_fraction_static, budget.pre_load
    if cell and mfs is not None and pre is not None and pre.avail_bytes > 0:
        extra = (context - tokens) * cell
        raised = mfs + extra / pre.avail_bytes
        working = (
            f"({context:,} - {tokens:,}) tokens x {cell:,.0f} B = {g(extra)} more KV; / P "
            f"{g(pre.avail_bytes)} = {extra / pre.avail_bytes:.4f} -> {mfs:g} + "
            f"{extra / pre.avail_bytes:.4f} = {raised:.4f}"
        )
        more = "; more ranks split the weights and the KV heads, each rank's pool holds more"
        if raised < MFS_CEILING:
            up = f"{working}, rounded up to 0.01; the slack after the pool shrinks as much"
            value = floor_step(raised + 0.0099)
            levers.append(
                Suggestion(
                    knob="mem_fraction_static", direction=Direction.RAISE, value=value, why=up
                )
            )
        else:
            working += f": above {MFS_CEILING}, more than this GPU can give"
        levers.append(Suggestion(knob="tp_size", direction=Direction.RAISE, why=working + more))
    return levers


def graph_memory(evidence: Evidence) -> tuple[list[Finding], list[Suggestion]]:
    """The note, and the graph cap, for graphs over GRAPH_MEMORY_NOTE_GIB where a known defect of
    the log's release and settings may be the cause (nothing otherwise: a large model's graphs can
    be large for reasons the log does not show)."""
    captures = [e for e in evidence.before_failure({EventKind.CAPTURE_END}) if "usage" in e.sizes]
    largest = max(captures, key=lambda e: e.sizes["usage"].bytes, default=None)
    if largest is None or largest.sizes["usage"].bytes <= GRAPH_MEMORY_NOTE_GIB * GIB:
        return [], []
    found = evidence.known_bug("graphs_over_plan")
    if found is None:
        return [], []
    usage = largest.sizes["usage"].bytes
    bug = bug_words(*found)
    finding = evidence.said("graph_memory", largest.line, bytes=usage, usage=g(usage), bug=bug)
    knob, spelled = graph_cap_knob(evidence)
    current = evidence.int_param(knob)
    why = (
        f"graph memory grows with the largest captured batch ({current or 'not in the log'}); "
        f"upgrading to {found[0].fixed_in} or later removes {found[0].said} instead{spelled}"
    )
    halved = current // 2 if current and current > 1 else None
    return [finding], [Suggestion(knob=knob, direction=Direction.LOWER, value=halved, why=why)]


def graph_memory_verdict(evidence: Evidence, finding: Finding) -> str:
    """The verdict's words for graphs that took much: the known defect, then the graph cap."""
    found = evidence.known_bug("graphs_over_plan")
    maybe = "possibly " if found and found[1] else ""
    said = f"{maybe}{found[0].said}, fixed in {found[0].fixed_in}; else " if found else ""
    return f"the CUDA graphs took {g(finding.bytes or 0)}: {said}lower --cuda-graph-max-bs"
