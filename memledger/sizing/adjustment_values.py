"""What SGLang's own setting change leaves to set: each lever of an `Adjustment` row
(memledger.sglang.adjustments) with its value, where the line and the settings carry the numbers
its arithmetic reads (`log.*`: the line's numbers, `args.*`: the settings the paste shows), and
that arithmetic as it reads."""

from __future__ import annotations

import re
from collections.abc import Mapping

from memledger.formulas import ExpressionError, evaluate
from memledger.sglang.adjustments import BY_NAME, chosen
from memledger.sglang.levers import Lever
from memledger.sglang.lifecycle import REFUSAL_LEVERS

_NAMES = re.compile(r"(?:args|log)\.(\w+)")
_BARE = r"\1"
"""A name of the arithmetic as the reader knows it (`per`, not `log.per`)."""


def lever_values(
    values: Mapping[str, object], settings: Mapping[str, object], where: str, subject: bool
) -> list[tuple[Lever, int | float | None, str]]:
    """Each lever of the `setting_adjusted` event's row (its `values`, the line at `where`), its
    value or None, and why: what SGLang set, the lever's effect, then the arithmetic with the
    numbers read or what a value needs. A row that sets a default has them only when the line
    is the paste's `subject` (the paste places nothing else); a cap always (`Adjustment.caps`)."""
    row = BY_NAME[str(values["adjustment"])]
    log = {key: int(str(text)) for key, text in values.items() if str(text).isdigit()}
    said = f"SGLang set {row.setting} to {chosen(values)} ({where})"
    out: list[tuple[Lever, int | float | None, str]] = []
    for lever in row.levers if subject or row.caps else ():
        try:
            value = evaluate(lever.value, {"args": settings, "log": log}) if lever.value else None
        except ExpressionError:
            value = None
        why = f"{said}: {lever.effect}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            out.append(
                (lever, None, f"{why}; for a value add {lever.needs}" if lever.needs else why)
            )
            continue
        read = {name: log.get(name, settings.get(name)) for name in _NAMES.findall(lever.value)}
        shown = ", ".join(f"{name} {number}" for name, number in read.items() if number is not None)
        out.append((lever, value, f"{why}; {_NAMES.sub(_BARE, lever.value)} with {shown}"))
    return out


def refusal_levers(
    shape: str, values: Mapping[str, object], settings: Mapping[str, object]
) -> list[tuple[Lever, int | float | None, str]]:
    """The levers of a KV refusal of this `shape` (memledger.sglang.lifecycle.REFUSAL_LEVERS)."""
    return formula_levers(REFUSAL_LEVERS.get(shape, ()), values, settings)


def formula_levers(
    levers: tuple[Lever, ...], values: Mapping[str, object], settings: Mapping[str, object]
) -> list[tuple[Lever, int | float | None, str]]:
    """Each of `levers` with its value (its formula over `log.*`, the paste's `values`, and
    `args.*`, its `settings`) or None, and why; a lever whose value does not move its setting the
    way it points (0, or not past the paste's value) does not answer the paste and is left out."""
    log = {
        k: v for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }
    out: list[tuple[Lever, int | float | None, str]] = []
    for lever in levers:
        try:
            value = evaluate(lever.value, {"args": settings, "log": log})
        except ExpressionError:
            out.append((lever, None, f"{lever.effect}; for a value add {lever.needs}"))
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not value:
            continue
        now = settings.get(lever.knob)
        if isinstance(now, int | float) and (
            value <= now if lever.direction == "raise" else value >= now
        ):
            continue
        read = {name: log.get(name, settings.get(name)) for name in _NAMES.findall(lever.value)}
        shown = ", ".join(f"{name} {number}" for name, number in read.items() if number is not None)
        out.append((lever, value, f"{lever.effect}; {_NAMES.sub(_BARE, lever.value)} with {shown}"))
    return out
