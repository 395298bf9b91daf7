"""The KV pool of a log that prints no `KV Cache is allocated` line (0.4.1 and older, DSV4 forks).

SGLang built the pool from `max_total_num_tokens` x the per-token cell (v0.4.1
model_executor/model_runner.py:480-486 and :493-560, `init_memory_pool`): with model dims the
bytes are derived from the tokens; without them the pool is what is left of the memory-pool
interval after the other rows, a row that says so and shows the bytes per token it implies.
"""

from __future__ import annotations

from memledger.engine.carve import Carve, Figure
from memledger.engine.chain import Chain, Span
from memledger.engine.roles import TARGET
from memledger.engine.summary import kv_bytes_per_token
from memledger.engine.variables import Variables
from memledger.events import Event, EventKind
from memledger.ledger_model import RowGroup, RowKind
from memledger.model_config import ModelDims

_KV_LINES = frozenset({EventKind.KV_ALLOCATED, EventKind.KV_SKIPPED, EventKind.SWA_POOL})


def kv_pool_rows(
    chain: Chain,
    others: dict[str, list[Carve]],
    variables: Variables,
    model: ModelDims | None,
) -> dict[str, Carve]:
    """span key -> the KV pool row of the target's pool interval when no line printed it."""
    if any(e.kind in _KV_LINES for e in chain.events):
        return {}
    span = next(
        (
            s
            for s in chain.spans
            if s.end.event.kind == EventKind.MEMORY_POOL_END and s.region == TARGET
        ),
        None,
    )
    tokens = variables.log("max_total_num_tokens")
    if span is None or not isinstance(tokens, int) or tokens <= 0:
        return {}
    per_token = kv_bytes_per_token(chain, variables, model)
    summary = chain.summary_event()
    sources = [span.start.event, span.end.event] + ([summary] if summary is not None else [])
    if per_token is not None:
        return {span.key: _derived(span, tokens, per_token, sources)}
    explained = sum(c.bytes for c in others.get(span.key, []) if c.in_partition)
    remainder = span.drop - explained
    if remainder <= 0:
        return {}
    implied = remainder / tokens
    return {
        span.key: Carve(
            "kv_pool",
            "KV cache (inferred: no KV line; what the pool interval leaves)",
            RowGroup.STATE_POOL,
            RowKind.DERIVED,
            remainder,
            span.error,
            sources,
            formula=(
                f"{span.key} drop - the other rows = {remainder:,} B for {tokens:,} tokens "
                f"= {implied:,.0f} B per token"
            ),
            inputs={"max_total_num_tokens": tokens, "implied_bytes_per_token": round(implied)},
            note=(
                "inferred: this SGLang prints no `KV Cache is allocated` line; the pool was "
                "built from max_total_num_tokens x the per-token cell (pass --model-config to "
                "derive it from the model's dims)"
            ),
            figure=Figure.KV_POOL,
        )
    }


def _derived(span: Span, tokens: int, per_token: int, sources: list[Event]) -> Carve:
    return Carve(
        "kv_pool",
        "KV cache (max_total_num_tokens x cell size; no KV line)",
        RowGroup.STATE_POOL,
        RowKind.DERIVED,
        tokens * per_token,
        0,
        sources,
        formula=f"{tokens:,} tokens x {per_token:,} B per token (model dims)",
        inputs={"max_total_num_tokens": tokens, "bytes_per_token": per_token},
        note="this SGLang prints no `KV Cache is allocated` line: derived from the model dims",
        figure=Figure.KV_POOL,
    )
