"""The KV pool of a log that prints no `KV Cache is allocated` line (0.4.1 and older, DSV4).

SGLang built the pool from `max_total_num_tokens` x the per-token cell (v0.4.1
model_executor/model_runner.py:480-486 and :493-560, `init_memory_pool`): with model dims the
bytes are derived from the tokens; without them the pool is what is left of the memory-pool
interval after the other rows, a row that says so and shows the bytes per token it implies.

DeepSeek V4 (0.5.12+) prints its own cost model instead: `DSV4 memory calculation:
bytes_per_full_token=B` and `DSV4 pool sizes: full=N, swa=..., c4=..., c128=..., c4_state=...`
(v0.5.16 model_executor/pool_configurator.py:766-784 and :816-824). B is the bytes of every
pool that scales with the full-token count (SWA KV on all layers, c4/c128 compressed KV, the
c4 indexer, the c4 compress states: :672-712), so the pools built for the last sizes line are
N x B; the request-scoped c128 state (c128_state_ratio = 0 there; sized by the request slots
after the fact, :786-795) is not in B and its bytes are not in the log.
"""

from __future__ import annotations

from memledger.engine.carve import Carve, Figure
from memledger.engine.chain import Chain, Span
from memledger.engine.roles import TARGET
from memledger.engine.summary import kv_bytes_per_token
from memledger.engine.variables import Variables
from memledger.model.events import Event, EventKind
from memledger.model.ledger import RowGroup, RowKind
from memledger.model.model_config import ModelDims
from memledger.units import count_or, float_or

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
    if span is None:
        return {}
    dsv4 = _dsv4_pool(span)
    if dsv4 is not None:
        return {span.key: dsv4}
    tokens = variables.log("max_total_num_tokens")
    if not isinstance(tokens, int) or tokens <= 0:
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


def _dsv4_pool(span: Span) -> Carve | None:
    """The DSV4 pools: the last `DSV4 pool sizes` full count x `bytes_per_full_token`."""
    calc = _last(span.events, EventKind.DSV4_CALC, "bytes_per_full_token")
    sizes = [e for e in span.events if e.kind == EventKind.DSV4_POOL_SIZES]
    final = next((e for e in reversed(sizes) if count_or(e.value("full"), 0) > 0), None)
    if calc is None or final is None:
        return None
    per_token, full = calc.value("bytes_per_full_token"), final.value("full")
    assert isinstance(per_token, int | float) and isinstance(full, int)
    pool = round(full * per_token)
    # The SWA pool is floored to whole pages (v0.5.16 pool_configurator.py:714-724): when an
    # earlier, larger sizing shows the unfloored SWA share, the floor's shortfall is the error.
    error = 0
    swa = final.value("swa")
    first = next((e for e in sizes if e is not final and count_or(e.value("full"), 0) > 0), None)
    if first is not None and isinstance(swa, int) and count_or(first.value("swa"), 0) > 0:
        first_full, first_swa = first.value("full"), first.value("swa")
        assert isinstance(first_full, int) and isinstance(first_swa, int)
        kept = (swa / full) / (first_swa / first_full)
        error = max(0, round(pool * (1 - kept)))
    return Carve(
        "kv_pool",
        "DSV4 pools (full tokens x SGLang's bytes per full token)",
        RowGroup.STATE_POOL,
        RowKind.DERIVED,
        pool,
        error,
        [calc, final],
        formula=f"{full:,} full tokens x {per_token:,} B per full token",
        inputs={"full_tokens": full, "bytes_per_full_token": per_token},
        note=(
            "SWA + compressed KV, indexer and c4 states as SGLang's DSV4 sizing counts them per "
            "full token (v0.5.16 model_executor/pool_configurator.py:672-712); the c128 state "
            "sized by request slots afterwards (:786-795) is not counted: its bytes are not in "
            "the log"
        ),
        figure=Figure.KV_POOL,
    )


def _last(events: list[Event], kind: EventKind, key: str) -> Event | None:
    return next(
        (e for e in reversed(events) if e.kind == kind and float_or(e.value(key), 0) > 0), None
    )
