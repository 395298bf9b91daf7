"""SGLang release numbers, and the ONE release-range type every release-bounded rule uses.

Every table of memledger.sglang that holds for some releases only (format marks, the engine's
version rules, sizing rules, default changes, backend page sizes and attention defaults) says so
with a `ReleaseRange`, and every question "does this log's release have the rule?" is answered by
`within`: True when every release the log may be has it, False when none has, None when it
depends (a log's release is a range: memledger.sglang.release_markers.release_range).

Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@lru_cache(maxsize=1024)
def version_code(text: str) -> int:
    """`0.5.8` -> 5008 and so on; a suffix (`rc2`, `.post1`) is ignored (a few hundred texts
    are asked again and again: the release tables', remembered)."""
    parts: list[int] = []
    for piece in text.split(".")[:3]:
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]


def release_text(code: int | None) -> str:
    """5013 -> `0.5.13`; None -> `?`."""
    if code is None:
        return "?"
    return f"{code // 1_000_000}.{code // 1_000 % 1_000}.{code % 1_000}"


@dataclass(frozen=True)
class ReleaseRange:
    """The releases `first` .. `last`, both included (None: open on that side). A release is
    compared by X.Y.Z (`0.4.7.post1` is 0.4.7)."""

    first: str | None = None
    last: str | None = None

    @property
    def lo(self) -> int | None:
        """`first` as a code (`version_code`), None when open."""
        return version_code(self.first) if self.first else None

    @property
    def hi(self) -> int | None:
        """`last` as a code, None when open."""
        return version_code(self.last) if self.last else None

    @property
    def text(self) -> str:
        """`>= 0.5.2`, `<= 0.5.13`, `0.4.4 .. 0.5.12`, or `any release`."""
        if self.first and self.last:
            return self.first if self.first == self.last else f"{self.first} .. {self.last}"
        if self.first:
            return f">= {self.first}"
        return f"<= {self.last}" if self.last else "any release"

    def has(self, code: int) -> bool:
        """Whether release `code` is in the range."""
        return within(code, code, self) is True


def within(first: int | None, last: int | None, releases: ReleaseRange) -> bool | None:
    """Whether a log whose release is `first` .. `last` (codes, None: not known on that side) is
    in `releases`: True when every release it may be is, False when none is, None when it
    depends."""
    lo, hi = releases.lo, releases.hi
    if (hi is not None and first is not None and first > hi) or (
        lo is not None and last is not None and last < lo
    ):
        return False
    inside_lo = lo is None or (first is not None and first >= lo)
    inside_hi = hi is None or (last is not None and last <= hi)
    return True if inside_lo and inside_hi else None


def known_within(lower: int, ceiling: int, releases: ReleaseRange) -> bool:
    """`within` for the engine's view of a release: `lower` the formats' lower bound (0: not
    known), `ceiling` their exclusive upper bound (0: not known); True only when it is known."""
    return within(lower or None, ceiling - 1 if ceiling > 0 else None, releases) is True
