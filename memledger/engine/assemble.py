"""Assembly: each span's rows in order, its residual, the tail (free memory after the last
reading), and the ledger's rows, checkpoints and intervals."""

from __future__ import annotations

from dataclasses import dataclass, replace

from memledger.engine.audit import Audit
from memledger.engine.carve import Carve, Figure, Placed, gib_text, negative_note
from memledger.engine.chain import Chain, Span, Usage
from memledger.engine.derived import DerivedRows, first_capture_span
from memledger.engine.lines import tail_rows
from memledger.engine.roles import TARGET
from memledger.engine.variables import Variables
from memledger.model.events import Event, EventKind
from memledger.model.ledger import (
    Checkpoint,
    Evidence,
    Interval,
    Row,
    RowGroup,
    RowKind,
    SourceLine,
)
from memledger.model.model_config import ModelDims
from memledger.sglang.hints import (
    INTEGRATED_READING_ERROR,
    INTEGRATED_RELEASE_NOTE,
    Residual,
    hint_for,
)
from memledger.sglang.measured_spans import (
    FIRST_CAPTURE,
    MeasuredSpan,
    SpanFacts,
    hybrid_config,
    measured_span,
)
from memledger.sglang.rows import PLATFORM_WORDS, platform_of
from memledger.units import GIB

NO_GRAPH = "no CUDA graph was captured"
"""The headroom note's words when no graph was captured (platform_labels renames the graph)."""


def nccl_label(platform: str) -> str:
    """Gloo's groups live in host memory: only the device collectives are named."""
    return (
        f"distributed init ({PLATFORM_WORDS[platform].collectives} communicators, "
        "custom all-reduce)"
    )


def span_rows(
    span: Span,
    carves: list[Carve],
    usage: Usage | None,
    audit: Audit,
    *,
    released: bool,
    around: Residual | None = None,
    usable: int | None = None,
    measured: Measured | None = None,
) -> list[Carve]:
    """A span's rows in order (its own load/graph rows first), then its residual row.

    The residual is what no row explains: a row of its own. A span closed by its own printed
    usage keeps only printing rounding; a release's drop is the weights row's release part.
    `around` is what the log says around every interval (platform, backend, unsized rows): the
    residual's hint is chosen from it. When SGLang's lifecycle names the whole interval
    (`measured`, sglang/measured_spans.py), a remainder that is not a release is that phase's
    row instead.
    """
    if usage is not None and usage.closed:
        return carves
    explained = sum(carve.bytes for carve in carves if carve.in_partition)
    residual = span.drop - explained
    if residual == 0 and (released or span.closing is not None):
        return carves
    error = span.error + sum(carve.error for carve in carves if carve.in_partition)
    if around is not None and around.integrated:
        error += 2 * INTEGRATED_READING_ERROR
    facts = replace(
        around or Residual(span.end.event.kind, residual),
        end_kind=span.end.event.kind,
        bytes=residual,
        end_at_floor=span.end.avail.bytes == 0,
    )
    hint = hint_for(facts, usable)
    audit.use_number(span.start.event, "avail", span.start.avail)
    audit.use_number(span.end.event, "avail", span.end.avail)
    if measured is not None and residual >= -error and span.end.avail.bytes > 0:
        return [*carves, measured_row(span, carves, measured, residual, error)]
    residual_row = Carve(
        f"unexplained.{span.end.id}",
        f"unexplained: {span.start.id} -> {span.end.id}",
        RowGroup.UNEXPLAINED,
        RowKind.RESIDUAL,
        residual,
        error,
        [span.start.event, span.end.event],
        note="; ".join(
            part
            for part in (
                negative_note(
                    residual,
                    "the rows carved from this interval exceed its avail drop (memory freed, "
                    "or a formula over-estimates)",
                ),
                hint,
            )
            if part
        )
        or None,
    )
    return [*carves, residual_row]


@dataclass(frozen=True)
class Measured:
    """The lifecycle's name for an interval, and the formula rows of it that were not sized."""

    entry: MeasuredSpan
    unsized: tuple[str, ...] = ()


def measured_row(
    span: Span, carves: list[Carve], measured: Measured, remainder: int, error: int
) -> Carve:
    """The phase's own memory: the interval's drop less every other row carved from it."""
    entry = measured.entry
    others = [c for c in carves if c.in_partition]
    formula = (
        f"avail {gib_text(span.start.avail.bytes)} at {span.start.id} - "
        f"{gib_text(span.end.avail.bytes)} at {span.end.id}"
        + "".join(f" - {c.row_id} {gib_text(c.bytes)}" for c in others)
        + f" = {remainder:,} B"
    )
    unsized = (
        f"; it also holds what the unsized rows {', '.join(measured.unsized)} take (see their "
        "notes)"
        if measured.unsized
        else ""
    )
    return Carve(
        entry.row_id,
        entry.label,
        entry.group,
        RowKind.LOGGED,
        remainder,
        error,
        [span.start.event, span.end.event],
        formula=formula,
        note=f"{entry.allocates} ({entry.source}){unsized}",
    )


def measured_spans(
    steps: Chain,
    formula: DerivedRows,
    inputs: Variables,
    model_config: ModelDims | None,
) -> dict[str, Measured]:
    """span key -> the lifecycle's name for that whole interval (sglang/measured_spans.py).

    An entry standing for a formula takes the place of that formula's unknown row; a formula
    carved from the span keeps its remainder unexplained (the formula is the account)."""
    model_type = inputs.log("model_type")
    facts = SpanFacts(
        args=dict(steps.args),
        model_type=model_type if isinstance(model_type, str) else None,
        state_pool_line=any(e.kind == EventKind.MAMBA_ALLOCATED for e in steps.events),
        lora_line=any(e.kind == EventKind.LORA_BACKEND for e in steps.events),
        hybrid_config=model_config is not None
        and hybrid_config(
            model_config.architecture, set(model_config.extra), model_config.linear_attn_layers
        ),
    )
    first = first_capture_span(steps.spans)
    result: dict[str, Measured] = {}
    for span in steps.spans:
        if span.closing is not None or span.region != TARGET:
            continue
        ends_at = FIRST_CAPTURE if span is first else span.end.id
        entry = measured_span(ends_at, span.start.event.kind, facts)
        if entry is None:
            continue
        carved = {c.row_id for c in formula.by_span.get(span.key, [])}
        if entry.stands_for in carved:
            continue
        unsized = formula.unsized.get(span.key, [])
        replaced = [c for c in unsized if c.row_id == entry.stands_for]
        formula.outside = [c for c in formula.outside if not any(c is r for r in replaced)]
        result[span.key] = Measured(
            entry, tuple(c.row_id for c in unsized if c.row_id != entry.stands_for)
        )
    return result


def tail(chain: Chain, audit: Audit) -> tuple[list[Carve], list[Placed]]:
    """Allocations logged after the last reading, and the final free/headroom row."""
    if not chain.points:
        return [], []  # every logged size became an informational pre-load row
    last = chain.points[-1]
    carves, info = tail_rows(chain, audit)
    remaining = last.avail.bytes - sum(carve.bytes for carve in carves)
    error = last.avail.half_ulp + audit.reading_noise + sum(carve.error for carve in carves)
    audit.use_number(last.event, "avail", last.avail)
    kind = RowKind.LOGGED
    if chain.complete():
        captured = any(p.event.kind == EventKind.CAPTURE_END for p in chain.points)
        later = next(
            (
                e
                for e in chain.events
                if e.line > last.event.line
                and e.kind in (EventKind.CAPTURE_BEGIN, EventKind.CAPTURE_END)
            ),
            None,
        )
        note = (
            f"avail after the last checkpoint ({last.id})"
            if captured
            else f"avail at {last.id}: {NO_GRAPH} in this startup"
        )
        label = "runtime headroom (free after startup)"
        if later is not None:
            note = (
                f"avail at {last.id}, before graph capture: graphs were captured after the last "
                f"avail reading (line {later.line}), their memory is unknown and still inside "
                "this row"
            )
            label = "free before graph capture (graphs captured later: not measured)"
        if last.avail.bytes == 0:
            # Free memory is truly ~0 here (< 0.005 GiB); what the readings cannot show is how
            # much more was allocated past the floor (e.g. WSL spilling into shared memory).
            note = (
                f"avail read 0.00 at {last.id}: the readings bottomed out, the device memory is "
                "exhausted; allocations past that point (e.g. WSL spilling into shared memory) "
                "are not measured"
            )
        available = chain.summary_event()
        if available is not None and (gpu := available.size("available_gpu_mem")):
            note += (
                f"; the summary line's available_gpu_mem={gpu.bytes / GIB:.2f} GiB is read "
                "without emptying the cache"
            )
        row_id = "runtime_headroom"
    else:
        oom = own_oom(chain)
        free = None if oom is None else oom.size("free")
        if oom is not None and free is not None and free.bytes <= remaining:
            # This rank's own OOM text says what was free when it struck: the rest of the
            # last reading was allocated in between (a load in flight, usually).
            in_flight = Carve(
                "allocated_before_oom",
                f"allocated after {last.id} until the OOM (line {oom.line})",
                RowGroup.WEIGHTS
                if last.event.kind == EventKind.LOAD_BEGIN
                else RowGroup.UNEXPLAINED,
                RowKind.LOGGED,
                remaining - free.bytes,
                error + free.half_ulp,
                [last.event, oom],
                inputs=_oom_inputs(oom),
                note=(
                    f"avail at {last.id} less the free memory this rank's OOM message reports"
                    + (
                        ": the weights being loaded"
                        if last.event.kind == EventKind.LOAD_BEGIN
                        else ""
                    )
                ),
            )
            free_row = Carve(
                "free_at_stop",
                "free when the OOM struck (this rank's OOM message)",
                RowGroup.RUNTIME_HEADROOM,
                RowKind.LOGGED,
                free.bytes,
                free.half_ulp,
                [oom],
                note=f"the startup did not finish ({chain.startup.outcome}): not runtime headroom",
            )
            audit.use_number(oom, "free", free)
            return [*carves, in_flight, free_row], info
        note = f"the startup did not finish ({chain.startup.outcome}): not runtime headroom"
        row_id, label = "free_at_stop", f"free when the log stopped (after {last.id})"
    headroom = Carve(
        row_id,
        label,
        RowGroup.RUNTIME_HEADROOM,
        kind,
        remaining,
        error,
        [last.event],
        note=note,
        in_partition=kind != RowKind.UNKNOWN,
    )
    return [*carves, headroom], info


def residual_context(chain: Chain, variables: Variables, unknown: frozenset[str]) -> Residual:
    """What the log says around every interval, for the residual hints (sglang/hints.py)."""
    backend = chain.args.get("attention_backend")
    rows = variables.log("slots")
    return Residual(
        EventKind.MEMORY_POOL_END,
        0,
        unknown_rows=unknown,
        platform=platform(chain),
        integrated=variables.log("unified_memory") is not None,
        attention_backend=backend if isinstance(backend, str) else None,
        request_rows=rows if isinstance(rows, int) else None,
        kv_line=variables.log("kv_line") is not None,
    )


def note_small_releases(placed: list[Placed], noise: int) -> None:
    """On an integrated GPU a release smaller than one interval's host movement is not shown."""
    for carve, _ in placed:
        if carve.row_id.endswith("weights_released") and abs(carve.bytes) < noise:
            carve.note = "; ".join(p for p in (carve.note, INTEGRATED_RELEASE_NOTE) if p)


def platform(chain: Chain) -> str:
    devices = {str(e.values.get("device")) for e in chain.events if e.kind == EventKind.OOM_MESSAGE}
    markers = frozenset(
        str(e.values.get("platform")) for e in chain.events if e.kind == EventKind.PLATFORM_MARKER
    )
    return platform_of(dict(chain.args), devices, markers)


def platform_labels(placed: list[Placed], name: str) -> None:
    """Graph rows (and the headroom's no-graph note) say what the platform calls its graphs
    (ids stay `cuda_graph*`)."""
    word = PLATFORM_WORDS[name].graphs
    if word == "CUDA graphs":
        return
    for carve, _ in placed:
        if carve.group == RowGroup.CUDA_GRAPH:
            carve.label = carve.label.replace("CUDA graphs", word)
        if carve.note and NO_GRAPH in carve.note:
            carve.note = carve.note.replace(NO_GRAPH, f"no {word.removesuffix('s')} was captured")


def own_oom(chain: Chain) -> Event | None:
    """This rank's own allocator OOM message after the last reading (not another GPU's)."""
    last_line = chain.points[-1].event.line if chain.points else -1
    rank = chain.startup.rank
    return next(
        (
            e
            for e in chain.events
            if e.kind == EventKind.OOM_MESSAGE and e.line > last_line and e.rank == rank
        ),
        None,
    )


def _oom_inputs(oom: Event) -> dict[str, int | float | str | None]:
    found: dict[str, int | float | str | None] = {}
    for key in ("capacity", "free", "allocated", "requested"):
        size = oom.size(key)
        if size is not None:
            found[key] = size.text
    return found


def nccl_row(chain: Chain) -> Carve | None:
    """The distributed-init row (unknown when the log does not print its usage)."""
    if chain.dist_event is not None:
        usage = chain.dist_event.size("usage")
        assert usage is not None
        return Carve(
            "nccl_init",
            nccl_label(platform(chain)),
            RowGroup.COMMUNICATION,
            RowKind.LOGGED,
            usage.bytes,
            usage.half_ulp,
            [chain.dist_event],
        )
    if not chain.events:
        return None
    return Carve(
        "nccl_init",
        nccl_label(platform(chain)),
        RowGroup.COMMUNICATION,
        RowKind.UNKNOWN,
        0,
        0,
        note="no `Init torch distributed ends ... mem usage` line before the "
        "first avail reading: not part of usable memory here",
        in_partition=False,
    )


@dataclass(frozen=True)
class Assembled:
    rows: list[Row]
    figures: dict[str, Figure]
    """row id -> the summary figure it adds to."""


def merge(path: str, ordered: list[Placed]) -> Assembled:
    """One Row per carve; ids made unique with the interval's end (`all_reduce_buffers.x`)."""
    rows: list[Row] = []
    figures: dict[str, Figure] = {}
    seen: dict[str, int] = {}
    position_of: dict[int, int] = {}
    for carve, interval in ordered:
        if carve.part_of is not None and id(carve.part_of) in position_of:
            # A later piece of a row (a release): added to it, kept apart per interval.
            position = position_of[id(carve.part_of)]
            rows[position] = _add_part(rows[position], carve, interval)
            continue
        row_id = carve.row_id
        if row_id in seen:
            # Same id in the same interval: add up (two all-reduce groups, two KV lines).
            existing = rows[seen[row_id]]
            if existing.interval == interval and existing.in_partition == carve.in_partition:
                rows[seen[row_id]] = _add_to_row(existing, carve, path)
                continue
            suffix = interval.split("->")[-1] if interval else "2"
            row_id = f"{row_id}.{suffix}"
            while row_id in seen:
                row_id += "_"
        seen[row_id] = len(rows)
        position_of[id(carve)] = len(rows)
        rows.append(_row(path, carve, row_id, interval))
        if carve.figure is not None:
            figures[row_id] = carve.figure
    return Assembled(rows, figures)


def _row(path: str, carve: Carve, row_id: str, interval: str | None) -> Row:
    unknown = carve.kind == RowKind.UNKNOWN
    return Row(
        id=row_id,
        label=carve.label,
        group=carve.group,
        kind=carve.kind,
        bytes=None if unknown else carve.bytes,
        error_bytes=carve.error,
        interval=interval,
        in_partition=carve.in_partition and not unknown,
        evidence=Evidence(
            sources=[_source(path, event) for event in carve.sources],
            formula=carve.formula,
            inputs=carve.inputs,
            note=carve.note,
        ),
    )


def checkpoints(chain: Chain, noise: int = 0) -> list[Checkpoint]:
    """Every avail reading; `noise` widens each one's error (integrated GPUs)."""
    points, dist_event = chain.points, chain.dist_event
    found: list[Checkpoint] = []
    if dist_event is not None and points and points[0].event.kind == EventKind.LOAD_BEGIN:
        # Not printed: the next reading (load begin) follows distributed init directly.
        found.append(
            Checkpoint(
                id="dist_init_end",
                avail_bytes=points[0].avail.bytes,
                error_bytes=points[0].avail.half_ulp + noise,
                line=dist_event.line,
                text=f"{dist_event.text} (avail not printed: the load-begin reading)",
            )
        )
    for point in points:
        text = point.event.text
        if point.derived_text:
            text = f"{point.derived_text}: {text}"
        found.append(
            Checkpoint(
                id=point.id,
                avail_bytes=point.avail.bytes,
                error_bytes=point.avail.half_ulp + noise,
                line=point.event.line,
                text=text,
            )
        )
    return found


def interval(span: Span, carves: list[Carve], usage: Usage | None, noise: int = 0) -> Interval:
    """The interval's account; `noise` widens each of its two readings' error."""
    partition = [carve for carve in carves if carve.in_partition]
    slack = usage.rounding_slack if usage is not None and usage.closed else 0
    return Interval(
        from_id=span.start.id,
        to_id=span.end.id,
        drop_bytes=span.drop,
        logged_bytes=sum(c.bytes for c in partition if c.kind == RowKind.LOGGED),
        named_bytes=sum(c.bytes for c in partition if c.kind == RowKind.DERIVED),
        error_bytes=span.error + slack + 2 * noise,
    )


def _source(path: str, event: Event) -> SourceLine:
    return SourceLine(path=path, line=event.line, text=event.text)


def _add_part(row: Row, piece: Carve, interval: str | None) -> Row:
    """A row carved from two intervals: its bytes are the sum, `interval_parts` the pieces.

    The piece's evidence is already in the row (`loads` wrote the arithmetic)."""
    assert row.bytes is not None and row.interval is not None and interval is not None
    return replace(
        row,
        bytes=row.bytes + piece.bytes,
        error_bytes=row.error_bytes + piece.error,
        interval_parts={row.interval: row.bytes, interval: piece.bytes},
    )


def _add_to_row(row: Row, carve: Carve, path: str) -> Row:
    """Two carves with the same id in the same interval, as one row (their sum)."""
    sources = [*row.evidence.sources, *(_source(path, e) for e in carve.sources)]
    return replace(
        row,
        bytes=None if row.bytes is None else row.bytes + carve.bytes,
        error_bytes=row.error_bytes + carve.error,
        evidence=replace(row.evidence, sources=sources),
    )
