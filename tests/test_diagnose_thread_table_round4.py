"""diagnose on a fourth set of SGLang threads, and the three standing misses of the third set
(olmocr#50, sglang PR #38861, sglang#8538). One test a thread, its URL first; the fragment is the
thread's own lines, cut to what the answer needs (public data). The before/after verdicts are in
docs/diagnose.md ("Measured on SGLang threads")."""

from __future__ import annotations

from memledger.render.diagnose import render_text
from memledger.units import GIB
from tests.test_diagnose_thread_table import _diagnose, _ids, _knobs
from tests.test_formats_pasted_fragments import FRAGMENTS

OLMOCR_50 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.93 GiB. GPU 0 has a total "
    "capacity of 79.14 GiB of which 3.79 GiB is free. Process 13118 has 75.33 GiB memory in use. "
    "Of the allocated memory 73.96 GiB is allocated by PyTorch, with 34.50 MiB allocated in "
    "private pools (e.g., CUDA Graphs), and 639.99 MiB is reserved by PyTorch but unallocated."
)
"""https://github.com/allenai/olmocr/issues/50 (the same paste in sgl-project/sglang#4547)."""


def test_olmocr_50_graph_memory_in_the_oom_text_places_it_in_serving() -> None:
    # the maintainer's lever was --max-running-requests ('limits the concurrent batch size');
    # mfs 0.7 did not help. 34.50 MiB in PyTorch's private pools are CUDA graphs, captured after
    # the weights and the KV pool, so the OOM is a serving one and SGLang's troubleshooting guide
    # leads: a batch lever first, the fraction after it (its value needs the reporter's log: 28
    # came from the 30 SGLang had picked)
    result = _diagnose([OLMOCR_50])
    assert result.phase.value == "serving"
    (placed,) = [f for f in result.findings if f.id == "phase_from_graphs"]
    assert "34.50 MiB in PyTorch's private pools" in placed.message
    assert result.verdict.startswith(
        "OOM during serving: 1.14 GiB short; lower --max-running-requests or lower "
        "--chunked-prefill-size (SGLang's troubleshooting guide), or lower --mem-fraction-static "
        "by at least 0.02"
    )
    assert [s.knob for s in result.suggestions][:2] == [
        "max_running_requests",
        "chunked_prefill_size",
    ]


def test_an_oom_text_without_graph_memory_keeps_an_unknown_phase_conditional() -> None:
    # the same numbers without `private pools`: nothing places the OOM after loading, so the
    # fraction's step is conditional and never a `try:` flag, even with the fraction in the log
    text = OLMOCR_50.replace(", with 34.50 MiB allocated in private pools (e.g., CUDA Graphs)", "")
    result = _diagnose(
        [
            "[2025-03-21 10:00:00] server_args=ServerArgs(model_path='m', "
            "mem_fraction_static=0.88)",
            text,
        ]
    )
    assert result.phase.value == "unknown" and "phase_from_graphs" not in _ids(result)
    assert _knobs(result)["mem_fraction_static"] is None
    assert "if it came after loading, lower --mem-fraction-static by at least 0.02 (to 0.86" in (
        result.verdict
    )
    assert "try:" not in render_text(result)


def test_graph_memory_does_not_override_a_frame_that_places_the_oom() -> None:
    # a load frame wins over the private-pool reading (the frames are the paste's own word)
    result = _diagnose(
        [
            '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 643, in '
            "load_model",
            OLMOCR_50,
        ]
    )
    assert result.phase.value == "load" and "phase_from_graphs" not in _ids(result)


def test_8538_fa3_graphs_of_6_19_gb_name_the_page_table_copies() -> None:
    # sglang#8538 (Llama-4 Maverick, commit 7c96971, FA3), whose fragment is held once, in
    # tests/data/pasted_fragments.toml: the graphs took 6.19 GB; FA3 copied the page table for
    # every captured bs (v0.4.10.post1 flashattention_backend.py:1463-1465), fixed by PRs #8567
    # and #8579 in 0.4.10.post2
    (text,) = [f["text"] for f in FRAGMENTS if f["url"].endswith("/issues/8538")]
    result = _diagnose(text.strip().splitlines())
    (graphs,) = [f for f in result.findings if f.id == "graph_memory"]
    assert graphs.bytes == round(6.19 * GIB)
    assert "if the attention backend is FA3" in graphs.message
    assert "the release is 0.4.10.post1 or older" in graphs.message
    assert (
        "with FA3 up to 0.4.10.post1 that is its per-bs page tables (sglang#8538), fixed in "
        in (result.verdict)
    )
    assert "0.4.10.post2" in result.verdict


def test_graphs_at_a_release_past_the_fa3_fix_get_no_such_note() -> None:
    # a 0.5.19+ log (its server_args dict and `elapsed=` load end) cannot be 0.4.10.post1
    result = _diagnose(
        [
            "[2026-05-01 10:00:00] server_args={'model_path': 'm', 'tp_size': 8}",
            "[2026-05-01 10:00:40 TP0] Load weight end. elapsed=30.00 s, type=LlamaForCausalLM, "
            "avail mem=56.50 GB, mem usage=83.00 GB.",
            "[2026-05-01 10:01:34 TP0] Capture cuda graph end. Time elapsed: 19.50 s. mem "
            "usage=6.19 GB. avail mem=5.24 GB.",
        ]
    )
    assert "graph_memory" not in _ids(result)


def test_graphs_with_another_attention_backend_get_no_fa3_note() -> None:
    result = _diagnose(
        [
            "[2025-07-29 18:14:00] server_args=ServerArgs(model_path='m', "
            "attention_backend='flashinfer')",
            "[2025-07-29 18:14:43 TP0] Capture cuda graph end. Time elapsed: 19.50 s. mem "
            "usage=6.19 GB. avail mem=5.24 GB.",
        ]
    )
    assert "graph_memory" not in _ids(result)


def test_37712_one_huge_prefill_allocation_with_room_left_is_the_chunk() -> None:
    # https://github.com/sgl-project/sglang/issues/37712 (GLM-5.3-Flash, 4 x B300): 73.65 GiB
    # asked with 50.40 GiB free in the DSA indexer; fixed by chunking its [chunk tokens x KV
    # rows] logits (sglang PR #38507). The paste elides the capacity (`GPU 1 ... 50.40 GiB`)
    result = _diagnose(
        [
            "dsa_indexer_kpool.py, line 998, in _get_topk_ragged_kpool_plan",
            "    logits = deep_gemm.fp8_mqa_logits(",
            "tvm.error.InternalError: CUDA out of memory. Tried to allocate 73.65 GiB. GPU 1 ... "
            "50.40 GiB is free.",
        ]
    )
    assert result.shortfall_bytes == round(73.65 * GIB) - round(50.40 * GIB)
    assert "oversized_forward" in _ids(result)
    assert "one allocation is a long prefill's working set" in result.verdict
    assert "lower --chunked-prefill-size" in result.verdict
    assert "mem_fraction_static" not in _knobs(result)


def test_a_prefill_chunk_in_the_log_gives_the_chunk_a_value() -> None:
    # 8192 x 50.40 / 73.65 = 5,605 -> 4096 (a power of two below)
    result = _diagnose(
        [
            "[2026-09-03 10:00:00] server_args=ServerArgs(model_path='m', "
            "chunked_prefill_size=8192)",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 73.65 GiB. GPU 1 has a "
            "total capacity of 267.00 GiB of which 50.40 GiB is free.",
        ]
    )
    assert _knobs(result)["chunked_prefill_size"] == 4096


def test_omni_293_a_refusal_quoted_without_its_advice_is_still_the_refusal() -> None:
    # https://github.com/sgl-project/sglang-omni/issues/293: at --mem-fraction-static 0.8
    # `RuntimeError: Not enough memory`, the server refused to launch; 0.85 booted
    result = _diagnose(["RuntimeError: Not enough memory"])
    assert (result.outcome, result.phase.value) == ("oom", "kv_sizing")
    assert "raise --mem-fraction-static" in result.verdict
    # and another library's `Not enough memory ...` sentence is not SGLang's refusal
    other = _diagnose(["RuntimeError: Not enough memory to handle 4096 prefill tokens"])
    assert other.phase.value != "kv_sizing"


def test_5081_a_prefill_raise_with_its_counts_on_one_line_is_page_accounting() -> None:
    # https://github.com/sgl-project/sglang/pull/5081 ('Fix prefill OOM error in the case of
    # large page size'): 5,120 tokens free for 1,444 asked, the counts pasted without newlines
    result = _diagnose(
        [
            "RuntimeError: Prefill out of memory. Try to lower your batch size.Try to allocate "
            "1444 tokens.Avaliable tokens:5120self.token to kv pool allocator.available "
            "size()=5120self.tree cache.evictable size()=0",
        ]
    )
    (note,) = [f for f in result.findings if f.id == "pool_not_full"]
    assert "5,120 tokens free for the 1,444 asked" in note.message
    assert "mem_fraction_static" not in _knobs(result)
    assert "but was not full" in result.verdict


def test_33773_a_mamba_slot_the_radix_cache_could_not_get_is_the_mamba_pool() -> None:
    # https://github.com/sgl-project/sglang/pull/33773: `AssertionError: Can not alloc mamba
    # cache` under memory pressure (v0.5.8 mem_cache/mamba_radix_cache.py:460, :651); the pool
    # of mamba slots, not a GPU allocation, and no crash of unknown cause
    result = _diagnose(["AssertionError: Can not alloc mamba cache"])
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert "mamba_slots" in _ids(result)
    assert "raise --max-mamba-cache-size" in result.verdict


def test_37155_memory_freed_after_the_pool_names_the_draft_head() -> None:
    # https://github.com/sgl-project/sglang/pull/37155: 1.83 GB arrived after `Memory pool end`
    # (the MTP draft's own embed/lm_head, dropped after the pool was sized): 13,303 tokens
    result = _diagnose(
        [
            "Memory pool end.                          avail mem=0.29 GB",
            "Capture target verify CUDA graph begin.   avail mem=2.12 GB",
            "max_total_num_tokens=13303, context_len=8192, available_gpu_mem=1.82 GB",
        ]
    )
    (rose,) = [f for f in result.findings if f.id == "free_rose_after_pool"]
    assert rose.bytes == round(2.12 * GIB) - round(0.29 * GIB)
    assert "speculative draft's own embed/lm_head" in result.verdict
    assert "sglang PR #37155" in result.verdict


def test_20888_an_aiter_workspace_oom_is_still_read_as_the_fraction() -> None:
    # https://github.com/sgl-project/sglang/pull/20888 (AMD, AITER): a 16.25 GiB workspace sized
    # by the 131,072-token context, fixed by capping it at the KV pool's tokens. The two pasted
    # lines do not name the backend: memledger's answer stays the conditional fraction (a miss
    # this test records, not a claim)
    result = _diagnose(
        [
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.25 GiB.",
            "GPU 0 has a total capacity of 255.98 GiB of which 4.23 GiB is free.",
        ]
    )
    assert result.phase.value == "unknown"
    assert "if it came after loading, lower --mem-fraction-static by at least 0.05" in (
        result.verdict
    )
    assert "context_length" not in _knobs(result)


def test_23580_a_capture_invalidated_by_another_stream_is_not_memory() -> None:
    # https://github.com/sgl-project/sglang/issues/23580 (Hy3-preview on MI300X/MI355X): AITER's
    # custom all-reduce launches on its own stream during HIP graph capture; fixed by
    # SGLANG_USE_AITER_AR=false (sglang PR #23581); eager mode worked. SGLang's own re-raise
    # `Capture cuda graph failed` places it in graph capture
    result = _diagnose(
        [
            "Exception: Capture cuda graph failed: HIP error: operation failed due to a previous "
            "error during capture",
            "Search for `hipErrorStreamCaptureInvalidated' in https://docs.nvidia.com/cuda/"
            "cuda-runtime-api/group__HIPRT__TYPES.html for more information.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("crash", "graph_capture")
    assert "capture_invalidated" in _ids(result)
    assert "SGLANG_USE_AITER_AR=0" in result.verdict
    assert result.suggestions == []


def test_29575_the_summary_line_is_the_kv_pool_it_states() -> None:
    # https://github.com/sgl-project/sglang/issues/29575: "max_total_num_tokens=2086558 ... means
    # KV Cache Available total is 2M?"; the maintainer: "Yes, it does."
    result = _diagnose(
        [
            "[2026-06-28 15:16:45] max_total_num_tokens=2086558, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=33, context_len=256000, "
            "available_gpu_mem=17.22 GB",
        ]
    )
    assert result.verdict == "ready: no memory problem found"
    (capacity,) = [f for f in result.findings if f.id == "kv_capacity"]
    assert "the KV pool holds 2,086,558 tokens a rank" in capacity.message
    assert "8.2 requests of the full 256,000-token context" in capacity.message
    assert "max_running_requests=33" in capacity.message
