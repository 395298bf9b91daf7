"""The inverse what-if: the lowest setting that reaches a figure (`whatif --solve ... --for ...`).

Only monotone pairs are solved: KV tokens per rank grow with mem_fraction_static (rule budget:
rest = A - P x (1 - mfs)), so a bisection on SGLang's 0.001 steps finds the lowest value. The
answer is a whatif at that value, so every figure beside it is anchored on the measured log.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from memledger.errors import ConfigError
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.whatif import Solved, WhatIf, parse_setting, whatif

SOLVABLE: dict[str, tuple[str, ...]] = {"mem_fraction_static": ("max_total_num_tokens",)}
"""Setting -> the figures it can be solved for (each grows with the setting)."""
FIGURE_ROWS = {"max_total_num_tokens": "KV tokens per rank"}
MFS_GRID = 1000
"""Solved mem_fraction_static values are multiples of 0.001 (what a user passes)."""
MFS_TOP = 999


def parse_target(setting: str, text: str) -> tuple[str, int]:
    """`max_total_num_tokens=N` -> (figure, N); ConfigError when it cannot be solved for."""
    if setting not in SOLVABLE:
        raise ConfigError(f"--solve {setting!r}: only {', '.join(SOLVABLE)} can be solved for")
    figure, sep, value = text.partition("=")
    figure = figure.strip().replace("-", "_")
    if not sep or figure not in SOLVABLE[setting]:
        known = ", ".join(f"{name}=N" for name in SOLVABLE[setting])
        raise ConfigError(f"--for needs {known}, got {text!r}")
    try:
        number = int(value.strip().replace(",", "").replace("_", ""))
    except ValueError:
        raise ConfigError(f"--for {figure} needs a whole number, got {value.strip()!r}") from None
    if not 0 < number < 1 << 40:
        raise ConfigError(f"--for {figure} out of range: {number}")
    return figure, number


def solve(
    inputs: SizingInputs,
    changes: Mapping[str, int | float | str | None],
    setting: str,
    figure: str,
    target: int,
) -> WhatIf:
    """The lowest `setting` (a multiple of 0.001) whose `figure` reaches `target`, as a whatif
    at that value with `solved` filled in; `solved.value` is None when none below 1 does."""
    if setting in changes:
        raise ConfigError(f"{setting} is what --solve finds: do not --set it as well")
    for name, value in changes.items():
        parse_setting(name, value)  # a bad --set fails before any search
    row_name = FIGURE_ROWS[figure]

    def reached(step: int) -> int | None:
        row = whatif(inputs, {**changes, setting: step / MFS_GRID}).row(row_name)
        value = None if row is None else row.predicted
        return None if value is None else int(value)

    p, a = inputs.load_begin, inputs.budget_avail
    floor = 1 - a.bytes / p.bytes if p is not None and a is not None and p.bytes > 0 else 0.0
    low = max(1, math.floor(floor * MFS_GRID) + 1)
    top = reached(MFS_TOP)
    if top is None or top < target or low > MFS_TOP:
        answer = whatif(inputs, changes)
        why = f"no {setting} below 1 gives {target:,} {row_name}" + (
            f" (0.999 gives {top:,})" if top is not None else " (no prediction)"
        )
        solved = Solved(
            setting=setting, figure=figure, target=target, value=None, reached=top, note=why
        )
        return replace(answer, solved=solved)
    high = MFS_TOP
    while low < high:  # reached() grows with the step: the lowest step at or above target
        middle = (low + high) // 2
        got = reached(middle)
        if got is not None and got >= target:
            high = middle
        else:
            low = middle + 1
    value = low / MFS_GRID
    answer = whatif(inputs, {**changes, setting: value})
    got = reached(low)
    below = reached(low - 1) if low - 1 > floor * MFS_GRID else None
    note = (
        f"lowest {setting} (in 0.001 steps) with {row_name} >= {target:,}: {value:.3f} "
        f"gives {got:,}"
    )
    if below is not None:
        note += f", {(low - 1) / MFS_GRID:.3f} gives {below:,}"
    if floor > 0:
        note += f"; below the minimum viable {floor:.4f} (1 - A/P) SGLang refuses to start"
    solved = Solved(
        setting=setting, figure=figure, target=target, value=value, reached=got, note=note
    )
    terms = [
        replace(term, source="--solve") if term.name == setting else term
        for term in answer.arithmetic
    ]
    return replace(answer, solved=solved, arithmetic=terms)
