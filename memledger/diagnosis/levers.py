"""Levers with values, the way SGLang maintainers answer these threads.

- `max_total_tokens`: cap the KV pool by exactly the tokens whose bytes were missing; the token
  count and bytes per token are the log's own (the `--max-total-tokens` clamp, see
  `memledger.sglang.sizing_rules` rule `max_total_tokens`). Maintainer advice for a runtime OOM:
  https://github.com/sgl-project/sglang/issues/6027 ("use --max-total-tokens to control kv size").
- any lever whose table row has a formula (`Lever.value`: the graph cap, the prefill chunk), by
  one path (`table_value`): over the setting the paste shows, else SGLang's default for the card
  the paste sizes; graph memory grows with the largest batch
  (https://github.com/sgl-project/sglang/pull/5634 and /pull/10990: capture OOMs fixed by a
  smaller capture bs), a prefill's activations with the chunk."""

from __future__ import annotations

import math
from dataclasses import replace

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence, frames_of
from memledger.diagnosis.model import Suggestion, with_value
from memledger.formulas import evaluate
from memledger.sglang.failure_rules import (
    DECODE_GRAPH_FLAG_CITATION,
    DECODE_GRAPH_RUNNER,
    PREFILL_FRAMES,
)
from memledger.sglang.lifecycle import LEVER
from memledger.sglang.sizing_rules import RULE
from memledger.sizing.defaults import GPU_DEFAULTS
from memledger.units import MIB

NO_NUMBERS = "; the paste carries no numbers for a value"
"""A stage lever's tail where it has no value (diagnosis.stages)."""


def gpu_capacity_mib(evidence: Evidence) -> tuple[int, str] | None:
    """The GPU's capacity in MiB, and where it came from: the allocator's OOM text, else the
    card's memory the paste shows otherwise (sizing.gpu: an nvidia-smi table, a named card)."""
    if evidence.capacity is not None:
        return evidence.capacity.bytes // MIB, ""
    shown = evidence.sizing.gpu_capacity if evidence.sizing is not None else None
    return (shown.mib, f" (line {shown.line}'s)") if shown is not None and shown.mib else None


def kv_cap_lever(evidence: Evidence, missing: int) -> Suggestion | None:
    """`--max-total-tokens` = the logged tokens minus the tokens whose bytes were missing."""
    ledger = evidence.ledger
    tokens = ledger.summary.kv_tokens_per_rank
    cell = ledger.sizing.bytes_per_token if ledger.sizing is not None else None
    pool = ledger.summary.kv_pool
    if cell is None and pool and tokens:
        cell = pool / tokens  # the KV line's K + V bytes over its #tokens
    if tokens is None or tokens <= 0 or cell is None or cell <= 0 or missing <= 0:
        return None
    page = evidence.int_param("page_size") or 1
    cut = math.ceil(missing / cell)
    value = (tokens - cut) // page * page
    if value <= 0:
        return None
    rule = RULE["max_total_tokens"]
    page_text = f", rounded down to page_size {page}" if page > 1 else ""
    numbers = {"missing": g(missing), "cell": cell, "cut": cut, "tokens": tokens}
    return evidence.advice(
        "max_total_tokens.cut", value=value, page=page_text, rule=rule, **numbers
    )


def default_of(evidence: Evidence, knob: str) -> tuple[int, str] | None:
    """SGLang's default for `knob` on the GPU the OOM text sizes (sizing.defaults.GPU_DEFAULTS),
    and where it came from: the tp size, when it picks it too and the paste does not show it, is
    said to be assumed."""
    by_gpu, card = GPU_DEFAULTS.get(knob), gpu_capacity_mib(evidence)
    if by_gpu is None or card is None:
        return None
    (gpu, shown), value = card, by_gpu.pick(card[0], evidence.tp_size or 1)
    tp = f" at tp {evidence.tp_size or 'assumed 1'}" if by_gpu.by_tp else ""
    return value, (
        f"not in the log; SGLang's default for a {gpu / 1024:.0f} GiB GPU{shown}{tp} is {value}, "
        f"inferred by {by_gpu.source}"
    )


def table_value(
    evidence: Evidence, knob: str, direction: str = "lower", now: int | None = None
) -> tuple[int, int, str] | None:
    """The value of the lever's formula (lifecycle.LEVER[(knob, direction)].value) over the
    setting `now`, else the paste's, else SGLang's default for the card (default_of): the value,
    the setting, and where that came from (empty: the paste shows it)."""
    lever = LEVER.get((knob.removesuffix("_decode"), direction))
    now = now or evidence.int_param(knob)
    known = (now, "") if now is not None else default_of(evidence, lever.knob) if lever else None
    if lever is None or not lever.value or known is None or known[0] <= 0:
        return None  # a setting of 0 or less is off: nothing to take a part of
    value = evaluate(lever.value, {"args": {**evidence.server_args, lever.knob: known[0]}})
    return (value, *known) if isinstance(value, int) and value > 0 else None


def table_valued(evidence: Evidence, suggestion: Suggestion) -> Suggestion:
    """`suggestion` with its lever's table value (table_value) where it has none: a stage's or a
    mention's lever the card's size or the paste's setting values, with the arithmetic."""
    knob, direction = suggestion.knob, suggestion.direction.value
    known = table_value(evidence, knob, direction) if suggestion.value is None else None
    if known is None:
        return suggestion
    value, now, origin = known
    formula = LEVER[(knob.removesuffix("_decode"), direction)].value.replace("args.", "")
    why = f"{formula} = {value} with {now}{f' ({origin})' if origin else ''}: a first step"
    plain = replace(suggestion, why=suggestion.why.removesuffix(NO_NUMBERS))
    return with_value([plain], knob, value, f"{why}, not a computed fit")[0]


def failed_in_prefill(evidence: Evidence) -> bool:
    """Whether the failing traceback runs a prefill (extend) forward."""
    traceback = evidence.traceback
    if traceback is None:
        return False
    return any(frame.function in PREFILL_FRAMES for frame in frames_of(traceback))


def graph_cap_knob(evidence: Evidence) -> tuple[str, str]:
    """The decode graphs' cap as the log's release spells it, with why: `cuda_graph_max_bs_decode`
    where the paste shows a 0.5.16+ release (the model_executor/runner/ decode runner in a frame,
    or the knob in server_args), else `cuda_graph_max_bs`."""
    frames = frames_of(evidence.traceback) if evidence.traceback is not None else []
    newer = any(DECODE_GRAPH_RUNNER in frame.path for frame in frames)
    if newer or "cuda_graph_max_bs_decode" in evidence.server_args:
        return "cuda_graph_max_bs_decode", f"; {DECODE_GRAPH_FLAG_CITATION}"
    return "cuda_graph_max_bs", ""
