"""The lifecycle model (memledger.sglang.lifecycle), the embedding frameworks
(memledger.sglang.frameworks) and what diagnose makes of evidence through them. Every input is a
synthetic line in its family's shape."""

from __future__ import annotations

import re

import pytest

from memledger.diagnosis import Diagnosis
from memledger.diagnosis.model import Direction
from memledger.sglang.failure_rules import CRASH_CAUSES, PHASE_TEXT, Phase
from memledger.sglang.frameworks import FRAMEWORKS, framework_of
from memledger.sglang.lifecycle import (
    FRAME_MENTIONS,
    LIFECYCLE,
    MENTION,
    STAGE,
    levers_after_load,
)
from memledger.units import GIB
from tests.conftest import diagnose_paste

SOURCE = re.compile(r"v\d+\.\d+\.\d+(\.post\d+)? \S+\.py|https://github\.com/")


def _diagnose(text: str) -> Diagnosis:
    return diagnose_paste(text)


@pytest.mark.parametrize("stage", LIFECYCLE, ids=lambda s: s.phase.value)
def test_every_stage_is_one_checked_entry(stage: object) -> None:
    """One function checks every entry: a phase diagnose knows, a source at a release, levers
    whose direction is one the diagnosis has and whose knob appears once in the stage."""
    assert stage.phase in PHASE_TEXT  # type: ignore[attr-defined]
    assert SOURCE.search(stage.source)  # type: ignore[attr-defined]
    knobs = [lever.knob for lever in stage.levers]  # type: ignore[attr-defined]
    assert len(knobs) == len(set(knobs))
    for lever in stage.levers:  # type: ignore[attr-defined]
        assert Direction(lever.direction)
        assert lever.effect


def test_stages_follow_the_startup_order() -> None:
    order = [s.phase for s in LIFECYCLE]
    assert order.index(Phase.LOAD) < order.index(Phase.KV_SIZING) < order.index(Phase.MEMORY_POOL)
    assert order.index(Phase.GRAPH_CAPTURE) < order.index(Phase.DRAFT) < order.index(Phase.WARMUP)
    assert len(order) == len(set(order))
    # a shortfall after the weights can be met by the pool's levers, never by a load-only one
    after = {lever.knob for lever in levers_after_load()}
    assert "mem_fraction_static" in after and "cpu_offload_gb" not in after


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.name)
def test_every_framework_is_one_checked_entry(framework: object) -> None:
    assert "mem_fraction_static" in framework.knobs  # type: ignore[attr-defined]
    assert framework.source  # type: ignore[attr-defined]
    for word in framework.words:  # type: ignore[attr-defined]
        assert framework_of(f'  File "/x{word}y.py", line 1, in f') is framework


def test_an_oom_text_alone_gets_the_levers_after_the_weights() -> None:
    """An OOM text with nothing that places it and no numbers: still a direction per lever, from
    the lifecycle's stages after the weights, never 'no knob helps'."""
    result = _diagnose("RuntimeError: CUDA error: out of memory\n")
    assert result.outcome == "oom"
    knobs = {s.knob: s.direction for s in result.suggestions}
    assert knobs.get("mem_fraction_static") is Direction.LOWER
    assert all(s.value is None and "no numbers" in s.why for s in result.suggestions)


def test_the_overlap_threads_loop_is_serving() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/env/site-packages/sglang/srt/managers/tp_worker_overlap_thread.py", line 111, '
        "in forward_thread_func\n"
        "    with torch.get_device_module(self.device).stream(self.forward_stream):\n"
        "RuntimeError: CUDA error: out of memory\n"
    )
    result = _diagnose(text)
    assert result.phase is Phase.SERVING
    assert result.suggestions[0].knob == "max_running_requests"
    assert "lower --max-running-requests" in result.verdict


def test_the_balance_check_is_distributed_init_and_its_numbers_are_the_finding() -> None:
    text = (
        "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
        "processes. min_per_gpu_memory=61.50, local_gpu_memory=78.25, "
        "local_gpu_memory * 0.9=70.425\n"
    )
    result = _diagnose(text)
    assert result.phase is Phase.DIST_INIT
    found = next(f for f in result.findings if f.id == "unbalanced_memory")
    assert found.bytes == round((78.25 - 61.50) * GIB)
    # SGLang's figures are GiB (free bytes / 2^30); the clipped quote in the verdict cuts them,
    # so the verdict says them before the fix
    said = "the fullest rank had 61.50 GiB free against this rank's 78.25 GiB: 16.75 GiB held"
    assert said in found.message
    assert said in result.verdict.replace("\n", " ")
    assert result.verdict.index(said) < result.verdict.index("not GPU memory")
    # the text without its numbers: nothing measured, nothing said
    bare = _diagnose(text.split(" min_per_gpu_memory")[0] + "\n")
    assert "fullest rank had" not in bare.verdict and "not GPU memory" in bare.verdict


def test_the_balance_check_after_the_targets_graphs_is_the_drafts() -> None:
    """The ranks' lines interleave as in a real log: rank 0 captured its graphs, another rank's
    worker starts again, and the check fails (a same-rank paste without server_args is read as
    a second startup by the startup splitter)."""
    text = (
        "[2025-03-09 14:40:46 TP1] Capture cuda graph end. Time elapsed: 13.39 s\n"
        "[2025-03-09 14:40:46 TP0] Capture cuda graph end. Time elapsed: 13.38 s\n"
        "[2025-03-09 14:40:47 TP1] Init torch distributed begin.\n"
        "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
        "processes.\n"
    )
    result = _diagnose(text)
    assert result.phase is Phase.DRAFT
    assert "draft worker" in result.verdict


def test_a_frameworks_oom_names_its_own_knob() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/verl/verl/trainer/main_ppo.py", line 54, in main\n'
        "    run_ppo(config)\n"
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=1, ip=10.0.0.1)\n"
    )
    result = _diagnose(text)
    assert result.outcome == "oom"
    assert "in verl: lower actor_rollout_ref.rollout.gpu_memory_utilization" in result.verdict
    assert any(f.id == "embedded_in_framework" for f in result.findings)


def test_a_cause_that_names_a_phase_names_one_of_the_lifecycle() -> None:
    for cause in CRASH_CAUSES:
        assert cause.phase is None or cause.phase in STAGE


def test_no_free_memory_after_the_graphs_gets_the_serving_bound_lever() -> None:
    """Zero free after capture with no P in the paste: no value, but the direction that gives
    serving its memory back (the serving stage's bound levers), never 'no knob helps'."""
    text = (
        "[2025-01-01 10:00:09 TP0] Capture cuda graph end. Time elapsed: 3.00 s. mem usage=0.68 "
        "GB. avail mem=0.00 GB.\n"
        "[2025-01-01 10:00:10] The server is fired up and ready to roll!\n"
    )
    result = _diagnose(text)
    assert result.outcome == "starved"
    assert [s.knob for s in result.suggestions] == [
        lever.knob for lever in STAGE[Phase.SERVING].bound_levers
    ]
    assert "lower --mem-fraction-static (for a value add" in result.verdict


def test_a_model_constructor_frame_is_weight_loading() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/env/site-packages/sglang/srt/models/llama.py", line 380, in __init__\n'
        "    self.model = self._init_model(config, quant_config)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 224.00 MiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 20.00 MiB is free. Of the allocated memory 78.90 "
        "GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated.\n"
    )
    assert _diagnose(text).phase is Phase.LOAD


def test_an_oom_in_the_frameworks_trainer_is_the_trainers() -> None:
    """The failing frame is the RL framework's trainer code (its table's trainer_words): the
    answer is the trainer's memory or SGLang's share in the framework's name, not SGLang's phase."""
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.\n"
        "GPU 0 has a total capacity of 79.19 GiB of which 1.20 GiB is free.\n"
        '  File "slime/utils/ppo_utils.py", line 300, in compute_log_probs\n'
        "    log_probs = logits.log_softmax(-1)\n"
    )
    result = _diagnose(text)
    assert result.verdict.startswith("OOM in slime's trainer (utils/ppo_utils.py), not in SGLang")
    assert "--sglang-mem-fraction-static" in result.verdict
    assert any(
        f.id == "trainer_oom" and "--max-tokens-per-gpu" in f.message for f in result.findings
    )


def test_a_moe_kernel_frame_places_an_oom_whose_text_shows_graph_memory() -> None:
    """A private pool in the OOM text reads as serving only when nothing else places it: the
    MoE layer's constructor frame says weight loading (issue 24, family 7)."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/env/site-packages/sglang/srt/layers/moe/fused_moe_triton/layer.py", line 210, '
        "in __init__\n"
        "    self.quant_method.create_moe_weights(self)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
        "capacity of 79.19 GiB of which 300.00 MiB is free. Of the allocated memory 77.00 GiB is "
        "allocated by PyTorch, with 24.00 MiB allocated in private pools (e.g., CUDA Graphs), and "
        "20.00 MiB is reserved by PyTorch but unallocated.\n"
    )
    result = _diagnose(text)
    assert result.phase is Phase.LOAD
    assert not any(f.id == "phase_from_graphs" for f in result.findings)


def test_a_bare_pytorch_oom_text_is_no_evidence_of_vllm() -> None:
    """PyTorch's OOM text is every engine's: alone it is read on memledger's SGLang path, whose
    lifecycle model gives the levers (vLLM's table still reads it inside a vLLM log)."""
    from memledger.input.engine_detect import detect_engine

    line = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.93 GiB. GPU 0 has a total "
        "capacity of 79.14 GiB of which 3.79 GiB is free."
    )
    assert detect_engine([line]).engine is None
    assert detect_engine(["RuntimeError: CUDA error: out of memory"]).engine is None
    result = _diagnose(line + "\n")
    assert any(s.knob == "mem_fraction_static" for s in result.suggestions)


def test_frames_pasted_after_the_oom_text_place_it() -> None:
    """The OOM text first, its frame lines after it (a second fragment): the frames still name
    the phase, here an attention backend's constructor after the pool."""
    text = (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.25 GiB.\n"
        "GPU 0 has a total capacity of 255.98 GiB of which 4.23 GiB is free.\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/attention/aiter_backend.py", '
        "line 270, in __init__\n"
    )
    assert _diagnose(text).phase is Phase.AFTER_POOL


@pytest.mark.parametrize(
    ("line", "phase"),
    [
        (
            "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
            "func=cu_mem_create line=103 (5)",
            Phase.UNKNOWN,
        ),
        (
            "[torch_memory_saver.cpp] hipError_t error  result=2 file=csrc/"
            "torch_memory_saver_hip.cpp func=cu_mem_create line=103",
            Phase.UNKNOWN,
        ),
        (
            "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=csrc/core.cpp "
            "func=resume line=172",
            Phase.RESUME,
        ),
    ],
)
def test_the_memory_savers_oom_is_read_and_answered(line: str, phase: Phase) -> None:
    """torch_memory_saver's driver-error line with code 2 is an OOM (never exit 3): its phase
    where the line names it, SGLang's share as the lever, in the RL framework's words."""
    result = _diagnose(line + "\n")
    assert (result.outcome, result.phase) == ("oom", phase)
    assert any(s.knob == "mem_fraction_static" for s in result.suggestions)
    assert any(f.id == "embedded_in_framework" for f in result.findings)


@pytest.mark.parametrize(
    "line",
    [
        "cudaErrorMemoryAllocation: out of memory",
        "RuntimeError: HIP error: hipErrorOutOfMemory",
        "CUDA driver error: CUDA_ERROR_OUT_OF_MEMORY",
    ],
)
def test_a_runtime_oom_code_alone_is_an_oom(line: str) -> None:
    """The runtimes' out-of-memory codes by name, without PyTorch's sizes: an OOM, never exit 3."""
    result = _diagnose(line + "\n")
    assert result.outcome == "oom"
    assert any(s.knob == "mem_fraction_static" for s in result.suggestions)


@pytest.mark.parametrize(
    "text",
    [
        "Loaded the adapter with --lora-paths; then rest_memory < 0 and the server stops.\n",
        "With LoRA on, only 3.1 GB stays free after loading, so rest_memory is negative.\n",
    ],
)
def test_a_refusal_in_sglangs_own_words_with_lora_is_kv_sizing_with_loras_levers(
    text: str,
) -> None:
    """A reporter quoting SGLang's rest_memory gone negative is its KV refusal (never exit 3),
    placed at KV sizing; LoRA's adapters and pool come before it, so their knobs help too."""
    result = _diagnose(text)
    assert (result.outcome, result.phase) == ("oom", Phase.KV_SIZING)
    knobs = [s.knob for s in result.suggestions]
    assert {"max_loras_per_batch", "max_lora_rank", "mem_fraction_static"} <= set(knobs)
    assert any("LoRA" in f.message for f in result.findings)


def test_lora_named_in_server_args_keys_is_no_mention() -> None:
    """`enable_lora=False, lora_paths=None` in wrapped server_args names no LoRA in use."""
    text = (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
        "enable_lora=False, lora_paths=None, max_loras_per_batch=8, lora_backend='triton'\n"
    )
    result = _diagnose(text)
    assert not any("LoRA" in f.message for f in result.findings)
    assert not any(s.knob == "max_loras_per_batch" for s in result.suggestions)


def _listed(own_gib: float) -> str:
    """An OOM text in the shape a container prints: every process by PID, none as its own."""
    return (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB. GPU 0 has a "
        "total capacity of 47.50 GiB of which 30.00 MiB is free. Process 111 has 2.10 GiB memory "
        f"in use. Process 222 has 43.20 GiB memory in use. Of the allocated memory {own_gib:.2f} "
        "GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.\n"
    )


def test_a_small_process_beside_a_server_is_named_when_the_text_lists_pids_only() -> None:
    """With no `this process has` clause, the PyTorch reserve stands for the process that ran
    out; when that is small, the memory is another process's, SGLang's front end among them."""
    result = _diagnose(_listed(1.50))
    held = [f for f in result.findings if f.id == "other_processes"]
    assert len(held) == 1 and held[0].bytes is not None
    assert abs(held[0].bytes - (47.50 * GIB - 30 * 2**20 - 1.50 * GIB - 100 * 2**20)) < 2**20
    assert "--disable-fast-image-processor" in held[0].message


def test_the_process_holding_the_gpu_listed_by_pid_is_not_another_process() -> None:
    """The same text where the PyTorch reserve is the big process: its reserve is a lower bound
    of its own use, so what the rest holds is not claimed."""
    result = _diagnose(_listed(43.00))
    assert not any(f.id == "other_processes" for f in result.findings)


@pytest.mark.parametrize(("part", "name"), FRAME_MENTIONS.items())
def test_a_failing_frame_makes_its_mention(part: str, name: str) -> None:
    """A frame in a file of the table (LoRA's pool, the AITER workspace) names its mention: its
    levers lead the phase's, as when the paste's words name it."""
    text = (
        "Traceback (most recent call last):\n"
        f'  File "/sgl/python/sglang/{part}/x.py", line 205, in __init__\n'
        "    self.buffers = torch.empty(shape)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
        "capacity of 79.19 GiB of which 300.00 MiB is free.\n"
    )
    result = _diagnose(text)
    levers = [lever.knob for lever in MENTION[name].levers]
    assert [s.knob for s in result.suggestions][: len(levers)] == levers
    assert any(f.id == "reported" and MENTION[name].says in f.message for f in result.findings)
