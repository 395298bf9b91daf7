"""HiCache's host pools on one host: each rank pins its own --hicache-size GB of host RAM, so the
host holds the ranks x it (memledger.sglang.lifecycle HICACHE_SIZE_LOWER); SGLang allows a rank
(available RAM - 10 GiB) / the ranks on the host (v0.5.23 mem_cache/pool_host/base.py:28,
:84-108). With the host's RAM the reporter typed (GB), the largest --hicache-size that fits, and
the arithmetic."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from memledger.formulas import evaluate
from memledger.sglang.lifecycle import HOST_FREE_FIGURES
from memledger.sglang.release_markers import VersionRange
from memledger.units import GIB, count_or, float_or

_BARE = re.compile(r"log\.")

RESERVE = 10 * GIB
"""What SGLang keeps of the host's available RAM for everything else (v0.5.8
mem_cache/memory_pool_host.py:167-170 `ten_gb`; v0.5.23 pool_host/base.py:28)."""


def ranks_on_host(settings: Mapping[str, object]) -> int:
    """The ranks one host runs: tp x pp (x dp when DP is replicas, not DP attention) / nnodes."""
    dp = 1 if settings.get("enable_dp_attention") else count_or(settings.get("dp_size"), 1)
    world = count_or(settings.get("tp_size"), 1) * count_or(settings.get("pp_size"), 1) * dp
    return max(1, world // count_or(settings.get("nnodes"), 1))


def host_pool_size(
    settings: Mapping[str, object], typed: list[tuple[float, str, str]]
) -> tuple[int | None, str]:
    """The --hicache-size (GB a rank) that fits the host when the ranks x the current one does not
    (None: the paste lacks a figure, or the ranks' pools fit the host's total), and why; `typed`:
    (value, relation, said) of each host memory (GB) the reporter typed, the first taken."""
    host_gb = typed[0][0] if typed else None
    size, ranks = settings.get("hicache_size"), ranks_on_host(settings)
    if not isinstance(size, int | float) or isinstance(size, bool) or size <= 0:
        return None, "with --hicache-size unset the pool is --hicache-ratio x the GPU pool"
    held = f"{ranks} ranks x {size:g} GB = {ranks * size:g} GB of host RAM pinned"
    if host_gb is None:
        return None, f"{held}; for a value add the host's free memory (`free -g`)"
    room = host_gb * 1e9 - RESERVE
    most = math.floor(room / ranks / 1e9)
    arithmetic = f"({host_gb:g} GB - 10 GiB) / {ranks} ranks = {room / ranks / 1e9:.1f} GB a rank"
    if ranks * size * 1e9 > room:
        return most, f"{held}, over the host's {host_gb:g} GB less 10 GiB: {arithmetic}"
    return None, (
        f"{held} of the host's {host_gb:g} GB: under its total ({arithmetic} at most), but SGLang "
        "checks the RAM available (less page cache kept, other processes), so lower it until "
        "the ranks x it fits what `free` shows available, less 10 GiB"
    )


def refused_room(
    values: Mapping[str, object], settings: Mapping[str, object], version: VersionRange | None
) -> tuple[int | None, str] | None:
    """The --hicache-size a rank's host pool fits in after HiCache's refusal (its `free_gb` and
    `requested_gb`), by what the figure is at the releases the log may be
    (memledger.sglang.lifecycle.HOST_FREE_FIGURES): a value where they all give one, and why;
    None without the figures."""
    free, asked = values.get("free_gb"), values.get("requested_gb")
    if not isinstance(free, int | float) or not isinstance(asked, int | float):
        return None
    ranks = ranks_on_host(settings)
    log = {"free_gb": free, "ranks": ranks, "reserve_gb": RESERVE / 1e9}
    rows = [
        (row, float_or(evaluate(row.room, {"log": log}), 0.0))
        for row in HOST_FREE_FIGURES
        if (version is None or version.within(row.releases) is not False)
        and (row.refused_below or asked > free)  # the figure's own relation to the request
    ]
    said = "; ".join(
        f"at {row.releases.text} {row.figure} ({row.source}): {_BARE.sub('', row.room)} = "
        f"{room:.2f} GB a rank" for row, room in rows
    )  # fmt: skip
    shown = "" if "tp_size" in settings else " (1 assumed: no --tp-size shown)"
    said = f"the refusal's {free:g} GB free is, {said}; {ranks} rank(s) on the host{shown}"
    rooms = {math.floor(room) for _, room in rows}
    if len(rooms) == 1 and min(rooms) >= 1:
        return min(rooms), f"{said}: a rank's pool fits in {min(rooms)} GB"
    return None, f"{said}: for a value add the release (its figures differ)"
