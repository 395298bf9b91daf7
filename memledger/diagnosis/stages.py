"""The lifecycle model's answer for a shortfall whose paste carries no numbers: the levers of the
phase's stage (memledger.sglang.lifecycle), each with its direction and what it changes there;
and the embedding framework's own name for each knob (memledger.sglang.frameworks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence, frames_of
from memledger.diagnosis.levers import NO_NUMBERS
from memledger.diagnosis.model import Diagnosis, Direction, Finding, Suggestion
from memledger.diagnosis.verdicts import phrase
from memledger.model.events import EventKind
from memledger.sglang.adjustments import BY_NAME as ADJUSTMENT
from memledger.sglang.adjustments import chosen
from memledger.sglang.failure_rules import PHASE_TEXT, Phase
from memledger.sglang.frameworks import BY_NAME, MEMORY_SAVER, UNNAMED, Framework, trainer_frame
from memledger.sglang.levers import Lever
from memledger.sglang.lifecycle import LEVER, STAGE, levers_after_load
from memledger.sizing.adjustment_values import lever_values


def stage_levers(phase: Phase, *, bound: bool = False) -> list[Suggestion]:
    """The levers of the phase's stage, in the table's order (those that raise its bound when
    `bound`); an unknown phase gets those of every stage after the weights (an OOM text with
    nothing placing it)."""
    stage = STAGE.get(phase)
    if stage is None:
        levers = levers_after_load()
    else:
        levers = stage.bound_levers if bound else stage.levers
    where = (
        f"in {PHASE_TEXT[phase]} ({stage.allocates}; bounded by {stage.bound}; {stage.source})"
        if stage is not None
        else "after the weights (the paste does not place the failure)"
    )
    return [lever_suggestion(lever, where, tail=NO_NUMBERS) for lever in levers]


def model_lever(
    knob: str,
    direction: str = "lower",
    *,
    before: str = "",
    after: str = "",
    value: int | float | None = None,
) -> Suggestion:
    """The lifecycle's lever of `knob` in `direction` (memledger.sglang.lifecycle.LEVER) as a
    suggestion: the paste's own numbers `before` and `after` what the lever moves."""
    tail = f"; {after}" if after else ""
    return lever_suggestion(LEVER[(knob, direction)], before, tail=tail, value=value)


def valued(levers: Sequence[tuple[Lever, int | float | None, str]]) -> list[Suggestion]:
    """Levers with their values and whys (memledger.sizing.adjustment_values) as suggestions."""
    return [
        Suggestion(knob=k.knob, direction=Direction(k.direction), value=v, why=w)
        for k, v, w in levers
    ]


def lever_suggestion(
    lever: Lever, why: str, *, tail: str = "", value: int | float | None = None
) -> Suggestion:
    """A lifecycle lever as a suggestion: `why`, then what the lever moves, then `tail`."""
    said = f"{why}: {lever.effect}" if why else lever.effect
    return Suggestion(
        knob=lever.knob, direction=Direction(lever.direction), value=value, why=said + tail
    )


def adjustment_levers(evidence: Evidence, diagnosis: Diagnosis) -> tuple[list[Suggestion], str]:
    """The levers of SGLang's own setting changes (memledger.sizing.adjustment_values) after a
    startup that did not fail (a failure's levers answer it), and the words of the first that
    has some (`SGLang set max_running_requests to 9 (the Mamba state cache): raise ...`)."""
    subject = not diagnosis.memory_problem and diagnosis.phase is Phase.UNKNOWN
    events = {str(e.values): e for e in evidence.events if e.kind is EventKind.SETTING_ADJUSTED}
    levers: list[Suggestion] = []
    words = ""
    for e in events.values() if not diagnosis.failed else ():
        found = valued(lever_values(e.values, evidence.server_args, evidence.at(e.line), subject))
        row = ADJUSTMENT[str(e.values["adjustment"])]
        said = f"SGLang set {row.setting} to {chosen(e.values)} ({row.reason}): "
        words = words or (said + " or ".join(phrase(s) for s in found[:2]) if found else "")
        levers += found
    return levers, words


def embedding_framework(evidence: Evidence) -> Framework | None:
    """The RL framework the paste names (the input layer's `framework` events: any line), a
    named one before SGLang's memory saver alone; the saver also when an OOM text is its."""
    named = [
        BY_NAME[str(e.values["framework"])] for e in evidence.reported if "framework" in e.values
    ]
    if any(e.values.get("runtime") == "torch_memory_saver" for e in evidence.oom_messages):
        named.append(MEMORY_SAVER)
    return next((f for f in named if f not in UNNAMED), named[0] if named else None)


def in_framework_words(framework: Framework, suggestions: list[Suggestion]) -> list[Suggestion]:
    """Each suggestion of a knob the framework sets, its why opened by the framework's setting
    (`in verl: lower actor_rollout_ref.rollout.gpu_memory_utilization`): what the reporter
    configures, beside SGLang's flag."""
    return [
        replace(s, why=f"in {framework.name}: {_set(s, framework.knobs[s.knob])}; {s.why}")
        if s.knob in framework.knobs
        else s
        for s in suggestions
    ]


def _set(s: Suggestion, name: str) -> str:
    """`lower <the framework's setting> to <value>`: each framework hands its value to SGLang
    as is (memledger.sglang.frameworks), so SGLang's value is the framework's."""
    return f"{s.direction.value} {name}" + (f" to {s.value}" if s.value is not None else "")


def in_framework(
    framework: Framework, suggestions: list[Suggestion], evidence: Evidence, missing: int | None
) -> tuple[list[Finding], str, bool]:
    """The findings naming the framework (and its trainer, when the failing frame is the
    trainer's code), the verdict's tail in its words, and whether the tail is the whole answer
    (the trainer's OOM: SGLang's phase talk does not apply)."""
    named = [(s, framework.knobs[s.knob]) for s in suggestions if s.knob in framework.knobs]
    at = [evidence.traceback.line] if evidence.traceback else []
    beside = ", beside its trainer on the same GPUs" if framework.beside_trainer else ""
    settings = "; ".join(f"{s.flag} is {framework.name}'s {name}" for s, name in named)
    settings = settings or "its settings are SGLang's"
    findings = [
        evidence.said(
            "embedded_in_framework", *at, framework=framework, beside=beside, settings=settings
        )
    ]
    paths = [f.path for e in evidence.events if e.kind is EventKind.TRACEBACK for f in frames_of(e)]
    trainer = trainer_frame(framework, paths)
    share = f"{framework.knobs['mem_fraction_static']}"
    if trainer is not None:
        findings.append(
            evidence.said("trainer_oom", *at, framework=framework, trainer=trainer, share=share)
        )
        tail = f"OOM in {framework.name}'s trainer ({trainer}), not in SGLang"
        tail += f": {g(missing)} short" if missing else ""
        tail += (
            f"; lower the trainer's memory (its own settings), or lower {share} to leave it more"
        )
        return findings, tail, True
    if not named:
        return findings, "", False
    # the share first: the frameworks' usual fix (memledger.sglang.frameworks)
    first, name = min(named, key=lambda pair: pair[0].knob != "mem_fraction_static")
    return findings, f" (in {framework.name}: {_set(first, name)})", False
