"""The GPU of a log that prints no capacity: SGLang's mem_fraction_static default at a release,
per capacity (`fraction_defaults_at`) and over a span of capacities as monotone pieces
(`fraction_pieces`), searched by memledger.sizing.capacity's bisection (`infer_gpu`). Pure.

Before 0.5.3 the default is memledger.sglang.mfs_defaults' one rule; where a version code
stands for post releases whose rules differ (0.4.6 and 0.4.6.post2 above 80 GiB; 0.4.7 and
0.4.7.post1), each post release's rule is a candidate (memledger.sglang.backend_defaults
LARGE_GPU_MFS_RULES, with the capacities where its formula changes shape).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from memledger.compare.upgrade_releases import (
    FIRST_FORMULA,
    MFS,
    deciding_release,
    default_fraction,
)
from memledger.sglang.backend_defaults import LargeGpuMfsRule, large_gpu_fraction, large_gpu_rules
from memledger.sglang.mfs_defaults import (
    BOTH_AT,
    MFS_BUCKET_RESERVE,
    MFS_TP_MAX_GPU_MIB,
    bucket_reserve_gib,
    legacy_rules,
    tp_step,
)
from memledger.sglang.release_markers import VersionRange
from memledger.sizing import SizingInputs, base_settings
from memledger.sizing.capacity import (
    CapacityPiece,
    capacities_where,
    first_true,
    fixed_piece,
    hull,
    reserve_piece,
)
from memledger.sizing.defaults import capacity_pieces
from memledger.units import MIB, float_or, int_or

MFS_MATCH = 0.0005
"""A printed fraction within this of a computed default is that default (SGLang rounds to 3)."""
GPU_WINDOW_MIB = 6 * 1024
"""How far above P (free before the weights) the GPU's capacity may lie when it is inferred:
the CUDA context, NCCL buffers and other processes take that much at most (an assumption)."""


class _Knobs:
    """The server_args the pre-0.5.3 defaults read."""

    def __init__(self, inputs: SizingInputs) -> None:
        knobs = inputs.knobs
        self.parallel = int_or(knobs.get("tp_size"), 1) * int_or(knobs.get("pp_size"), 1)
        algorithm = str(knobs.get("speculative_algorithm") or "")
        self.speculative = bool(knobs.get("speculative_algorithm"))
        self.standalone = algorithm.upper() == "STANDALONE"
        self.dp_attention = bool(knobs.get("enable_dp_attention"))

    def bucket_mib(self, gpu_mib: int, *, standalone: bool) -> float:
        gib = bucket_reserve_gib(
            gpu_mib,
            parallel=self.parallel,
            speculative=self.speculative,
            dp_attention=self.dp_attention,
            standalone=standalone,
        )
        return gib * 1024


def fraction_defaults_at(
    inputs: SizingInputs, release: VersionRange, gpu_mib: int
) -> list[tuple[str, float]]:
    """SGLang's mem_fraction_static defaults for this log at `release` (a pinned release), each
    labelled with the post releases it holds for where they differ: where the one rule
    (memledger.sglang.mfs_defaults) gives no value at code 0.4.6 or 0.4.7 (above 80 GiB, or
    0.4.7 vs 0.4.7.post1), each post release's rule (memledger.sglang.backend_defaults) does."""
    found = default_fraction(inputs, release, gpu_mib)
    if found is not None:
        return [("", found)]
    code = release.first
    if code is None or code != release.last:
        return []
    knobs = _Knobs(inputs)
    values: dict[float, list[str]] = {}
    for rule in large_gpu_rules(code):
        value = large_gpu_fraction(
            rule, gpu_mib, tp_step(knobs.parallel), speculative=knobs.speculative
        )
        values.setdefault(value, []).extend(rule.releases)
    if code == BOTH_AT:
        # 0.4.7.post1 has the capacity buckets already (v0.4.7.post1 server_args.py:261-300)
        reserve = knobs.bucket_mib(gpu_mib, standalone=knobs.standalone)
        values.setdefault(round((gpu_mib - reserve) / gpu_mib, 3), []).append("0.4.7.post1")
    if len(values) == 1:
        return [("", next(iter(values)))]
    return [("/".join(names), value) for value, names in values.items()]


def _bucket_pieces(
    knobs: _Knobs, low: int, high: int, rule: str, *, standalone: bool
) -> list[CapacityPiece]:
    """Rule mfs_default_buckets: one reserve per capacity bucket."""
    bounds = sorted(below for below, _, _ in MFS_BUCKET_RESERVE if low < below <= high)
    starts = [low, *bounds]
    ends = [*(b - 1 for b in bounds), high]
    return [
        reserve_piece(start, end, knobs.bucket_mib(start, standalone=standalone), rule)
        for start, end in zip(starts, ends, strict=True)
    ]


def _agreeing(piece: CapacityPiece, value: float) -> CapacityPiece:
    """Code 0.4.7's one rule: a default only where 0.4.7's step and 0.4.7.post1's bucket agree.
    Below or above the step the bucket value moves off the scale, so the piece stays rising."""

    def at(gpu_mib: int) -> float:
        bucket = piece.default_at(gpu_mib)
        return value if bucket == value else (-1.0 if bucket < value else 2.0)

    return CapacityPiece(piece.first_mib, piece.last_mib, piece.rule, at)


def _legacy_pieces(inputs: SizingInputs, code: int, low: int, high: int) -> list[CapacityPiece]:
    """default_fraction before 0.5.3 (memledger.sglang.mfs_defaults at `code`), as pieces."""
    knobs = _Knobs(inputs)
    rules = legacy_rules(code)
    step = tp_step(knobs.parallel)
    if rules == ("mfs_default_tp",):
        return [fixed_piece(low, high, step, rules[0])]
    top = min(high, MFS_TP_MAX_GPU_MIB)
    if rules == ("mfs_default_tp_80g",):
        return [fixed_piece(low, top, step, rules[0])] if low <= top else []
    if rules == ("mfs_default_buckets",):
        return _bucket_pieces(knobs, low, high, rules[0], standalone=False)
    if not rules or low > top:
        return []
    agreed = step * 0.95 if knobs.speculative else step
    buckets = _bucket_pieces(knobs, low, top, "mfs_default_tp_80g", standalone=False)
    return [_agreeing(piece, agreed) for piece in buckets]


def _large_gpu_pieces(
    rule: LargeGpuMfsRule, knobs: _Knobs, low: int, high: int
) -> list[CapacityPiece]:
    """One post release's rule over [low, high]: a piece per shape (rule.bounds_mib), and the
    blend above 96 GiB split where min(blend, (G - reserve) / G) turns from rising to falling."""
    value = partial(
        large_gpu_fraction,
        rule,
        table_value=tp_step(knobs.parallel),
        speculative=knobs.speculative,
    )
    bounds = sorted(b for b in rule.bounds_mib if low < b <= high)
    starts = [low, *bounds]
    ends = [*(b - 1 for b in bounds), high]
    pieces: list[CapacityPiece] = []
    for start, end in zip(starts, ends, strict=True):
        peak = first_true(start, end + 1, _falls_after(value, end))
        if peak > start:
            pieces.append(CapacityPiece(start, peak - 1, rule.id, value))
        if peak <= end:
            pieces.append(CapacityPiece(peak, end, rule.id, value, rising=False))
    return pieces


def _falls_after(value: Callable[[int], float], end: int) -> Callable[[int], bool]:
    """Whether the default falls from a capacity to the next, inside a shape that ends at `end`
    (it rises, then may fall once: min(blend, (G - reserve) / G))."""
    return lambda gpu_mib: gpu_mib < end and value(gpu_mib + 1) < value(gpu_mib)


def fraction_pieces(
    inputs: SizingInputs, release: VersionRange, low: int, high: int
) -> list[list[CapacityPiece]]:
    """`fraction_defaults_at` over the capacities [low, high]: one list of pieces per candidate
    rule (two where post releases of a pinned 0.4.6 or 0.4.7 differ)."""
    code = release.first
    if code is not None and code == release.last and large_gpu_rules(code):
        knobs = _Knobs(inputs)
        found = [_large_gpu_pieces(rule, knobs, low, high) for rule in large_gpu_rules(code)]
        if code == BOTH_AT:
            found.append(
                _bucket_pieces(knobs, low, high, "mfs_default_buckets", standalone=knobs.standalone)
            )
        return found
    code = deciding_release(release)
    if code is None:
        return []
    if code < FIRST_FORMULA:
        return [_legacy_pieces(inputs, code, low, high)]
    unset = {name: value for name, value in inputs.knobs.items() if name != MFS}
    probe = replace(inputs, version=release, knobs=unset)
    return [capacity_pieces(probe, base_settings(probe), low, high, known_only=True)]


def infer_gpu(inputs: SizingInputs, release: VersionRange) -> range | None:
    """GPU capacities (MiB) from P up to GPU_WINDOW_MIB above it whose default at `release`
    is the printed mem_fraction_static; None when none is (or P or the fraction is missing)."""
    printed = float_or(inputs.knobs.get(MFS), None)
    if printed is None or inputs.load_begin is None:
        return None
    start = math.ceil(inputs.load_begin.bytes / MIB)
    spans = [
        span
        for pieces in fraction_pieces(inputs, release, start, start + GPU_WINDOW_MIB)
        # |printed - default| <= MFS_MATCH, as two tests that hold from some default up
        for span in capacities_where(
            pieces, lambda v: printed - v <= MFS_MATCH, lambda v: v - printed > MFS_MATCH
        )
    ]
    return hull(spans)
