"""Why the KV cache differs between an SGLang and a vLLM startup (`memledger diff` when the two
sides are different engines): what each engine's budget covers, where its CUDA graphs sit, what
it holds back for activations, how it rounds the KV to pages or blocks, and what one token of KV
costs on each side. A pure function of the two ledgers; the renderers print `lines`.

SGLang: `mem_fraction_static` x the GPU's memory holds the weights and the pools; activations,
CUDA graphs and workspaces live in the rest (v0.5.x srt/model_executor/model_runner.py
profile_max_num_token). vLLM: `gpu_memory_utilization` x the GPU's memory holds the weights,
non-torch memory, the profiled activation peak and the KV cache, and since 0.21.0 the CUDA-graph
estimate (memledger/vllm/sizing_rules.py `budget_v1`, `budget_graph`).
"""

from __future__ import annotations

from dataclasses import field

from memledger.model.ledger import Ledger, RowGroup
from memledger.record import record
from memledger.units import float_or, int_or

GIB = 1 << 30
VLLM_BLOCK_TOKENS = 16
"""vLLM's KV block on CUDA (memledger.vllm.sizing_rules.DEFAULT_BLOCK_SIZE)."""


@record
class EngineSide:
    """One side's budget and KV figures (None where its log does not say)."""

    engine: str
    fraction: float | None = None
    """mem_fraction_static (SGLang) or gpu_memory_utilization (vLLM)."""
    budget_bytes: int | None = None
    covers: str
    kv_bytes: int | None = None
    kv_tokens: int | None = None
    kv_bytes_per_token: int | None = None
    graph_bytes: int | None = None
    graph_in_budget: bool = False
    activation_bytes: int | None = None
    """What the engine holds back for activations inside (vLLM) or outside (SGLang) its budget."""


@record
class EngineComparison:
    """Base and head of a cross-engine diff, and the sentences that explain the KV difference."""

    base: EngineSide
    head: EngineSide
    lines: list[str] = field(default_factory=list)


def _group_bytes(ledger: Ledger, group: RowGroup) -> int | None:
    total = ledger.group(group)
    return None if total is None or total.rows == total.unknown else total.bytes


def _fraction(ledger: Ledger, name: str) -> float | None:
    value = float_or(ledger.parameters.get(name), None)
    if value is not None:
        return value
    summary = ledger.summary.mem_fraction_static
    return summary if name == "mem_fraction_static" else None


def side_of(ledger: Ledger) -> EngineSide:
    """The budget and KV figures of one ledger."""
    kv = ledger.summary.kv_pool
    tokens = ledger.summary.kv_tokens_per_rank
    per_token = None if kv is None or not tokens else round(kv / tokens)
    graph = _group_bytes(ledger, RowGroup.CUDA_GRAPH)
    if ledger.engine == "vllm":
        fraction = _fraction(ledger, "gpu_memory_utilization")
        budget = ledger.parameters.get("budget_bytes")
        row = ledger.row("cuda_graph")
        inside = row is not None and row.in_budget is True
        activation = ledger.row("activation_peak")
        return EngineSide(
            engine="vllm",
            fraction=fraction,
            budget_bytes=budget if isinstance(budget, int) else None,
            covers="weights + non-torch memory + activation peak + KV cache"
            + (" + CUDA-graph estimate" if inside else ""),
            kv_bytes=kv,
            kv_tokens=tokens,
            kv_bytes_per_token=per_token,
            graph_bytes=graph,
            graph_in_budget=inside,
            activation_bytes=None if activation is None else activation.bytes,
        )
    fraction = _fraction(ledger, "mem_fraction_static")
    usable = ledger.summary.usable
    budget = None if fraction is None or usable is None else round(usable * fraction)
    outside = None if fraction is None or usable is None else usable - (budget or 0)
    return EngineSide(
        engine="sglang",
        fraction=fraction,
        budget_bytes=budget,
        covers="weights + KV pool (+ other state pools)",
        kv_bytes=kv,
        kv_tokens=tokens,
        kv_bytes_per_token=per_token,
        graph_bytes=graph,
        graph_in_budget=False,
        activation_bytes=outside,
    )


def _g(value: int | None) -> str:
    return "-" if value is None else f"{value / GIB:,.2f} GiB"


def _name(engine: str) -> str:
    return "vLLM" if engine == "vllm" else "SGLang"


def _knob(side: EngineSide) -> str:
    return "gpu_memory_utilization" if side.engine == "vllm" else "mem_fraction_static"


def _kv_from_budget(ledger: Ledger, side: EngineSide) -> str:
    """`KV 2.89 GiB = budget 21.22 - weights 14.99 - ...`: what the budget held besides KV."""
    if side.budget_bytes is None or side.kv_bytes is None:
        return f"{_name(side.engine)} KV {_g(side.kv_bytes)}: its budget is not known"
    parts = []
    ids = (
        ("weights", "non_torch", "activation_peak")
        + (("cuda_graph",) if side.graph_in_budget else ())
        if side.engine == "vllm"
        else ()
    )
    for row_id in ids:
        row = ledger.row(row_id)
        if row is not None and row.bytes is not None:
            parts.append(f"{row_id.replace('_', ' ')} {_g(row.bytes)}")
    if side.engine != "vllm" and ledger.summary.weights_resident is not None:
        parts.append(f"weights {_g(ledger.summary.weights_resident)}")
    named = side.budget_bytes - side.kv_bytes
    listed = " + ".join(parts)
    return (
        f"{_name(side.engine)} KV {_g(side.kv_bytes)} = budget {_g(side.budget_bytes)} - "
        f"{_g(named)} ({listed or 'not itemised'}"
        + ("; the rest: other pools, request tables, rounding)" if side.engine != "vllm" else ")")
    )


def _tp(ledger: Ledger) -> int | None:
    return int_or(ledger.parameters.get("tp_size" if ledger.engine == "sglang" else "tp"), None)


def _per_token_line(base: Ledger, head: Ledger, b: EngineSide, h: EngineSide) -> str:
    """What one token of KV costs on a rank of each side, and why the two differ."""
    assert b.kv_bytes_per_token and h.kv_bytes_per_token
    ratio = h.kv_bytes_per_token / b.kv_bytes_per_token
    tps = _tp(base), _tp(head)
    shown = [
        f"{_name(s.engine)} {s.kv_bytes_per_token:,} B"
        + (f" (TP{tp})" if tp is not None else " (TP not printed)")
        for s, tp in zip((b, h), tps, strict=True)
    ]
    text = f"one token of KV on a rank: {shown[0]}, {shown[1]}; head/base {ratio:.2f}"
    near = round(ratio) if ratio >= 1 else 1 / round(1 / ratio)
    if abs(ratio - 1) <= 0.01:
        return text + " (the same bytes per token: same model and KV dtype at the same TP)"
    if abs(ratio - near) <= 0.01 * near and None in tps:
        return text + (
            f" = {near:g}: a TP split of the KV heads (each rank keeps 1/TP of them) would give "
            "exactly this for the same model and KV dtype"
        )
    if None not in tps and abs(ratio * (tps[1] or 1) / (tps[0] or 1) - 1) <= 0.01:
        return text + " = the TP ratio: the same model and KV dtype, split over more ranks"
    return text + " (different models, KV dtypes or TP: tokens differ by this ratio too)"


def compare_engines(base: Ledger, head: Ledger) -> EngineComparison | None:
    """The comparison when the two ledgers come from different engines, else None."""
    if base.engine == head.engine:
        return None
    sides = side_of(base), side_of(head)
    lines: list[str] = []
    for side in sides:
        fraction = "-" if side.fraction is None else f"{side.fraction:g}"
        lines.append(
            f"{_name(side.engine)} budget: {_knob(side)} {fraction} of "
            + ("the GPU" if side.engine == "vllm" else "the memory free at load")
            + f" = {_g(side.budget_bytes)}, holding {side.covers}"
        )
    for side in sides:
        if side.engine == "vllm":
            where = (
                "inside the budget (estimated before sizing, 0.21.0+)"
                if (side.graph_in_budget)
                else "outside the budget (captured after the KV cache took it)"
            )
            lines.append(f"vLLM CUDA graphs {_g(side.graph_bytes)}: {where}")
        else:
            lines.append(
                f"SGLang CUDA graphs {_g(side.graph_bytes)}: outside mem_fraction_static, in "
                "the reserve it leaves"
            )
    for side in sides:
        if side.engine == "vllm":
            lines.append(
                f"vLLM holds the profiled activation peak {_g(side.activation_bytes)} out of its "
                "budget, so out of the KV cache"
            )
        else:
            lines.append(
                f"SGLang leaves {_g(side.activation_bytes)} outside its budget for activations, "
                "CUDA graphs and workspaces"
            )
    lines.append(
        f"rounding: vLLM sizes the KV in blocks of {VLLM_BLOCK_TOKENS} tokens (at most one "
        "block lost per layer group); SGLang in pages (page_size tokens, 1 unless set): both "
        "under 0.1 % of a pool of this size"
    )
    for ledger, side in zip((base, head), sides, strict=True):
        lines.append(_kv_from_budget(ledger, side))
    base_side, head_side = sides
    if base_side.kv_bytes_per_token and head_side.kv_bytes_per_token:
        lines.append(_per_token_line(base, head, base_side, head_side))
    if base_side.kv_bytes and head_side.kv_bytes and base_side.kv_tokens and head_side.kv_tokens:
        bytes_ratio = head_side.kv_bytes / base_side.kv_bytes
        token_ratio = head_side.kv_tokens / base_side.kv_tokens
        lines.append(
            f"KV tokens head/base {token_ratio:.3f} = KV bytes {bytes_ratio:.3f} x bytes per "
            f"token {bytes_ratio / token_ratio:.3f}^-1"
        )
    return EngineComparison(base=base_side, head=head_side, lines=lines)
