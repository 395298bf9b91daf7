"""Why a startup failed or came out small: which phase, by how much, which knob.

`diagnose(parsed, ledger)` is a pure function of the parsed log (its error events included)
and the ledger built from it; renderers turn the `Diagnosis` into text, markdown or JSON.
A failure without memory evidence gets no memory knob.

Modules:

- `arithmetic`: Small pieces of arithmetic the suggestions share (each result carries its own
  working).
- `crash`: Crashes with a known cause that is not GPU memory.
- `evidence`: What a parsed startup and its ledger say about a failure.
- `health`: Memory problems a startup can survive (graphs over SGLang's plan among them).
- `levers`: Levers with values for an OOM after the pool, the way SGLang maintainers answer these
  threads.
- `memory`: Findings and suggestions for a startup that ran out of memory, by phase.
- `model`: The diagnosis of one startup.
- `occupancy`: What a paste says about memory SGLang's own arithmetic did not plan for.
- `phase`: Which startup phase a failure (or the end of a truncated log) falls in.
- `pools`: Memory that is not the allocator's free GPU memory.
- `reported`: What the reporter's prose adds (reported events): typed settings with what happened
  at each, and mentions that place or explain a failure, answered through the lifecycle model.
- `reserve`: What a startup left outside its KV pool, against what SGLang's own default keeps there
  at the log's release.
- `sites`: Allocations whose own site answers the OOM: the request-to-token table, one larger than
  the GPU, a long prefill's working set.
- `stages`: The lifecycle model's levers for a shortfall without numbers, and the embedding
  framework's names for them.
- `verdicts`: The verdict of an OOM whose levers have no value (the paste lacks the numbers).
- `vllm`: Why a vLLM startup failed.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from memledger.diagnosis import (
    crash,
    health,
    memory,
    occupancy,
    pools,
    reported,
    sites,
    stages,
    verdicts,
)
from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence, gather
from memledger.diagnosis.levers import table_valued
from memledger.diagnosis.model import (
    Diagnosis,
    Direction,
    Finding,
    FindingId,
    Severity,
    Suggestion,
    leading,
)
from memledger.diagnosis.phase import failure_phase, milestone, placed_by_graphs, traceback_phase
from memledger.input.launch_command import NOTE_PREFIX
from memledger.model.events import Event, EventKind, ParsedLog
from memledger.model.ledger import Ledger, LedgerDiagnosis
from memledger.sglang.adjustments import says
from memledger.sglang.failure_rules import CRASH_CAUSE, LOAD_SITES, PHASE_TEXT, CrashCause, Phase
from memledger.sglang.findings import SMI_VERDICT
from memledger.sizing.inputs import SizingInputs

__all__ = ["Diagnosis", "Direction", "Finding", "Severity", "Suggestion", "brief", "diagnose"]

MESSAGE_CLIP = 110
BLOCKING_SITES = frozenset(site.finding_id for site in LOAD_SITES if not site.more_ranks_help)
"""Load sites no memory knob fixes: their finding stands alone, without the stage's levers."""


def diagnose(parsed: ParsedLog, ledger: Ledger, inputs: SizingInputs | None = None) -> Diagnosis:
    """The diagnosis of the parsed startup (the ledger and the sizing inputs must come from the
    same parse; the inputs are read from it when not given)."""
    evidence = gather(parsed, ledger, inputs)
    diagnosis = _diagnose(evidence)
    held = occupancy.smi_others(evidence, diagnosis.failed, diagnosis.phase)  # nvidia-smi's table
    if held is not None and not any(f.id == FindingId.OTHER_PROCESSES for f in diagnosis.findings):
        words = SMI_VERDICT.format(but="" if diagnosis.failed else "but ", held=g(held.bytes))
        diagnosis = replace(
            diagnosis, verdict=f"{diagnosis.verdict}; {words}", findings=[held, *diagnosis.findings]
        )
    # what SGLang changed by itself, and where the settings come from, are part of the answer
    adjusted = {says(e.values): e for e in evidence.events if e.kind is EventKind.SETTING_ADJUSTED}
    said = [  # every rank prints it: said once
        evidence.finding(FindingId.SETTING_ADJUSTED, Severity.INFO, message, e.line)
        for message, e in adjusted.items()
    ]
    said += [
        evidence.finding(
            FindingId.LAUNCH_COMMAND,
            Severity.INFO,
            f"pasted launch command: {match.group(2)}",
            int(match.group(1)),
        )
        for match in map(_NOTE_RE.match, evidence.command_notes)
        if match is not None
    ]
    # a lever the table values from the paste's setting or the card's size, where none has a value
    suggestions = [table_valued(evidence, s) for s in diagnosis.suggestions]
    return replace(diagnosis, findings=[*diagnosis.findings, *said], suggestions=suggestions)


_NOTE_RE = re.compile(re.escape(NOTE_PREFIX) + r"(\d{1,9}): (.*)", re.DOTALL)


def _diagnose(evidence: Evidence) -> Diagnosis:
    failure = pools.pool_failure(evidence)
    if failure is not None and evidence.oom is None and evidence.refusal is None:
        return _pool_ran_out(evidence, failure)
    hit = crash.known_cause(evidence) if evidence.oom is None and evidence.refusal is None else None
    if hit is not None and (hit[0].own_pool or hit[0].gpu_memory) and evidence.outcome != "ready":
        return _own_pool_full(evidence, hit[0], hit[1])
    if evidence.memory_evidence:
        return _out_of_memory(evidence)
    # no outcome phrase, but a traceback that names its exception (a pasted `...OutOfResources:
    # ...` line): the startup crashed
    raised = evidence.traceback is not None and bool(evidence.traceback.values.get("exception"))
    ended = evidence.outcome in ("truncated", "unknown") and raised
    if evidence.outcome == "crash" or ended or crash.shm_exhausted(evidence):
        return _crash(evidence)
    found, quiet = (_truncated if evidence.outcome == "truncated" else _ready)(evidence)
    # no failure: what the table answers in words of what the paste names (Mention.answer), then
    # the most specific finding with levers (the paste's question about the pool's size, a setting
    # SGLang changed, what the paste names; else SGLang's serving lines), its levers first
    asked = reported.pool_question(evidence) or ([], [], "")
    adjusted, changed = stages.adjustment_levers(evidence, found)
    named, levers, words = reported.mention_answer(evidence)
    noted, serving = pools.noted_levers(evidence)
    said = asked[2] or changed or words or (serving if quiet is not None else "")
    told = [f"{m.subject}: {m.answer}" for m in evidence.mentions if m.answer and m.alone]
    said = "; ".join(dict.fromkeys(filter(None, [*told, said])))  # an answer said once
    findings = [*asked[0], *found.findings, *named]
    if said and quiet is not None:  # its verdict says only the outcome: what leads is the news
        found = replace(found, verdict=quiet[0] + said + quiet[1])
        findings = [f for f in findings if f.id != FindingId.TRUNCATED]
    elif said:
        found = replace(found, verdict=f"{found.verdict}; {said}")
    # in the verdict's order: what it said first (a quiet verdict's come with none)
    suggestions = leading(adjusted, leading(levers, noted))
    suggestions = leading(found.suggestions, leading(asked[1], suggestions))
    room, suggestions = health.room_at_ready(evidence, suggestions)  # last: it never leads
    return replace(found, findings=findings + room, suggestions=suggestions)


def brief(diagnosis: Diagnosis) -> LedgerDiagnosis | None:
    """What a ledger carries of its diagnosis: only a failed or starved startup has one."""
    if diagnosis.outcome not in ("oom", "crash", "starved"):
        return None
    return LedgerDiagnosis(
        outcome=diagnosis.outcome,
        phase=diagnosis.phase.value,
        shortfall_bytes=diagnosis.shortfall_bytes,
        verdict=diagnosis.verdict,
    )


def _diagnosis(
    evidence: Evidence,
    outcome: str,
    phase: Phase,
    verdict: str,
    findings: list[Finding],
    suggestions: list[Suggestion],
    **fields: Any,
) -> Diagnosis:
    """A failure's rank is its error text's (`failed_rank` given: that one, else its text's)."""
    if outcome in ("oom", "crash"):
        fields["failed_rank"] = fields.get("failed_rank") or _failed_rank(evidence)
    fields |= {"outcome": outcome, "phase": phase, "verdict": verdict, "findings": findings}
    return Diagnosis(path=evidence.path, rank=evidence.rank, suggestions=suggestions, **fields)


def _out_of_memory(evidence: Evidence) -> Diagnosis:
    squeeze = reported.squeezed(evidence)
    if squeeze is not None:  # no fraction fits: an OOM above it, SGLang's refusal below
        findings, suggestions, verdict = squeeze
        findings += memory.site_finding(evidence)
        missing = memory.shortfall(evidence)
        return _diagnosis(
            evidence,
            "oom",
            Phase.KV_SIZING,
            verdict,
            findings,
            suggestions,
            shortfall_bytes=missing,
        )
    phase = failure_phase(evidence)
    said_phase, firm = reported.mentioned_phase(evidence)  # what the paste's prose names
    order = list(Phase)
    if evidence.refusal is not None and said_phase is not None:
        if order.index(said_phase) < order.index(Phase.KV_SIZING):
            said_phase = None  # the refusal prints at KV sizing; what came before took the budget
    framed = evidence.traceback is not None and traceback_phase(evidence.traceback) is not None
    if said_phase is not None and (phase is Phase.UNKNOWN or (firm and not framed)):
        phase = said_phase
    by_name = evidence.weights_by_name  # over the card: it failed while loading
    over_card = by_name is not None and by_name.per_rank > by_name.capacity
    phase = Phase.LOAD if phase is Phase.UNKNOWN and over_card else phase
    missing = memory.shortfall(evidence)
    findings = memory.oom_findings(evidence)
    # an allocation whose own site answers it: the request table, one larger than the GPU, a
    # long prefill's working set
    site = (
        sites.req_to_token_oom(evidence)
        or sites.larger_than_gpu(evidence)
        or sites.oversized_forward(evidence, phase)
    )
    if evidence.refusal is not None:
        extra, suggestions = memory.kv_refusal(evidence)
        # the automatic fraction under DP attention
        found, lever = occupancy.dp_auto_fraction(evidence)
        extra, suggestions = extra + found, _fraction_first(suggestions, lever)
    elif site is not None:
        extra, suggestions = site
    elif phase in (Phase.LOAD, Phase.DIST_INIT):
        extra, suggestions = memory.load_oom(evidence)
    else:
        extra, suggestions = memory.after_pool_oom(evidence, phase)
        if phase is Phase.UNKNOWN and placed_by_graphs(evidence):  # after the weights: all after
            suggestions = leading(
                suggestions, verdicts.serving_order(evidence, stages.stage_levers(phase))
            )
        if phase in (Phase.WARMUP, Phase.SERVING):
            found, lever = _large_gpu_reserve(evidence)
            extra, suggestions = extra + found, _fraction_first(suggestions, lever)
    # a load site more ranks do not help (the Transformers fallback) stands alone
    blocking = next((f for f in extra if f.id in BLOCKING_SITES), None)
    if not suggestions and site is None and evidence.refusal is None and blocking is None:
        # the lifecycle model's levers, with directions (a site no knob fixes, the Transformers
        # fallback, stands alone)
        suggestions = stages.stage_levers(phase)
    held = occupancy.other_processes(evidence, phase)
    dropped = occupancy.after_pool_drop(evidence)
    findings += placed_by_graphs(evidence)
    findings += ([held] if held is not None else []) + extra
    findings += [dropped] if dropped is not None else []
    findings += (
        memory.site_finding(evidence)
        + health.free_rose_after_pool(evidence)
        + pools.serving_notes(evidence)
    )
    # an OOM text that a known cause besides free memory also prints (its table row names it)
    noted = CRASH_CAUSE.get(str(evidence.oom.values.get("cause"))) if evidence.oom else None
    if noted is not None and evidence.oom is not None:
        findings.append(crash.cause_finding(noted, evidence.oom, evidence))
    after = " after the weights" if placed_by_graphs(evidence) else ""  # its private pools
    head = f"OOM during {PHASE_TEXT[phase]}{after}"
    if evidence.refusal is not None:
        head = "SGLang refused to size the KV cache"
    # ranked: a root cause an error finding names leads; the amount is the budget's deficit
    loading = phase in (Phase.LOAD, Phase.DIST_INIT) and evidence.refusal is None
    deficit = verdicts.load_deficit(evidence, findings) if loading else None
    cause = verdicts.root_cause(evidence, findings)
    amount = deficit or (f"{g(missing)} short" if missing else None)
    leads = [part for part in (cause, amount) if part]
    head += f": {'; '.join(leads)}" if leads else ""
    oversized = next((f for f in findings if f.id == FindingId.ALLOCATION_EXCEEDS_GPU), None)
    if oversized is not None:
        head += "; one allocation is larger than the whole GPU"
    elif any(f.id == FindingId.OVERSIZED_FORWARD for f in extra):
        head += "; one allocation is a long prefill's working set, with much memory still free"
    levers = [verdicts.phrase(s) for s in suggestions if s.value is not None][:2]
    named, first, words = reported.mention_answer(evidence)  # what the paste names
    if loading and levers:
        levers = verdicts.load_levers(suggestions)
    lead = suggestions[0].knob if suggestions else ""  # the stage that grew leads, then the rest
    grew = [m for m in evidence.mentions if lead in m.grew and phase in (m.phase, Phase.UNKNOWN)]
    if grew and words.startswith(grew[0].subject):
        own = [s for s in first if s.knob in {lever.knob for lever in grew[0].levers}]
        head, words, first = f"{head}; {words}", "", leading(own, leading(suggestions, first))
    stuck = next((f for f in findings if f.id == FindingId.NO_FRACTION_FITS), None)
    raised = next((s.value for s in suggestions if s.knob == "mem_fraction_static"), None)
    above = f" above {evidence.tp_size}" if evidence.tp_size else ""
    over_reserved = next((f for f in findings if f.id == FindingId.DP_AUTO_FRACTION), None)
    if held is not None:
        verdict = (
            head
            + f"; {g(held.bytes)} of the GPU is held by another process: free it"
            + (
                f"; else {' or '.join(verdicts.phrase(s) for s in suggestions[:2])}"
                if loading and suggestions
                else ", or lower --mem-fraction-static by as much"
            )
        )
    elif over_reserved is not None and not levers:
        verdict = head + (
            "; under DP attention SGLang's automatic fraction over-reserved "
            f"{g(over_reserved.bytes)} (sglang#28884): set --mem-fraction-static by hand"
        )
    elif levers and stuck is not None and raised is not None:
        verdict = head + (
            f"; even at --mem-fraction-static {raised} the slack is {g(stuck.bytes)} short of "
            f"SGLang's own reserve for graphs and activations: raise --tp-size{above} or load "
            "fewer weight bytes a rank (a quantized checkpoint)"
        )
    elif levers:
        verdict = head + f"; {'else ' if cause else ''}{' or '.join(levers)}"
    elif blocking is not None:
        verdict = head if cause else head + f"; {verdicts.root_cause(evidence, [blocking])}"
    elif suggestions:
        # no value without the numbers, but still the change to make, and what would give one
        if phase in (Phase.SERVING, Phase.WARMUP):
            suggestions = verdicts.serving_order(evidence, suggestions)
        said: frozenset[str] = frozenset()
        if words and evidence.refusal is None:  # before the stage's levers (after a refusal's)
            head, words, said = f"{head}; {words}", "", frozenset(s.knob for s in first[:2])
        verdict = head + verdicts.unvalued(evidence, suggestions, phase, missing, said)
    elif oversized is not None and oversized.message.find("computed wrong") >= 0:
        verdict = head + ": a size computed wrong, no memory flag helps"
    else:
        verdict = head
    # the suggestions in the verdict's order: what the paste names first where it leads it
    findings = findings + named
    suggestions = leading(suggestions, first) if words else leading(first, suggestions)
    verdict += f"; {words}" if words else ""
    verdict += f"; also: {noted.fix}" if noted is not None else ""
    framework = stages.embedding_framework(evidence)
    if framework is not None:
        named, tail, whole = stages.in_framework(framework, suggestions, evidence, missing)
        findings += named
        verdict = tail if whole else verdict + tail
        suggestions = stages.in_framework_words(framework, suggestions)
    return _diagnosis(
        evidence, "oom", phase, verdict, findings, suggestions, shortfall_bytes=missing
    )


def _large_gpu_reserve(evidence: Evidence) -> tuple[list[Finding], Suggestion | None]:
    """A serving OOM on a GPU the log shows is over 96 GiB, with less outside the KV pool than
    SGLang's own default keeps there (reserve.default_reserve): the finding, and the fraction
    that restores that reserve when it has a value."""
    found, levers = health.large_gpu_reserve(evidence, Severity.WARNING)
    mfs = (s for s in levers if s.knob == "mem_fraction_static" and isinstance(s.value, float))
    return found, next(mfs, None)


def _fraction_first(suggestions: list[Suggestion], lever: Suggestion | None) -> list[Suggestion]:
    """A finding's own fraction (the DP automatic fraction's over-reserve, a large GPU's default
    reserve) in place of the fraction suggested so far where it is firmer: that one has no value,
    or lowers less; first where none was suggested."""
    index = next((i for i, s in enumerate(suggestions) if s.knob == "mem_fraction_static"), None)
    if lever is None or index is None:
        return suggestions if lever is None else [lever, *suggestions]
    current = suggestions[index].value
    if current is None or (lever.value is not None and lever.value < current):
        return [*suggestions[:index], lever, *suggestions[index + 1 :]]
    return suggestions


def _after_startup(evidence: Evidence) -> tuple[list[Finding], list[Finding], list[Suggestion]]:
    """What a startup that got through its graphs left: no or thin headroom, and the graph-memory
    note; their levers (the graphs' after the headroom's, one per knob)."""
    left, suggestions = health.headroom_after_startup(evidence)
    graphs, levers = health.graph_memory(evidence)
    return left, graphs, leading(suggestions, levers)


def _failed_rank(evidence: Evidence) -> str | None:
    events = (evidence.oom, evidence.refusal, evidence.traceback, evidence.exit)
    return next((event.rank for event in events if event is not None), None)


def _clip(text: str) -> str:
    """The text on one line, cut at a word boundary past MESSAGE_CLIP characters (never inside
    the word that names the problem)."""
    text = " ".join(text.split())
    if len(text) <= MESSAGE_CLIP:
        return text
    cut = text.rfind(" ", 0, MESSAGE_CLIP)
    return text[: cut if cut > MESSAGE_CLIP // 2 else MESSAGE_CLIP] + " ..."


def _quoted(event: Event, where: str = "") -> str:
    """An error's exception and message on one line, clipped, and the line of the exception (a
    traceback event's own line is its head's)."""
    what = f"{event.values.get('exception') or 'error'}: {event.values.get('message') or ''}"
    at = event.values.get("exception_line")
    return f"{_clip(what)} ({where}line {at if isinstance(at, int) else event.line})"


def _pool_ran_out(evidence: Evidence, event: Event) -> Diagnosis:
    """SGLang's own pool ran out while serving: the lever is a bigger pool or smaller batches."""
    phase = failure_phase(evidence)  # never unknown: a pool raises only while serving
    during = f"during {PHASE_TEXT[phase]}"
    findings, suggestions, verdict = pools.pool_ran_out(evidence, event, during)
    findings += memory.site_finding(evidence) + pools.serving_notes(evidence)
    return _diagnosis(
        evidence, "oom", phase, verdict, findings, suggestions, failed_rank=event.rank
    )


def _own_pool_full(evidence: Evidence, cause: CrashCause, event: Event) -> Diagnosis:
    """One of SGLang's own pools (KV tokens, mamba slots) had no room for a request: SGLang's
    accounting, not an allocation the GPU refused; or GPU memory ran out behind another
    library's error text. The fix is the cause's."""
    phase = failure_phase(evidence)
    if phase is Phase.UNKNOWN and cause.own_pool:
        phase = Phase.SERVING  # the pools are only drawn from when batches are scheduled
    findings = [crash.cause_finding(cause, event, evidence), *memory.site_finding(evidence)]
    during = PHASE_TEXT[phase]
    verdict = (
        f"SGLang's own pool was full during {during} (not a GPU allocation)"
        if cause.own_pool
        else f"likely out of GPU memory during {during}, behind an error that is no allocator OOM"
    ) + f": {_quoted(event)}; {cause.fix}"
    levers = crash.cause_levers(cause)
    return _diagnosis(evidence, "oom", phase, verdict, findings, levers, failed_rank=event.rank)


def _crash(evidence: Evidence) -> Diagnosis:
    phase = failure_phase(evidence)  # else the one the paste's prose names (`killed while ...`)
    phase = (reported.mentioned_phase(evidence)[0] or phase) if phase is Phase.UNKNOWN else phase
    traceback = evidence.traceback
    findings: list[Finding] = []
    known = True
    where = f"{traceback.rank}, " if traceback is not None and traceback.rank else ""
    if traceback is not None and traceback.values.get("exception"):
        cause = _quoted(traceback, where)
    elif traceback is not None:
        cause = f"the traceback is cut off before its exception ({where}line {traceback.line})"
        known = False
    else:
        cause = _clip(evidence.ledger.stopped_at or "no traceback in the log")
    exit_event = evidence.exit
    killed = exit_event is not None and bool(exit_event.values.get("killed"))
    host = pools.host_memory(evidence)
    findings += [evidence.said("host_memory", host.line)] if host is not None else []
    shm = crash.shm_exhausted(evidence)
    if shm is not None:
        findings.append(crash.shm_finding(shm, evidence))
    hit = crash.known_cause(evidence) if shm is None else None
    if hit is not None:
        findings.append(crash.cause_finding(hit[0], hit[1], evidence))
        if not known and hit[1].values.get("exception"):
            cause = _quoted(hit[1])  # the known error's own line, not the frames pasted after it
    if exit_event is not None and killed:
        findings.append(evidence.said("killed", exit_event.line))
    if shm is not None:
        verdict_end = "the host's shared memory (/dev/shm), not GPU memory: docker --shm-size 32g"
    elif hit is not None:  # with what its text measures, which the clipped quote cuts
        gpu = "possibly GPU memory" if hit[0].maybe_memory else "not GPU memory"
        amount, said = crash.cause_numbers(hit[1])
        verdict_end = (f"{said} - " if amount else "") + f"{gpu}: {hit[0].fix}"
    elif host is not None:
        verdict_end = "host RAM, not GPU memory: more RAM for the host or its container's limit"
    elif killed:
        verdict_end = "killed (SIGKILL), often the host's OOM killer: host RAM, not GPU memory"
    else:  # no cause named: the error the log shows is no memory problem, or it is not shown
        verdict_end = "not a memory problem" if known else "the error is not in the log"
        at = traceback.line if traceback else evidence.outcome_line
        findings.append(
            evidence.said("not_memory" if known else "error_not_in_log", at, cause=cause)
        )
    findings += (
        memory.site_finding(evidence)
        + health.free_rose_after_pool(evidence)
        + pools.serving_notes(evidence)
    )
    # no error in the log: what the paste names is the evidence, its words and levers the answer
    answer = reported.mention_answer(evidence) if not (known or hit) or killed else ([], [], "")
    findings += answer[0]
    # a known cause's launch flags are its levers: the Suggestions say what its fix says
    levers = answer[1] if hit is None else crash.cause_levers(*hit, evidence)
    framework = stages.embedding_framework(evidence)  # its levers in the framework's words
    levers = stages.in_framework_words(framework, levers) if framework else levers
    verdict = f"crash during {PHASE_TEXT[phase]}: {cause} - {verdict_end}"
    verdict += f"; {answer[2]}" if answer[2] else ""
    return _diagnosis(evidence, "crash", phase, verdict, findings, levers)


Quiet = tuple[str, str] | None
"""A verdict that says only the outcome: the words before and after the finding that leads it."""


def _truncated(evidence: Evidence) -> tuple[Diagnosis, Quiet]:
    # the phase its milestones, a serving batch or a retraction place the end in
    phase, last = failure_phase(evidence), milestone(evidence)[1]
    at = f" (last memory line: {last.line})" if last is not None else ""
    # `Capture cuda graph end` is the last line: the graphs are done, the ready line is not
    where = (
        "after CUDA-graph capture"
        if last is not None and last.kind is EventKind.CAPTURE_END
        else f"during {PHASE_TEXT[phase]}"
    )
    ended = f"the log ends {where}{at} with no error and no ready line: whether the startup "
    ended += "failed is not in the log"
    at_last = [last.line] if last is not None else []
    findings = [evidence.finding(FindingId.TRUNCATED, Severity.INFO, ended, *at_last)]
    if phase is Phase.GRAPH_CAPTURE and where.startswith("during"):
        findings += memory.capture_point(evidence)[0]
    headroom, graphs, suggestions = _after_startup(evidence)
    dropped = occupancy.after_pool_drop(evidence)
    rose = health.free_rose_after_pool(evidence)
    findings += headroom + graphs + rose
    findings += pools.serving_notes(evidence) + ([dropped] if dropped is not None else [])
    ends = f"log ends {where}{at}"
    quiet: Quiet = None
    if headroom:
        # a valued lever first; else the direction (the paste lacks P)
        levers = [verdicts.phrase(s) for s in suggestions if s.value is not None][:1]
        levers = levers or [verdicts.phrase(s) for s in suggestions][:1]
        noted = [health.graph_memory_verdict(evidence, graphs[0])] if graphs else []
        verdict = f"{ends}: {'; '.join([headroom[0].message, *levers, *noted])}"
    elif graphs:
        verdict = f"{ends}: {health.graph_memory_verdict(evidence, graphs[0])}"
    elif dropped is not None:
        verdict = (
            f"{ends}, no error text; {g(dropped.bytes)} was taken after the KV pool before the "
            "graphs, outside its budget (setup after the pool: most often an attention backend's "
            "workspace)"
        )
    else:
        # how the pool came to be sized (a draft held while it was) leads, in its lead words
        said = [f.message.split(": ")[0] for f in rose[:1]]
        verdict = "; ".join([*said, f"{ends}: no error text, outcome unknown"])
        quiet = ("", f"; {verdict}")  # the outcome only: a finding with levers may lead it
    return _diagnosis(evidence, "truncated", phase, verdict, findings, suggestions), quiet


def _ready(evidence: Evidence) -> tuple[Diagnosis, Quiet]:
    headroom, graphs, suggestions = _after_startup(evidence)
    capacity, pool_levers = health.kv_capacity(evidence)
    if pool_levers:  # a pool short of one request: nothing that shrinks it, its levers first
        shrink = {("mem_fraction_static", Direction.LOWER), ("max_total_tokens", Direction.LOWER)}
        kept = [s for s in suggestions if (s.knob, s.direction) not in shrink]
        suggestions = leading(pool_levers, kept)
        headroom = capacity + headroom
        capacity = []
    findings = headroom + graphs + health.free_rose_after_pool(evidence)
    findings += health.mfs_below_default(evidence) + pools.serving_notes(evidence) + capacity
    warnings = [f for f in findings if f.severity is Severity.WARNING]
    phase = Phase.SERVING if evidence.outcome == "ready" else Phase.UNKNOWN
    outcome = evidence.outcome
    quiet: Quiet = None
    if [f.id for f in warnings] == [FindingId.KV_CAPACITY]:
        # a pool short of one full-context request serves shorter ones: not starved, but said
        verdict = f"{evidence.outcome}: {warnings[0].message.split('; ')[0]}"
        verdict += f"; {verdicts.phrase(suggestions[0])}" if suggestions else ""
    elif warnings:
        said = warnings[0].message
        if warnings[0].id == FindingId.KV_CAPACITY:
            said = said.split("; ")[0]  # the rest is the finding's detail
        verdict = f"ready, but starved: {said}"
        levers = [verdicts.phrase(s) for s in suggestions if s.value is not None][:1]
        if not levers and suggestions:  # the direction, and what a value needs
            levers = [f"{verdicts.phrase(suggestions[0])} ({verdicts.absent(evidence)})"]
        verdict += f"; {levers[0]}" if levers else ""
        outcome = "starved"
    else:
        verdict = "ready: no memory problem found"
        if headroom:
            # it came up and served: a note, not a problem; its lever is for a later OOM only
            amount = f"{g(headroom[0].bytes)} " if headroom[0].bytes else ""
            verdict += f"; note {headroom[0].id}: {amount}below SGLang's default reserve"
        elif graphs:
            verdict += f"; note {health.graph_memory_verdict(evidence, graphs[0])}"
        else:  # the outcome and the pool's size only: a finding with levers may lead them
            quiet = ("ready: ", "".join(f"; {f.message.split(':')[0]}" for f in capacity[:1]))
            verdict += quiet[1]
    return _diagnosis(evidence, outcome, phase, verdict, findings, suggestions), quiet
