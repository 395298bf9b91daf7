"""The GPU capacity a log shows (memledger.sizing.gpu): named cards, pasted nvidia-smi tables,
SGLang's own fallback print, and what the mem_fraction_static default makes of them."""

from __future__ import annotations

from pathlib import Path

import pytest

import memledger
from memledger.sglang.env_reports import report_evidence
from memledger.sglang.gpu_cards import GPU_CARDS, card_named
from memledger.sizing import size_log, sizing_inputs, whatif
from tests.conftest import real_log_paths

# The three config-path warnings that print get_device_name() with `_` for spaces (v0.5.10
# layers/moe/fused_moe_triton/fused_moe_triton_config.py:27 builds the name; :112 the fallback
# line, :130-131 the default-config line; layers/quantization/fp8_kernel.py:1016-1017 FP8 block).
MOE_FALLBACK = (
    "Config file not found at /sgl/configs/triton_3_4_0/E=8,N=2048,device_name={name},"
    "dtype=fp8_w8a8.json. Fallback to triton version 3.1.0 and use MoE kernel config from "
    "/sgl/configs/triton_3_1_0/E=8,N=2048,device_name={name},dtype=fp8_w8a8.json. Performance "
    "might be sub-optimal!"
)
MOE_DEFAULT = (
    "Using default MoE kernel config. Performance might be sub-optimal! Config file not found at "
    "/sgl/configs/E=128,N=384,device_name={name}.json, you can create them with "
    "https://github.com/sgl-project/sglang/tree/main/benchmark/kernels/fused_moe_triton"
)
FP8_BLOCK = (
    "Using default W8A8 Block FP8 kernel config. Performance might be sub-optimal! Config file "
    "not found at /sgl/configs/N=4096,K=7168,device_name={name},dtype=fp8_w8a8,"
    "block_shape=[128, 128].json"
)
NVSMI_ROW = (
    "| N/A   33C    P0            115W /  700W |  124585MiB / {total}MiB |      0%      Default |"
)


def gpu_evidence(line: str) -> tuple[object, ...] | None:
    """(form, the name or memory.total) a line gives, else None."""
    found = report_evidence(line)
    if found is None:
        return None
    values = dict(found[1])
    return values["form"], values.get("name", values.get("total_mib"))


@pytest.mark.parametrize("shape", [MOE_FALLBACK, MOE_DEFAULT, FP8_BLOCK])
def test_config_paths_name_the_gpu(shape: str) -> None:
    line = "[2025-09-11 10:25:47 TP3] " + shape.format(name="NVIDIA_H100_80GB_HBM3")
    assert gpu_evidence(line) == ("device_name", "NVIDIA H100 80GB HBM3")


def test_other_lines_name_no_gpu() -> None:
    assert gpu_evidence(NVSMI_ROW.format(total=143771)) == ("nvidia_smi_total_mib", 143771)
    assert (
        gpu_evidence("Config file not found at /x/E=8,N=2048,device_name=,dtype=fp8.json") is None
    )
    assert gpu_evidence("Load weight end. avail mem=120.00 GB, mem usage=19.10 GB.") is None
    assert gpu_evidence("KV Cache is allocated. #tokens: 20480, K size: 0.12 GB") is None


def test_every_card_has_a_source_and_one_name() -> None:
    names = [card.name.casefold() for card in GPU_CARDS]
    assert len(names) == len(set(names))
    for card in GPU_CARDS:
        assert card.source.startswith("https://"), card.name
        assert 8_000 < card.capacity_mib < 300_000
        assert f"{card.capacity_mib}" in card.source.replace(",", "") or card.platform == "rocm"
    assert card_named("nvidia  h100 80gb HBM3") is card_named("NVIDIA H100 80GB HBM3")
    assert card_named("NVIDIA H100 PCIe") is None  # another card of the family: no guess


def _b200_log(tmp_path: Path, *lines: str) -> Path:
    """single/024 (a B200, formats 0.5.10 - 0.5.12, no server_args), read in place, with `lines`
    in front as a user would paste them."""
    source = next(p for p in real_log_paths() if "single/024" in p.as_posix())
    log = tmp_path / "b200.log"
    log.write_text("".join(f"{line}\n" for line in lines) + source.read_text())
    return log


def _mfs_terms(log: Path) -> dict[str, object]:
    result = size_log(sizing_inputs(memledger.load(log)))
    return {t.name: t for t in result.prediction.terms}


def test_a_named_card_gives_the_default_and_the_prediction(tmp_path: Path) -> None:
    """single/024 alone has no mem_fraction_static and no capacity: no prediction. Named as a
    B200 (183,359 MiB), SGLang's default (rule mfs_default, 0.5.10 - 0.5.12, v0.5.10
    server_args.py:1280-1329) gives 0.855 and 2,215,373 tokens vs the logged 2,206,208
    (+0.42 %); the piecewise-graph reserve the log does not show is taken as 0."""
    plain = size_log(sizing_inputs(memledger.load(_b200_log(tmp_path))))
    assert plain.predicted_max_total_num_tokens is None
    named = _b200_log(
        tmp_path, "[2026-04-10 23:19:04 TP0] " + MOE_DEFAULT.format(name="NVIDIA_B200")
    )
    result = size_log(sizing_inputs(memledger.load(named)))
    assert result.mismatch is None
    assert result.predicted_max_total_num_tokens == 2_215_373
    assert result.logged_max_total_num_tokens == 2_206_208
    terms = {t.name: t for t in result.prediction.terms}
    gpu = terms["GPU capacity"]
    assert (gpu.value, gpu.kind, gpu.unit) == (183_359, "inferred", "MiB")
    assert gpu.source.startswith("line 1 names the GPU (device_name=NVIDIA_B200)")
    assert "TensorRT-LLM/issues/10278" in gpu.source
    mfs = terms["mem_fraction_static"]
    assert (mfs.value, mfs.kind, mfs.rule) == (0.855, "inferred", "mfs_default")


def test_a_table_or_sglangs_own_print_comes_before_the_name(tmp_path: Path) -> None:
    name = "[2026-04-10 23:19:04 TP0] " + MOE_DEFAULT.format(name="NVIDIA_B200")
    table = _b200_log(tmp_path, NVSMI_ROW.format(total=183_000), name)
    gpu = _mfs_terms(table)["GPU capacity"]
    assert gpu.value == 183_000 and gpu.kind == "inferred"  # type: ignore[attr-defined]
    assert "pasted nvidia-smi table's memory.total" in gpu.source  # type: ignore[attr-defined]
    fallback = (
        "[2026-04-10 23:18:00] Failed to get GPU memory capacity from nvidia-smi. Falling back to "
        "torch.cuda.mem_get_info(). Reported total GPU memory per device (MiB): [182000], "
        "using min: 182000 MiB."
    )
    printed = _b200_log(tmp_path, fallback, NVSMI_ROW.format(total=183_000), name)
    gpu = _mfs_terms(printed)["GPU capacity"]
    assert gpu.value == 182_000 and gpu.kind == "measured"  # type: ignore[attr-defined]


def test_a_capacity_below_p_or_an_unknown_or_second_name_is_not_used(tmp_path: Path) -> None:
    """P (free before the weights, 176.28 GiB here) cannot exceed the capacity: an H100's
    81,559 MiB is another machine's; a card the table lacks, or two names, give none."""
    cases = {
        "NVIDIA_H100_80GB_HBM3": "is less than the free memory before the weights",
        "NVIDIA_H100_PCIe": "which memledger's card table",
    }
    for name, why in cases.items():
        log = _b200_log(tmp_path, "[2026-04-10 23:19:04 TP0] " + MOE_DEFAULT.format(name=name))
        result = size_log(sizing_inputs(memledger.load(log)))
        assert result.predicted_max_total_num_tokens is None
        assert any(why in note for note in result.prediction.notes), name
    two = _b200_log(
        tmp_path,
        "[2026-04-10 23:19:04 TP0] " + MOE_DEFAULT.format(name="NVIDIA_B200"),
        "[2026-04-10 23:19:04 TP1] " + MOE_DEFAULT.format(name="NVIDIA_H200"),
    )
    result = size_log(sizing_inputs(memledger.load(two)))
    assert result.predicted_max_total_num_tokens is None
    assert any("names more than one GPU" in note for note in result.prediction.notes)


def test_set_gpu_memory_overrides_the_logs_card(tmp_path: Path) -> None:
    log = _b200_log(tmp_path, "[2026-04-10 23:19:04 TP0] " + MOE_DEFAULT.format(name="NVIDIA_B200"))
    read = sizing_inputs(memledger.load(log))
    answer = whatif(read, {"gpu_memory_mib": 190_000})
    terms = {t.name: t for t in answer.arithmetic}
    assert "GPU capacity" not in terms
    assert "190000 MiB GPU" in str(terms["mem_fraction_static"].source)
