"""Families from corners the development set had few of (issue 24, held-out threads 144-151):
SGLang's launch-time read of the card's total memory failing (nvidia-smi, rocm-smi or hl-smi
missing, failing or printing no number: a MIG slice, a Jetson, a container without the driver
tools), the same read returning None on the CPU backend while ServerArgs still compares it, the
aiter attention backend's long-context fraction reserve named in words, and the host's RAM (a
container's memory limit) as the thing that ran out. Each is read in several shapes of the family
through the whole command path (engine detection included, so an unread paste raises InputError:
exit 3). Every input is a synthetic line."""

from __future__ import annotations

import pytest

from memledger.errors import InputError
from tests.conftest import (
    MEMORY_KNOBS,
    PROSE_SHAPES,
    diagnose_text,
    finding_ids,
    knobs_of,
    paste_id,
    said_of,
)

FRAME = '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/{path}", line {n}, in {func}'

CAPACITY_TEXTS = (
    "RuntimeError: nvidia-smi not found. Ensure NVIDIA drivers are installed and accessible.",
    "RuntimeError: nvidia-smi error: Failed to initialize NVML: Unknown Error",
    "ValueError: No GPU memory values found.",
    "RuntimeError: rocm-smi not found. Ensure AMD ROCm drivers are installed and accessible.",
    "RuntimeError: hl-smi error: device not found",
)
"""What SGLang raises when its read of the card's total memory fails (v0.4.2.post1
utils.py:893-922; v0.5.23 utils/common.py:682-711, :840-868)."""


@pytest.mark.parametrize("text", CAPACITY_TEXTS, ids=paste_id)
@pytest.mark.parametrize("shape", PROSE_SHAPES, ids=paste_id)
def test_a_failed_capacity_read_in_each_shape_is_no_memory_shortfall(text: str, shape: str) -> None:
    result = diagnose_text(shape.format(s=text))
    assert result.outcome == "crash"
    assert "capacity_query_failed" in finding_ids(result)
    assert "not GPU memory: SGLang could not read the card's total memory" in result.verdict
    assert "upgrade" in result.verdict
    assert not {k for k, _ in knobs_of(result)} & MEMORY_KNOBS


def test_a_failed_capacity_read_inside_its_traceback_names_the_query() -> None:
    result = diagnose_text(
        "\n".join(
            [
                "Traceback (most recent call last):",
                FRAME.format(path="server_args.py", n=182, func="__post_init__"),
                "    gpu_mem = get_nvgpu_memory_capacity()",
                FRAME.format(path="utils.py", n=904, func="get_nvgpu_memory_capacity"),
                '    raise RuntimeError(f"nvidia-smi error: {result.stderr.strip()}")',
                "RuntimeError: nvidia-smi error: Insufficient Permissions",
            ]
        )
    )
    assert result.outcome == "crash"
    assert finding_ids(result).count("capacity_query_failed") == 1
    assert "could not read the card's total memory" in result.verdict


@pytest.mark.parametrize(
    "said",
    [
        "get_nvgpu_memory_capacity() causes a crash on our A100 MIG slices",
        "on a Jetson the launch dies because get_nvgpu_memory_capacity fails",
        "nvidia-smi doesn't show total memory inside the MIG container, so sglang crashes",
        "rocm-smi does not work in this container and the server never starts",
        "- nvidia-smi is not working on orin",
    ],
    ids=paste_id,
)
def test_a_failed_capacity_read_said_in_words_is_read(said: str) -> None:
    result = diagnose_text(said)
    assert result.outcome == "crash"
    assert "capacity_query_failed" in finding_ids(result)
    assert "upgrade" in result.verdict


@pytest.mark.parametrize(
    "said",
    [
        "nvidia-smi shows 0 MB used but the next launch still fails",
        "nvidia-smi doesn't show any process, yet 70 GB are in use",
    ],
    ids=paste_id,
)
def test_other_words_about_nvidia_smi_are_not_a_failed_capacity_read(said: str) -> None:
    # memory held elsewhere, said in words: no text of the family, nothing read (exit 3)
    with pytest.raises(InputError):
        diagnose_text(said)


def test_sglangs_own_fallback_warning_is_no_failed_capacity_read() -> None:
    # the launch survives it (v0.5.8 utils/common.py:1686-1690): a log line, no crash cause
    result = diagnose_text(
        "[2025-01-01 10:00:00] Failed to get GPU memory capacity from nvidia-smi, falling back "
        "to torch.cuda.mem_get_info()."
    )
    assert result.outcome != "crash"
    assert "capacity_query_failed" not in finding_ids(result)


@pytest.mark.parametrize(
    "said",
    [
        "on --device cpu the gpu_mem it reads is None and server_args compares it with an int",
        "get_device_memory_capacity returns None for cpu, then the launch fails with a TypeError",
        "With SGLANG_CPU_OMP_THREADS_BIND set the device memory was None, so without "
        "--mem-fraction-static it crashes",
    ],
    ids=paste_id,
)
@pytest.mark.parametrize("shape", ("{s}", "`{s}`", "we run on Xeon: {s}"), ids=paste_id)
def test_a_capacity_of_none_compared_asks_for_an_explicit_fraction(said: str, shape: str) -> None:
    result = diagnose_text(shape.format(s=said))
    assert result.outcome == "crash"
    assert "capacity_none_compared" in finding_ids(result)
    assert "pass --mem-fraction-static explicitly" in result.verdict


def test_a_none_in_other_words_is_no_capacity_read() -> None:
    result = diagnose_text(
        "CUDA out of memory after a while; max_total_tokens is None and we never compared it"
    )
    assert "capacity_none_compared" not in finding_ids(result)


AITER_WARNING = (
    "[2026-01-01 10:00:00] attention_backend=aiter with context_len=131072 (>8192) normally "
    "scales mem_fraction_static by 0.85 to reserve non-static workspace, but "
    "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is set, so mem_fraction_static=0.900 is used as-is. "
    "Ensure enough memory is left for attention workspace and CUDA graphs."
)
"""SGLang's own warning when it skips the reserve (v0.5.23 arg_groups/attention_hook.py:255-263)."""


@pytest.mark.parametrize(
    "paste",
    [
        AITER_WARNING + "\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB.",
        "the aiter long-context reserve matters: without it we get HIP out of memory on MI300X",
        "HIP OOM at 150 GiB once 0.9 was no longer scaled by 0.85 for aiter",
        "the x0.85 derate for AITER is load-bearing, removing it gives an out of memory",
    ],
    ids=paste_id,
)
def test_the_aiter_reserve_named_with_an_oom_lowers_the_fraction(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    # said in words, it places the OOM after the pool; SGLang's warning on its own earlier line
    # does not place an OOM printed later
    assert result.phase.value == ("unknown" if paste.startswith("[") else "after_pool")
    assert knobs_of(result)[0] == ("mem_fraction_static", "lower")
    assert "aiter attention backend's long-context reserve" in said_of(result)


def test_a_launch_command_naming_aiter_and_the_fraction_is_no_reserve() -> None:
    result = diagnose_text(
        "python -m sglang.launch_server --model-path m --attention-backend aiter "
        "--mem-fraction-static 0.8 --context-length 131072\n"
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB."
    )
    assert "aiter attention backend's long-context reserve" not in said_of(result)


@pytest.mark.parametrize(
    "paste",
    [
        "OSError: [Errno 12] Cannot allocate memory",
        "the pod was OOMKilled by the kernel while sglang loaded the weights",
    ],
    ids=paste_id,
)
def test_host_ram_names_the_containers_limit_as_the_lever(paste: str) -> None:
    result = diagnose_text(paste)
    text = said_of(result)
    assert "host RAM, not GPU memory" in text or "host ran out of RAM" in text
    assert "limit" in text
    assert not {k for k, _ in knobs_of(result)} & MEMORY_KNOBS
