"""Memory that is not the allocator's free GPU memory: SGLang's own pools running out while
serving (the KV pool, request slots), requests longer than the pool, and the host's RAM. Each
has the opposite lever of an allocator OOM, or no GPU lever at all.
"""

from __future__ import annotations

from memledger.diagnosis.arithmetic import floor_step, g, half
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.model import Direction, Finding, Suggestion
from memledger.diagnosis.occupancy import headroom_floor_step
from memledger.diagnosis.phase import placed_by_graphs
from memledger.diagnosis.stages import lever_suggestion, model_lever
from memledger.diagnosis.verdicts import phrase
from memledger.model.events import Event
from memledger.sglang.failure_rules import (
    COUNT_LINES,
    COUNT_SHAPES,
    HEADROOM_DOCS_CAP_GIB,
    HEADROOM_FLOOR_MIN_GIB,
    MAX_REQ_INPUT_LEN_SOURCES,
    POOL_RAN_OUT_CITATION,
    Phase,
)
from memledger.sglang.known_bugs import bug_words
from memledger.sglang.lifecycle import KV_CAP_RAISE, SERVING_NOTE_LEVERS


def pool_failure(evidence: Evidence) -> Event | None:
    """SGLang's KV pool or request slots ran out and the server raised (not a retraction)."""
    return next(
        (
            e
            for e in evidence.exhausted
            if e.values.get("pool") in ("kv", "req_slots")
            and e.values.get("shape") not in COUNT_SHAPES | {"retract"}
        ),
        None,
    )


def host_memory(evidence: Evidence) -> Event | None:
    return next((e for e in evidence.exhausted if e.values.get("pool") == "host"), None)


Answer = tuple[list[Finding], list[Suggestion], str]
"""A pool's findings, levers and verdict."""


def pool_ran_out(evidence: Evidence, event: Event, during: str) -> Answer:
    """A pool sized at startup is full (`during` a phase): a bigger pool or fewer tokens at once,
    never less mfs; or it raised with room, which is not its size."""
    shape = str(event.values.get("shape"))
    if shape == "admitted":  # the scheduler had admitted the batch by its own count: no size lever
        finding = evidence.said("pool_not_full.admitted", event.line)
        verdict = f"SGLang's KV pool raised {during} on a batch its scheduler had admitted: its "
        return [finding], [], verdict + "accounting lost tokens (a leak), not its size; upgrade"
    what, name, counted = "KV pool", "pool_ran_out", ""
    if event.values.get("pool") == "req_slots":
        what, name = "request slots", "pool_ran_out.req_slots"
        levers = [
            _fewer_requests(evidence, f"fewer requests than table rows ({POOL_RAN_OUT_CITATION})")
        ]
    else:
        counts = _counts(evidence, event)
        not_full = _not_full(evidence, event, counts, during)
        if not_full is not None:
            return not_full
        asked = counts.get("asked", event.values.get("tokens"))
        free = counts.get("available")
        counted = f" ({asked:,} tokens asked for)" if isinstance(asked, int) else ""
        if isinstance(asked, int) and free is not None:
            counted = f" ({free:,} tokens free for {asked:,} asked)"
        pre = evidence.budget.pre_load
        gain = f"; each 0.01 adds about {g(pre.avail_bytes * 0.01)} of KV" if pre else ""
        levers = [
            evidence.advice("mem_fraction_static.pool_full", gain=gain),
            _fewer_requests(evidence),
        ]
        if cap := evidence.int_param("max_total_tokens"):  # while it binds, no fraction helps
            short = max(asked - free, 0) if isinstance(asked, int) and free is not None else 0
            why = f"the pool is capped at {cap:,} tokens ({evidence.settings_where})"
            why += f", {short:,} tokens short" if short else ""
            levers.insert(
                0, lever_suggestion(KV_CAP_RAISE, why, value=cap + short if short else None)
            )
        chunk = evidence.int_param("chunked_prefill_size")
        if shape == "prefill":
            halved = max(chunk // 2, 256) if chunk and chunk > 0 else None
            levers.append(evidence.advice("chunked_prefill_size.pool_full", value=halved))
    finding = evidence.said(name, event.line, shape=shape, counted=counted)
    said = " or ".join(phrase(s) for s in levers[:2])
    return [finding], levers, f"SGLang's {what} ran out {during} (not a GPU allocation); {said}"


def _counts(evidence: Evidence, event: Event) -> dict[str, int]:
    """The count lines SGLang printed under its raise: `asked`, `available` (free + evictable),
    and for hybrid SWA models `available_full` / `available_swa`."""
    counts: dict[str, int] = {}
    for other in evidence.exhausted:
        shape, tokens = other.values.get("shape"), other.values.get("tokens")
        if event.line < other.line <= event.line + COUNT_LINES and shape in COUNT_SHAPES:
            if isinstance(tokens, int) and str(shape) not in counts:
                counts[str(shape)] = tokens
    glued = event.values.get("glued_available")
    asked = event.values.get("tokens")
    if isinstance(glued, int) and "available" not in counts and isinstance(asked, int):
        counts.setdefault("asked", asked)
        counts["available"] = glued
    return counts


def _not_full(
    evidence: Evidence, event: Event, counts: dict[str, int], during: str
) -> Answer | None:
    """The raise printed more tokens free than it asked for: not the pool's size. One pool with
    room is SGLang's page accounting; a hybrid SWA model's sliding-window pool short while the
    full pool has room is the split between the two (--swa-full-tokens-ratio)."""
    asked = counts.get("asked")
    if asked is None:
        return None
    free = counts.get("available")
    if free is not None and free >= asked:
        page = evidence.int_param("page_size")
        pages = (
            f"; {asked} x page_size {page} = {asked * page:,} tokens at most"
            if page and page > 1
            else ""
        )
        # the known defect of the log's release that makes a pool with room raise, if it may
        # have one (memledger.sglang.known_bugs)
        found = evidence.known_bug("pool_not_full")
        bug = f"; {bug_words(*found)}" if found else ""
        upgrade = f"; or run {found[0].fixed_in} or later ({found[0].fix})" if found else ""
        lever = evidence.advice("page_size.not_full", value=1, upgrade=upgrade)
        verdict = (
            f"SGLang's KV pool raised 'out of memory' {during} but was not full (more tokens free "
            f"than asked): its page accounting, not its size; {phrase(lever)}"
        )
        if found:
            verdict += f" or upgrade past {found[0].said} ({found[0].fixed_in}, {found[0].fix})"
        numbers = {"free": free, "asked": asked, "pages": pages, "bug": bug}
        return [evidence.said("pool_not_full", event.line, **numbers)], [lever], verdict
    full, swa = counts.get("available_full"), counts.get("available_swa")
    if full is None or swa is None or (full >= asked) == (swa >= asked):
        return None
    short, roomy = ("sliding-window", "full") if swa < asked else ("full", "sliding-window")
    direction = Direction.RAISE if swa < asked else Direction.LOWER
    lever = Suggestion(
        knob="swa_full_tokens_ratio",
        direction=direction,
        why=(
            f"a larger ratio gives the sliding-window pool more of the same KV budget (at most "
            f"1.0), a smaller one the full pool; here the {short} pool is short"
        ),
    )
    counted = {"short": short, "roomy": roomy, "asked": asked, "low": min(full, swa)}
    finding = evidence.said("swa_pool_ran_out", event.line, high=max(full, swa), **counted)
    levers = [lever, _fewer_requests(evidence)]
    verdict = (
        f"SGLang's KV pool ran out {during}: one of a hybrid SWA model's two pools, the other "
        f"had room; {' or '.join(phrase(s) for s in levers)}"
    )
    return [finding], levers, verdict


def _fewer_requests(
    evidence: Evidence, why: str = "fewer requests in a batch hold fewer KV tokens at once"
) -> Suggestion:
    """Half the running requests: a full pool's lever besides a bigger pool."""
    return Suggestion(
        knob="max_running_requests",
        direction=Direction.LOWER,
        value=half(evidence.int_param("max_running_requests")),
        why=why,
    )


def serving_notes(evidence: Evidence) -> list[Finding]:
    """Requests refused as longer than the pool, and KV-pool retractions, on any startup."""
    findings: list[Finding] = []
    too_long = [e for e in evidence.exhausted if e.values.get("shape") == "too_long"]
    if too_long:
        first = too_long[0]
        limit = first.values.get("limit")
        bound = ""
        if isinstance(limit, int):
            bound = (
                f": {limit:,} + 6 = {limit + 6:,} is the smaller of the context length and the "
                f"KV pool's max_total_num_tokens ({evidence.cite(MAX_REQ_INPUT_LEN_SOURCES)})"
            )
            tokens = evidence.ledger.summary.kv_tokens_per_rank
            if isinstance(tokens, int) and tokens == limit + 6:
                bound += "; here it is the KV pool: a bigger pool accepts longer requests"
        lines = [e.line for e in too_long][:4]
        numbers = {
            "count": len(too_long),
            "tokens": first.values.get("tokens", "?"),
            "bound": bound,
        }
        numbers["limit"] = limit if isinstance(limit, int) else "?"
        findings.append(evidence.said("request_exceeds_pool", *lines, **numbers))
    retracts = [e for e in evidence.exhausted if e.values.get("shape") == "retract"]
    if retracts:
        lines = [e.line for e in retracts][:4]
        findings.append(evidence.said("kv_pool_full", *lines, count=len(retracts)))
    return findings


def noted_levers(evidence: Evidence) -> tuple[list[Suggestion], str]:
    """What SGLang's serving lines (requests refused as too long, retractions) call for with no
    failure (memledger.sglang.lifecycle.SERVING_NOTE_LEVERS): levers, and the first's words."""
    shapes = {e.values.get("shape") for e in evidence.exhausted}
    noted = [said_levers for shape, said_levers in SERVING_NOTE_LEVERS.items() if shape in shapes]
    levers = [lever_suggestion(lever, said) for said, found in noted for lever in found]
    said = " or ".join(phrase(s) for s in levers[: len(noted[0][1])]) if noted else ""
    return levers, f"{noted[0][0]}: {said}" if noted else ""


def unknown_budget_mfs(evidence: Evidence, missing: int | None, phase: Phase) -> Suggestion:
    """Lower mfs, without a value: the log does not show P or the current fraction."""
    capacity, bound = evidence.capacity, ""
    if capacity is not None and missing is not None:
        d = missing / capacity.bytes
        bound = (
            f"; with P at most the GPU's {capacity.text}, {g(missing)} needs d >= {d:.4f} "
            "(more, since P is below the capacity)"
        )
    loaded = phase is not Phase.UNKNOWN or bool(placed_by_graphs(evidence))
    when = "" if loaded else " (if the OOM came after loading: during loading no mfs helps)"
    floor = headroom_floor_step(evidence, missing, phase)
    if floor is not None and capacity is not None:
        bound += (
            f"; to leave the {HEADROOM_DOCS_CAP_GIB} GiB free SGLang's tuning guide reserves for "
            f"activations (a floor on GPUs of {HEADROOM_FLOOR_MIN_GIB} GiB or more, whose "
            f"default keeps more), d >= {floor:g} of the {capacity.text}"
        )
    current = evidence.budget.mem_fraction_static
    if floor is not None and current is not None and floor_step(current - floor) > 0:
        # the fraction is in the log, P is not: at most current - d, since P <= the capacity;
        # a value only where the paste places the OOM after loading (before it no mfs helps)
        value = floor_step(current - floor)
        typed = evidence.budget.typed_at
        said = f" (the fraction typed at {evidence.path}:{typed})" if typed else ""
        at_most = f"at most {current:g} - {floor:g} = {value:g}{said}{when}"
        unknown_p = f"P (free before loading) is not in the log{bound}: {at_most}"
        valued = value if loaded else None
        return model_lever("mem_fraction_static", after=unknown_p, value=valued)
    neither = (
        "the log shows neither P (free before loading) nor the current fraction, so no value"
        if current is None
        else f"the paste gives the fraction ({current:g}) but not P (free before loading), so no "
        "value"
    )
    return model_lever("mem_fraction_static", after=f"{neither}{bound}{when}")
