"""Five families of what a paste says about memory without the numbers to place it: a failure said
to come during CUDA-graph capture (the fraction is that stage's lever too), an allocator text whose
`this process has` figure is below the process's own PyTorch reserve (not another process), SGLang's
HiCache host pool pinned by each rank, the KV cache said to be kept after requests finish (the radix
cache, not a leak), and SGLang's own arithmetic said to count something twice. Every input is a
synthetic line in its family's shape."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import FindingId
from memledger.sglang.errors import BY_NAME
from memledger.sglang.failure_rules import Phase
from tests.conftest import diagnose_paste

P = "[2026-03-02 07:04:51 TP0] "


@pytest.mark.parametrize(
    "text",
    [
        "At mfs 0.92 the server OOMs during CUDA graph capture and restarts in a loop.\n",
        "it crashes with out of memory while capturing cuda graphs on the 32GB card\n",
        "- OOM in cuda graph capture (decode graphs, ~5 GB during capture)\n",
        P + "Capture cuda graph begin. This can take up to several minutes. avail mem=3.10 GB\n"
        "RuntimeError: CUDA error: out of memory\n",
    ],
)
def test_a_capture_oom_without_sizes_keeps_the_fraction_among_its_levers(text: str) -> None:
    """SGLang's own capture-failure advice lists a smaller --mem-fraction-static first (v0.5.8
    model_executor/cuda_graph_runner.py:932-936): with no sizes to value a graph cap, the
    fraction stays a lever beside it."""
    result = diagnose_paste(text)
    assert (result.outcome, result.phase) == ("oom", Phase.GRAPH_CAPTURE)
    knobs = [s.knob for s in result.suggestions]
    assert "mem_fraction_static" in knobs and "cuda_graph_max_bs" in knobs
    fraction = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert fraction.direction.value == "lower" and fraction.value is None


_OWN = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
    "capacity of 79.10 GiB of which 90.00 MiB is free. Including non-PyTorch memory, this process "
    "has {own} memory in use. Of the allocated memory 76.50 GiB is allocated by PyTorch, and "
    "40.00 MiB is reserved by PyTorch but unallocated.\n"
)


@pytest.mark.parametrize("own", ["0 bytes", "512.00 MiB", "12.00 GiB"])
def test_a_process_figure_below_its_own_pytorch_reserve_is_not_another_process(own: str) -> None:
    """NVML's per-process figure can read 0 in a container while PyTorch allocated 76.50 GiB:
    the card is not shown to be another process's."""
    result = diagnose_paste(_OWN.format(own=own))
    assert result.outcome == "oom"
    assert not any(f.id is FindingId.OTHER_PROCESSES for f in result.findings)


def test_a_process_figure_above_its_reserve_still_shows_another_process() -> None:
    text = _OWN.format(own="2.00 GiB").replace("76.50 GiB is allocated", "1.50 GiB is allocated")
    result = diagnose_paste(text)
    held = next(f for f in result.findings if f.id is FindingId.OTHER_PROCESSES)
    assert held.bytes is not None and held.bytes > 70 * 2**30


@pytest.mark.parametrize(
    "paste",
    [
        "python -m sglang.launch_server --model-path m --tp 4 --enable-hierarchical-cache "
        "--hicache-size 40\n",
        P + "server_args=ServerArgs(model_path='m', tp_size=4, enable_hierarchical_cache=True)\n",
        "with HiCache on four ranks the host's page cache fills and the start fails\n",
    ],
)
def test_hicache_says_every_rank_pins_its_own_host_pool(paste: str) -> None:
    result = diagnose_paste(paste)
    said = [f.message for f in result.findings if f.id is FindingId.REPORTED]
    assert any("each rank pins its own host pool" in m and "ranks x X" in m for m in said), said


@pytest.mark.parametrize(
    "text",
    [
        "many requests do not properly release KV cache memory even after completing",
        "The KV cache is not freed after the request finishes",
        "token usage keeps increasing until the server hangs",
        "and the #token count accumulates: token usage accumulates to 0.96",
        "请求结束后 kv cache 不释放",
    ],
)
def test_kv_said_kept_after_requests_finish_is_read_as_the_radix_cache(text: str) -> None:
    assert BY_NAME["said_kv_held"].find(text) is not None
    result = diagnose_paste(
        [text, P + "Decode batch. #running-req: 36, #token: 958017, token usage: 0.96"]
    )
    said = [f.message for f in result.findings if f.id is FindingId.REPORTED]
    assert any("radix (prefix) cache as evictable" in m for m in said), said


@pytest.mark.parametrize(
    "line",
    [
        P + "Decode batch. #running-req: 36, #token: 958017, token usage: 0.96, #queue-req: 3",
        "the KV cache is released when the request finishes",
        "please keep the KV cache dtype at fp8",
    ],
)
def test_sglangs_own_token_usage_line_and_a_release_are_not_the_kv_said_kept(line: str) -> None:
    assert BY_NAME["said_kv_held"].find(line) is None


@pytest.mark.parametrize(
    "text",
    [
        "so the peers' pools are subtracted twice and the guard refuses",
        "Dual-pool double-counting: each pool applies the same overhead check",
        "the draft KV is counted twice in the budget",
        "显存预算里重复计算了 draft 的权重",
    ],
)
def test_memory_said_to_be_counted_twice_is_an_arithmetic_defect_not_a_short_gpu(
    text: str,
) -> None:
    assert BY_NAME["said_double_counted"].find(text) is not None
    result = diagnose_paste(text + "\n")
    said = [f.message for f in result.findings if f.id is FindingId.REPORTED]
    assert any("counted twice" in m and "upgrade" in m for m in said), said


@pytest.mark.parametrize(
    "text", ["the target model is loaded twice", "we run two replicas, twice the memory"]
)
def test_a_model_loaded_twice_is_not_an_arithmetic_said_to_count_twice(text: str) -> None:
    assert BY_NAME["said_double_counted"].find(text) is None
