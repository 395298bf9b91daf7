"""CUDA graph rows: one per capture span, or static / largest bucket / other buckets when the
tqdm progress bar printed readings (the largest batch size is captured first)."""

from __future__ import annotations

import re

from memledger.engine.audit import Audit
from memledger.engine.carve import Carve, negative_note
from memledger.engine.chain import Chain, Span, Usage
from memledger.engine.lines import LoggedRows
from memledger.engine.roles import capture_label
from memledger.model.events import Event, EventKind
from memledger.model.ledger import RowGroup, RowKind
from memledger.sglang.hints import deepep_graph_note

DEEPEP_ROWS = frozenset({"deepep_ll_buffer", "deepep_hccl_window"})
"""Formula rows that size the DeepEP memory of the first bucket (data/formulas.toml)."""

_TQDM = "tqdm avail is read without emptying the cache"


def graph_rows(
    chain: Chain, logged: LoggedRows, usages: dict[str, Usage], audit: Audit
) -> dict[str, list[Carve]]:
    """span key -> the graph rows of every capture span (first in their span)."""
    rows: dict[str, list[Carve]] = {}
    for span in chain.spans:
        if span.closing is not None and span.end.event.kind == EventKind.CAPTURE_END:
            rows[span.key] = _capture(
                chain, span, logged.by_span[span.key], usages[span.key], audit
            )
    return rows


def _capture(
    chain: Chain, span: Span, logged: list[Carve], usage: Usage, audit: Audit
) -> list[Carve]:
    assert span.closing is not None
    others = sum(carve.bytes for carve in logged if carve.in_partition)
    other_error = sum(carve.error for carve in logged if carve.in_partition)
    prefix = chain.roles.capture_prefix.get(span.closing, "")
    what = capture_label(prefix)
    graph = usage.total - others
    progress = [e for e in chain.roles.progress.get(span.closing, []) if e.size("avail")]
    rank = chain.startup.rank
    if progress and not _progress_is_ours(progress, rank):
        # tqdm bars are printed by rank 0 only, without a tag: not this rank's readings.
        audit.note(
            f"{span.key}: the progress bar readings are rank 0's (untagged tqdm); "
            f"{rank} gets one graph row"
        )
        progress = []
    begin, end = span.start, span.end
    if begin.avail.bytes == 0 and end.avail.bytes == 0:
        return [
            Carve(
                f"{prefix}cuda_graph",
                what,
                RowGroup.CUDA_GRAPH,
                RowKind.UNKNOWN,
                0,
                0,
                [begin.event, end.event],
                note=(
                    "avail read 0.00 before and after the capture (and mem usage 0.00): the "
                    "readings bottomed out, so the graphs' memory is unknown, not zero"
                ),
                in_partition=False,
            )
        ]
    if not progress:
        return [
            Carve(
                f"{prefix}cuda_graph",
                what,
                RowGroup.CUDA_GRAPH,
                RowKind.LOGGED,
                graph,
                usage.error + other_error,
                [begin.event, end.event],
                note=negative_note(graph, "graph capture freed more than it allocated"),
            )
        ]
    first_avail = progress[0].size("avail")
    assert first_avail is not None
    second_avail = progress[1].size("avail") if len(progress) > 1 else end.avail
    assert second_avail is not None
    static = begin.avail.bytes - first_avail.bytes
    largest = first_avail.bytes - second_avail.bytes
    static_error = begin.avail.half_ulp + first_avail.half_ulp
    largest_error = first_avail.half_ulp + second_avail.half_ulp
    second_source = [progress[1]] if len(progress) > 1 else [end.event]
    carves = [
        Carve(
            f"{prefix}cuda_graph_static",
            f"{what}: static buffers (begin -> first batch)",
            RowGroup.CUDA_GRAPH,
            RowKind.LOGGED,
            static,
            static_error,
            [begin.event, progress[0]],
            note=negative_note(static, _TQDM),
        ),
        Carve(
            f"{prefix}cuda_graph_largest_bucket",
            f"{what}: largest bucket (captured first)",
            RowGroup.CUDA_GRAPH,
            RowKind.LOGGED,
            largest,
            largest_error,
            [progress[0], *second_source],
            # The batch size is evidence, not part of the label: labels name what a row is,
            # so that a diff of two deployments does not show one side's numbers.
            inputs={"first_batch": _batch_text(progress[0])},
            note=negative_note(largest, _TQDM),
        ),
    ]
    if len(progress) > 1:
        rest = graph - static - largest
        carves.append(
            Carve(
                f"{prefix}cuda_graph_buckets",
                f"{what}: the other buckets",
                RowGroup.CUDA_GRAPH,
                RowKind.LOGGED,
                rest,
                usage.error + other_error + static_error + largest_error,
                [progress[1], end.event],
                inputs={"buckets": len(progress) - 1},
                note=negative_note(rest, _TQDM),
            )
        )
    for event in progress[:2]:
        avail = event.size("avail")
        assert avail is not None
        audit.use_number(event, "avail", avail)
    return carves


def _progress_is_ours(progress: list[Event], rank: str) -> bool:
    """Untagged tqdm readings belong to rank 0 (every index in its tag is 0, or no tag)."""
    if all(event.rank == rank for event in progress):
        return True
    return all(number == "0" for number in re.findall(r"\d+", rank))


def _batch_text(event: Event) -> str:
    for key in ("bs", "num_tokens"):
        value = event.value(key)
        if value is not None:
            return f"{key}={value}"
    return "first batch"


def carve_from_largest_bucket(
    chain: Chain, graphs: dict[str, list[Carve]], lazy: list[Carve], audit: Audit
) -> list[Carve]:
    """Carve what the first forward allocates lazily (formula rows with the
    `largest_graph_bucket` interval) out of the first capture's largest bucket, in place.

    Returns the rows that found no bucket (no graph was captured and measured), as unknown."""
    first = next((key for key in graphs if not _is_unknown(graphs[key])), None)
    unplaced: list[Carve] = []
    rows = graphs.get(first, []) if first is not None else []
    note = deepep_graph_note(dict(chain.args), any(c.row_id in DEEPEP_ROWS for c in lazy))
    target = _bucket(rows)
    if note is not None and target is not None:
        target.note = "; ".join(part for part in (target.note, note) if part)
        if "--model-config" in note:  # where the unsized buffer's bytes are instead
            audit.note(
                f"the DeepEP buffer is inside {target.row_id}: {target.group} reads larger by "
                "its size than with --model-config, which splits it out"
            )
    for carve in lazy:
        bucket = _bucket(rows)
        if bucket is None:
            reason = "no measured graph capture: allocated at the first forward, after the account"
            audit.note(f"{carve.row_id} unknown: {reason}")
            carve.kind, carve.note, carve.in_partition = RowKind.UNKNOWN, reason, False
            unplaced.append(carve)
            continue
        bucket.bytes -= carve.bytes
        bucket.note = "; ".join(
            part
            for part in (bucket.note, f"{carve.row_id} ({carve.label}) carved out of it")
            if part
        )
        rows.insert(rows.index(bucket) + 1, carve)
    return unplaced


def _bucket(rows: list[Carve]) -> Carve | None:
    """The largest bucket's row, else the capture's one graph row."""
    return next(
        (r for r in rows if r.row_id.endswith("cuda_graph_largest_bucket")),
        next((r for r in rows if r.row_id.endswith("cuda_graph")), None),
    )


def _is_unknown(rows: list[Carve]) -> bool:
    return all(r.kind == RowKind.UNKNOWN for r in rows)
