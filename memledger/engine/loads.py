"""Weights: each load's resident row, the rows split out of its usage, and what it gave back.

A load's row is its load-end usage (the printed `mem usage`, else the load's avail drop) less
the rows logged inside the load (staging pools); an avail rise right after `Load weight end` is
the load's release, netted into the same row. The peak and the release are shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memledger.engine.audit import Audit
from memledger.engine.carve import (
    Carve,
    Placed,
    gib_text,
    negative_note,
    weights_figure,
    weights_group,
    weights_row_id,
)
from memledger.engine.chain import Chain, Span, Usage
from memledger.engine.lines import LoggedRows
from memledger.engine.roles import DRAFT
from memledger.model.events import Event, EventKind
from memledger.model.ledger import RowKind
from memledger.units import GIB


@dataclass
class Load:
    """One model load's weights row, what the load split out of it and what it gave back."""

    role: str
    end: Event
    """The `Load weight end` line."""
    carve: Carve
    """The resident row's load part (load-end usage less the split-out rows)."""
    usage: int | None
    """Load-end usage (the printed `mem usage`, else the load's avail drop); the load peak."""
    usage_error: int
    usage_printed: bool
    interval: str
    split: list[Carve] = field(default_factory=list)
    """Rows logged inside the load interval (staging pools), carved out of the usage."""
    release: Carve | None = None
    """The negative piece: the avail rise right after `Load weight end`."""
    release_interval: str | None = None
    release_after: str = "`Load weight end`"
    """What the avail rise followed (the load end, or the draft's pool end)."""

    @property
    def row_id(self) -> str:
        return self.carve.row_id


@dataclass
class LoadRows:
    """The weights rows: one per load span, the releases, and the informational rows."""

    primary: dict[str, Carve] = field(default_factory=dict)
    """span key -> the load's row (first in its span)."""
    releases: dict[str, Carve] = field(default_factory=dict)
    """span key -> the release piece of the span right after a load end."""
    loads: list[Load] = field(default_factory=list)
    info: list[Placed] = field(default_factory=list)

    def target(self) -> Load | None:
        return next((load for load in self.loads if load.role == "target"), None)


def weights_rows(
    chain: Chain, logged: LoggedRows, usages: dict[str, Usage], audit: Audit
) -> LoadRows:
    """Every load's resident row, its release and its peak."""
    loads: dict[int, Load] = {}
    for end, carve, interval in logged.loads:
        # A load end whose begin is not its span's start: the line's own usage is its row.
        role = chain.load_role(end)
        loads[id(end)] = Load(role, end, carve, carve.bytes, carve.error, True, interval)
    result = LoadRows()
    for span in chain.spans:
        carves = logged.by_span[span.key]
        if span.closing is not None and span.end.event.kind == EventKind.LOAD_END:
            load = _load(chain, span, carves, usages[span.key])
            loads[id(load.end)] = load
            result.primary[span.key] = load.carve
        elif (
            span.closing is None
            and span.start.event.kind == EventKind.LOAD_END
            and span.drop < 0
            and not any(carve.in_partition and carve.bytes for carve in carves)
        ):
            result.releases[span.key] = _release(chain, span, loads, audit)
    for span in chain.spans:
        if _draft_head_release(span, logged.by_span[span.key]):
            draft = next(
                (
                    load
                    for load in loads.values()
                    if load.role == DRAFT and load.end.line <= span.start.event.line
                ),
                None,
            )
            if draft is not None and draft.release is None and draft.usage is not None:
                result.releases[span.key] = _shared_release(span, draft, audit)
    result.loads = list(loads.values())
    for load in result.loads:
        result.info += _finish(chain, load)
    return result


def _draft_head_release(span: Span, carves: list[Carve]) -> bool:
    """An avail rise right after the draft's pool end, with nothing logged inside it."""
    return (
        span.closing is None
        and span.start.region == DRAFT
        and span.drop < 0
        and not any(carve.in_partition and carve.bytes for carve in carves)
    )


def _shared_release(span: Span, draft: Load, audit: Audit) -> Carve:
    """EAGLE/MTP drafts share the target's embedding and lm_head: after the draft's pools are
    built, `set_embed_and_head` replaces the draft's own copies and `del`s them, then
    `torch.cuda.empty_cache()` (v0.5.8 speculative/eagle_worker.py:162-179; models/llama.py
    :759-769, deepseek_v2.py:2925-2931): the avail rise is the draft weights' release."""
    piece = Carve(
        draft.carve.row_id,
        "draft embed/lm_head released (shared with the target)",
        draft.carve.group,
        RowKind.LOGGED,
        span.drop,
        span.error,
        [span.start.event, span.end.event],
        part_of=draft.carve,
        figure=weights_figure(DRAFT),
    )
    draft.release = piece
    draft.release_interval = span.key
    draft.release_after = "the draft's `Memory pool end` (set_embed_and_head)"
    audit.use_number(span.start.event, "avail", span.start.avail)
    audit.use_number(span.end.event, "avail", span.end.avail)
    return piece


def _load(chain: Chain, span: Span, carves: list[Carve], usage: Usage) -> Load:
    assert span.closing is not None
    role = chain.roles.load_role.get(span.closing, "target")
    split = [carve for carve in carves if carve.in_partition]
    others = sum(carve.bytes for carve in split)
    other_error = sum(carve.error for carve in split)
    carve = Carve(
        weights_row_id(role),
        f"{role} weights at load end",
        weights_group(role),
        RowKind.LOGGED,
        usage.total - others,
        usage.error + other_error,
        [span.start.event, span.end.event],
        note=(
            "negative mem usage: the load freed more than it allocated"
            if usage.total - others < 0
            else None
        ),
        figure=weights_figure(role),
    )
    offload = chain.args.get("cpu_offload_gb")
    if role == "target" and isinstance(offload, int | float) and offload > 0:
        carve.note = (
            f"cpu_offload_gb={offload}: that much of the weights lives in host RAM (offloaded, "
            "streamed in per layer); this row is the GPU part only"
        )
    printed = span.end.event.size("usage") is not None
    end = span.end.event
    return Load(
        chain.load_role(end), end, carve, usage.total, usage.error, printed, span.key, split
    )


def _release(chain: Chain, span: Span, loads: dict[int, Load], audit: Audit) -> Carve:
    """The avail rise right after a load end: the negative part of that load's weights row.

    The interval keeps it as logged (it explains the drop); the row it belongs to is the
    resident weights, and `<row>_released` shows the amount (positive) beside it.
    """
    start = span.start.event
    load = loads.get(id(start))
    role = chain.load_role(start)
    piece = Carve(
        weights_row_id(role),
        f"{role} weights released after load",
        weights_group(role),
        RowKind.LOGGED,
        span.drop,
        span.error,
        [start, span.end.event],
        figure=weights_figure(role),
    )
    if load is None:
        # No load row to net against (no load begin and no printed usage): the release
        # stays a row of its own, negative and said so.
        piece.note = (
            f"negative: avail rose by {-span.drop / GIB:.2f} GiB right after "
            "`Load weight end` (the loader freed load-time copies); this load's own usage "
            "is not in the account (no load begin and no printed mem usage)"
        )
        load = Load(role, start, piece, None, 0, False, span.key)
        loads[id(start)] = load
    else:
        piece.part_of = load.carve
    load.release = piece
    load.release_interval = span.key
    audit.use_number(start, "avail", span.start.avail)
    audit.use_number(span.end.event, "avail", span.end.avail)
    return piece


def _finish(chain: Chain, load: Load) -> list[Placed]:
    """The weights row becomes the resident weights: load-end usage - split-out rows -
    released after load; the peak and the release are shown beside it (informational)."""
    if load.usage is None or not (load.split or load.release):
        return []
    carve = load.carve
    load_sources = list(carve.sources)
    released = 0 if load.release is None else -load.release.bytes
    resident = carve.bytes - released
    terms = [_usage_term(chain, load)]
    terms += [
        f"{_split_name(piece)} {gib_text(piece.bytes)} ({chain.where(piece.sources)})"
        for piece in load.split
    ]
    if load.release is not None and load.release_interval is not None:
        rise = load.release_interval.replace("->", " -> ")
        terms.append(
            f"released {gib_text(released)} (avail rise {rise}, "
            f"{chain.where(load.release.sources)})"
        )
    carve.formula = " - ".join(terms)
    carve.label = (
        f"{load.role} weights net of staging ({_resident_shape(load)})"
        if load.split
        else f"{load.role} weights resident ({_resident_shape(load)})"
    )
    more = [e for piece in load.split for e in piece.sources]
    more += [] if load.release is None else load.release.sources
    carve.sources = sorted({id(e): e for e in [*carve.sources, *more]}.values(), key=_line)
    carve.note = negative_note(
        resident, "the load and what it released leave less than nothing resident"
    ) or (
        "the summary's weights_resident keeps the staging (load-end usage - released, as a "
        "hand-made account counts it); this row has it split out"
        if load.split
        else carve.note
    )
    peak = Carve(
        f"{load.row_id}_load_peak",
        f"{load.role} weights: load-end usage (peak)",
        carve.group,
        RowKind.LOGGED,
        load.usage,
        load.usage_error,
        load_sources,
        note=(
            "informational: the load's peak, staging allocated during the load "
            f"included; the partition counts `{load.row_id}` (resident) and the rows "
            "split out of it"
        ),
        in_partition=False,
    )
    info: list[Placed] = [(peak, load.interval)]
    if load.release is None or load.release_interval is None:
        return info
    given_back = Carve(
        f"{load.row_id}_released",
        f"{load.role} weights released after load"
        if load.release_after.startswith("`Load")
        else "draft embed/lm_head released (shared with the target)",
        carve.group,
        RowKind.LOGGED,
        released,
        load.release.error,
        list(load.release.sources),
        note=(
            f"informational: avail rose by {gib_text(released)} right after "
            f"{load.release_after} ({_release_why(load)}); netted into `{load.row_id}`, "
            "whose release part "
            f"(-{gib_text(released)}) is the logged amount of {load.release_interval}"
        ),
        in_partition=False,
    )
    return [*info, (given_back, load.release_interval)]


def _release_why(load: Load) -> str:
    if load.release_after.startswith("`Load"):
        return "the loader freed load-time copies, e.g. requant-then-shard"
    return "the draft's own embedding/lm_head freed: it shares the target's"


def _usage_term(chain: Chain, load: Load) -> str:
    where = chain.where([load.end])
    if load.usage_printed:
        return f"load-end usage {gib_text(load.usage)} ({where})"
    interval = load.interval.replace("->", " -> ")
    return f"load avail drop {gib_text(load.usage)} ({interval}, {where})"


def _line(event: Event) -> int:
    return event.line


def _split_name(carve: Carve) -> str:
    """How a row split out of a load reads in the resident row's arithmetic."""
    return "staging" if carve.row_id in ("weight_staging", "draft_staging") else carve.row_id


def _resident_shape(load: Load) -> str:
    terms = ["load end"]
    if load.split:
        names = {_split_name(piece) for piece in load.split}
        terms.append("staging" if names == {"staging"} else "split-out rows")
    if load.release is not None:
        terms.append("released")
    return " - ".join(terms)
