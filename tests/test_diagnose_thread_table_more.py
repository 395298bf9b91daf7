"""diagnose on more SGLang threads with a known fix: speculative drafts (EAGLE/MTP), PD decode
workers, the KV pool's page accounting, thin headroom on a large GPU. One test a thread, the
thread's URL first; the fragment is what the thread pasted, cut to the lines the answer needs.
Public data. The thread-by-thread verdicts before and after the rules these tests pin are in
docs/diagnose.md ("Measured on SGLang threads")."""

from __future__ import annotations

from pathlib import Path

from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import diagnose
from memledger.input.parsing import parse_log
from memledger.render.diagnose import render_text
from tests.test_diagnose_thread_table import _diagnose, _ids, _knobs

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

THREAD_4602 = [
    "RuntimeError: Decode out of memory. Try to lower your batch size.",
    "Try to allocate 148 tokens.",
    "Avaliable tokens: 2048",
    "self.token_to_kv_pool_allocator.available_size()=2048",
    "self.tree_cache.evictable_size()=0",
]
"""sglang#4602's paste (DeepSeek-V3 at --page-size 64): SGLang's own counts under its raise."""


def test_4602_a_pool_with_room_is_its_page_accounting_not_its_size() -> None:
    # https://github.com/sgl-project/sglang/issues/4602, fixed by /pull/4913 (accurate new-page
    # counting): 2,048 tokens free for 148 asked, so the pool was not full; a decode step takes a
    # whole page a request at a page boundary, and v0.4.4's check counted tokens, not pages
    result = _diagnose(THREAD_4602)
    assert result.outcome == "oom"
    (note,) = [f for f in result.findings if f.id == "pool_not_full"]
    assert "2,048 tokens free" in note.message and "148 asked" in note.message
    assert "#4913" in note.message
    knobs = _knobs(result)
    assert knobs.get("page_size") == 1
    assert "mem_fraction_static" not in knobs  # a bigger pool is not the fix
    assert "--page-size" in result.verdict and "not full" in result.verdict


def test_a_pool_that_is_full_keeps_the_pool_levers() -> None:
    # the same shape with fewer tokens free than asked: the pool is what ran out
    result = _diagnose(
        [
            "RuntimeError: Decode out of memory. Try to lower your batch size.",
            "Try to allocate 148 tokens.",
            "Avaliable tokens: 100",
        ]
    )
    assert "pool_not_full" not in _ids(result)
    (ran_out,) = [f for f in result.findings if f.id == "pool_ran_out"]
    assert "100 tokens free for 148 asked" in ran_out.message
    assert _knobs(result)["mem_fraction_static"] is None  # raise, no value without P


def test_v058_counts_and_the_page_size_in_the_log_give_the_pages_asked() -> None:
    # v0.5.8 mem_cache/common.py:413-417, :500-516 prints `Available tokens: N (available_size=..
    # + evictable_size=..)`; with --page-size 64 in server_args, 148 requests ask 9,472 tokens
    result = _diagnose(
        [
            "[2025-09-01 10:00:00] server_args=ServerArgs(model_path='m', page_size=64)",
            "RuntimeError: Decode out of memory. Try to lower your batch size.",
            "Try to allocate 148 tokens.",
            "Available tokens: 2048 (available_size=2048 + evictable_size=0)",
        ]
    )
    (note,) = [f for f in result.findings if f.id == "pool_not_full"]
    assert "148 x page_size 64 = 9,472" in note.message


def test_a_hybrid_swa_pool_short_while_the_full_pool_has_room() -> None:
    # v0.5.8 mem_cache/common.py:502-512: hybrid SWA models print both pools; the sliding-window
    # pool's share is --swa-full-tokens-ratio (v0.5.8 server_args.py:325, in (0, 1])
    result = _diagnose(
        [
            "RuntimeError: Prefill out of memory. Try to lower your batch size.",
            "Try to allocate 8192 tokens.",
            "Available full tokens: 60000 (full_available_size=60000 + full_evictable_size=0)",
            "Available swa tokens: 3000 (swa_available_size=3000 + swa_evictable_size=0)",
        ]
    )
    (short,) = [f for f in result.findings if f.id == "swa_pool_ran_out"]
    assert "3,000" in short.message and "60,000" in short.message
    ratio = next(s for s in result.suggestions if s.knob == "swa_full_tokens_ratio")
    assert ratio.direction.value == "raise"
    assert "mem_fraction_static" not in _knobs(result)


THREAD_5893 = [
    "Capturing batches (avail_mem=5.21 GB): 100%|██████████| 35/35 [00:59<00:00,  1.70s/it]",
    "[2025-04-29 16:24:13 TP5] Capture cuda graph end. Time elapsed: 61.24 s. mem usage=6.27 GB. "
    "avail mem=5.09 GB.",
]
"""The capture lines of https://github.com/sgl-project/sglang/pull/5893 (H200, TP8, bs 256)."""


def test_5893_thin_headroom_after_the_graphs_names_sglangs_large_gpu_reserve() -> None:
    # https://github.com/sgl-project/sglang/pull/5893: 5.09 GB free after the bs-256 graphs on
    # H200 was not enough for serving; the fix reserves at least 18 GB outside the static pool
    # (v0.4.6.post2 server_args.py:241-247). Here 6.27 + 5.09 = 11.36 GiB is outside the pool;
    # the paste does not show the GPU's size, so the note is conditional and has no value
    result = _diagnose(THREAD_5893)
    (thin,) = [f for f in result.findings if f.id == "thin_headroom"]
    assert thin.severity.value == "info"
    assert "11.36 GiB outside the KV pool" in thin.message
    assert "if this GPU is over 96 GiB" in thin.message and "6.64 GiB below" in thin.message
    (lower,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert (lower.direction.value, lower.value) == ("lower", None)
    assert "lower --mem-fraction-static" in result.verdict


H200_STARTUP = [
    "[2025-04-29 16:18:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.88,"
    " tp_size=8)",
    "[2025-04-29 16:18:10 TP0] Load weight begin. avail mem=139.50 GB",
    "[2025-04-29 16:18:40 TP0] Load weight end. type=DeepseekV3ForCausalLM, "
    "dtype=torch.bfloat16, avail mem=56.50 GB, mem usage=83.00 GB.",
    "[2025-04-29 16:18:41 TP0] KV Cache is allocated. #tokens: 400000, K size: 22.57 GB, "
    "V size: 22.57 GB",
    "[2025-04-29 16:18:41 TP0] Memory pool end. avail mem=11.36 GB",
    "[2025-04-29 16:19:34 TP0] Capture cuda graph end. Time elapsed: 56.90 s. "
    "mem usage=6.27 GB. avail mem=5.09 GB.",
    "[2025-04-29 16:19:40] The server is fired up and ready to roll!",
]
"""A whole H200 startup in the shape of #5893's: P 139.50 GiB, mfs 0.88, 11.36 GiB outside the
pool (6.27 GiB of bs-256 graphs + 5.09 GiB free after them)."""


def test_the_same_headroom_on_a_known_h200_has_a_value() -> None:
    # a whole H200 log: P = 139.50 GiB before loading, mfs 0.88 (SGLang's pre-#5893 H200
    # default was (gpu_mem - 13 GiB) / gpu_mem); 11.36 GiB outside the pool is 6.64 GiB short
    # of 18 GiB: mfs 0.88 - 6.64 / 139.50 = 0.8324 -> 0.83. Its line formats allow 0.4.4 - 0.5.8,
    # so the 18 GiB is conditional on 0.4.6.post2 - 0.4.7 and named so; the startup came up
    # ready with no OOM: the verdict says so, the lever is only for a later OOM
    result = _diagnose(H200_STARTUP)
    (thin,) = [f for f in result.findings if f.id == "thin_headroom"]
    assert "this GPU is over 96 GiB" in thin.message
    assert "if the release is 0.4.6.post2 - 0.4.7 (this log's: 0.4.4 .. 0.5.8)" in thin.message
    (lower,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert lower.value == 0.83 and lower.why.startswith("if serving runs out of memory later")
    assert result.outcome == "ready"
    assert result.verdict.startswith("ready: no memory problem found; note thin_headroom")
    assert "--mem-fraction-static" not in result.verdict
    assert "try:" not in render_text(result)


def _h200_v05(free_at_pool_end: str) -> list[str]:
    """An H200 startup in 0.5.19+ formats (server_args dict, `elapsed=` load end, KV dtype):
    P 139.50 GiB, mfs 0.88, `free_at_pool_end` GB free at Memory pool end."""
    return [
        "[2026-05-01 10:00:00] server_args={'model_path': 'm', 'mem_fraction_static': 0.88, "
        "'tp_size': 8, 'chunked_prefill_size': 8192, 'cuda_graph_max_bs': 256}",
        "[2026-05-01 10:00:10 TP0] Load weight begin. avail mem=139.50 GB",
        "[2026-05-01 10:00:40 TP0] Load weight end. elapsed=30.00 s, type=DeepseekV3ForCausalLM, "
        "avail mem=56.50 GB, mem usage=83.00 GB.",
        "[2026-05-01 10:00:41 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 400000,"
        " KV size: 40.00 GB",
        f"[2026-05-01 10:00:41 TP0] Memory pool end. avail mem={free_at_pool_end} GB",
        "[2026-05-01 10:01:34 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=256, context_len=163840, "
        "available_gpu_mem=6.00 GB",
        "[2026-05-01 10:01:40] The server is fired up and ready to roll!",
    ]


def test_a_ready_startup_above_its_releases_default_reserve_has_no_thin_headroom() -> None:
    # 11.36 GiB outside the pool is below the 18 GiB of 0.4.6.post2 - 0.4.7, but this 0.5.19+
    # release's default (rule mfs_default_graphs, v0.5.16 server_args.py:4053-4210: reserved
    # 512 + 8192 x 1.5 + 8 / 8 x 1024 + 256 x 2 MiB, + the prefill graphs) keeps P x (1 -
    # default) = 7.53 - 15.48 GiB for a capacity from P to 288 GiB; the log has no capacity and
    # only some capacities are short at 11.36 GiB: no finding, never another release's 18 GiB
    result = _diagnose(_h200_v05("11.36"))
    assert "thin_headroom" not in _ids(result)
    assert result.verdict == "ready: no memory problem found"
    result = _diagnose(_h200_v05("16.00"))  # above the reserve for every capacity
    assert "thin_headroom" not in _ids(result) and not result.suggestions


def test_a_ready_startup_below_its_releases_default_reserve_is_a_note_with_a_later_lever() -> None:
    # 6.00 GiB outside the pool: below P x (1 - default) for every capacity from P (7.53 GiB at
    # the least, a 288 GiB GPU), so at least 1.53 GiB short of this release's own reserve
    result = _diagnose(_h200_v05("6.00"))
    (thin,) = [f for f in result.findings if f.id == "thin_headroom"]
    assert thin.severity.value == "info"
    assert "at release >= 0.5.19" in thin.message and "mfs_default_graphs" in thin.message
    assert "at least 1.53 GiB below the 7.53 GiB - 15.48 GiB" in thin.message
    assert "18 GiB" not in thin.message and "0.4.6.post2" not in thin.message
    assert result.verdict.startswith("ready: no memory problem found; note thin_headroom")
    lower = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert lower.why.startswith("if serving runs out of memory later")


def test_dp16_ready_on_its_release_has_no_thin_headroom() -> None:
    # samples/dp16.log (0.5.20, P 176.10 GiB, mfs 0.88): 14.07 GiB free at Memory pool end is
    # above the 7.40 - 11.97 GiB SGLang 0.5.20's default keeps (P x (1 - 0.932 .. 0.958) for a
    # capacity from P to 288 GiB, rule mfs_default_graphs); the 18 GiB of 0.4.6.post2 - 0.4.7 is
    # not this release's rule. It came up and served: nothing to say
    parsed = parse_log(open(SAMPLES / "dp16.log", "rb"), label="samples/dp16.log")
    result = diagnose(parsed, build(parsed, LoadOptions()))
    assert "thin_headroom" not in _ids(result)
    assert result.verdict == "ready: no memory problem found"
    assert not [s for s in result.suggestions if s.knob == "mem_fraction_static"]


def test_a_gpu_of_96_gib_or_less_gets_no_large_gpu_note() -> None:
    # the 18 GiB reserve is SGLang's for GPUs over 96 GiB only (v0.4.6.post2 server_args.py:241)
    result = _diagnose(
        [
            "[2025-04-29 16:18:10 TP0] Load weight begin. avail mem=78.50 GB",
            "[2025-04-29 16:18:40 TP0] Load weight end. type=LlamaForCausalLM, "
            "dtype=torch.bfloat16, avail mem=63.20 GB, mem usage=15.30 GB.",
            "[2025-04-29 16:18:41 TP0] Memory pool end. avail mem=11.36 GB",
            "[2025-04-29 16:19:34 TP0] Capture cuda graph end. Time elapsed: 56.90 s. "
            "mem usage=6.27 GB. avail mem=5.09 GB.",
            "[2025-04-29 16:19:40] The server is fired up and ready to roll!",
        ]
    )
    assert "thin_headroom" not in _ids(result)
    # 6.27 GiB of graphs is over the 3 GiB SGLang plans for them: the FA3 note (sglang#8538)
    # stays, conditional on FA3 and the release; no large-GPU reserve is claimed
    assert result.verdict.startswith("ready: no memory problem found; note the CUDA graphs took")
    assert "18" not in result.verdict and "96 GiB" not in result.verdict


def test_a_serving_oom_on_a_large_gpu_lowers_mfs_to_sglangs_reserve() -> None:
    # the OOM the #5893 headroom ends in (#5662 #5811 #5602, H200 serving): the shortfall of the
    # failing allocation is small; SGLang's own fix leaves 18 GiB outside the pool, so the
    # suggested fraction reaches that, not just the failing allocation
    result = _diagnose(
        [
            *H200_STARTUP,
            "[2025-04-29 17:02:00 TP0] Scheduler hit an exception: Traceback (most recent call "
            "last):",
            '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1180, in '
            "forward_decode",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
            "total capacity of 139.81 GiB of which 1.50 GiB is free. Of the allocated memory "
            "130.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but "
            "unallocated.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    assert "thin_headroom" in _ids(result)
    assert _knobs(result)["mem_fraction_static"] == 0.83  # 0.88 - 6.64 / 139.50, not - 0.5 / P


def test_inferencex_2128_an_mtp_refusal_raises_mfs_past_1_minus_a_over_p() -> None:
    # https://github.com/SemiAnalysisAI/InferenceX/issues/2128 (DeepSeek-V4-Pro FP8, 8 x H200,
    # --mem-fraction-static 0.88): SGLang's own minimum viable was 0.9113 (0.9335 with the MTP
    # draft's 3.07 GB); 1 - 12.25 / (12.25 + 125.65) = 0.9112 -> 0.92
    result = _diagnose(
        [
            "Load weight end. quant=fp8, fmt=e4m3, avail mem=12.25 GB, mem usage=125.65 GB.",
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.88.",
        ]
    )
    assert (result.outcome, result.phase.value) == ("oom", "kv_sizing")
    assert _knobs(result)["mem_fraction_static"] == 0.92


def test_28683_and_36260_a_bare_refusal_raises_mfs_without_a_value() -> None:
    # https://github.com/sgl-project/sglang/pull/28683 (DeepSeek-V4-Flash + EAGLE at 0.9, raised to
    # 0.95 in /pull/28855) and /pull/36260 (0.1 raised to 0.2): the line names the fraction only
    for line in (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.9.",
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.1",
    ):
        result = _diagnose([line])
        (raised,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
        assert (raised.direction.value, raised.value) == ("raise", None), line
        assert "raise --mem-fraction-static" in result.verdict


def test_srt_slurm_42_a_pd_decode_worker_hits_the_deepep_cap_in_warmup() -> None:
    # https://github.com/NVIDIA/srt-slurm/issues/42 (DeepSeek-R1 FP4, PD with 8 decode nodes,
    # DP attention 32): fixed by a larger SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK
    result = _diagnose(
        [
            "RuntimeError: Failed: Assertion error /build/DeepEP/csrc/deep_ep.cpp:1233 "
            "'x.size(0) == topk_idx.size(0) and x.size(0) <= num_max_dispatch_tokens_per_rank'",
        ]
    )
    assert result.outcome == "crash" and "deepep_dispatch_cap" in _ids(result)
    assert result.suggestions == []
