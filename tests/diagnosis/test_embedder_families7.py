"""Families from projects that run SGLang and from pages that retell its threads (issue 24,
held-out threads 164-170): torch_memory_saver's `CUresult error  result=2` quoted without its
file tag, a release (the memory saver's pause) said to free nothing (PyTorch's expandable
segments; ROCm 7.2's ROCr keeping the pages mapped), the allocator's OOM message retold in
Chinese (`尝试分配 ... 总容量 ... 空闲`, `CUDA内存不足` as the device's memory, not the host's), a
multi-stage pipeline's own models loaded beside SGLang's engine (sglang-omni's codecs), and GPU
memory said to grow with the adverb before the verb. Each is read in several shapes of the family
through the whole command path (an unread paste raises InputError: exit 3). Every input is a
synthetic line."""

from __future__ import annotations

import pytest

from tests.conftest import PROSE_SHAPES, diagnose_text, finding_ids, knobs_of, paste_id, said_of

BARE_CURESULT = (
    "CUresult error  result=2",
    "'CUresult error result=2' means OOM here",
    "the rollout hangs after CUresult error:  result=2 on rank 3",
)
"""torch_memory_saver's CURESULT_CHECK words without its `[torch_memory_saver.cpp]` tag."""


@pytest.mark.parametrize("text", BARE_CURESULT, ids=paste_id)
@pytest.mark.parametrize("shape", PROSE_SHAPES, ids=paste_id)
def test_a_bare_curesult_2_is_the_memory_savers_oom(text: str, shape: str) -> None:
    result = diagnose_text("Using FSDP2 with SGLang for the rollout\n" + shape.format(s=text))
    assert result.outcome == "oom"
    assert ("mem_fraction_static", "lower") in knobs_of(result)
    assert "RL framework" in result.verdict


@pytest.mark.parametrize(
    "text", ["CUresult error  result=1", "CUresult error  result=20", "cuResult error result=2x"]
)
def test_another_curesult_code_is_no_oom(text: str) -> None:
    result = diagnose_text("[2026-01-01 00:00:00] Load weight begin. avail mem=70.00 GB\n" + text)
    assert result.outcome != "oom"


RELEASE_FREES_NOTHING = (
    "It seems that memory is not being freed after sglang offload in multi-turn rollout",
    "GPU memory was not released after release_memory_occupation",
    "torch_memory_saver.pause(tag) returns successfully but does not free the physical GPU memory",
    "the offload frees nothing: nvidia-smi still shows 60 GB used",
)


@pytest.mark.parametrize("text", RELEASE_FREES_NOTHING, ids=paste_id)
@pytest.mark.parametrize("shape", PROSE_SHAPES[:4], ids=paste_id)
def test_a_release_said_to_free_nothing_names_expandable_segments(text: str, shape: str) -> None:
    result = diagnose_text(shape.format(s=text) + "\nsglang 0.4.6.post1")
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments" in result.verdict
    assert "no fraction frees it" in result.verdict


def test_memory_freed_after_offload_is_not_the_family() -> None:
    result = diagnose_text(
        "memory is freed after sglang offload, as expected\n"
        "[2026-01-01 00:00:00] Load weight begin. avail mem=70.00 GB"
    )
    assert "expandable" not in said_of(result)


@pytest.mark.parametrize(
    "lines",
    [
        (
            "ROCm 7.2: pause() frees no physical GPU memory",
            "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=csrc/core.cpp "
            "func=resume line=172",
        ),
        (
            "On ROCm 7.2, torch_memory_saver.pause(tag) returns successfully but does not free it.",
            "The subsequent resume() then OOMs on hipMemCreate.",
        ),
        ("on rocm7.2 the sleep/offload of the rollout engine frees nothing", "then resume OOMs"),
    ],
    ids=paste_id,
)
def test_a_release_on_rocm_7_2_leads_with_rocr_not_the_fraction(lines: tuple[str, ...]) -> None:
    result = diagnose_text("\n".join(lines))
    head = result.verdict.split("lower --mem-fraction-static")[0]
    assert "a release on ROCm 7.2: no fraction frees it: ROCm 7.0" in head
    assert "PR #1680" in head


def test_rocm_7_2_without_a_release_names_no_rocr_leak() -> None:
    result = diagnose_text(
        "ROCm 7.2, MI300X\n"
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 191.98 GiB of which 1.00 GiB is free."
    )
    assert "ROCr" not in said_of(result)


ZH_ALLOCATOR = (
    "torch.OutOfMemoryError: CUDA 内存不足。尝试分配 80.04 GiB。GPU 3 总容量为 79.10 GiB,其中 "
    "20.08 GiB 空闲。",
    "系统报错显示GPU内存不足,具体表现为尝试分配80.04GiB内存,而GPU3仅有79.10GiB总容量,其中20.08GiB空闲。",
    "CUDA内存不足:尝试分配 80.04 GiB 显存,GPU 3 的 79.10 GiB 总容量,其中 20.08 GiB 可用",
)
"""The allocator's message as translators and pages retell it."""


@pytest.mark.parametrize("text", ZH_ALLOCATOR, ids=paste_id)
@pytest.mark.parametrize("shape", ("{s}", "> {s}", "`{s}`"), ids=paste_id)
def test_the_allocator_message_in_chinese_reads_its_sizes(text: str, shape: str) -> None:
    result = diagnose_text(
        "python3 -m sglang.launch_server --model meta-llama/Llama-4-Scout-17B-16E-Instruct --tp 8\n"
        + shape.format(s=text)
    )
    assert result.outcome == "oom"
    assert "allocation_exceeds_gpu" in finding_ids(result)
    assert "host RAM" not in result.verdict
    assert ("context_length", "lower") in knobs_of(result)
    assert result.shortfall_bytes is not None
    assert round(result.shortfall_bytes / 2**30, 2) == 59.96


def test_the_chinese_message_with_free_before_its_word_reads_the_free() -> None:
    result = diagnose_text(
        "错误日志显示,GPU7尝试分配448MB内存失败,而此时该GPU上仅有380.31MB空闲内存。"
    )
    assert result.outcome == "oom"
    assert result.shortfall_bytes is not None
    assert round(result.shortfall_bytes / 2**20) == 68


@pytest.mark.parametrize("said", ["CUDA内存不足", "GPU 内存不足", "启动时 gpu内存不够"])
def test_the_devices_memory_in_chinese_is_no_host_ram(said: str) -> None:
    result = diagnose_text(f"启动服务时出现{said}的问题")
    assert result.outcome == "oom"
    assert "host_memory" not in finding_ids(result)


def test_memory_alone_in_chinese_stays_the_hosts() -> None:
    result = diagnose_text("加载权重时内存不足,进程被杀")
    assert "host_memory" in finding_ids(result)


OMNI_LOADS = (
    "the crash lands in `create_vocoder_executor → _load_codec(..., 'cuda') → codec.to(device)`",
    "we think it is _load_audio_decoder that fills the card",
    (
        '  File "/sglang-omni/sglang_omni/models/fishaudio_s2_pro/pipeline/stages.py", line 379, '
        "in create_vocoder_executor",
        '  File "/sglang-omni/sglang_omni/models/fishaudio_s2_pro/pipeline/stages.py", line 96, '
        "in _load_codec",
    ),
    (
        '  File "/sglang-omni/sglang_omni/models/qwen3_omni/components/code2wav_executor.py", '
        "line 258, in create_code2wav_executor",
    ),
)
"""Where the paste names the loader: in prose (a paragraph after the error) or as a traceback's
frames (before it)."""


OOM_LINE = "OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 MiB."


@pytest.mark.parametrize("where", OMNI_LOADS, ids=paste_id)
def test_a_pipeline_model_loaded_beside_the_engine_lowers_sglangs_fraction(
    where: str | tuple[str, ...],
) -> None:
    if isinstance(where, str):  # prose: a paragraph after the error
        lines = [OOM_LINE, "", where]
    else:  # a traceback: its frames, then its error
        lines = ["Traceback (most recent call last):", *where, OOM_LINE]
    result = diagnose_text(
        "Launching sgl-omni serve on a 24 GB GPU OOMs during pipeline startup:\n" + "\n".join(lines)
    )
    assert result.outcome == "oom"
    assert result.phase.value == "after_pool"
    assert "a pipeline's own models on SGLang's GPU" in result.verdict
    assert knobs_of(result)[0] == ("mem_fraction_static", "lower")


@pytest.mark.parametrize(
    "text",
    [
        "Not sure why the memory usage is gradually increasing during serving.",
        "the VRAM usage on GPU 0 continuously increases and eventually leads to an OOM",
        "GPU memory steadily grows with every image request",
    ],
    ids=paste_id,
)
def test_memory_growing_with_the_adverb_first_is_a_leak_to_upgrade(text: str) -> None:
    result = diagnose_text("After a number of requests, it will OOM.\n" + text)
    assert result.outcome == "oom"
    assert "a leak (not the pools' size) that an upgrade fixes" in result.verdict
