"""Small pieces of arithmetic the suggestions share (each result carries its own working)."""

from __future__ import annotations

import math

from memledger.sglang.failure_rules import MFS_STEP
from memledger.units import GIB


def floor_step(value: float, step: float = MFS_STEP) -> float:
    return round(math.floor(round(value / step, 9)) * step, 4)


def above_step(value: float, step: float = MFS_STEP) -> float:
    """The first step strictly above `value`."""
    return round((math.floor(round(value / step, 9)) + 1) * step, 4)


def next_power_of_two(value: float) -> int:
    return 1 << max(0, math.ceil(math.log2(value))) if value > 1 else 1


def power_of_two_below(n: int) -> int | None:
    """The largest power of two below n (8192 for 13938 and for 16384), None below 2."""
    return 1 << ((n - 1).bit_length() - 1) if n >= 2 else None


def half(value: int | None) -> int | None:
    """Half a count, rounded up (None stays None: no value to halve)."""
    return math.ceil(value / 2) if value else None


def g(byte_count: int | float | None) -> str:
    """`2.40 GiB`."""
    return "an unknown amount" if byte_count is None else f"{byte_count / GIB:.2f} GiB"


def gib_ceil(byte_count: int) -> int:
    return math.ceil(byte_count / GIB)
