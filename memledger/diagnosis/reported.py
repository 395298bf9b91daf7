"""What the reporter's prose adds (reported events, memledger.input.reported): the settings typed
in words with what happened at each, and the mentions that place or explain a failure, answered
through the lifecycle model (memledger.sglang.lifecycle: MENTIONS, squeeze_levers)."""

from __future__ import annotations

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.model import (
    Finding,
    FindingId,
    Severity,
    Suggestion,
    leading,
    with_value,
)
from memledger.diagnosis.stages import lever_suggestion
from memledger.diagnosis.verdicts import phrase
from memledger.sglang.failure_rules import Phase
from memledger.sglang.lifecycle import squeeze_levers
from memledger.sizing.host_pool import host_pool_size

FRACTION = "mem_fraction_static"
Answer = tuple[list[Finding], list[Suggestion], str]  # findings, suggestions, verdict


def typed(evidence: Evidence, knob: str) -> list[tuple[float, str, str]]:
    """(value, relation, said) of every value typed for `knob`, in the paste's order."""
    return [
        (float(value), str(e.values.get("relation") or ""), str(e.values.get("said") or ""))
        for e in evidence.reported
        if e.values.get("knob") == knob and isinstance(value := e.values.get("value"), int | float)
    ]


def mentioned_phase(evidence: Evidence) -> tuple[Phase | None, bool]:
    """The phase a mention places a failure in (one that says when, a moment, before one that
    names what: `EAGLE ... OOMs under load` is serving; else the table's order) and whether it
    is said in the sentence that says it failed (`eighth draft pool: CUDA OOM`, `a single
    64k-length input ... crash due to OOM`): that outweighs a startup line the paste shows. A
    mention elsewhere places only the moments it describes (lifecycle.Mention.moment)."""
    failed = evidence.failure_line
    for mention in sorted(evidence.mentions, key=lambda m: not m.moment):
        lines = {e.line for e in evidence.reported if e.values.get("mention") == mention.name}
        if mention.phase is None:
            continue
        if failed in lines:
            return mention.phase, True
        if mention.moment:
            return mention.phase, False
    return None, False


def mention_answer(evidence: Evidence) -> Answer:
    """What the paste names (without a failure, only what is said alone): its findings, its
    levers (without a failure, only those that answer it alone) and its words, the first
    mention's with two levers (`growing ...: set --disable-fast-image-processor`)."""
    failed = evidence.failure_line is not None
    skip = ("serving", "pool_size")  # a question about the pool's size: pool_question answers
    found = [m for m in evidence.mentions if m.name not in skip and (m.alone or failed)]
    said = [
        evidence.finding(FindingId.REPORTED, Severity.INFO, f"the paste names {m.says}")
        for m in found
    ]
    # a refusal is before anything a later stage's lever moves: those are the KV budget's; what
    # a stage before KV sizing allocates (LoRA with the weights, Mention.in_budget) is in it
    order = list(Phase)
    answering = [
        m
        for m in found
        if m.levers
        and (failed or m.levers_alone)
        and (
            (evidence.refusal is None and not (m.own_pool and evidence.oom is not None))
            or m.in_budget
            or (m.phase is not None and order.index(m.phase) < order.index(Phase.KV_SIZING))
        )
    ]
    levers: list[Suggestion] = []
    for m in answering:  # one suggestion a knob: the first mention's
        levers = leading(levers, [lever_suggestion(lever, m.subject) for lever in m.levers])
    host = host_pool_size(evidence.server_args, typed(evidence, "host_memory_gb"))
    levers = with_value(levers, "hicache_size", *host)
    # its words: memory held outside the process first (Mention.outside), else the first
    # answering mention's answer (Mention.answer), then that mention's own levers
    outside = next((m for m in found if m.outside and failed), None)
    lead = answering[0] if levers else next((m for m in found if m.answer and failed), None)
    first = levers[: min(2, len(answering[0].levers))] if levers else []
    words = "; ".join(filter(None, [lead.answer if lead else "", " or ".join(map(phrase, first))]))
    words = f"{lead.subject}: {words}" if lead is not None else ""
    if outside is not None and outside is not lead:
        words = "; ".join(filter(None, [f"{outside.subject}: {outside.answer}", words]))
    return said, levers, words


def pool_question(evidence: Evidence) -> Answer | None:
    """A paste that asks about the KV pool's size (`why is my max_total_num_tokens so small`):
    what sizes the pool, this log's figures where it has them, and the levers of a bigger one."""
    asked = next((m for m in evidence.mentions if m.name == "pool_size"), None)
    if asked is None:
        return None
    summary, mfs = evidence.ledger.summary, evidence.budget.mem_fraction_static
    figures = (
        "for its figures add the server_args, `Load weight end` and `KV Cache is allocated` lines"
    )
    if summary.kv_tokens_per_rank:
        at = f" at --mem-fraction-static {mfs:g}" if mfs is not None else ""
        held = f" in {g(summary.kv_pool)}" if summary.kv_pool else ""
        figures = (
            f"here it holds {summary.kv_tokens_per_rank:,} tokens a rank{held}"
            f"{at} (`memledger whatif` with `--solve mem_fraction_static --for "
            "max_total_num_tokens=N` gives the fraction for N)"
        )
    finding = evidence.finding(
        FindingId.REPORTED, Severity.INFO, f"the paste asks about {asked.says}"
    )
    levers = [lever_suggestion(lever, "a bigger KV pool") for lever in asked.levers]
    named = " or ".join(f"{s.direction.value} {s.flag}" for s in levers)
    verdict = f"the paste asks about the KV pool's size: {figures}; a bigger pool: {named}"
    return [finding], levers, verdict


def squeezed(evidence: Evidence) -> Answer | None:
    """Raising the fraction ran out of memory after the pool and lowering it left no KV budget
    (an OOM and SGLang's refusal in one paste): no fraction fits both, so the answer is what
    shrinks the weights a rank or what comes after the pool, with the typed values' arithmetic;
    the findings end with what else the paste names."""
    if evidence.refusal is None or not _oom_besides_refusal(evidence):
        return None
    values = typed(evidence, FRACTION)
    ooms = [v for v, _, said in values if said == "oom"]
    lows = [v for v, _, said in values if said != "oom" and said != "works"]
    band = ""
    if ooms and lows and min(ooms) > max(lows):
        hi, lo = min(ooms), max(lows)
        pre = evidence.budget.pre_load
        room = f" = {g(round(pre.avail_bytes * (hi - lo)))}" if pre else ""
        band = (
            f" (OOM at {hi:g}, refused at {lo:g}: at {hi:g} the KV pool had at most "
            f"({hi:g} - {lo:g}) x P{room} and the slack P x (1 - {hi:g}) was still short)"
        )
    suggestions = [lever_suggestion(lever, "no fraction fits") for lever in squeeze_levers()]
    draft = next((m for m in evidence.mentions if m.name == "speculative"), None)
    if draft is not None:
        first = [lever_suggestion(lever, "the draft worker") for lever in draft.levers]
        suggestions = leading(first, suggestions)
    findings = [evidence.said("no_fraction_fits", evidence.refusal.line, band=band)]
    levers = " or ".join(f"{s.direction.value} {s.flag}" for s in suggestions[:3])
    verdict = (
        f"OOM at a higher --mem-fraction-static, SGLang's KV refusal at a lower one{band}: no "
        f"fraction fits; {levers}"
        + (f"; {draft.subject} adds its pools after the target's budget" if draft else "")
    )
    return findings + mention_answer(evidence)[0], suggestions, verdict


def _oom_besides_refusal(evidence: Evidence) -> bool:
    """An allocator's OOM text, or an OOM typed with a value or the fraction of its own; one with
    neither (`I encounter OOM when launching`, a title's) is the reporter's name for the refusal."""
    return evidence.oom is not None or any(
        e.values.get("said") == "oom" and ("value" in e.values or e.values.get("knob") == FRACTION)
        for e in evidence.reported
    )
