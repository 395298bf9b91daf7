"""The tighter limit `check` suggests for an item far inside its budget: pure arithmetic.

Split from memledger.checking.evaluate (which calls it for every passing ceiling and capacity floor).
"""

from __future__ import annotations

import math

from memledger.checking.budget import ItemKind, Quantity
from memledger.units import GIB

TIGHTEN_SLACK = 0.10
"""The suggested limit sits this far beyond the actual value (10 %), rounded to 2 digits."""


def tighten_to(
    kind: ItemKind, is_max: bool, actual: Quantity, limit: Quantity, headroom_pct: float
) -> Quantity | None:
    """A rounded limit near the actual value when the item sits far inside its budget."""
    if limit <= 0 or actual <= 0:
        return None
    headroom = (limit - actual) / limit if is_max else (actual - limit) / limit
    if headroom * 100 <= headroom_pct:
        return None
    scale = GIB if kind is ItemKind.SIZE else 1
    if is_max:
        target = round_significant(actual * (1 + TIGHTEN_SLACK) / scale, up=True) * scale
        suggestion = target if target < limit else None
    else:
        target = round_significant(actual * (1 - TIGHTEN_SLACK) / scale, up=False) * scale
        suggestion = target if target > limit else None
    if suggestion is None:
        return None
    if kind is ItemKind.SIZE or (isinstance(actual, int) and float(suggestion).is_integer()):
        return round(suggestion)
    return suggestion


def round_significant(value: float, *, up: bool, digits: int = 2) -> float:
    """Round to `digits` significant digits, upwards or downwards."""
    if value <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(value)) - digits + 1)
    steps = math.ceil(value / step - 1e-9) if up else math.floor(value / step + 1e-9)
    return float(round(steps * step, 12))
