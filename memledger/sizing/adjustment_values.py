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
