"""The GPU capacities that give a printed mem_fraction_static (memledger.compare.upgrade_gpu):
SGLang's default over a span of capacities as monotone pieces, searched by bisection
(memledger.sizing.capacity), against the default evaluated at every MiB of the span."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from memledger.app.load import load_parsed
from memledger.app.options import LoadOptions
from memledger.compare.upgrade_gpu import (
    GPU_WINDOW_MIB,
    MFS_MATCH,
    fraction_defaults_at,
    fraction_pieces,
    infer_gpu,
)
from memledger.sglang.backend_defaults import LARGE_GPU_MFS_RULES
from memledger.sglang.release_markers import VersionRange, given_release
from memledger.sglang.releases import version_code
from memledger.sizing import SizingInputs, sizing_inputs
from memledger.sizing.capacity import CapacityPiece, capacities_giving, capacities_where
from memledger.units import GIB, MIB
from tests.conftest import REAL_LOGS, require_real_logs

GROK2 = REAL_LOGS / "single" / "022-grok2-tp8-h100-k8s-v0.5.2rc2.log"
QWEN25 = REAL_LOGS / "single" / "012-qwen25-3b-tp1-notag-nohup-nocudagraph.log"


def _every_mib(inputs: SizingInputs, release: VersionRange) -> range | None:
    """The answer by evaluating the default at each MiB from P to P + 6 GiB (the old search)."""
    printed = inputs.knobs.get("mem_fraction_static")
    assert isinstance(printed, float) and inputs.load_begin is not None
    start = math.ceil(inputs.load_begin.bytes / MIB)
    hits = [
        g
        for g in range(start, start + GPU_WINDOW_MIB + 1)
        if any(abs(printed - c) <= MFS_MATCH for _, c in fraction_defaults_at(inputs, release, g))
    ]
    return range(hits[0], hits[-1] + 1) if hits else None


def _inputs(path: object) -> SizingInputs:
    require_real_logs()
    return sizing_inputs(load_parsed(path, LoadOptions()))  # type: ignore[arg-type]


def _moved(inputs: SizingInputs, p_gib: float, release: str, **knobs: Any) -> SizingInputs:
    """The log's inputs with P at `p_gib` and the printed fraction one of the defaults `release`
    gives 2,000 MiB above it (so a capacity in the window gives it)."""
    assert inputs.load_begin is not None
    load_begin = replace(inputs.load_begin, bytes=int(p_gib * GIB))
    moved = replace(inputs, load_begin=load_begin, knobs={**inputs.knobs, **knobs})
    gpu = math.ceil(load_begin.bytes / MIB) + 2000
    found = fraction_defaults_at(moved, given_release(version_code(release)), gpu)
    value = found[-1][1]
    return replace(moved, knobs={**moved.knobs, "mem_fraction_static": value})


@pytest.mark.parametrize(
    ("p_gib", "release", "speculative"),
    [
        (79.5, "0.4.6", None),  # across 80 GiB: the TP step, then 13 GiB or 0.88
        (93.0, "0.4.6", None),  # across 96 GiB: 0.88, then (G - 18 GiB) / G
        (150.0, "0.4.7", "EAGLE"),  # 0.4.7's 20 GiB speculative reserve, 0.4.7.post1's buckets
        (176.0, "0.4.7", None),  # across 180,000 MiB: 0.79 above
        (196.0, "0.4.6", None),  # across 198 GiB: min(blend, (G - 18 GiB) / G) turns to falling
        (240.0, "0.4.6", None),  # the blend alone, falling with G
        (79.5, "0.4.7", "EAGLE"),  # 0.4.7's x 0.95 step, agreeing or not with the bucket
        (100.0, "0.4.8", None),  # the buckets
    ],
)
def test_large_gpu_rules_give_what_every_mib_gives(
    p_gib: float, release: str, speculative: str | None
) -> None:
    """The 0.4.6 / 0.4.7 post-release rules above 80 GiB (memledger.sglang.backend_defaults),
    pinned and as the log's own range, the same capacities as the per-MiB search."""
    inputs = _moved(_inputs(GROK2), p_gib, release, speculative_algorithm=speculative)
    code = version_code(release)
    for found in (given_release(code), VersionRange(first=code, last=code + 2)):
        assert infer_gpu(inputs, found) == _every_mib(inputs, found), (p_gib, release, found)
    assert infer_gpu(inputs, given_release(code)) is not None


def test_real_logs_give_what_every_mib_gives() -> None:
    """Grok-2 (0.831 printed) and Qwen2.5-3B (0.836) at releases of each rule (TP step, buckets,
    the 0.5.3 and 0.5.14 reserve formulas) and at their own ranges: the same capacities as the
    per-MiB search."""
    for path, releases in ((GROK2, ("0.4.5", "0.4.7", "0.5.2")), (QWEN25, ("0.5.3", "0.5.16"))):
        inputs = _inputs(path)
        for release in releases:
            found = given_release(version_code(release))
            assert infer_gpu(inputs, found) == _every_mib(inputs, found), (path.name, release)
        assert infer_gpu(inputs, inputs.version) == _every_mib(inputs, inputs.version)
    grok = _inputs(GROK2)
    assert infer_gpu(grok, given_release(version_code("0.5.2"))) is not None


def test_a_falling_piece_is_searched_from_the_other_end() -> None:
    """A piece whose default falls with the capacity: the span where it lies in [low, high)."""
    falling = CapacityPiece(100, 199, "test", lambda g: 1.0 - g / 1000, rising=False)
    # 1 - g / 1000 in [0.8505, 0.8705): g from 130 to 149
    assert capacities_giving([falling], 0.8505, 0.8705) == [range(130, 150)]
    rising = CapacityPiece(100, 199, "test", lambda g: g / 1000)
    assert capacities_giving([rising], 0.1505, 0.1705) == [range(151, 171)]
    assert capacities_where([rising], lambda v: v >= 0.5, lambda v: v >= 0.6) == []


def test_each_large_gpu_rule_has_its_shapes_as_data() -> None:
    """Every rule's capacities where the formula changes shape: 80 GiB for all, then 96 GiB and
    180,000 MiB (0.4.7) for the blend rules (v0.4.6.post2 server_args.py:228-247, v0.4.7
    :253-283)."""
    shapes = {rule.id: rule.bounds_mib for rule in LARGE_GPU_MFS_RULES}
    assert shapes == {
        "mfs_large_gpu_13g": (81921,),
        "mfs_large_gpu_48g": (81921, 98305),
        "mfs_large_gpu_48g_spec": (81921, 98305, 180001),
    }
    inputs = _moved(_inputs(GROK2), 196.0, "0.4.6")
    start = math.ceil(196.0 * 1024)
    pieces = fraction_pieces(inputs, given_release(version_code("0.4.6")), start, start + 6144)
    blend = pieces[1]
    # 0.88 + 48 GiB x 0.12 / G = (G - 18 GiB) / G at G = 48 + 18 / 0.12 = 198 GiB (202,752 MiB)
    assert [p.rising for p in blend] == [True, False]
    assert abs(blend[1].first_mib - 202752) <= 1
