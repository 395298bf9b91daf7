"""HiCache's host pool is per rank: every rank pins its own --hicache-size GB of host RAM, so a
host holds the ranks x it; with the host's RAM typed, the largest size that fits is the lever's
value, else its direction with the arithmetic. Synthetic lines in the shapes people paste them."""

from __future__ import annotations

import pytest

from memledger.input.reported import read_reported
from memledger.sglang.errors import BY_NAME
from memledger.sizing.host_pool import host_pool_size, ranks_on_host
from tests.conftest import PROSE_SHAPES, diagnose_paste

_CMD = (
    "python3 -m sglang.launch_server --model-path acme/Foo-8B --tp 4 "
    "--enable-hierarchical-cache --hicache-size 40"
)
_SAID = "with hicache=40GB and TP=4 the host RAM fills up (buff/cache) and init fails"


def _hicache_size(paste: str) -> tuple[int | float | None, str]:
    result = diagnose_paste(paste)
    lever = next(s for s in result.suggestions if s.knob == "hicache_size")
    assert lever.direction.value == "lower"
    return lever.value, lever.why


@pytest.mark.parametrize("host", ["Mem: 128GB", "the box has 128 GB RAM", "host memory: 128G"])
def test_ranks_times_the_size_over_the_host_gives_the_size_that_fits(host: str) -> None:
    value, why = _hicache_size(f"{host}\n{_CMD}\n{_SAID}\n")
    # (128 GB - 10 GiB) / 4 ranks = 29.3 GB a rank
    assert value == 29
    assert "4 ranks x 40 GB = 160 GB" in why and "/ 4 ranks = 29.3 GB a rank" in why


def test_ranks_times_the_size_under_the_hosts_total_is_a_direction_with_the_arithmetic() -> None:
    value, why = _hicache_size(f"Mem: 256GB\n{_CMD}\n{_SAID}\n")
    assert value is None
    assert "under its total" in why and "61.3 GB a rank at most" in why


def test_without_the_hosts_memory_the_lever_says_what_a_value_needs() -> None:
    value, why = _hicache_size(f"{_CMD}\n{_SAID}\n")
    assert value is None and "for a value add the host's free memory" in why


@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_the_host_pool_said_in_prose_is_per_rank_in_every_shape(shape: str) -> None:
    result = diagnose_paste(f"{_CMD}\n" + shape.format(s=_SAID) + "\n")
    assert "host pool is per rank" in result.verdict
    assert result.suggestions[0].knob == "hicache_size"


def test_sglangs_own_host_pool_line_names_no_host_problem() -> None:
    line = "Allocating 40.00 GB host memory for hierarchical KV cache."
    assert BY_NAME["said_hicache_host"].find(line) is None
    assert read_reported(line) == []  # its 40.00 GB is the pool, not the host's RAM


@pytest.mark.parametrize(
    ("text", "gb"),
    [("Mem:  251Gi  12Gi", 251.0), ("512 GB RAM, TP 8", 512.0), ("system memory is 1TB", 1000.0)],
)
def test_the_hosts_ram_is_read_as_people_type_it(text: str, gb: float) -> None:
    assert read_reported(text) == [{"knob": "host_memory_gb", "value": gb}]


def test_the_ranks_on_a_host_and_a_ratio_without_a_size() -> None:
    assert ranks_on_host({"tp_size": 8, "pp_size": 2, "nnodes": 2}) == 8
    assert ranks_on_host({"tp_size": 2, "dp_size": 4}) == 8  # DP replicas: each its own ranks
    assert ranks_on_host({"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}) == 8
    value, why = host_pool_size({"tp_size": 4, "hicache_ratio": 2.0}, [(256.0, "", "")])
    assert value is None and "--hicache-ratio" in why


@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_the_guard_said_to_count_pools_twice_is_the_guards_defect_not_a_size(shape: str) -> None:
    said = "each rank's HiCache host-pool guard subtracts the pools its peers pinned twice"
    result = diagnose_paste(f"{_CMD}\nMem: 128GB\n" + shape.format(s=said) + "\n")
    assert "counting pools twice" in " ".join(f.message for f in result.findings)
    assert "hicache_size" not in [s.knob for s in result.suggestions]
