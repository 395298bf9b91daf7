"""Derived rows: the formulas file's costs, each carved from the interval it names, or an
unknown row that says why (a missing input, no such interval, a load/capture interval)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memledger.engine.audit import Audit
from memledger.engine.carve import Carve
from memledger.engine.chain import Chain, Span
from memledger.engine.roles import TARGET
from memledger.engine.variables import Variables, missing_reason
from memledger.formulas import (
    ExpressionError,
    Formula,
    MissingVariable,
    evaluate,
    format_value,
    render_text,
)
from memledger.model.events import Event, EventKind
from memledger.model.ledger import RowKind
from memledger.model.model_config import ModelDims
from memledger.sglang.measured_spans import FIRST_CAPTURE
from memledger.sglang.versions import version_text

LARGEST_BUCKET = "largest_graph_bucket"
"""An `interval` alias: carved out of the first capture's largest bucket (its graph row when
the capture printed no progress): for what the first forward allocates lazily (DeepEP)."""


@dataclass
class DerivedRows:
    by_span: dict[str, list[Carve]] = field(default_factory=dict)
    """span key -> formula rows carved from it, in formula order."""
    outside: list[Carve] = field(default_factory=list)
    """Unknown and informational formula rows (not carved from an interval)."""
    in_graph: list[Carve] = field(default_factory=list)
    """Rows carved out of the first capture's largest bucket (`LARGEST_BUCKET`)."""
    unsized: dict[str, list[Carve]] = field(default_factory=dict)
    """span key -> the unknown rows of the formulas meant to be carved from it (their bytes
    are still inside it)."""


def first_capture_span(spans: Sequence[Span]) -> Span | None:
    """The interval ending at the first graph capture's begin reading, whatever its prefix."""
    return next(
        (s for s in spans if s.end.event.kind == EventKind.CAPTURE_BEGIN and s.closing is None),
        None,
    )


def formula_rows(
    chain: Chain,
    formulas: Sequence[Formula],
    variables: Variables,
    model: ModelDims | None,
    audit: Audit,
) -> DerivedRows:
    """Derived rows: carved from their interval, or unknown with the reason."""
    spans = chain.spans
    by_end = {span.end.id: span for span in spans}
    first_capture = first_capture_span(spans)
    if first_capture is not None:
        # Attention backends are built right before the first graph capture (whichever kind).
        by_end.setdefault(FIRST_CAPTURE, first_capture)
    by_key = {span.key: span for span in spans}
    result = DerivedRows()
    for formula in formulas:
        span = None
        if formula.interval is not None:
            span = by_key.get(formula.interval) or by_end.get(formula.interval)
            if span is None:
                span = _span_printing(chain, formula.interval)
        try:
            if formula.when is not None and not evaluate(formula.when, variables.values):
                continue
            carve = _evaluate(formula, variables)
        except MissingVariable as exc:
            reason = missing_reason(exc.name, model)
            unknown = _unknown(formula, reason, audit)
            result.outside.append(unknown)
            if span is not None and span.closing is None:
                result.unsized.setdefault(span.key, []).append(unknown)
            continue
        except ExpressionError as exc:
            reason = f"formula failed: {exc} ({formula.origin})"
            result.outside.append(_unknown(formula, reason, audit))
            continue
        if formula.informational:
            carve.in_partition = False
            result.outside.append(carve)
            continue
        if formula.interval == LARGEST_BUCKET:
            result.in_graph.append(carve)
            continue
        if span is None:
            reason = f"no interval ending at `{formula.interval}` in this log" + _where(
                chain, str(formula.interval)
            )
            result.outside.append(_unknown(formula, reason, audit, carve))
            continue
        if span.closing is not None:
            reason = f"{span.key} is a load/capture interval"
            result.outside.append(_unknown(formula, reason, audit, carve))
            continue
        if span.start.avail.bytes == 0 and span.end.avail.bytes == 0:
            # Both readings at the floor (free < 0.005 GiB, e.g. WSL spilling into shared
            # memory): the interval's drop cannot show what it allocated, so the row is shown
            # beside the account, not carved from a drop of 0.
            carve.in_partition = False
            carve.note = (
                f"{carve.note}; not summed: avail read 0.00 at both ends of {span.key}, so the "
                "readings cannot show it"
            )
            result.outside.append(carve)
            continue
        result.by_span.setdefault(span.key, []).append(carve)
    return result


def _span_printing(chain: Chain, checkpoint: str) -> Span | None:
    """The open span holding the target's `checkpoint` line printed without an avail reading
    (an NPU or fork `Memory pool end.` with no avail): what that step allocated is in it."""
    kinds = {kind.value: kind for kind in EventKind}
    kind = kinds.get(checkpoint)
    if kind is None:
        return None
    for span in chain.spans:
        if span.closing is None and span.region == TARGET:
            for event in span.events:
                if event.kind == kind and event.size("avail") is None:
                    return span
    return None


def _where(chain: Chain, checkpoint: str) -> str:
    """Why no interval ends at `checkpoint`: the log starts there, or stops before it."""
    points = chain.points
    if points and points[0].id == checkpoint:
        return f" (the log starts at {checkpoint}: no reading before it)"
    if chain.spans and checkpoint not in {point.id for point in points}:
        return f" (the account stops at {chain.spans[-1].end.id})"
    return ""


def _evaluate(formula: Formula, variables: Variables) -> Carve:
    values = variables.values
    local: dict[str, Any] = {}
    for name, expression in formula.let.items():
        local[name] = evaluate(expression, values, local)
    value = evaluate(formula.expression, values, local)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExpressionError(f"{formula.id} must give a number of bytes, got {value!r}")
    inputs: dict[str, int | float | str | None] = {
        name: _scalar(value) for name, value in local.items()
    }
    sources: list[Event] = []
    for name in _referenced_names(formula):
        if name in values and name not in inputs:
            inputs[name] = _scalar(values[name])
            if name == "log.format_version":
                code = variables.format_version
                inputs[name] = f"{code} ({version_text(code)} or later)"
        source = variables.sources.get(name)
        if source is not None and source not in sources:
            sources.append(source)
    if variables.model_source is not None and any(
        name.startswith("model.") or name in variables.from_model for name in inputs
    ):
        inputs["model.source"] = variables.model_source
    return Carve(
        formula.id,
        formula.label,
        formula.group,
        RowKind.DERIVED,
        round(value),
        0,
        sorted(sources, key=lambda e: e.line),
        formula=render_text(formula.text, values, local),
        inputs=inputs,
        note=formula.why,
    )


def _unknown(formula: Formula, reason: str, audit: Audit, carve: Carve | None = None) -> Carve:
    audit.note(f"{formula.id} unknown: {reason}")
    return Carve(
        formula.id,
        formula.label,
        formula.group,
        RowKind.UNKNOWN,
        0,
        0,
        carve.sources if carve else [],
        formula=carve.formula if carve else None,
        inputs=carve.inputs if carve else {},
        note=reason,
        in_partition=False,
    )


def _scalar(value: Any) -> int | float | str | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str | None):
        return format_value(value)
    return value


def _referenced_names(formula: Formula) -> list[str]:
    """Dotted `args.*`/`log.*`/`model.*` names an entry mentions, in order of appearance."""
    text = " ".join([formula.expression, formula.when or "", *formula.let.values(), formula.text])
    names: list[str] = []
    for match in re.finditer(r"\b(?:args|log|model)(?:\.[A-Za-z_][A-Za-z0-9_]*)+", text):
        if match.group(0) not in names:
            names.append(match.group(0))
    return names
