"""The GPU capacity a log shows, for SGLang's mem_fraction_static default (pure).

In order of trust: SGLang's own print of the capacity it used (the torch fallback when
nvidia-smi gives no total, v0.5.16 utils/common.py:602-625: measured); an nvidia-smi table pasted
with the log (its memory.total column is what SGLang's query reads, v0.5.10 utils/common.py:
1514-1549, the minimum over the GPUs: inferred, the table may be from another moment); the card a
kernel-config path names (`device_name=`), looked up in memledger.sglang.gpu_cards (inferred).
A name the table does not know, or two different names, give no capacity, with a note.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field

from memledger.model.events import Event, EventKind
from memledger.record import record
from memledger.sglang.gpu_cards import card_named
from memledger.units import MIB, count_or


@record
class GpuCapacity:
    """The capacity (MiB) SGLang's default would have read, and how this log shows it."""

    mib: int | None
    """None: the log names a GPU but gives no capacity (see `note`)."""
    kind: str
    """`measured` (SGLang printed it) or `inferred` (a pasted table, a named card)."""
    line: int
    source: str
    notes: list[str] = field(default_factory=list)


def gpu_capacity(events: Iterable[Event]) -> GpuCapacity | None:
    """What this startup's events say about the GPU capacity (None: nothing)."""
    fallback: Event | None = None
    totals: list[Event] = []
    names: dict[str, Event] = {}
    for event in events:
        if event.kind is EventKind.GPU_CAPACITY_FALLBACK and fallback is None:
            fallback = event
        elif event.kind is EventKind.GPU_NAMED:
            total, name = event.values.get("total_mib"), event.values.get("name")
            if count_or(total, None) is not None:
                totals.append(event)
            elif isinstance(name, str) and name:
                names.setdefault(name, event)
    if fallback is not None and "using_min" in fallback.sizes:
        mib = fallback.sizes["using_min"].bytes // MIB
        return GpuCapacity(
            mib=mib,
            kind="measured",
            line=fallback.line,
            source=f"line {fallback.line}: SGLang's torch fallback, using min {mib:,} MiB",
        )
    if totals:
        lowest = min(totals, key=lambda e: int(e.values["total_mib"]))  # type: ignore[arg-type]
        mib = int(lowest.values["total_mib"])  # type: ignore[arg-type]
        gpus = f"min of {len(totals)} distinct totals" if len(totals) > 1 else "one total"
        return GpuCapacity(
            mib=mib,
            kind="inferred",
            line=lowest.line,
            source=(
                f"line {lowest.line}: a pasted nvidia-smi table's memory.total {mib:,} MiB "
                f"({gpus}; SGLang reads the same column, the minimum over the node's GPUs)"
            ),
        )
    if not names:
        return None
    first = next(iter(names.values()))
    if len(names) > 1:
        shown = ", ".join(f"{name} (line {e.line})" for name, e in names.items())
        return GpuCapacity(
            mib=None,
            kind="inferred",
            line=first.line,
            source="",
            notes=[f"the log names more than one GPU ({shown}): no capacity taken from them"],
        )
    name = next(iter(names))
    card = card_named(name)
    if card is None:
        return GpuCapacity(
            mib=None,
            kind="inferred",
            line=first.line,
            source="",
            notes=[
                f"line {first.line} names the GPU '{name}', which memledger's card table "
                "(memledger/sglang/gpu_cards.py) does not hold: no capacity inferred"
            ],
        )
    return GpuCapacity(
        mib=card.capacity_mib,
        kind="inferred",
        line=first.line,
        source=(
            f"line {first.line} names the GPU (device_name={name.replace(' ', '_')}): "
            f"{card.name}, {card.capacity_mib:,} MiB as SGLang reads it ({card.source})"
        ),
    )
