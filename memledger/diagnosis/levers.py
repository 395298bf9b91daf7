"""Levers with values for an OOM after the pool, the way SGLang maintainers answer these threads.

- `max_total_tokens`: cap the KV pool by exactly the tokens whose bytes were missing; the token
  count and bytes per token are the log's own (the `--max-total-tokens` clamp, see
  `memledger.sglang.sizing_rules` rule `max_total_tokens`). Maintainer advice for a runtime OOM:
  https://github.com/sgl-project/sglang/issues/6027 ("use --max-total-tokens to control kv size").
- `cuda_graph_max_bs`: when the log names neither the captured batch sizes nor the flag, SGLang's
  own default for this GPU (inferred from the OOM text's capacity) is the starting point; graph
  memory grows with the largest batch (https://github.com/sgl-project/sglang/pull/5634 and
  /pull/10990: capture OOMs fixed by a smaller capture bs).
- `chunked_prefill_size`: a prefill (extend) OOM scales with the chunk; when the flag is not in
  the log, SGLang's default for this GPU is inferred the same way.
"""

from __future__ import annotations

import math

from memledger.diagnosis.arithmetic import g
from memledger.diagnosis.evidence import Evidence, frames_of
from memledger.diagnosis.model import Suggestion
from memledger.sglang.failure_rules import (
    DECODE_GRAPH_FLAG_CITATION,
    DECODE_GRAPH_RUNNER,
    PREFILL_FRAMES,
)
from memledger.sglang.fraction_rules import CHUNKED_PREFILL_SOURCE, CUDA_GRAPH_MAX_BS_SOURCE
from memledger.sglang.sizing_rules import RULE
from memledger.sizing.defaults import default_chunked_prefill, default_cuda_graph_max_bs
from memledger.units import MIB


def gpu_capacity_mib(evidence: Evidence) -> int | None:
    """The GPU's capacity as the allocator's OOM text printed it, in MiB (else unknown)."""
    oom = evidence.oom
    capacity = oom.sizes.get("capacity") if oom is not None else None
    return capacity.bytes // MIB if capacity is not None and capacity.bytes > 0 else None


def kv_cap_lever(evidence: Evidence, missing: int) -> Suggestion | None:
    """`--max-total-tokens` = the logged tokens minus the tokens whose bytes were missing."""
    ledger = evidence.ledger
    tokens = ledger.summary.kv_tokens_per_rank
    cell = ledger.sizing.bytes_per_token if ledger.sizing is not None else None
    pool = ledger.summary.kv_pool
    if cell is None and pool and tokens:
        cell = pool / tokens  # the KV line's K + V bytes over its #tokens
    if tokens is None or tokens <= 0 or cell is None or cell <= 0 or missing <= 0:
        return None
    page = evidence.int_param("page_size") or 1
    cut = math.ceil(missing / cell)
    value = (tokens - cut) // page * page
    if value <= 0:
        return None
    rule = RULE["max_total_tokens"]
    page_text = f", rounded down to page_size {page}" if page > 1 else ""
    numbers = {"missing": g(missing), "cell": cell, "cut": cut, "tokens": tokens}
    return evidence.advice(
        "max_total_tokens.cut", value=value, page=page_text, rule=rule, **numbers
    )


def inferred_graph_max_bs(evidence: Evidence) -> tuple[int, str] | None:
    """SGLang's default cuda_graph_max_bs for this GPU and tp, when the log does not say."""
    gpu = gpu_capacity_mib(evidence)
    if gpu is None:
        return None
    tp = evidence.tp_size or 1
    value = default_cuda_graph_max_bs(gpu, tp)
    tp_text = f"tp {tp}" if evidence.tp_size else "tp assumed 1"
    return value, (
        f"not in the log; SGLang's default for a {gpu / 1024:.0f} GiB GPU at {tp_text} is "
        f"{value}, inferred by {CUDA_GRAPH_MAX_BS_SOURCE}, releases 0.5.5-0.5.19"
    )


def failed_in_prefill(evidence: Evidence) -> bool:
    """Whether the failing traceback runs a prefill (extend) forward."""
    traceback = evidence.traceback
    if traceback is None:
        return False
    return any(frame.function in PREFILL_FRAMES for frame in frames_of(traceback))


def inferred_chunk(evidence: Evidence) -> tuple[int, str] | None:
    """SGLang's default chunked_prefill_size for this GPU, when the log does not say."""
    gpu = gpu_capacity_mib(evidence)
    if gpu is None:
        return None
    value = default_chunked_prefill(gpu)
    return value, (
        f"not in the log; SGLang's default for a {gpu / 1024:.0f} GiB GPU is {value}, "
        f"inferred by {CHUNKED_PREFILL_SOURCE}"
    )


def graph_cap_knob(evidence: Evidence) -> tuple[str, str]:
    """The decode graphs' cap as the log's release spells it, with why: `cuda_graph_max_bs_decode`
    where the paste shows a 0.5.16+ release (the model_executor/runner/ decode runner in a frame,
    or the knob in server_args), else `cuda_graph_max_bs`."""
    frames = frames_of(evidence.traceback) if evidence.traceback is not None else []
    newer = any(DECODE_GRAPH_RUNNER in frame.path for frame in frames)
    if newer or "cuda_graph_max_bs_decode" in evidence.server_args:
        return "cuda_graph_max_bs_decode", f"; {DECODE_GRAPH_FLAG_CITATION}"
    return "cuda_graph_max_bs", ""
