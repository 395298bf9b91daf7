"""Readings no GPU can give: a ledger that balanced on one would be a true sum of false figures.

The partition balances by construction (the unexplained rows take the rest), so a balance proves
nothing about the readings themselves. Before any row is built, the readings the account stands
on are held to what memory can do; the first impossible one is named (file:line) and the ledger
is not balanced on it (usable memory unknown, with the reason as a note):

- no later `avail mem` reading of the startup is above the usable memory (the load-begin avail
  with the distributed-init usage and what was allocated before the load): that is all the
  memory the account partitions, and a release (a loader giving back, a freed buffer) can only
  give back what was taken after the start;
- no span's printed `mem usage` is above the usable memory;
- usable memory is not above a GPU capacity the log prints (the allocator's OOM text, the
  `Reported total GPU memory` fallback), nor above MAX_DEVICE_BYTES.

Each comparison allows both numbers' printing precision (and an integrated GPU's host-RAM noise).
"""

from __future__ import annotations

from memledger.engine.carve import gib_text
from memledger.engine.chain import Chain, Point
from memledger.model.events import Event, EventKind
from memledger.units import GIB, MAX_DEVICE_BYTES

_CAPACITY_SIZES = {EventKind.OOM_MESSAGE: "capacity", EventKind.GPU_CAPACITY_FALLBACK: "using_min"}
_USAGE_KINDS = (EventKind.LOAD_END, EventKind.CAPTURE_END)


def _at(chain: Chain, event: Event) -> str:
    return f"{chain.path}:{event.line}"


def _reading(point: Point) -> str:
    text = point.avail.text or gib_text(point.avail.bytes)
    return f"avail mem={text}" if point.derived_text is None else f"{point.derived_text} {text}"


def implausible(chain: Chain, usable: int, usable_error: int, noise: int) -> str | None:
    """Why the readings cannot be true (the first impossible one, file:line), else None.

    `usable_error`: the ± of the usable memory (its numbers' printing precision); `noise`: the
    extra ± of every reading (an integrated GPU's host RAM)."""
    points = chain.points
    if not points:
        return None
    first = points[0]
    for point in points[1:]:
        if point.avail.bytes > usable + point.avail.half_ulp + usable_error + 2 * noise:
            return (
                f"{point.id} reads {_reading(point)} at {_at(chain, point.event)}, above the "
                f"usable memory {gib_text(usable)} (avail at load begin, "
                f"{_at(chain, first.event)}, with what was allocated before it): nothing the "
                "startup frees can give back more than it began with"
            )
    for event in chain.events:
        usage = event.size("usage")
        if event.kind not in _USAGE_KINDS or usage is None:
            continue
        if usage.bytes > usable + usage.half_ulp + usable_error + 2 * noise:
            return (
                f"{event.kind} prints mem usage={usage.text or gib_text(usage.bytes)} at "
                f"{_at(chain, event)}, more than the usable memory {gib_text(usable)}"
            )
    for event in chain.events:
        name = _CAPACITY_SIZES.get(event.kind)
        capacity = event.size(name) if name is not None else None
        if capacity is None or capacity.bytes <= 0:
            continue
        if usable > capacity.bytes + capacity.half_ulp + usable_error + 2 * noise:
            return (
                f"usable memory {gib_text(usable)} (avail at load begin, "
                f"{_at(chain, first.event)}) is more than the GPU's capacity "
                f"{gib_text(capacity.bytes)} printed at {_at(chain, event)}"
            )
    if usable > MAX_DEVICE_BYTES:
        return (
            f"usable memory {usable / GIB:,.0f} GiB (avail at load begin, "
            f"{_at(chain, first.event)}) is more than any device has "
            f"({MAX_DEVICE_BYTES >> 40} TiB)"
        )
    return None
