"""Which GPU capacities give a mem_fraction_static default: the one search, by bisection.

SGLang's default is a function of the capacity G (MiB) that is monotone piece by piece: inside a
piece its tables do not change, so round((G - reserved) / G, 3) only grows with G, a fixed value
stays, and a 0.4.6.post2 - 0.4.7 blend above 96 GiB (memledger.sglang.backend_defaults) falls.
The pieces come from the rules (memledger.sizing.defaults.capacity_pieces from 0.5.3,
memledger.compare.upgrade_gpu before); this module only searches them (pure).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from memledger.sglang.mfs_defaults import mfs_from_reserved


@dataclass(frozen=True)
class CapacityPiece:
    """Capacities (MiB, inclusive) over which the default is one monotone function of G."""

    first_mib: int
    last_mib: int
    rule: str
    value: Callable[[int], float]
    """The default at a capacity inside the piece."""
    rising: bool = True
    """The default never falls inside the piece (False: it never rises); a constant is rising."""

    def default_at(self, gpu_mib: int) -> float:
        return self.value(gpu_mib)


def reserve_piece(first_mib: int, last_mib: int, reserved_mib: float, rule: str) -> CapacityPiece:
    """A piece whose default is round((G - reserved) / G, 3)."""
    return CapacityPiece(
        first_mib, last_mib, rule, partial(mfs_from_reserved, reserved=reserved_mib)
    )


def fixed_piece(first_mib: int, last_mib: int, value: float, rule: str) -> CapacityPiece:
    """A piece whose default does not depend on the capacity (a TP-size step)."""
    return CapacityPiece(first_mib, last_mib, rule, lambda _: value)


def first_true(lo: int, hi: int, test: Callable[[int], bool]) -> int:
    """The first of lo .. hi - 1 where `test` holds (hi when none does); `test` must turn from
    False to True at most once over the span."""
    while lo < hi:
        middle = (lo + hi) // 2
        if test(middle):
            hi = middle
        else:
            lo = middle + 1
    return lo


def _first_where(piece: CapacityPiece, test: Callable[[float], bool]) -> int:
    """Rising: the first capacity from which `test(default)` holds; falling: the first from
    which it no longer does (last_mib + 1 when there is none). `test` holds from some default up."""
    return first_true(
        piece.first_mib, piece.last_mib + 1, lambda g: test(piece.default_at(g)) is piece.rising
    )


def capacities_where(
    pieces: list[CapacityPiece],
    reached: Callable[[float], bool],
    beyond: Callable[[float], bool],
) -> list[range]:
    """The capacities (MiB) whose default has `reached` and not gone `beyond`: one range per
    piece at most. Both tests must hold from some default up (`v >= low`, `v - printed > d`)."""
    found: list[range] = []
    for piece in pieces:
        starts, stops = _first_where(piece, reached), _first_where(piece, beyond)
        span = range(starts, stops) if piece.rising else range(stops, starts)
        if len(span):
            found.append(span)
    return found


def capacities_giving(pieces: list[CapacityPiece], low: float, high: float) -> list[range]:
    """The capacities (MiB) whose default lies in [low, high)."""
    return capacities_where(pieces, lambda v: v >= low, lambda v: v >= high)


def hull(spans: list[range]) -> range | None:
    """The capacities from the lowest span's first to the highest span's last (None: no span)."""
    if not spans:
        return None
    return range(min(s.start for s in spans), max(s.stop for s in spans))
