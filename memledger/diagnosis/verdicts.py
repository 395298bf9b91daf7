"""The verdict of an OOM whose levers have no value (the paste lacks the numbers): the change to
make, in the order SGLang's own troubleshooting guide gives for the phase, the least step where
the numbers bound one, and what the paste needs for a value."""

from __future__ import annotations

from memledger.diagnosis.arithmetic import floor_step, g
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.levers import failed_in_prefill
from memledger.diagnosis.model import Direction, Finding, Severity, Suggestion
from memledger.diagnosis.occupancy import headroom_floor_step
from memledger.diagnosis.phase import placed_by_graphs
from memledger.sglang.failure_rules import LOAD_SITES, Phase
from memledger.sglang.lifecycle import BATCH_KNOBS, NEEDS

ROOT_CAUSES = {site.finding_id: site.headline for site in LOAD_SITES}
"""Error findings that name why memory ran out (not how much): the headline leads with them,
ahead of the byte count's levers. Their findings' messages hold the source."""


def phrase(suggestion: Suggestion) -> str:
    """`lower --mem-fraction-static to 0.81`, `cap --cuda-graph-max-bs at 64`, `set --x`."""
    value = suggestion.value
    flag = suggestion.flag
    if suggestion.direction is Direction.ENABLE:
        return f"set {flag}"
    if value is None:
        return f"{suggestion.direction.value} {flag}"
    shown = f"{value}" if isinstance(value, int) else f"{value:g}"  # no 1.74356e+06
    if suggestion.knob.startswith("cuda_graph_max_bs"):
        return f"cap {flag} at {shown}"
    return f"{suggestion.direction.value} {flag} to {shown}"


def absent(evidence: Evidence) -> str:
    """What a valued lever needs that the paste lacks: the fraction (server_args) and P."""
    missing = []
    if evidence.budget.mem_fraction_static is None:
        missing.append("the server_args line")
    if evidence.budget.pre_load is None:
        missing.append("the `Load weight begin` line")
    if not missing:
        return "no value: the log lacks the numbers"
    if len(missing) == 2:
        return "for a value add the server_args and `Load weight begin` lines"
    return f"for a value add {missing[0]}"


def serving_order(evidence: Evidence, suggestions: list[Suggestion]) -> list[Suggestion]:
    """A serving OOM without values: the guide's batch lever first (the chunk for a prefill,
    the running requests otherwise), then the rest in their order."""
    batch = [s for s in suggestions if s.knob in BATCH_KNOBS]
    if failed_in_prefill(evidence):
        batch.sort(key=lambda s: s.knob != "chunked_prefill_size")
    else:
        batch.sort(key=lambda s: s.knob != "max_running_requests")
    return batch + [s for s in suggestions if s.knob not in BATCH_KNOBS]


def unvalued(
    evidence: Evidence,
    suggestions: list[Suggestion],
    phase: Phase,
    missing: int | None,
    said: frozenset[str] = frozenset(),
) -> str:
    """The `; ...` end of an OOM verdict whose suggestions have no value, but the knobs `said`
    before it (nothing when they hold its first lever)."""
    floor = headroom_floor_step(evidence, missing, phase)
    mfs = next(
        (
            s
            for s in suggestions
            if s.knob == "mem_fraction_static" and s.direction is Direction.LOWER
        ),
        None,
    )
    step = f" by at least {floor:g}" if mfs is not None and floor else ""
    current = evidence.budget.mem_fraction_static
    if step and current is not None and floor is not None:
        step += f" (to {floor_step(current - floor):g} at most from {current:g})"
    batch = [s for s in suggestions if s.knob in BATCH_KNOBS and s.knob not in said]
    if phase in (Phase.SERVING, Phase.WARMUP) and batch:
        levers = " or ".join(phrase(s) for s in batch[:2])
        tail = (
            f", or {phrase(mfs)}{step} ({absent(evidence)})" if mfs and mfs.knob not in said else ""
        )
        return f"; {levers} (SGLang's troubleshooting guide){tail}"
    if phase is Phase.UNKNOWN and mfs is not None and mfs.knob in said:
        return ""
    if phase is Phase.UNKNOWN and mfs is not None and placed_by_graphs(evidence) and batch:
        graph = [phrase(s) for s in suggestions if s.knob.startswith("cuda_graph_max_bs")][:1]
        levers = " or ".join(phrase(s) for s in batch[:2])  # the fraction holds in every stage
        also = f"; in graph capture also {graph[0]}, in serving also {levers}" if graph else ""
        return f"; {phrase(mfs)}{step} ({absent(evidence)}){also}"
    if phase is Phase.UNKNOWN and mfs is not None:
        value = "" if current is not None else f"; {absent(evidence)}"
        return (
            f"; if it came after loading, {phrase(mfs)}{step}; during loading no fraction helps "
            f"(the paste does not say which: add its traceback's frames or startup lines{value})"
        )
    first = suggestions[0]
    if first.knob in said:
        return ""
    needs = NEEDS.get(first.knob.removesuffix("_decode"))  # the lifecycle's, by lever
    if needs:
        return f"; {phrase(first)} (for a value add {needs})"
    return f"; {phrase(first)}{step if first is mfs else ''} ({absent(evidence)})"


def root_cause(evidence: Evidence, findings: list[Finding]) -> str | None:
    """The headline's words for the first error finding that names a root cause, if any."""
    for finding in findings:
        if finding.severity is Severity.ERROR and finding.id in ROOT_CAUSES:
            quantization = repr(evidence.param("quantization"))
            return ROOT_CAUSES[finding.id].format(quantization=quantization)
    return None


def load_deficit(evidence: Evidence, findings: list[Finding]) -> str | None:
    """A weight-loading OOM's headline amount: by how much the weights pass their budget a rank
    (mfs x P, or all of P when the log shows no fraction: said), not the allocator's last
    request minus free, which is only what the final allocation lacked."""
    found = next((f for f in findings if f.id == "weights_exceed_budget"), None)
    if found is None or found.bytes is None or found.bytes <= 0:
        return None
    if evidence.budget.mem_fraction_static is not None:
        return f"the weights are {g(found.bytes)} a rank over their budget (mfs x P)"
    return (
        f"the weights are at least {g(found.bytes)} a rank over P, the memory free before "
        "loading (the log does not show --mem-fraction-static)"
    )


def load_levers(suggestions: list[Suggestion]) -> list[str]:
    """A load OOM's levers for the headline: valued ones first, then a knob whose current value
    the log does not show, by name only."""
    valued = [phrase(s) for s in suggestions if s.value is not None]
    unknown = [
        f"{phrase(s)} (the log does not show its current value)"
        for s in suggestions
        if s.value is None and s.knob == "tp_size"
    ]
    return (valued + unknown)[:2]
