"""Did-you-mean help for names in user files: the closest known name to a misspelt one."""

from __future__ import annotations

import difflib
from collections.abc import Collection

TYPO_DISTANCE = 2
"""A name this close (edits) to a known one is taken as a typo of it."""


def edit_distance(left: str, right: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions, transpositions."""
    previous2: list[int] = []
    previous = list(range(len(right) + 1))
    for i, char in enumerate(left, 1):
        current = [i]
        for j, other in enumerate(right, 1):
            cost = 0 if char == other else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char == right[j - 2] and left[i - 2] == other:
                value = min(value, previous2[j - 2] + 1)
            current.append(value)
        previous2, previous = previous, current
    return previous[-1]


def typo_of(item: str, names: Collection[str]) -> str | None:
    """The known name `item` is most likely a misspelling of, if any."""
    close = [(edit_distance(item, name), name) for name in names if abs(len(name) - len(item)) <= 2]
    best = min(close, default=None)
    return best[1] if best is not None and best[0] <= TYPO_DISTANCE else None


def suggest_one(word: str, choices: Collection[str]) -> str:
    """` (did you mean 'x'?)` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
