"""Weights that do not fit the card at this --tp-size, with no weight size printed: the model's
name spells its parameter count and format, the OOM text the card's capacity; a rank holds about
parameters x bytes / (tp x pp), and where that passes the card the failure is the load's and the
lever is the smallest power-of-two --tp-size that fits (or --cpu-offload-gb), with the arithmetic,
said to be an estimate. Synthetic lines in the shapes people paste them."""

from __future__ import annotations

import pytest

from memledger.sizing.named_weights import estimate
from memledger.units import GIB
from tests.conftest import diagnose_paste, knobs_of

_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
    "capacity of {cap} GiB of which 60.00 MiB is free. Of the allocated memory {used} GiB is "
    "allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but unallocated."
)
_H100 = _OOM.format(cap="79.10", used="77.40")


def _launch(model: str, flags: str = "") -> str:
    return f"python3 -m sglang.launch_server --model-path {model} {flags}".rstrip()


_SHAPES = (
    "{cmd}\n{oom}\n",
    "I run this:\n```\n{cmd}\n```\nand get\n```\n{oom}\n```\n",
    "- `{cmd}`\n- {oom}\n",
)


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize(
    ("model", "flags", "tp"),
    [
        ("acme/Foo-70B-Instruct", "--tp 1", 2),  # 130.39 GiB / 79.10 -> 2
        ("acme/Foo-120b-bf16", "--tp 2", 4),  # 223.52 -> 4 (55.88 a rank)
        ("/models/Foo-235B-A22B", "--tp-size 2", 8),  # the total, not A22B: 437.72 / 79.10
        ("acme/Foo-8x22B", "--tp 2", 8),  # 176B at most: 327.83 / 79.10 = 4.14 -> 8
    ],
)
def test_weights_over_the_card_at_this_tp_are_the_loads_with_the_tp_that_fits(
    shape: str, model: str, flags: str, tp: int
) -> None:
    result = diagnose_paste(shape.format(cmd=_launch(model, flags), oom=_H100))
    assert result.phase.value == "load"
    assert knobs_of(result)[:2] == [("tp_size", "raise"), ("cpu_offload_gb", "raise")]
    assert result.suggestions[0].value == tp
    said = " ".join(f.message for f in result.findings)
    assert "estimated from the model's name" in said
    assert f"raise --tp-size to {tp}" in " ".join(result.verdict.split())


def test_the_fraction_given_is_the_weights_share_and_the_tp_below_is_said() -> None:
    # 223.52 GiB / (0.7 x 79.10 = 55.37) = 4.04 -> 8; tp 4's 55.88 GiB fits the card, not the share
    result = diagnose_paste(
        _launch("acme/Foo-120b-bf16", "--tp 2 --mem-fraction-static 0.7") + "\n" + _H100 + "\n"
    )
    tp = result.suggestions[0]
    assert (tp.knob, tp.value) == ("tp_size", 8)
    assert "tp 4 holds 55.88 GiB" in tp.why and "must exceed 55.88 / 79.10 = 0.71" in tp.why
    offload = result.suggestions[1]
    assert (offload.knob, offload.value) == ("cpu_offload_gb", 57)  # 111.76 - 55.37 = 56.39


def test_a_quantized_name_or_flag_counts_fewer_bytes() -> None:
    card = _OOM.format(cap="23.55", used="22.90")
    awq = diagnose_paste(_launch("acme/Foo-70B-AWQ", "--tp 1") + "\n" + card + "\n")
    assert awq.suggestions[0].value == 2  # 70B x 0.5 B = 32.60 GiB / 23.55 -> 2
    assert "'AWQ' in the name" in " ".join(f.message for f in awq.findings)
    fp8 = diagnose_paste(_launch("acme/Foo-70B", "--tp 1 --quantization fp8") + "\n" + _H100)
    assert fp8.phase.value != "load"  # 65.19 GiB fits the 79.10 GiB card: not the weights


@pytest.mark.parametrize(
    "model",
    ["acme/Foo-8B-Instruct", "acme/Foo-4-Scout-17B-16E-Instruct", "acme/Foo-Chat"],
)
def test_weights_that_fit_or_a_name_without_a_count_leave_the_phase_alone(model: str) -> None:
    result = diagnose_paste(_launch(model, "--tp 1") + "\n" + _H100 + "\n")
    assert result.phase.value == "unknown"
    assert "estimated from the model's name" not in " ".join(f.message for f in result.findings)


def test_the_estimate_reads_the_name_the_width_and_the_split() -> None:
    settings = {"model_path": "acme/Foo-8x7B-v0.1", "pp_size": 2}
    found = estimate(settings, 1, 80 * GIB, None)
    assert found is not None
    assert found.per_rank == round(56e9 * 2 / 2)  # 8 x 7B, 2 B, over pp 2
    assert "an upper bound" in found.says and "pp 2" in found.says
    assert not found.over and found.tp is None
    assert estimate({"model_path": "acme/Foo-Chat"}, 1, 80 * GIB, None) is None
    nothing = estimate(settings, 1, 80 * GIB, 1e-12)  # a share that rounds to no bytes
    assert nothing is not None and nothing.over and nothing.tp is None
    tiny = estimate({"model_path": "acme/Foo-135M"}, None, 8 * GIB, None)
    assert tiny is not None and tiny.per_rank == 270_000_000
    assert "assumed: no --tp-size shown" in tiny.says
