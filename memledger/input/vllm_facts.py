"""The facts of one vLLM startup: one value per fact, rank 0's where rank 0 printed it.

Every rank of a tensor-parallel startup prints its own memory lines (V0's `VllmWorkerProcess`
workers, V1's `Worker_TP1`); the engine core prints the KV-cache lines once per worker (0.11.0
prints `GPU KV cache size` four times at TP4). A fact is taken from rank 0's line (the driver,
the engine core, `TP0`, `rank=0`) when there is one, else from the first rank that printed it,
and says which line it came from. Settings from the command line or `non-default args` fill the
facts no startup line printed (`gpu_memory_utilization`, `max_model_len`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from memledger.input.vllm_reader import Reading, Startup, Value, VllmLog, is_rank0


@dataclass(frozen=True)
class Fact:
    """A fact's value as printed, its bytes (sizes) and where it was read."""

    name: str
    value: Value
    bytes: int | None
    error_bytes: int
    line: int | None
    text: str
    source: str
    tag: str = ""


def fact_bytes(facts: Mapping[str, Fact], name: str) -> tuple[int, int] | None:
    """The fact `name`'s bytes and their error, None when it is absent or not a size."""
    fact = facts.get(name)
    return None if fact is None or fact.bytes is None else (fact.bytes, fact.error_bytes)


FALLBACKS = {"weights_gib": "weights_gib_summary"}
"""A fact printed only in another line's wording (v0.10.2's post-capture summary prints the
weights at 2 decimals; `Model loading took` at 4 is preferred)."""


def startup_facts(log: VllmLog, startup: Startup, rank: str | None = None) -> dict[str, Fact]:
    """Every fact of `startup` (rank 0's first, or the `rank` tag's: `TP1`, `rank3`), then the
    log's serve settings."""
    chosen: dict[str, tuple[Reading, bool]] = {}
    for reading in startup.readings:
        rank0 = is_rank0(reading.tag) if rank is None else reading.tag == rank
        for name in reading.facts:
            held = chosen.get(name)
            if held is None or (rank0 and not held[1]):
                chosen[name] = (reading, rank0)
    facts: dict[str, Fact] = {}
    for name, (reading, _) in chosen.items():
        size = reading.sizes.get(name)
        facts[name] = Fact(
            name=name,
            value=reading.facts[name],
            bytes=None if size is None else size[0],
            error_bytes=0 if size is None else size[1],
            line=reading.line,
            text=reading.text,
            source=reading.source,
            tag=reading.tag,
        )
    for name, fallback in FALLBACKS.items():
        if name not in facts and fallback in facts:
            facts[name] = replace(facts[fallback], name=name)
    for name, value in log.serve_settings.items():
        if name not in facts:
            facts[name] = Fact(
                name=name,
                value=value,
                bytes=None,
                error_bytes=0,
                line=log.serve_line,
                text="(launch settings)",
                source="the launch command or `non-default args` line",
            )
    return facts


def select_startup(log: VllmLog, index: int | None = None) -> tuple[int, Startup]:
    """The startup asked for (0-based, negative from the end), default the last."""
    n = len(log.startups)
    chosen = n - 1 if index is None else (index if index >= 0 else n + index)
    if not 0 <= chosen < n:
        from memledger.errors import SelectionError

        raise SelectionError(
            f"startup {index} not in the log (it holds {n} startup{'s' if n != 1 else ''})",
            path=log.path,
        )
    return chosen, log.startups[chosen]
