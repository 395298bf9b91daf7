"""Why a vLLM startup failed: the phase, the shortfall, and a knob with a value where the log
carries the numbers (the same `Diagnosis` as SGLang's, rendered by the same renderers).

A pure function of the reader's startup, its facts, the ledger and the sizing. The failure text
decides the failure (`memledger.vllm.errors`); where the log cut the text before it, the last
memory line says where the engine stopped (`Available KV cache memory` then `EngineCore failed
to start` is the KV check: v0.10.2 vllm/v1/engine/core.py `_initialize_kv_caches` runs
`check_enough_kv_cache_memory` right after `determine_available_memory`). Each value says the
arithmetic and where its numbers came from.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from memledger.diagnosis.model import Diagnosis, Direction, Finding, FindingId, Severity, Suggestion
from memledger.input.vllm_facts import Fact
from memledger.input.vllm_reader import Reading, Startup, VllmLog
from memledger.model.ledger import Ledger
from memledger.sglang.failure_rules import PHASE_TEXT, Phase
from memledger.sizing.vllm import VllmSizing
from memledger.sizing.vllm import gib as _g
from memledger.units import GIB
from memledger.vllm.findings import VLLM_SAID
from memledger.vllm.knobs import LEVERS
from memledger.vllm.sizing_rules import DEFAULT_BLOCK_SIZE, REDUNDANCY_BUFFER_BYTES


@dataclass
class _Case:
    """One vLLM startup as the failure rules read it: what they read, what they found."""

    log: VllmLog
    startup: Startup
    facts: Mapping[str, Fact]
    sizing: VllmSizing
    error: Reading | None
    """The failure text that decides (not `EngineCore failed to start`), if any."""
    findings: list[Finding] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)

    def at(self, fact: Fact | Reading | None) -> list[str]:
        line = None if fact is None else fact.line
        return [] if line is None else [f"{self.log.path}:{line}"]

    def bytes(self, name: str) -> int | None:
        fact = self.facts.get(name)
        return None if fact is None else fact.bytes

    def number(self, name: str) -> float | None:
        fact = self.facts.get(name)
        return None if fact is None or isinstance(fact.value, str) else float(fact.value)

    def found(
        self, name: str, amount: int | None, at: list[str] | None = None, /, **fields: object
    ) -> None:
        """The finding `name` (memledger.vllm.findings) of `amount` bytes, the log's `fields` in
        its words, resting on the deciding failure text's line unless `at` names others."""
        self.findings.append(_said(name, amount, self.at(self.error) if at is None else at, fields))


def _said(name: str, amount: int | None, at: list[str], fields: Mapping[str, object]) -> Finding:
    """The finding `name` in its words (memledger.vllm.findings), the log's `fields` in them."""
    row = VLLM_SAID[name]
    words = row.words(**fields)
    severity = Severity(row.severity)
    found = FindingId(row.finding_id)
    return Finding(id=found, severity=severity, message=words, bytes=amount, evidence=at)


Answer = tuple[Phase, str, int | None]
"""A failure rule's phase, verdict and shortfall (bytes, where the log gives the numbers)."""


def diagnose_vllm(
    log: VllmLog, startup: Startup, facts: Mapping[str, Fact], ledger: Ledger, sizing: VllmSizing
) -> Diagnosis:
    """The diagnosis of one vLLM startup."""
    errors = startup.errors
    ids = [r.error.id for r in errors if r.error is not None]
    main = next((r for r in errors if r.error is not None and r.error.id != "engine_failed"), None)
    case = _Case(log, startup, facts, sizing, main)
    case.findings += _suggestion_audit(case)
    phase, verdict, shortfall = Phase.UNKNOWN, "", None
    failed, kv = startup.outcome == "error", facts.get("kv_cache_gib")
    no_kv = failed and kv is not None and kv.bytes is not None and kv.bytes <= 0
    rule = _FAILURES.get(main.error.id) if main is not None and main.error is not None else None
    if rule is not None:
        phase, verdict, shortfall = rule(case)
    elif "no_cache_memory" in ids or startup.blocks_zero() or no_kv:
        phase, verdict, shortfall = _no_cache(case)
    elif failed and kv is not None and "kv_tokens" not in facts:
        phase, verdict, shortfall = _after_kv(case)
    elif failed:
        verdict = "startup failed; the log holds no memory figure or failure text that says why"
    else:
        verdict = _healthy(case)
        case.findings += _thin_headroom(log, ledger)
    return Diagnosis(
        path=log.path,
        rank=ledger.source.rank,
        outcome="crash" if failed else startup.outcome,
        phase=phase,
        verdict=verdict,
        shortfall_bytes=shortfall,
        failed_rank=main.tag or None if main is not None else None,
        findings=case.findings,
        suggestions=case.suggestions,
    )


Valued = dict[str, tuple[float | None, str]]
"""A lever's value (None: not computable) and its working, by knob."""


def _levers(failure: str, valued: Valued | None = None, **words: str) -> list[Suggestion]:
    """The failure's levers in the table's order (memledger.vllm.knobs.LEVERS): a knob in
    `valued` with its value and working, the others with the table's why; one without a why is
    named only with a value."""
    found = []
    for lever in LEVERS[failure]:
        value, why = (valued or {}).get(lever.knob, (None, lever.why.format(**words)))
        if why:
            direction = Direction(lever.direction)
            found.append(Suggestion(knob=lever.knob, direction=direction, value=value, why=why))
    return found


def _utilization(
    case: _Case, more: int, reason: str, *, lower: bool = False
) -> tuple[float | None, str]:
    """gpu_memory_utilization moved by `more` bytes of budget (rounded outward to 0.01), with
    its working after `reason`."""
    total, util = case.bytes("total_gpu_gib"), case.number("gpu_memory_utilization")
    if total is None or util is None:
        missing = " and ".join(
            n for n, v in (("the total GPU memory", total), ("the utilization", util)) if v is None
        )
        return None, f"{reason}: the log prints not {missing}: each 0.01 is 1 % of the GPU's memory"
    delta = more / total
    value = util - delta if lower else util + delta
    value = math.floor(value * 100) / 100 if lower else math.ceil(value * 100) / 100
    return min(max(value, 0.01), 1.0), (
        f"{reason}: {util:g} {'-' if lower else '+'} {_g(more)} / {_g(total)} total = "
        f"{util - delta if lower else util + delta:.4f}, rounded {'down' if lower else 'up'}"
    )


def _free_memory(case: _Case) -> Answer:
    free, total = case.bytes("free_gib"), case.bytes("total_gpu_gib")
    requested = case.bytes("requested_gib")
    util = case.number("gpu_memory_utilization")
    shortfall = None if free is None or requested is None else requested - free
    if free is not None and total is not None:
        others = total - free
        case.found("in_use_at_start", others, others=_g(others), total=_g(total))
        value = math.floor(free / total * 100) / 100
        why = (
            f"free {_g(free)} / total {_g(total)} = {free / total:.4f}, rounded down: vLLM asks "
            "total x utilization of the free memory (v0.10.2 vllm/v1/worker/gpu_worker.py:176-189)"
            f"; or free the {_g(others)} others hold"
        )
        case.suggestions += _levers("free_memory", {"gpu_memory_utilization": (value, why)})
    verdict = (
        f"vLLM refused to start: {_g(free or 0)} free, the budget asks "
        f"{_g(requested or 0)} ({util:g} of the GPU)"
        if util is not None
        else "vLLM refused to start: less free memory than gpu_memory_utilization asks"
    )
    return Phase.DEVICE_CHECK, verdict, shortfall


def _max_len_v1(case: _Case) -> Answer:
    needed, available = case.bytes("kv_needed_gib"), case.bytes("kv_cache_gib")
    max_len = case.number("max_model_len")
    estimate = case.number("estimated_max_model_len")
    shortfall = None if needed is None or available is None else needed - available
    if shortfall is not None:
        numbers = {"needed": _g(needed or 0), "available": _g(available or 0)}
        length = {"max_len": int(max_len or 0), "shortfall": _g(shortfall)}
        case.found("kv_short_of_one_request", shortfall, **numbers, **length)
    valued: Valued = {}
    if estimate is not None:
        valued["max_model_len"] = (
            int(estimate) // DEFAULT_BLOCK_SIZE * DEFAULT_BLOCK_SIZE,
            f"vLLM's estimated maximum model length {int(estimate):,} (the longest request that "
            f"fits {_g(available or 0)}), down to a multiple of {DEFAULT_BLOCK_SIZE}",
        )
    elif needed is not None and available is not None and max_len:
        valued["max_model_len"] = (
            int(max_len * available / needed) // DEFAULT_BLOCK_SIZE * DEFAULT_BLOCK_SIZE,
            f"{int(max_len):,} x {_g(available)} available / {_g(needed)} needed",
        )
    if shortfall:
        why = f"the budget must grow by the shortfall {_g(shortfall)}"
        valued["gpu_memory_utilization"] = _utilization(case, shortfall, why)
    case.suggestions += _levers("max_seq_len_v1", valued)
    verdict = "KV cache too small for one max-length request"
    if shortfall is not None:
        verdict += f": {_g(shortfall)} short"
    return Phase.KV_SIZING, verdict, shortfall


def _max_len_v0(case: _Case) -> Answer:
    sizing = case.sizing
    max_len, tokens = case.number("max_model_len"), case.number("kv_tokens")
    short_tokens = None if max_len is None or tokens is None else int(max_len - tokens)
    shortfall = None
    if short_tokens is not None and sizing.block_bytes:
        shortfall = math.ceil(short_tokens / DEFAULT_BLOCK_SIZE) * sizing.block_bytes
    short = "" if shortfall is None else f" ({_g(shortfall)} of KV short)"
    numbers = {"tokens": int(tokens or 0), "max_len": int(max_len or 0), "short": short}
    case.found("kv_short_of_one_request.tokens", shortfall, **numbers)
    valued: Valued = {}
    if tokens is not None:
        valued["max_model_len"] = (int(tokens), f"the tokens the KV cache holds ({int(tokens):,})")
    if shortfall is not None:
        why = (
            f"{short_tokens:,} tokens x {sizing.block_bytes:,} B per {DEFAULT_BLOCK_SIZE}-token "
            f"block (from {sizing.block_bytes_from}) = {_g(shortfall)}"
        )
        valued["gpu_memory_utilization"] = _utilization(case, shortfall, why)
    case.suggestions += _levers("max_seq_len_v0", valued)
    return Phase.KV_SIZING, "KV cache too small for one max-length request", shortfall


def _no_cache(case: _Case) -> Answer:
    kv = case.facts.get("kv_cache_gib")
    shortfall = None if kv is None or kv.bytes is None or kv.bytes > 0 else -kv.bytes
    weights = case.bytes("weights_gib")
    over = "" if shortfall is None else f" ({_g(shortfall)} over it)"
    held = "" if weights is None else f"; the weights alone take {_g(weights)}"
    at = case.at(kv) + case.at(next(iter(case.startup.errors), None))
    case.found("no_kv_budget", shortfall, at, over=over, weights=held)
    valued: Valued = {}
    if shortfall is not None:
        why = f"the budget must grow by {_g(shortfall)} plus 1 GiB of KV"
        valued["gpu_memory_utilization"] = _utilization(case, shortfall + GIB, why)
    case.suggestions += _levers("no_cache_memory", valued)
    verdict = "no memory left for the KV cache" + (
        "" if shortfall is None else f": the budget is {_g(shortfall)} short"
    )
    return Phase.KV_SIZING, verdict, shortfall


def _after_kv(case: _Case) -> Answer:
    kv = case.facts["kv_cache_gib"]
    case.found("failed_at_kv_check", kv.bytes, case.at(kv), kv=_g(kv.bytes or 0))
    case.suggestions += _levers("kv_check", kv=_g(kv.bytes or 0))
    verdict = (
        f"startup failed after KV sizing ({_g(kv.bytes or 0)} available): most likely the KV "
        "check for one max-length request"
    )
    return Phase.KV_SIZING, verdict, None


def _oom(case: _Case) -> Answer:
    kinds = {r.kind for r in case.startup.readings}
    # a capture begun and not done, or begun after the KV cache was sized
    sized = "kv_available" in kinds or "blocks" in kinds
    capture = "graph_begin" in kinds and ("graph_done" not in kinds or sized)
    phase = Phase.GRAPH_CAPTURE if capture else Phase.UNKNOWN
    if case.startup.frame_phase is not None:
        phase = Phase(case.startup.frame_phase)  # the reader names a Phase value
    tried, free = case.bytes("oom_tried_to_allocate_mib"), case.bytes("oom_free_mib")
    shortfall = None if tried is None or free is None else max(tried - free, 0)
    asked = ""
    if tried is not None and free is not None:
        asked = f": asked {tried / (1 << 20):,.2f} MiB with {free / (1 << 20):,.2f} MiB free"
    case.found("oom", shortfall, phase=PHASE_TEXT[phase], asked=asked)
    estimate = case.bytes("graph_estimate_gib") or case.bytes("graph_gib")
    valued: Valued = {}
    if phase is Phase.GRAPH_CAPTURE and estimate is not None:
        why = f"leave the CUDA graphs ({_g(estimate)}) outside the budget"
        valued["gpu_memory_utilization"] = _utilization(case, estimate, why, lower=True)
    case.suggestions += _levers(
        "graph_capture_oom" if phase is Phase.GRAPH_CAPTURE else "oom", valued
    )
    return phase, f"CUDA out of memory during {PHASE_TEXT[phase]}", shortfall


_FAILURES: dict[str, Callable[[_Case], Answer]] = {
    "free_memory": _free_memory,
    "max_seq_len_v1": _max_len_v1,
    "max_seq_len_v0": _max_len_v0,
    "torch_oom": _oom,
    "cuda_error_oom": _oom,
}
"""The rule of each failure text that decides the failure (memledger.vllm.errors ids)."""

THIN_HEADROOM = GIB // 2
"""Less than this outside vLLM's budget, with CUDA graphs still to come out of it, is a warning."""


def _thin_headroom(log: VllmLog, ledger: Ledger) -> list[Finding]:
    """A budget so close to the whole GPU that what it leaves may not hold the CUDA graphs."""
    headroom = ledger.row("runtime_headroom")
    graph = ledger.row("cuda_graph")
    if headroom is None or headroom.bytes is None or headroom.bytes >= THIN_HEADROOM:
        return []
    graph_text = (
        "the CUDA graphs come out of it"
        if graph is not None and graph.in_budget is False
        else "PyTorch's cache and any other process live in it"
    )
    at = [f"{log.path}:{s.line}" for s in headroom.evidence.sources][:1]
    words = {"headroom": _g(headroom.bytes), "graphs": graph_text}
    return [_said("thin_headroom", headroom.bytes, at, words)]


def _healthy(case: _Case) -> str:
    concurrency = case.number("max_concurrency")
    if case.startup.outcome == "truncated":
        return "the log stops before the engine is ready or fails: no failure to diagnose"
    if concurrency is not None and concurrency < 1:
        return f"ready, but one max-length request does not fit ({concurrency:g}x)"
    return "ready" + ("" if concurrency is None else f": {concurrency:g}x max-length requests")


def _suggestion_audit(case: _Case) -> list[Finding]:
    """vLLM's `--kv-cache-memory=` suggestion, recomputed and judged."""
    step = case.sizing.step("suggestion") or case.sizing.step("suggestion_graph_twice")
    suggested = case.facts.get("suggested_kv_cache_memory_bytes")
    if step is None or suggested is None or step.logged is None:
        return []
    same = "matches" if step.matches else "does not match"
    judgement = (
        "right for this release: budget - weights - non-torch - activation - graphs - 150 "
        f"MiB ({REDUNDANCY_BUFFER_BYTES:,} B); it sizes the KV so the graphs fit inside the "
        "requested memory"
    )
    if step.rule == "suggestion_graph_twice":
        estimate = case.bytes("graph_estimate_gib")
        right = step.logged + (estimate or 0)
        back = "add the graph estimate back"
        if estimate:
            back = f"the right figure is {int(right):,} ({_g(right)})"
        judgement = (
            "it subtracts the CUDA graphs twice (the activation peak already holds the graph "
            f"estimate since 0.21.0, vllm#57936): {back}"
        )
    numbers = {"suggested": int(suggested.value), "value": int(step.value), "same": same}
    words = {"arithmetic": step.arithmetic, "judgement": judgement, **numbers}
    return [_said("kv_cache_memory_suggestion", int(suggested.value), case.at(suggested), words)]
