"""The ledger of one vLLM startup: the same `Ledger` as SGLang's, rows from vLLM's profile.

vLLM sizes its KV cache from one budget: total GPU memory x `gpu_memory_utilization`. Inside it:
the weights, non-torch memory (NCCL, the CUDA context, custom all-reduce buffers: what grew
outside PyTorch's allocator during profiling), the activation peak of the profiling forward pass
(freed, but held out of the KV budget), the KV cache, and, since 0.21.0, the CUDA-graph estimate.
Outside it: what was in use before vLLM's start snapshot (V1 prints the free memory at start),
CUDA graphs captured after sizing (releases before 0.21.0), and the headroom. The rows are a
partition of the device's total memory; what the printed figures leave is the `residual` row,
named by its size: within the printing precision it is rounding.

A pure function of the reader's facts and the sizing (`memledger.sizing.vllm`).
"""

from __future__ import annotations

from collections.abc import Mapping

from memledger.input.vllm_facts import Fact, fact_bytes
from memledger.input.vllm_reader import Startup, VllmLog, is_rank0
from memledger.model.ledger import (
    Evidence,
    Ledger,
    LedgerSource,
    Row,
    RowGroup,
    RowKind,
    SourceLine,
    Summary,
    group_totals,
    summary_from_rows,
)
from memledger.sizing.vllm import VllmSizing, release_at_least

GIB = 1 << 30
RESIDUAL_NAMED = GIB // 4
"""A residual above this must be named (the issue's bar: 0.25 GiB)."""

OUTCOMES = {"error": "crash", "oom": "oom", "ready": "ready", "truncated": "truncated"}


def _source(log: VllmLog, fact: Fact) -> list[SourceLine]:
    if fact.line is None:
        return []
    return [SourceLine(path=log.path, line=fact.line, text=fact.text)]


def _row(
    log: VllmLog,
    row_id: str,
    label: str,
    group: RowGroup,
    fact: Fact | None,
    *,
    in_budget: bool,
    note: str | None = None,
) -> Row:
    budget = "inside the budget" if in_budget else "outside the budget"
    if fact is None or fact.bytes is None:
        return Row(
            id=row_id,
            label=label,
            group=group,
            kind=RowKind.UNKNOWN,
            bytes=None,
            in_budget=in_budget,
            evidence=Evidence(note=note or f"not printed ({budget})"),
        )
    return Row(
        id=row_id,
        label=label,
        group=group,
        kind=RowKind.LOGGED,
        bytes=fact.bytes,
        error_bytes=fact.error_bytes,
        in_budget=in_budget,
        evidence=Evidence(
            sources=_source(log, fact),
            note=f"{budget}; {note}" if note else budget,
            inputs={"source": fact.source[:200]},
        ),
    )


def _derived(
    row_id: str,
    label: str,
    group: RowGroup,
    value: int,
    error: int,
    formula: str,
    *,
    in_budget: bool,
    note: str = "",
) -> Row:
    budget = "inside the budget" if in_budget else "outside the budget"
    return Row(
        id=row_id,
        label=label,
        group=group,
        kind=RowKind.DERIVED,
        bytes=value,
        error_bytes=error,
        in_budget=in_budget,
        evidence=Evidence(formula=formula, note=f"{budget}; {note}" if note else budget),
    )


def build_vllm_ledger(
    log: VllmLog,
    index: int,
    startup: Startup,
    facts: Mapping[str, Fact],
    sizing: VllmSizing,
) -> Ledger:
    """The account of one vLLM startup (rank 0's figures where rank 0 printed them)."""
    notes: list[str] = []
    total = fact_bytes(facts, "total_gpu_gib")
    util_fact = facts.get("gpu_memory_utilization")
    util = None if util_fact is None else float(util_fact.value)
    budget = fact_bytes(facts, "usable_gib") or fact_bytes(facts, "requested_gib")
    if budget is None and total is not None and util is not None:
        budget = (round(total[0] * util), round(total[1] * util + total[0] * 0.005))
    weights = facts.get("weights_gib")
    activation = facts.get("activation_peak_gib")
    peak = fact_bytes(facts, "peak_torch_memory_gib")
    consumed = facts.get("consumed_gib")
    estimate = facts.get("graph_estimate_gib")
    graph_in_budget = sizing.era == "V1" and (
        release_at_least(sizing.release, "0.21.0") is True
        or consumed is not None
        or (estimate is not None and "suggested_gpu_memory_utilization" not in facts)
    )
    rows = _weight_rows(log, weights, facts.get("non_torch_gib"), consumed)
    graph = facts.get("graph_gib")
    estimate_bytes = None if estimate is None else estimate.bytes
    if consumed is not None and activation is not None and estimate_bytes is not None:
        rows.append(
            _derived(
                "activation_peak",
                "activation peak (profiling forward pass)",
                RowGroup.WORKSPACE,
                (activation.bytes or 0) - estimate_bytes,
                activation.error_bytes + (0 if estimate is None else estimate.error_bytes),
                "the summary's peak activation - the CUDA-graph estimate it includes "
                "(v0.29.0 vllm/v1/worker/gpu_worker.py:599-601)",
                in_budget=True,
            )
        )
    elif activation is None and peak is not None and weights is not None and weights.bytes:
        rows.append(
            _derived(
                "activation_peak",
                "activation peak (profiling forward pass)",
                RowGroup.WORKSPACE,
                peak[0] - weights.bytes,
                peak[1] + weights.error_bytes,
                "peak_torch_memory - weights (the V0 profile's peak includes the weights)",
                in_budget=True,
            )
        )
    else:
        rows.append(
            _row(
                log,
                "activation_peak",
                "activation peak (profiling forward pass)",
                RowGroup.WORKSPACE,
                activation,
                in_budget=True,
                note="freed after profiling, but held out of the KV budget"
                + ("; it includes the CUDA-graph estimate" if consumed is not None else ""),
            )
        )
    rows.append(
        _row(
            log,
            "kv_pool",
            "KV cache",
            RowGroup.STATE_POOL,
            facts.get("kv_cache_gib"),
            in_budget=True,
        )
    )
    if graph_in_budget:
        captured = "" if graph is None else f"; captured: {graph.value} GiB"
        rows.append(
            _row(
                log,
                "cuda_graph",
                "CUDA graphs (estimate)",
                RowGroup.CUDA_GRAPH,
                None if consumed is not None and estimate is None else estimate,
                in_budget=True,
                note="the estimate is taken out of the budget (0.21.0+)" + captured,
            )
        )
    else:
        rows.append(
            _row(
                log,
                "cuda_graph",
                "CUDA graphs",
                RowGroup.CUDA_GRAPH,
                graph,
                in_budget=False,
                note="captured after the KV cache was sized: it comes out of the headroom",
            )
        )
    free = fact_bytes(facts, "free_gib") or fact_bytes(facts, "initial_free_gib")
    usable: int | None = None
    balance_error = tolerance = 0
    failed_check = any(r.error is not None and r.error.id == "free_memory" for r in startup.errors)
    if total is not None and free is not None and failed_check:
        rows = [r for r in rows if r.bytes is not None]
        rows += _start_rows(total, free)
        usable, tolerance = total[0], total[1] + free[1]
        notes.append("the startup stopped at the free-memory check: nothing was allocated yet")
    elif total is not None and budget is not None:
        rows, usable, balance_error, tolerance = _balance(
            rows, total, budget, free, graph_in_budget, notes
        )
    else:
        notes.append(
            "balance not checked: the log prints "
            + ("no total GPU memory" if total is None else "no gpu_memory_utilization budget")
        )
    notes.extend(
        f"sizing: {step.what} recomputed {step.value:,.2f} differs from the logged "
        f"{step.logged or 0:,.2f} by more than 0.5 %"
        for step in sizing.steps
        if step.matches is False
    )
    notes.extend(f"sizing not made: {reason}" for reason in sizing.not_made)
    used = sorted({f.tag for f in facts.values() if f.line is not None})
    others = [t for t in used if not is_rank0(t)]
    if not others:
        rank = "rank 0"
    elif len(others) == len(used):
        rank = ", ".join(others[:3]) + " (no rank-0 line)"
    else:
        rank = "rank 0 and " + ", ".join(others[:3]) + " (where rank 0 printed nothing)"
    kv = facts.get("kv_cache_gib")
    tokens = facts.get("kv_tokens")
    summary = Summary(
        **summary_from_rows(rows),  # the figures that are sums of rows, as a saved ledger checks
        usable=usable,
        weights_resident=None if weights is None else weights.bytes,
        kv_pool=None if kv is None else kv.bytes,
        kv_tokens_per_rank=None if tokens is None else int(tokens.value),
    )
    parameters: dict[str, int | float | str | bool | None] = {
        "engine": "vllm",
        "era": sizing.era,
        "release": sizing.release,
        "gpu_memory_utilization": util,
        "budget_bytes": None if budget is None else budget[0],
    }
    for name in (
        "max_model_len",
        "tp",
        "pp",
        "dp",
        "max_num_seqs",
        "max_num_batched_tokens",
        "kv_cache_dtype",
        "enforce_eager",
        "kv_cache_memory_bytes",
    ):
        if name in facts:
            parameters[name] = facts[name].value
    return Ledger(
        engine="vllm",
        source=LedgerSource(path=log.path, startup=index, n_startups=len(log.startups), rank=rank),
        outcome=OUTCOMES[startup.outcome],
        checkpoints=[],
        intervals=[],
        rows=rows,
        summary=summary,
        groups=group_totals(rows),
        usable_bytes=usable,
        balance_error_bytes=balance_error,
        tolerance_bytes=tolerance,
        parameters=parameters,
        notes=notes,
    )


def _weight_rows(
    log: VllmLog, weights: Fact | None, non_torch: Fact | None, consumed: Fact | None
) -> list[Row]:
    """Weights and non-torch memory; the 0.21+ summary prints only their sum ('consumed')."""
    if consumed is not None and non_torch is None and consumed.bytes is not None:
        if weights is not None and weights.bytes is not None:
            return [
                _row(log, "weights", "model weights", RowGroup.WEIGHTS, weights, in_budget=True),
                _derived(
                    "non_torch",
                    "non-torch memory (NCCL, CUDA context, all-reduce buffers)",
                    RowGroup.COMMUNICATION,
                    consumed.bytes - weights.bytes,
                    consumed.error_bytes + weights.error_bytes,
                    "consumed (weights + non-torch) - weights",
                    in_budget=True,
                ),
            ]
        return [
            _row(
                log,
                "weights",
                "weights + non-torch memory ('consumed')",
                RowGroup.WEIGHTS,
                consumed,
                in_budget=True,
                note="the summary prints only their sum",
            ),
        ]
    return [
        _row(log, "weights", "model weights", RowGroup.WEIGHTS, weights, in_budget=True),
        _row(
            log,
            "non_torch",
            "non-torch memory (NCCL, CUDA context, all-reduce buffers)",
            RowGroup.COMMUNICATION,
            non_torch,
            in_budget=True,
        ),
    ]


IN_BUDGET = ("weights", "non_torch", "activation_peak", "kv_pool")
"""Rows always inside vLLM's budget (the CUDA-graph row is, since 0.21.0)."""


def _start_rows(total: tuple[int, int], free: tuple[int, int]) -> list[Row]:
    return [
        _derived(
            "in_use_at_start",
            "in use before vLLM started (other processes, CUDA context)",
            RowGroup.RUNTIME_HEADROOM,
            total[0] - free[0],
            total[1] + free[1],
            "total - free memory at startup",
            in_budget=False,
        ),
        _derived(
            "free_at_start",
            "free at startup",
            RowGroup.RUNTIME_HEADROOM,
            free[0],
            free[1],
            "free memory vLLM measured at startup",
            in_budget=False,
        ),
    ]


def _balance(
    rows: list[Row],
    total: tuple[int, int],
    budget: tuple[int, int],
    free: tuple[int, int] | None,
    graph_in_budget: bool,
    notes: list[str],
) -> tuple[list[Row], int | None, int, int]:
    """Rows completed to a partition of the device: (rows, usable, balance error, tolerance)."""
    inside_ids = IN_BUDGET + (("cuda_graph",) if graph_in_budget else ())
    inside = [r for r in rows if r.id in inside_ids]
    missing = [r for r in inside if r.bytes is None and r.id != "cuda_graph"]
    if len(missing) == 1 and missing[0].id == "kv_pool":
        known = sum(r.bytes or 0 for r in inside)
        err = sum(r.error_bytes for r in inside) + budget[1]
        kv = _derived(
            "kv_pool",
            "KV cache",
            RowGroup.STATE_POOL,
            budget[0] - known,
            err,
            "budget - weights - non-torch - activation peak"
            + (" - CUDA graphs" if graph_in_budget else ""),
            in_budget=True,
            note="not printed: what vLLM's budget leaves",
        )
        rows = [kv if r.id == "kv_pool" else r for r in rows]
        inside = [r for r in rows if r.id in inside_ids]
        missing = []
    if missing:
        notes.append(
            f"balance not checked: {', '.join(r.id for r in missing)} not printed; the budget "
            f"({budget[0] / GIB:.2f} GiB) holds them and the KV cache"
        )
        return rows, None, 0, 0
    known = sum(r.bytes or 0 for r in inside)
    err = sum(r.error_bytes for r in inside) + budget[1]
    rows.append(_residual(budget[0] - known, err))
    at_start = 0
    if free is not None and total[0] - free[0] > 0:
        at_start = total[0] - free[0]
        rows.append(_start_rows(total, free)[0])
    graph_out = sum(r.bytes or 0 for r in rows if r.id == "cuda_graph" and not graph_in_budget)
    rows.append(
        _derived(
            "runtime_headroom",
            "headroom outside the budget",
            RowGroup.RUNTIME_HEADROOM,
            total[0] - budget[0] - at_start - graph_out,
            total[1] + budget[1],
            "total x (1 - gpu_memory_utilization)"
            + (" - in use at start" if at_start else "")
            + (" - CUDA graphs" if graph_out else ""),
            in_budget=False,
        )
    )
    summed = sum(r.bytes or 0 for r in rows if r.in_partition)
    return rows, total[0], summed - total[0], err + total[1]


def _residual(residual: int, error: int) -> Row:
    if abs(residual) <= error:
        why = "rounding: within the printing precision of the figures"
    elif abs(residual) <= RESIDUAL_NAMED:
        why = "beyond the printing precision, under 0.25 GiB"
    else:
        why = (
            "the budget's figures do not add up: a part vLLM did not print (a second model "
            "runner, an encoder cache) or a figure from another rank"
        )
    return Row(
        id="residual",
        label="residual of the budget",
        group=RowGroup.UNEXPLAINED,
        kind=RowKind.RESIDUAL,
        bytes=residual,
        error_bytes=error,
        in_budget=True,
        evidence=Evidence(
            formula="budget - (weights + non-torch + activation + KV [+ graphs])",
            note=f"inside the budget; {why}",
        ),
    )
