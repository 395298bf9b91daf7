"""The diff's sentences: the state-pool statement, the usable-memory note and the KV-token split.
Prose is rendering: the diff model carries the numbers, these functions write them as English."""

from __future__ import annotations

from memledger.compare.models import DiffStatus, LedgerDiff
from memledger.render.tables import ABSENT
from memledger.units import GIB, format_gib


def _fmt_gib(byte_count: int | None) -> str:
    return ABSENT if byte_count is None else f"{byte_count / GIB:.2f}"


def state_pool_statement(diff: LedgerDiff) -> str:
    """The article's sentence: which side's state pool is larger, by how much, and why."""
    analysis = diff.state_pool
    if not analysis.available:
        return "no state-pool comparison: one side has no state-pool or fixed-overhead rows"
    delta_state = analysis.state_pool.delta_bytes or 0
    larger = analysis.larger_pool_side
    if larger is None:
        return (
            "the state pools are equal within printing precision "
            f"(head - base = {_fmt_gib(delta_state)} GiB)"
        )
    sign = 1 if larger == "head" else -1
    label = diff.inputs.head.label if larger == "head" else diff.inputs.base.label
    name = larger if label == larger else f"{larger} ({label})"  # never "head (head)"
    text = f"{name}'s state pool is larger by {_fmt_gib(sign * delta_state)} GiB"
    delta_partition = analysis.partition.delta_bytes or 0
    fixed_smaller = -sign * (analysis.fixed_overhead.delta_bytes or 0)
    usable_larger = sign * delta_partition
    parts = []
    if fixed_smaller != 0:
        word = "smaller" if fixed_smaller > 0 else "larger"
        parts.append(
            f"its fixed overhead + headroom is {word} by {_fmt_gib(abs(fixed_smaller))} GiB"
        )
    if abs(delta_partition) > analysis.partition.tolerance_bytes:
        word = "larger" if usable_larger > 0 else "smaller"
        parts.append(f"its usable memory is {word} by {_fmt_gib(abs(usable_larger))} GiB")
    if parts:
        text += " because " + " and ".join(parts)
    return text


def usable_note(diff: LedgerDiff) -> str | None:
    """When usable memory differs, how the state-pool delta still closes; None otherwise."""
    analysis = diff.state_pool
    delta_partition = analysis.partition.delta_bytes or 0
    if not (
        abs(delta_partition) > analysis.partition.tolerance_bytes
        or analysis.usable.status is DiffStatus.CHANGED
    ):
        return None
    return (
        f"usable memory differs: head - base = {_fmt_gib(delta_partition)} GiB as the rows add "
        f"up (stated usable: {_fmt_gib(analysis.usable.delta_bytes)} GiB), so the state-pool "
        f"delta {_fmt_gib(analysis.state_pool.delta_bytes or 0)} = usable delta "
        f"{_fmt_gib(delta_partition)} - (fixed overhead + headroom) delta "
        f"{_fmt_gib(analysis.fixed_overhead.delta_bytes or 0)} GiB"
    )


COST_SAME_BYTES = 0.5
"""Bytes per token closer than this are the same cost (the token counts are rounded)."""


def _tokens_text(tokens: int) -> str:
    return f"{tokens:+,}"


def kv_token_lines(diff: LedgerDiff) -> list[str]:
    """Bytes per KV token on each side, and the token change split into the pool's size and
    each token's cost (the two parts add up to the change)."""
    split = diff.state_pool.kv_tokens
    if split is None:
        return []
    lines = [
        f"Bytes per KV token: base {split.base_bytes_per_token:,.1f} B, "
        f"head {split.head_bytes_per_token:,.1f} B."
    ]
    if split.delta_tokens == 0:
        return lines
    pool_delta = split.head_pool_bytes - split.base_pool_bytes
    pool_word = "grew" if pool_delta > 0 else "shrank" if pool_delta < 0 else "stayed"
    cost_delta = split.head_bytes_per_token - split.base_bytes_per_token
    cost_word = "more" if cost_delta > 0 else "less"
    if abs(cost_delta) < COST_SAME_BYTES:
        # Token counts are whole pages: a cost within half a byte is the same cost.
        cost = f"{_tokens_text(split.from_cost_tokens)} from rounding (each token costs the same)"
    else:
        cost = (
            f"{_tokens_text(split.from_cost_tokens)} because each token costs "
            f"{abs(cost_delta):,.1f} B {cost_word}"
        )
    lines.append(
        f"KV tokens per rank, head - base: {_tokens_text(split.delta_tokens)} = "
        f"{_tokens_text(split.from_pool_tokens)} because the pool {pool_word} by "
        f"{format_gib(abs(pool_delta))} GiB, {cost}."
    )
    return lines
