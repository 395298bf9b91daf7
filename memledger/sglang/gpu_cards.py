"""GPU capacities as SGLang reads them, for the cards a log can name: data, one source each.

SGLang's mem_fraction_static default depends on the GPU capacity `gpu_mem` (MiB, the minimum
over the node's GPUs): on CUDA `nvidia-smi --query-gpu=memory.total --format=csv,noheader,
nounits`, on ROCm rocminfo's first GPU agent's `Pool 1` size in KB / 1024 (v0.5.10
utils/common.py:1441-1471 amdgpu, :1514-1549 nvgpu, :1673-1690 get_device_memory_capacity;
v0.5.16 :562-672). A log names its GPU by `torch.cuda.get_device_name()` (the name nvidia-smi
prints too), e.g. in a kernel-config path's `device_name=` (sglang.env_reports).

Each figure below is that query's answer as a public nvidia-smi / rocminfo output prints it for
the card of that exact name; `source` says where. memory.total can move by a few MiB with the
driver or ECC mode; a different card of the same family (PCIe, NVL, 40 GB) has its own name, and
a name that is not here gives no capacity (never a guess from a family).
"""

from __future__ import annotations

from dataclasses import dataclass

_MODAL = "https://thundergolfer.com/blog/nvidia-gpu-memory-capacity (NVML table of Modal's GPUs)"


@dataclass(frozen=True)
class GpuCard:
    """A card by the name torch and nvidia-smi give it, and the capacity SGLang reads."""

    name: str
    capacity_mib: int
    source: str
    platform: str = "cuda"


GPU_CARDS: tuple[GpuCard, ...] = (
    GpuCard("NVIDIA H100 80GB HBM3", 81_559, f"{_MODAL}: H100 81,559 MiB"),
    GpuCard(
        "NVIDIA H200",
        143_771,
        "https://github.com/sgl-project/sglang/issues/3196 (nvidia-smi: 143771MiB)",
    ),
    GpuCard("NVIDIA A100-SXM4-80GB", 81_920, f"{_MODAL}: A100 80GB 81,920 MiB"),
    GpuCard("NVIDIA A100-SXM4-40GB", 40_960, f"{_MODAL}: A100 40GB 40,960 MiB"),
    GpuCard(
        "NVIDIA A800-SXM4-80GB",
        81_920,
        "https://github.com/dexmal/dexbotic/issues/41 (nvidia-smi: 81920MiB)",
    ),
    GpuCard("NVIDIA L40S", 46_068, f"{_MODAL}: L40S 46,068 MiB"),
    GpuCard("NVIDIA L4", 23_034, f"{_MODAL}: L4 23,034 MiB"),
    GpuCard("Tesla T4", 15_360, f"{_MODAL}: T4 15,360 MiB"),
    GpuCard(
        "NVIDIA B200",
        183_359,
        "https://github.com/NVIDIA/TensorRT-LLM/issues/10278 (nvidia-smi: 183359MiB)",
    ),
    GpuCard(
        "NVIDIA GeForce RTX 4090",
        24_564,
        "https://github.com/RLinf/RLinf/issues/255 (nvidia-smi: 24564MiB)",
    ),
    GpuCard(
        "NVIDIA GeForce RTX 3090",
        24_576,
        "https://github.com/noonghunna/club-3090/issues/1128 (nvidia-smi: 24576MiB)",
    ),
    GpuCard(
        "NVIDIA GeForce RTX 5090",
        32_607,
        "https://github.com/noonghunna/club-3090/issues/1261 (nvidia-smi: 32607MiB)",
    ),
    GpuCard(
        "AMD Instinct MI300X",
        196_592,
        "https://github.com/ROCm/rocm-examples/issues/187 (rocminfo gfx942 Pool 1: "
        "201310208 KB / 1024)",
        platform="rocm",
    ),
)

_BY_NAME = {card.name.casefold(): card for card in GPU_CARDS}


def card_named(name: str) -> GpuCard | None:
    """The card of exactly this name (case and runs of spaces aside), else None."""
    return _BY_NAME.get(" ".join(name.split()).casefold())
