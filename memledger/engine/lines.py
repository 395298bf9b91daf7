"""Log lines -> rows: the sizes a line printed, with their ids, labels and groups.

Plain lines are data (`memledger.sglang.rows.LINE_ROWS`); KV, staging, load, dist-init and
capture lines depend on the line's role or label and are handled by `_special`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memledger.engine.audit import Audit
from memledger.engine.carve import (
    Carve,
    Figure,
    Placed,
    logged,
    slug,
    sum_sizes,
    weights_figure,
    weights_group,
)
from memledger.engine.chain import Chain, Span
from memledger.engine.roles import DRAFT, POST_CAPTURE, TARGET, capture_label
from memledger.model.events import Event, EventKind
from memledger.model.ledger import RowGroup, RowKind
from memledger.sglang.rows import LINE_ROWS

_KV_KINDS = (EventKind.KV_ALLOCATED, EventKind.KV_SKIPPED, EventKind.POST_CAPTURE_KV)


@dataclass
class LoggedRows:
    """Rows read from lines inside the spans, and informational rows shown beside them."""

    by_span: dict[str, list[Carve]] = field(default_factory=dict)
    info: list[Placed] = field(default_factory=list)
    loads: list[tuple[Event, Carve, str]] = field(default_factory=list)
    """Load ends inside a span that is not their own load: (line, its row, span key)."""


def line_carves(chain: Chain, event: Event, *, region: str) -> list[Carve]:
    """Rows a log line names (the sizes it printed), with their ids and groups."""
    special = _special(chain, event, region)
    if special is not None:
        return special
    draft = region == DRAFT
    carves: list[Carve] = []
    for spec in LINE_ROWS.get(event.kind, ()):
        size = sum_sizes(*(event.size(key) for key in spec.keys))
        if size is None and spec.fallback is not None:
            size = event.size(spec.fallback)
        if size is None:
            continue
        templated = "{draft}" in spec.row_id
        carves.append(
            Carve(
                spec.row_id.format(draft="draft_" if draft else ""),
                ("draft " if draft and templated else "") + spec.label,
                spec.group,
                RowKind.LOGGED,
                size.bytes,
                size.half_ulp,
                [event],
                note=spec.informational,
                in_partition=spec.informational is None,
                figure=Figure.PER_SLOT_STATE if spec.per_slot_state and not draft else None,
            )
        )
    return carves


def _special(chain: Chain, event: Event, region: str) -> list[Carve] | None:
    """Lines whose row depends on role or labels (KV, staging, loads, captures)."""
    kind = event.kind
    if kind in _KV_KINDS:
        return _kv(event, region)
    usage = event.size("usage")
    if kind == EventKind.STAGING_POOL and (total := event.size("total")) is not None:
        if str(event.value("role") or TARGET) == DRAFT:
            what = ("draft_staging", "draft weight-shard AG staging pool")
            return [logged(event, *what, RowGroup.DRAFT_WEIGHTS, total)]
        what = ("weight_staging", "weight-shard AG staging pool")
        return [logged(event, *what, RowGroup.WEIGHT_STAGING, total)]
    if kind == EventKind.DIST_INIT_END and usage is not None:
        row_id = "draft_nccl_init" if chain.roles.has_draft else "nccl_init_2"
        return [logged(event, row_id, "a later distributed init", RowGroup.COMMUNICATION, usage)]
    if kind == EventKind.LOAD_END and usage is not None:
        role = chain.load_role(event)
        row_id = "draft_weights" if role == DRAFT else "weights"
        carve = logged(event, row_id, f"{role} weights", weights_group(role), usage)
        carve.figure = weights_figure(role)
        return [carve]
    if kind == EventKind.CAPTURE_END and usage is not None:
        prefix = chain.roles.capture_prefix.get(chain.position(event), "")
        row_id, label = f"{prefix}cuda_graph", capture_label(prefix)
        return [logged(event, row_id, label, RowGroup.CUDA_GRAPH, usage)]
    return None


def _kv(event: Event, region: str) -> list[Carve]:
    size = event.size("kv") or sum_sizes(event.size("k"), event.size("v"))
    if size is None:
        return []
    draft = region == DRAFT
    label_text = str(event.value("label") or "").strip()
    base = "draft_kv" if draft else "kv_pool"
    figure = Figure.DRAFT_KV if draft else Figure.KV_POOL
    if region == POST_CAPTURE or event.kind == EventKind.POST_CAPTURE_KV:
        base = f"{base}_post_capture"
    if label_text and label_text.lower() != "full":
        base = f"{base}_{slug(label_text)}"
    label = f"{label_text + ' ' if label_text else ''}{'draft KV cache' if draft else 'KV cache'}"
    if event.value("va_upper_bound"):
        carve = logged(
            event, f"{base}_va", f"{label} (virtual reservation)", RowGroup.STATE_POOL, size
        )
        carve.note = "VA upper bound: reserved address space, backed later (post-capture KV)"
        carve.in_partition = False
        return [carve]
    carve = logged(event, base, label, RowGroup.STATE_POOL, size)
    carve.figure = figure
    tokens = event.value("tokens")
    carve.note = f"#tokens {tokens}" if isinstance(tokens, int) else None
    return [carve]


def pre_load_rows(chain: Chain) -> tuple[list[Carve], list[Placed]]:
    """Allocations logged before the first reading: inside dist init (informational) or
    between dist init and the first reading (added to usable)."""
    points, dist_event = chain.points, chain.dist_event
    first_line = points[0].event.line if points else None
    carves: list[Carve] = []
    info: list[Placed] = []
    if chain.mixed is not None:
        return carves, info  # several ranks' lines: no row is one rank's (build_chain)
    for event in chain.events:
        if first_line is not None and event.line >= first_line:
            break
        if event is dist_event:
            continue
        for carve in line_carves(chain, event, region="pre_load"):
            inside_init = dist_event is not None and event.line < dist_event.line
            if inside_init:
                carve.in_partition = False
                carve.note = "allocated during distributed init: included in nccl_init"
                info.append((carve, None))
            elif first_line is None:
                carve.in_partition = False
                carve.note = "no avail reading in this log: not part of an account"
                info.append((carve, None))
            else:
                carve.note = "allocated before the first avail reading: added to usable"
                carves.append(carve)
    return carves, info


def span_rows(chain: Chain, audit: Audit) -> LoggedRows:
    """The rows every span's lines printed (a span's own closing line excluded)."""
    result = LoggedRows()
    for span in chain.spans:
        result.by_span[span.key] = _span_rows(chain, span, audit, result)
    return result


def _span_rows(chain: Chain, span: Span, audit: Audit, result: LoggedRows) -> list[Carve]:
    carves: list[Carve] = []
    has_kv_lines = any(e.kind == EventKind.KV_ALLOCATED for e in span.events)
    for event in span.events:
        if event is span.end.event and span.closing is not None:
            continue  # the closing load/capture line: its span's own usage (loads, graphs)
        for carve in line_carves(chain, event, region=span.region):
            if event.kind == EventKind.SWA_POOL and has_kv_lines:
                carve.in_partition = False
                carve.note = "the sum of the KV lines of this interval, which are the rows"
            if carve.in_partition:
                carves.append(carve)
                audit.use_sizes(event)
                if event.kind == EventKind.LOAD_END:
                    result.loads.append((event, carve, span.key))
            else:
                result.info.append((carve, span.key))
    return carves


def tail_rows(chain: Chain, audit: Audit) -> tuple[list[Carve], list[Placed]]:
    """Allocations logged after the last reading: carved from the final free memory."""
    last = chain.points[-1]
    region = POST_CAPTURE if last.region == POST_CAPTURE else TARGET
    carves: list[Carve] = []
    info: list[Placed] = []
    for event in chain.events:
        if event.line <= last.event.line:
            continue
        for carve in line_carves(chain, event, region=region):
            if carve.in_partition:
                carve.note = "logged after the last avail reading: carved from the free memory"
                carves.append(carve)
                audit.use_sizes(event)
            else:
                info.append((carve, None))
    return carves, info
