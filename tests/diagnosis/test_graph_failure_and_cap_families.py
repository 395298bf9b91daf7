"""Three families SGLang prints of itself that were read as nothing or as a bare crash: the
piecewise (prefill) CUDA graph's failure line and its advice block (not memory: SGLang's own
workaround is --disable-piecewise-cuda-graph), custom all-reduce's IPC registration of captured
graph buffers failing with `invalid argument` (torch_memory_saver's VMM memory under RL
colocation: not memory, --disable-custom-all-reduce), and the `max_running_requests was reduced`
warning retyped without its article. Every input is a synthetic line in its family's shape."""

from __future__ import annotations

import pytest

from tests.conftest import PROSE_SHAPES, diagnose_paste, knobs_of, said_of

PIECEWISE = (
    "Piecewise CUDA Graph failed with error: Tensor match failed for Tensor<4>[strides=<1>, "
    "dtype=int32, device=cuda:0] at kernels/dsa/store_cache.cuh:91"
)
ADVICE = (
    "Piecewise CUDA Graph is enabled by default as an experimental feature.\n"
    "To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n"
    "Please report this issue at https://github.com/sgl-project/sglang/issues/new/choose\n"
)
CUSTOM_AR = (
    "Exception: Capture cuda graph failed: Runtime check failed at /usr/local/lib/python3.12/"
    "dist-packages/sglang/jit_kernel/include/sgl_kernel/distributed/custom_all_reduce.cuh:37: "
    "CUDA error: invalid argument"
)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_the_piecewise_failure_line_is_not_memory_and_names_the_workaround(shape: str) -> None:
    result = diagnose_paste(shape.format(s=PIECEWISE) + "\n")
    assert result.outcome == "crash"
    assert knobs_of(result)[0] == ("disable_piecewise_cuda_graph", "enable")
    assert "not GPU memory" in result.verdict
    assert any(f.id == "piecewise_graph_failed" for f in result.findings)


def test_the_piecewise_failure_in_a_log_with_its_advice_block_and_a_serving_traceback() -> None:
    text = (
        f"[2026-03-02 10:11:12 TP3] {PIECEWISE}\n"
        + ADVICE
        + "[2026-03-02 10:11:12 TP3] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1544, in '
        "event_loop_overlap\n"
        "    batch_result = self.run_batch(batch)\n"
    )
    result = diagnose_paste(text)
    assert result.outcome == "crash"
    assert knobs_of(result) == [("disable_piecewise_cuda_graph", "enable")]
    assert "error is not in the log" not in said_of(result)


def test_the_advice_block_alone_still_names_the_workaround() -> None:
    """A paste of the advice without the failure line above it (the error cut off)."""
    result = diagnose_paste(ADVICE)
    assert result.outcome == "crash"
    assert ("disable_piecewise_cuda_graph", "enable") in knobs_of(result)


def test_an_oom_inside_the_piecewise_failure_stays_an_oom() -> None:
    text = (
        "[2026-03-02 10:11:12 TP0] Piecewise CUDA Graph failed with error: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.20 GiB "
        "is free.\n" + ADVICE
    )
    result = diagnose_paste(text)
    assert result.outcome == "oom"
    assert "not GPU memory" not in result.verdict


def test_a_piecewise_word_alone_is_no_failure() -> None:
    """The server_args' piecewise settings name the feature, not a failure."""
    result = diagnose_paste(
        "[2026-03-02 10:00:00] server_args=ServerArgs(model_path='m', "
        "disable_piecewise_cuda_graph=False, piecewise_cuda_graph_max_tokens=4096)\n"
    )
    assert result.outcome != "crash"


@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_custom_allreduce_registration_failure_is_not_memory(shape: str) -> None:
    result = diagnose_paste(shape.format(s=CUSTOM_AR) + "\n")
    assert result.outcome == "crash"
    assert knobs_of(result)[0] == ("disable_custom_all_reduce", "enable")
    assert "not GPU memory" in result.verdict
    assert "torch_memory_saver" in said_of(result)


@pytest.mark.parametrize(
    "line",
    [
        # v1's registration at the end of capture, and AITER's HIP text on ROCm
        "RuntimeError: register_graph_buffers failed: CUDA error: invalid argument",
        "custom_all_reduce.py:289 register_graph_buffers -> hipErrorInvalidDevicePointer: "
        "invalid device pointer",
    ],
)
def test_custom_allreduce_registration_other_shapes(line: str) -> None:
    result = diagnose_paste(line + "\n")
    assert ("disable_custom_all_reduce", "enable") in knobs_of(result)


def test_a_capture_failure_of_another_kind_does_not_name_custom_allreduce() -> None:
    result = diagnose_paste(
        "Exception: Capture cuda graph failed: CUDA error: an illegal memory access was "
        "encountered\n"
    )
    assert ("disable_custom_all_reduce", "enable") not in knobs_of(result)


@pytest.mark.parametrize(
    "line",
    [
        "max_running_requests was reduced from the requested 128 to 50 (per dp worker) due to "
        "the available KV cache capacity.",
        "max_running_requests was reduced from requested 128 to 50",
    ],
)
@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_the_reduced_running_requests_line_is_read_with_or_without_its_article(
    line: str, shape: str
) -> None:
    """SGLang prints `from the requested` (v0.5.16 mem_cache/kv_cache_configurator.py:1653);
    reporters retype it without `the`. Before v0.5.18 the line also reports a hybrid model's
    Mamba cap (:1637-1641), so both levers are named."""
    result = diagnose_paste(shape.format(s=line) + "\n")
    knobs = knobs_of(result)
    assert ("mem_fraction_static", "raise") in knobs
    assert ("max_mamba_cache_size", "raise") in knobs
    assert "max_running_requests to 50" in result.verdict


# ---- a request's logprobs said in words (v0.5.8 layers/logits_processor.py:478-513)

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB.\n"


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize(
    "said",
    [
        "While computing input token log probabilities we hit CUDA out of memory",
        "OOM only when we ask for log-probs of the prompt",
        "with Log probabilities turned on the server dies",
    ],
)
def test_logprobs_said_in_words_name_the_logprob_levers(said: str, shape: str) -> None:
    result = diagnose_paste(shape.format(s=said) + "\n" + OOM)
    assert ("logprob_start_len", "raise") in knobs_of(result)
    assert "SGLANG_ENABLE_LOGITS_PROCESSER_CHUNK" in " ".join(s.why for s in result.suggestions)


def test_a_log_line_about_logging_is_no_logprob() -> None:
    result = diagnose_paste("the log probably shows it: CUDA out of memory\n" + OOM)
    assert ("logprob_start_len", "raise") not in knobs_of(result)


# ---- SGLang's diffusion runtime (multimodal_gen): no KV pool, its own stages and levers


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize(
    "said",
    [
        "the VAE decode runs out of memory after denoising finished",
        "fatal CUDA OOM in the decoding stage",
        "OOM in vae.decode for a 1024x1024 image",
    ],
)
def test_the_vae_decode_said_in_words_names_tiling_first(said: str, shape: str) -> None:
    result = diagnose_paste(shape.format(s=said) + "\n" + OOM)
    assert knobs_of(result)[0] == ("vae_tiling", "enable")
    assert "diffusion runtime" in result.verdict


@pytest.mark.parametrize(
    "text",
    [
        "[01-08 23:08:15] [DecodingStage] started...\n" + OOM,
        "[08-31 10:00:00] OOM detected during VAE decoding. Enable --vae-tiling to bound the "
        "decode working set, and free the components that finished earlier with "
        "--cpu-offload-components dit,text_encoder.\n",
        "Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/multimodal_gen/runtime/pipelines_core/stages/'
        'decoding.py", line 149, in forward\n'
        "    decode_output = self.vae.decode(latents)\n" + OOM,
    ],
)
def test_the_decode_stage_in_its_log_lines_and_frames(text: str) -> None:
    result = diagnose_paste(text)
    assert ("vae_tiling", "enable") in knobs_of(result)


@pytest.mark.parametrize(
    "text",
    [
        "[01-14 16:43:28] Loading text_encoder from Wan-AI/Wan2.1-T2V-1.3B-Diffusers/"
        "text_encoder. avail mem: 18.58 GB\n" + OOM,
        "Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/multimodal_gen/runtime/loader/component_loader.py", '
        "line 158, in load\n"
        "    component = self.load_customized(\n" + OOM,
    ],
)
def test_a_diffusion_component_load_is_placed_in_loading_with_offload_levers(text: str) -> None:
    result = diagnose_paste(text)
    assert result.phase == "load"
    assert knobs_of(result)[0] == ("text_encoder_cpu_offload", "enable")


@pytest.mark.parametrize(
    "text",
    [
        # the LLM engine's own lines: its decode batches, its load line, speculative decoding
        "[2026-01-05 10:00:00 TP0] Decode batch. #running-req: 12, #token: 4000, token usage: "
        "0.40, cuda graph: True, gen throughput (token/s): 900.12, #queue-req: 0\n" + OOM,
        "[2026-01-05 10:00:00 TP0] Load weight begin. avail mem=78.50 GB\n" + OOM,
        "speculative decoding with EAGLE runs out of memory\n" + OOM,
    ],
)
def test_the_llm_engine_is_no_diffusion_runtime(text: str) -> None:
    knobs = [k for k, _ in knobs_of(diagnose_paste(text))]
    assert "vae_tiling" not in knobs and "text_encoder_cpu_offload" not in knobs


# ---- WSL2: the Windows driver's memory outside the process


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize(
    "said",
    [
        "SGLang on an RTX PRO 6000 under WSL2 Ubuntu 22.04 fails to allocate the pool",
        "running in wsl, 50 GiB free but CUDA out of memory",
        "Windows Subsystem for Linux with a 5090",
    ],
)
def test_wsl_is_named_with_its_hidden_driver_memory(said: str, shape: str) -> None:
    result = diagnose_paste(shape.format(s=said) + "\n" + OOM)
    assert "Windows display driver" in said_of(result)


def test_a_word_holding_wsl_is_no_wsl() -> None:
    result = diagnose_paste("the awslogs agent shipped this: CUDA out of memory\n" + OOM)
    assert "Windows display driver" not in said_of(result)


DIFFUSION_ADVICE = (
    "OOM detected. Possible solutions:\n"
    "  - If the OOM occurs during loading:\n"
    "    1. Enable CPU offload for memory-intensive components, or use `--dit-layerwise-offload` "
    "for DiT\n"
    "  - If the OOM occurs during runtime:\n"
    "    1. Reduce the number of output tokens by lowering resolution or decreasing "
    "`--num-frames`\n"
)


def test_the_diffusion_runtimes_own_advice_names_its_levers_and_places_nothing() -> None:
    """v0.5.8 multimodal_gen/runtime/managers/gpu_worker.py:271-280: its `during loading` is
    SGLang's advice, not the reporter saying where it failed."""
    result = diagnose_paste(OOM + "\n" + DIFFUSION_ADVICE)
    assert knobs_of(result)[:2] == [("dit_layerwise_offload", "enable"), ("num_frames", "lower")]
    assert result.phase == "unknown"


def test_a_reporter_saying_during_loading_still_places_loading() -> None:
    result = diagnose_paste("it runs out of memory during loading.\n" + OOM)
    assert result.phase == "load"
