"""Allocations whose own site answers the OOM: the request-to-token table (an OOM where it was
built, or one allocation larger than the GPU), and one allocation of tens of GiB while much memory
is still free (a long prefill's working set, where the chunk, not the fraction, is the lever).

The table is `rows x (context_len + 4) x 4 B`, set by the context length and the request slots,
not by --mem-fraction-static or the tp size. It is allocated after SGLang profiled the KV budget
and before the KV pool, so it has to come out of the slack P x (1 - mfs) the fraction leaves,
next to the activations: the cut it needs is computed against that, not against the free memory
at the failure (the KV pool sized just before takes most of that).
"""

from __future__ import annotations

import math

from memledger.diagnosis.arithmetic import g, power_of_two_below
from memledger.diagnosis.evidence import Evidence
from memledger.diagnosis.model import Direction, Result, Suggestion
from memledger.sglang.failure_rules import (
    FORWARD_ASK_MIN_GIB,
    FORWARD_FREE_MIN_GIB,
    HEADROOM_DOCS_CAP_GIB,
    OVERSIZE_FACTOR,
    REQ_TO_TOKEN_BYTES_PER_SLOT,
    REQ_TO_TOKEN_EXTRA_LEN,
    REQ_TO_TOKEN_MIN_ROWS,
    REQ_TO_TOKEN_ORDER_CITATION,
    Phase,
)
from memledger.sglang.mfs_defaults import MFS_TP_MAX_GPU_MIB, tp_step
from memledger.units import GIB, MIB, Size, int_or

ACTIVATION_ROOM = HEADROOM_DOCS_CAP_GIB * GIB
"""What the slack keeps for activations besides the table: the low end of SGLang's 5-8 GB."""


def req_to_token_oom(evidence: Evidence) -> Result | None:
    """The OOM came from building the request-to-token table (its frame is in the traceback)."""
    traceback, oom = evidence.traceback, evidence.oom
    if traceback is None or traceback.values.get("pool") != "req_to_token":
        return None
    requested = oom.sizes.get("requested") if oom is not None else None
    asked = f": {requested.text} asked for" if requested else ""
    amount = requested.bytes if requested else None
    finding = evidence.said("req_to_token_table", traceback.line, bytes=amount, asked=asked)
    return [finding], table_levers(evidence, requested)


def larger_than_gpu(evidence: Evidence) -> Result | None:
    """One allocation asked for more than the whole GPU: no fraction, graph cap or chunk makes it
    fit. At startup it is a buffer sized by a length, most often the request-to-token table
    (the memory-pool stage's, memledger.sglang.lifecycle: a model's default context of millions
    of tokens makes it larger than the GPU)."""
    oom = evidence.oom
    if oom is None or evidence.refusal is not None:
        return None
    requested, capacity = oom.sizes.get("requested"), oom.sizes.get("capacity")
    if requested is None or capacity is None or requested.bytes <= capacity.bytes:
        return None
    wrong = requested.bytes >= OVERSIZE_FACTOR * capacity.bytes  # no lever: a size computed wrong
    name = "allocation_exceeds_gpu.wrong" if wrong else "allocation_exceeds_gpu"
    numbers = {"requested": requested.text, "capacity": capacity.text}
    times = requested.bytes / capacity.bytes
    finding = evidence.said(name, oom.line, bytes=requested.bytes, times=times, **numbers)
    return [finding], [] if wrong else table_levers(evidence, requested)


def table_levers(evidence: Evidence, requested: Size | None) -> list[Suggestion]:
    """Lower the context length (the table's width) and the request slots (its rows), each by
    the factor that brings the `requested` table into the room the slack leaves for it."""
    running = evidence.int_param("max_running_requests")
    context, context_origin = _context(evidence, requested, running)
    room, room_origin = _room(evidence)
    ratio = room / requested.bytes if requested and requested.bytes and room else None
    context_why = "the table's width is the context length"
    rows_why = "the table's rows are the request slots"
    context_value = rows_value = None
    if ratio is not None and context:
        raw = context * ratio
        context_value = _two_digits(raw)
        context_why += (
            f" ({context_origin}); {room_origin}: {context:,} x {g(room)} / "
            f"{requested.text if requested else '?'} = {math.floor(raw):,} -> {context_value:,}"
        )
    elif context:
        context_why += f" ({context_origin}); the room for it is not in the log, so no value"
    else:
        context_why += "; a model's own default context can be millions of tokens"
    if ratio is not None and running:
        rows_value = max(1, math.floor(running * ratio))
        rows_why += f" ({running} now, x {ratio:.3f}: {room_origin})"
    return [
        Suggestion(
            knob="context_length", direction=Direction.LOWER, value=context_value, why=context_why
        ),
        Suggestion(
            knob="max_running_requests", direction=Direction.LOWER, value=rows_value, why=rows_why
        ),
    ]


def _context(
    evidence: Evidence, requested: Size | None, running: int | None
) -> tuple[int | None, str]:
    """The context length: the log's, else the most the ask allows at the rows SGLang gives."""
    context = evidence.int_param("context_length")
    if context:
        return context, f"context_length={context:,} {evidence.settings_where}"
    if requested is None:
        return None, ""
    rows = running or REQ_TO_TOKEN_MIN_ROWS
    inferred = requested.bytes // (REQ_TO_TOKEN_BYTES_PER_SLOT * rows) - REQ_TO_TOKEN_EXTRA_LEN
    if inferred <= 0:
        return None, ""
    origin = "max_running_requests" if running else "SGLang's default floor of request slots"
    return inferred, (
        f"at most {inferred:,} tokens: {requested.text} / ({rows:,} rows x "
        f"{REQ_TO_TOKEN_BYTES_PER_SLOT} B) - {REQ_TO_TOKEN_EXTRA_LEN}, {rows:,} being {origin}"
    )


def _room(evidence: Evidence) -> tuple[int | None, str]:
    """The slack P x (1 - mfs) less SGLang's advised activation room: what the table may take."""
    budget = evidence.budget
    slack = budget.slack_bytes
    origin = "P x (1 - mfs)"
    if slack is None:
        capacity, mfs = evidence.capacity, budget.mem_fraction_static
        if capacity is None:
            return None, ""
        origin = f"the {capacity.text} GPU x (1 - mfs {mfs:g})" if mfs else ""
        if mfs is None:
            if capacity.bytes > MFS_TP_MAX_GPU_MIB * MIB:
                return None, ""
            seen = _gpus_seen(evidence)
            tp = evidence.tp_size or seen or 1
            mfs = tp_step(tp)  # SGLang's tp step, GPUs up to 80 GiB
            at = f"tp {tp}" if evidence.tp_size or not seen else f"tp >= {tp} (GPU {tp - 1})"
            origin = (
                f"the {capacity.text} GPU x (1 - {mfs:g}, SGLang's default at {at}, "
                "v0.4.6.post2 server_args.py:228-240; P is below the capacity: an upper bound)"
            )
        slack = round(capacity.bytes * (1 - mfs))
    room = slack - ACTIVATION_ROOM
    if room <= 0:
        return None, ""
    return room, (
        f"it comes out of the slack ({REQ_TO_TOKEN_ORDER_CITATION}), {origin} = {g(slack)}, less "
        f"{HEADROOM_DOCS_CAP_GIB} GiB for activations (SGLang's tuning guide) = {g(room)}"
    )


def _gpus_seen(evidence: Evidence) -> int | None:
    """`GPU 3` in the OOM text: rank r runs on GPU base_gpu_id + r, so at least 4 ranks."""
    oom = evidence.oom
    index = int_or(oom.values.get("gpu"), None) if oom is not None else None
    return None if index is None else index + 1


def _two_digits(value: float) -> int:
    """Rounded down to two significant digits (1,314,046 -> 1,300,000): a flag value."""
    if value < 100:
        return max(1, math.floor(value))
    scale: int = 10 ** (len(str(math.floor(value))) - 2)
    return int(math.floor(value / scale) * scale)


SERVING_PHASES = (Phase.UNKNOWN, Phase.SERVING, Phase.WARMUP)


def oversized_forward(evidence: Evidence, phase: Phase) -> Result | None:
    """An ask of FORWARD_ASK_MIN_GIB or more with FORWARD_FREE_MIN_GIB or more free, after the
    pools (or where the paste does not say): the chunk scales it; lowering mfs by the whole
    shortfall would give up that much KV pool for one tensor."""
    oom = evidence.oom
    if oom is None or evidence.refusal is not None or phase not in SERVING_PHASES:
        return None
    requested, free = oom.sizes.get("requested"), oom.sizes.get("free")
    if requested is None or free is None or requested.bytes <= free.bytes:
        return None
    if requested.bytes < FORWARD_ASK_MIN_GIB * GIB or free.bytes < FORWARD_FREE_MIN_GIB * GIB:
        return None
    share = free.bytes / requested.bytes
    short, numbers = requested.bytes - free.bytes, {"requested": requested.text, "free": free.text}
    finding = evidence.said("oversized_forward", oom.line, bytes=short, **numbers)
    chunk = evidence.int_param("chunked_prefill_size")
    value = None
    if chunk is not None and chunk > 0:
        fit = int(chunk * share)
        value = power_of_two_below(fit + 1)  # the largest power of two up to fit
    origin = f"{chunk} x {share:.2f} = {int(chunk * share)} -> {value}" if value and chunk else ""
    said = f"; {origin}, a power of two" if origin else "; the chunk is not in the log"
    parts = {"free": g(free.bytes), "requested": g(requested.bytes), "share": share}
    lever = evidence.advice("chunked_prefill_size.forward", value=value, chunk=said, **parts)
    return [finding], [lever]
