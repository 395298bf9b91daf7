"""What an unexplained residual most likely is, by where it sits: hints, not rows.

A cost memledger can derive is a formula (`data/formulas.toml`); one it can only suspect is a
hint on the residual row ("likely: ..."), with the reason, so no residual over
`HINT_THRESHOLD_BYTES` is silently absorbed. The first hint whose conditions hold is used.
"""

from __future__ import annotations

from dataclasses import dataclass

from memledger.events import EventKind

HINT_THRESHOLD_BYTES = (1 << 30) // 10
"""0.1 GiB: residuals below it (and below `HINT_THRESHOLD_SHARE` of usable) are not hinted."""

HINT_THRESHOLD_SHARE = 0.005
"""0.5 % of usable memory: on a small GPU a residual under 0.1 GiB can still matter."""


@dataclass(frozen=True)
class ResidualHint:
    text: str
    """`likely: ...` and why."""
    end_kind: EventKind | None = None
    """The interval's closing checkpoint kind (None: any)."""
    negative: bool = False
    unknown_row: str | None = None
    """Only when this formula row is unknown in the ledger."""


HINTS: tuple[ResidualHint, ...] = (
    ResidualHint(
        "likely: the req_to_token table (request slots x (context_len + 4) x 4 B, int32), "
        "built with the pools; the ledger cannot size it here (see its unknown row)",
        EventKind.MEMORY_POOL_END,
        unknown_row="req_to_token",
    ),
    ResidualHint(
        "likely: pool metadata SGLang does not print (allocator free lists and page tables, "
        "SWA full_to_swa mappings, hybrid/draft request tables) and allocator rounding",
        EventKind.MEMORY_POOL_END,
    ),
    ResidualHint(
        "likely: a logged pool size above what was newly allocated (a pool sharing memory), or "
        "avail moving with host memory (integrated GPUs such as GB10 report host RAM)",
        EventKind.MEMORY_POOL_END,
        negative=True,
    ),
    ResidualHint(
        "likely: attention-backend buffers built before the first capture (sized by the max "
        "batch size and heads: triton/aiter decode buffers, FA/FlashInfer metadata) and the "
        "graph runner's static inputs",
        EventKind.CAPTURE_BEGIN,
    ),
    ResidualHint(
        "likely: the target's post-load processing and the draft runner's own init before its "
        "load (device context, process groups), which print no size",
        EventKind.LOAD_BEGIN,
    ),
    ResidualHint(
        "likely: memory freed inside the interval (a release SGLang does not log, returned by "
        "torch.cuda.empty_cache before the next reading)",
        negative=True,
    ),
    ResidualHint("likely: an allocation SGLang does not log in this interval"),
)


def hint_for(
    end_kind: EventKind, residual: int, unknown_rows: frozenset[str], usable: int | None
) -> str | None:
    """The hint for a residual of this size at this interval, or None when it is noise."""
    share = abs(residual) / usable if usable else 0.0
    if abs(residual) <= HINT_THRESHOLD_BYTES and share <= HINT_THRESHOLD_SHARE:
        return None
    for hint in HINTS:
        if hint.negative != (residual < 0):
            continue
        if hint.end_kind is not None and hint.end_kind != end_kind:
            continue
        if hint.unknown_row is not None and hint.unknown_row not in unknown_rows:
            continue
        return hint.text
    return None
