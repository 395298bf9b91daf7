"""What a bug report's environment outputs print beside the log (memledger.sglang.env_reports):
every row reads its own example, and pastes in the template's shapes give the card, its memory,
the processes on it and the engine's release. Synthetic outputs in the shapes SGLang's check_env
(v0.5.8 python/sglang/check_env.py:94-101, :141-142), vLLM's collect-env (v0.11.0
vllm/collect_env.py:675), nvidia-smi's default table, rocm-smi --showmeminfo vram and pip print;
no real report text."""

from __future__ import annotations

import io

import pytest

from memledger.input.parsing import parse_log
from memledger.model.events import Event, EventKind
from memledger.sglang.env_reports import (
    GPU_NAMED,
    RELEASE_NAMED,
    REPORT_LINES,
    REPORT_WORDS,
    ReportLine,
    report_evidence,
)
from memledger.sglang.lines import PREFILTER_WORDS
from memledger.sglang.release_markers import release_range
from memledger.sglang.releases import version_code
from memledger.sizing import sizing_inputs
from memledger.sizing.gpu import gpu_capacity
from tests.conftest import diagnose_paste


@pytest.mark.parametrize("row", REPORT_LINES, ids=lambda r: r.name)
def test_every_row_reads_its_example_and_its_words_reach_the_prefilter(row: ReportLine) -> None:
    assert row.source and row.kind in (GPU_NAMED, RELEASE_NAMED)
    found = report_evidence(row.example)
    assert found is not None and found[0] == row.kind
    values = dict(found[1])
    assert values["form"] == row.form
    assert set(values) == {"form", *(key for key, _, _ in row.captures)}
    assert any(word in row.example for word in row.words)
    assert set(row.words) <= set(REPORT_WORDS) <= set(PREFILTER_WORDS)


CHECK_ENV = """Python: 3.10.12 (main, Jan 01 2026, 10:00:00) [GCC 11.4.0]
CUDA available: True
GPU 0,1,2,3: NVIDIA H100 80GB HBM3
GPU 0,1,2,3 Compute Capability: 9.0
CUDA_HOME: /usr/local/cuda
CUDA Driver Version: 550.54.15
PyTorch: 2.5.1+cu124
sglang: 0.4.6.post5
sgl_kernel: 0.1.4
flashinfer_python: 0.2.5
vllm: 0.7.2
ulimit soft: 1048576"""

_RULE = "+" + "-" * 89 + "+"
NVIDIA_SMI = "\n".join(
    [
        _RULE,
        "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.1"
        "5      CUDA Version: 12.4     |",
        "|-----------------------------------------+-----------------"
        "-------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          "
        "Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory"
        "-Usage | GPU-Util  Compute M. |",
        "|=========================================+================="
        "=======+======================|",
        "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00"
        ".0 Off |                    0 |",
        "| N/A   35C    P0             70W /  700W |   30215MiB /  81"
        "559MiB |      0%      Default |",
        "+-----------------------------------------+-----------------"
        "-------+----------------------+",
        "|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00"
        ".0 Off |                    0 |",
        "| N/A   33C    P0             69W /  700W |       4MiB /  81"
        "559MiB |      0%      Default |",
        "+-----------------------------------------+-----------------"
        "-------+----------------------+",
        "| Processes:                                                "
        "                              |",
        "|  GPU   GI   CI        PID   Type   Process name           "
        "                   GPU Memory |",
        "|        ID   ID                                            "
        "                   Usage      |",
        "|" + "=" * 89 + "|",
        "|    0   N/A  N/A     12345      C   python3                "
        "                     30206MiB |",
        _RULE,
    ]
)

OOM = (
    "[2026-01-02 10:00:00 TP0] Load weight begin. avail mem=48.50 GB\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.02 GiB is free."
)


def _events(text: str) -> list[Event]:
    parsed = parse_log(io.BytesIO((text + "\n").encode()), label="paste.txt")
    return list(parsed.startup.events)


def _forms(events: list[Event]) -> list[dict[str, object]]:
    return [
        dict(e.values) for e in events if e.kind in (EventKind.GPU_NAMED, EventKind.RELEASE_NAMED)
    ]


@pytest.mark.parametrize("where", ["before", "after"])
def test_check_env_gives_the_card_the_gpu_count_and_the_release(where: str) -> None:
    text = f"{CHECK_ENV}\n\n{OOM}" if where == "before" else f"{OOM}\n\n{CHECK_ENV}"
    events = _events(text)
    assert {"form": "env_report", "name": "NVIDIA H100 80GB HBM3", "gpus": 4} in _forms(events)
    assert {"form": "check_env", "release": "0.4.6.post5"} in _forms(events)
    dating = release_range(events)
    assert dating.first == dating.last == version_code("0.4.6")  # not check_env's vllm line
    capacity = gpu_capacity(events)
    assert capacity is not None and capacity.mib == 81_559  # the named card (gpu_cards)
    parsed = parse_log(io.BytesIO((text + "\n").encode()), label="paste.txt")
    assert sizing_inputs(parsed).version.first == version_code("0.4.6")


def test_nvidia_smi_gives_each_card_its_memory_and_each_process_its_share() -> None:
    forms = _forms(_events(f"{NVIDIA_SMI}\n{OOM}"))
    assert {"form": "nvidia_smi_name", "gpu": 0, "name": "NVIDIA H100 80GB HBM3"} in forms
    assert {"form": "nvidia_smi_total_mib", "total_mib": 81559, "used_mib": 30215} in forms
    assert {"form": "nvidia_smi_total_mib", "total_mib": 81559, "used_mib": 4} in forms
    assert {
        "form": "nvidia_smi_process",
        "gpu": 0,
        "pid": 12345,
        "process": "python3",
        "used_mib": 30206,
    } in forms


@pytest.mark.parametrize(
    "line, values",
    [
        (
            "GPU 0: NVIDIA A100-SXM4-80GB",
            {"form": "env_report", "name": "NVIDIA A100-SXM4-80GB", "gpus": 1},
        ),
        (
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)",
            {"form": "env_report", "name": "NVIDIA H100 80GB HBM3", "gpus": 1},
        ),
        (
            "GPU models and configuration : AMD Instinct MI300X (gfx942:sramecc+:xnack-)",
            {"form": "env_report", "name": "AMD Instinct MI300X"},
        ),
        ("NPU 0,1: Ascend910B3", {"form": "env_report", "name": "Ascend910B3", "gpus": 2}),
        (
            "GPU[3]\t\t: VRAM Total Memory (B): 206141652992",
            {"form": "rocm_smi_vram", "gpu": 3, "vram_total_b": 206141652992},
        ),
        ("sglang                            0.5.8", {"form": "pip", "release": "0.5.8"}),
        ("sglang==0.5.2rc2", {"form": "pip", "release": "0.5.2rc2"}),
        ("[pip3] sglang==0.4.9.post2", {"form": "pip", "release": "0.4.9.post2"}),
    ],
)
def test_each_tool_s_shape_reads(line: str, values: dict[str, object]) -> None:
    found = report_evidence(line)
    assert found is not None and dict(found[1]) == values


@pytest.mark.parametrize(
    "line",
    [
        "GPU 0: it crashed again after the warmup",  # a reporter's words, not a card's name
        "GPU 0,1 Compute Capability: 9.0",
        "sglang: the server is fired up",
        "I run sglang 0.5.8 with tp 8",  # a sentence: its release is prose's, not pip's
        "sglang-router                     0.1.4",
        "|   0  NVIDIA GeForce RTX 4090 L...   On  |   00000000:01:00.0 Off |              "
        "    N/A |",
        "[2026-01-02 10:00:00 TP0] Load weight end. avail mem=60.00 GB, mem usage=15.50 GB.",
    ],
)
def test_what_is_no_environment_output_reads_as_none(line: str) -> None:
    assert report_evidence(line) is None


def test_a_paste_with_the_template_s_outputs_reads_as_the_log_alone_does() -> None:
    bare, with_env = diagnose_paste(OOM), diagnose_paste(f"{CHECK_ENV}\n{NVIDIA_SMI}\n{OOM}")
    assert (with_env.outcome, with_env.phase) == (bare.outcome, bare.phase)
