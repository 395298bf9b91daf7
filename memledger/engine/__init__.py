"""The ledger engine: one parsed startup in, the account of one rank's GPU memory out.

A pure function (no I/O). The account is built from consecutive `avail mem` readings
(checkpoints): every interval's drop is split into rows read from log lines (logged), rows
computed by the formulas file (derived) and what is left (unexplained, a row of its own).
Rows form a flat partition of usable memory = dist-init usage + avail at load begin.

`build_ledger` is the list of steps; each step is a function of the values before it. The
only state they share is the `Audit` (notes, printing precision), passed explicitly.

Modules:

- `assemble`: Assembly.
- `audit`: The engine's bookkeeping.
- `carve`: A carve.
- `chain`: The checkpoint chain.
- `derived`: Derived rows.
- `graphs`: CUDA graph rows.
- `kv_inferred`: The KV pool of a log that prints no `KV Cache is allocated` line (0.4.1 and older,
  DSV4).
- `lines`: Log lines -> rows.
- `loads`: Weights.
- `parameters`: `Ledger.parameters`.
- `plausible`: Readings no GPU can give.
- `roles`: Roles and stable ids.
- `summary`: The headline figures (`Summary`).
- `variables`: The names formulas read.
- `vllm`: The ledger of one vLLM startup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memledger.engine import (
    assemble,
    chain,
    derived,
    graphs,
    kv_inferred,
    lines,
    loads,
    plausible,
    variables,
)
from memledger.engine.audit import Audit
from memledger.engine.carve import Carve, Placed
from memledger.engine.parameters import parameters
from memledger.engine.summary import groups, summarise
from memledger.formulas import Formula
from memledger.model.events import EventKind, LineCause, ParsedLog, Startup, UnrecognisedLine
from memledger.model.ledger import Ledger, LedgerSource, RowKind
from memledger.model.model_config import ModelDims
from memledger.sglang.adjustments import noted
from memledger.sglang.hints import INTEGRATED_NOTE, INTEGRATED_READING_ERROR
from memledger.sglang.rows import BUDGET_GROUPS

__all__ = ["build_ledger"]


def build_ledger(
    parsed: ParsedLog,
    *,
    formulas: Sequence[Formula],
    model_config: ModelDims | None = None,
) -> Ledger:
    """The account of the selected rank of the selected startup (pure; never raises on data)."""
    audit = Audit()
    for note in parsed.notes:  # how the input was read (a paste, no rank 0)
        audit.note(note)
    _note_unrecognised(parsed.startup, audit)
    _note_adjusted(parsed, audit)
    # 1. Checkpoints, roles and spans; rows logged before the first reading; usable memory.
    steps = chain.build_chain(parsed.path, parsed.startup, audit)
    pre_load, pre_load_info = lines.pre_load_rows(steps)
    usable = chain.usable_memory(steps, pre_load, audit)
    usable_error = audit.tolerance()  # the printing precision of the numbers usable sums
    # 2. Rows the lines inside each span printed.
    logged = lines.span_rows(steps, audit)
    # 3. Formula inputs (`args.*`, `log.*`, `model.*`).
    inputs = variables.collect(steps, model_config, audit)
    unified = inputs.sources.get("log.unified_memory")
    if unified is not None:  # an integrated GPU: avail readings are host RAM
        audit.reading_noise = INTEGRATED_READING_ERROR
        audit.note(INTEGRATED_NOTE.format(line=unified.line))
    impossible = (
        None
        if usable is None
        else plausible.implausible(steps, usable, usable_error, audit.reading_noise)
    )
    if impossible is not None:  # a balance on an impossible reading would still "balance"
        audit.note(f"cannot balance: impossible reading: {impossible}; usable memory unknown")
        usable = None
    # 4. Load and capture spans: their own printed usage, the weights and the graph rows.
    usages = chain.span_usages(steps, audit)
    weights = loads.weights_rows(steps, logged, usages, audit)
    graph = graphs.graph_rows(steps, logged, usages, audit)
    # 5. Derived rows from the formulas file.
    formula = derived.formula_rows(steps, formulas, inputs, model_config, audit)
    formula.outside += graphs.carve_from_largest_bucket(steps, graph, formula.in_graph, audit)
    # 6. The KV pool of a log without KV lines (from tokens, or the pool interval's remainder).
    explained = {
        span.key: [*logged.by_span[span.key], *formula.by_span.get(span.key, [])]
        for span in steps.spans
    }
    kv_pool = kv_inferred.kv_pool_rows(steps, explained, inputs, model_config)
    # 7. Each span's rows and residual; the tail; all rows merged.
    measured = assemble.measured_spans(steps, formula, inputs, model_config)
    unknown = frozenset(c.row_id for c in formula.outside if c.kind == RowKind.UNKNOWN)
    around = assemble.residual_context(steps, inputs, unknown)
    placed: list[Placed] = []
    nccl = assemble.nccl_row(steps)
    if nccl is not None:
        placed.append((nccl, None))
    placed += [(carve, None) for carve in pre_load]
    intervals = []
    for span in steps.spans:
        primary: list[Carve] = graph.get(span.key, [])
        if span.key in weights.primary:
            primary = [weights.primary[span.key]]
        release = weights.releases.get(span.key)
        carves = assemble.span_rows(
            span,
            [
                *primary,
                *logged.by_span[span.key],
                *([release] if release is not None else []),
                *formula.by_span.get(span.key, []),
                *([kv_pool[span.key]] if span.key in kv_pool else []),
            ],
            usages.get(span.key),
            audit,
            released=release is not None,
            around=around,
            usable=usable,
            measured=measured.get(span.key),
        )
        placed += [(carve, span.key) for carve in carves]
        intervals.append(assemble.interval(span, carves, usages.get(span.key), audit.reading_noise))
    tail, tail_info = assemble.tail(steps, audit)
    placed += [(carve, None) for carve in tail]
    placed += [(carve, None) for carve in formula.outside]
    placed += [*pre_load_info, *logged.info, *weights.info, *tail_info]
    assemble.platform_labels(placed, assemble.platform(steps))
    if audit.reading_noise:
        assemble.note_small_releases(placed, 2 * audit.reading_noise)
    assembled = assemble.merge(parsed.path, placed)
    # 8. Balance, summary and parameters.
    partition = [row for row in assembled.rows if row.in_partition and row.bytes is not None]
    balance = 0 if usable is None else sum(row.bytes or 0 for row in partition) - usable
    tolerance = 0 if usable is None else audit.tolerance()
    summary = summarise(steps, assembled, usable, weights, inputs, model_config, audit)
    return Ledger(
        source=LedgerSource(
            path=parsed.path,
            startup=parsed.selected,
            n_startups=parsed.n_startups,
            rank=parsed.startup.rank,
        ),
        outcome=parsed.startup.outcome,
        stopped_at=chain.stopped_at(steps),
        checkpoints=assemble.checkpoints(steps, audit.reading_noise),
        intervals=intervals,
        rows=[replace(r, in_budget=r.group in BUDGET_GROUPS) for r in assembled.rows],
        summary=summary,
        groups=groups(assembled),
        usable_bytes=usable,
        balance_error_bytes=balance,
        tolerance_bytes=tolerance,
        parameters=parameters(steps, inputs),
        notes=audit.notes,
    )


def _note_adjusted(parsed: ParsedLog, audit: Audit) -> None:
    """A setting SGLang changed by itself (memledger.sglang.adjustments) is part of why the pools
    are what they are: each once (every rank prints it), with its line and the row's source."""
    seen: set[tuple[object, ...]] = set()
    for event in parsed.startup.events:
        if event.kind is EventKind.SETTING_ADJUSTED:
            key = tuple(sorted(event.values.items()))
            if key not in seen:
                seen.add(key)
                audit.note(noted(event.values, f"{parsed.path}:{event.line}"))


def _note_unrecognised(startup: Startup, audit: Audit) -> None:
    """A grammar gap shows where the numbers are: lines that look like memory but matched
    no known shape may be rows the account is missing."""
    count = startup.unrecognised_count
    listed: list[UnrecognisedLine] = []
    for line in startup.unrecognised:
        # what input.server_args' memory bound left out of a server_args line
        for part in line.bounded:
            audit.note(f"{part} (line {line.line}: memory stays bounded whatever the line)")
        if line.cause is LineCause.READ_IN_PART:
            count -= 1  # the line itself was read: not a grammar gap
        else:
            listed.append(line)
    if count <= 0:
        return
    numbers = [str(line.line) for line in listed[:3]]
    where = f" (line{'s' if len(numbers) > 1 else ''} {', '.join(numbers)}"
    where = "" if not numbers else where + (", ...)" if count > len(numbers) else ")")
    audit.note(
        f"{count} memory line{'s' if count != 1 else ''} of this rank matched no known line "
        f"shape{where}: what they allocated is not a row of its own (it sits in an unexplained "
        "row or the headroom); `memledger parse --coverage` lists them"
    )
