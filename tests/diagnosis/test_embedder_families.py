"""What people paste from projects that embed or deploy SGLang (issue 24, the hidden-set goal):
SGLang's refusal advice quoted alone or in markdown bold, its `max_running_request is zero`
check, the release of SGLang's memory said in words (`offload`, `release`), and KTransformers'
GPU experts named. Each is read in several shapes of the family (a sentence, lower case, inline
code, a bullet, a quote, another engine named in the sentence), through the whole command path
(engine detection included, so an unread paste raises InputError: exit 3). Every input is a
synthetic line."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import Diagnosis
from memledger.input.outcome import outcome_kind
from memledger.model.events import EventKind
from tests.conftest import diagnose_text, paste_id


def _knobs(result: Diagnosis, direction: str) -> list[str]:
    return [s.knob for s in result.suggestions if s.direction == direction]


@pytest.mark.parametrize(
    "paste",
    [
        'A 60GB model on one 80GB card hits the other error: "Please try to increase '
        '--mem-fraction-static".',
        "It fails with Not enough memory. Please try to **increase** --mem-fraction-static.",
        'Startup stops at "Please try to **increase** --mem-fraction-static" on the H100.',
        "the launch ends in `RuntimeError: Please try to increase --mem-fraction-static`",
        "- Please try to increase --mem-fraction-static",
        "> Please try to increase --mem-fraction-static.",
        "vLLM starts at 0.9 but SGLang says: Please try to increase --mem-fraction-static",
    ],
    ids=paste_id,
)
def test_the_refusals_advice_is_the_refusal(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    assert result.phase == "kv_sizing"
    assert _knobs(result, "raise")[:1] == ["mem_fraction_static"]


def test_bold_elsewhere_is_still_read_as_its_text() -> None:
    """A bold word in an allocator message goes, and the message keeps its numbers."""
    result = diagnose_text(
        "torch.OutOfMemoryError: CUDA **out of memory**. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 1.00 GiB is free."
    )
    assert result.outcome == "oom"
    assert result.shortfall_bytes is not None and round(result.shortfall_bytes / 2**30, 2) == 1.0


@pytest.mark.parametrize(
    "paste",
    [
        "AssertionError: max_running_request is zero",
        "It fails to start at 0.25 (`AssertionError: max_running_request is zero`).",
        "the scheduler dies: max_running_request is zero",
        "- AssertionError: max_running_request is zero",
        "vLLM is fine at this fraction; SGLang: AssertionError: max_running_request is zero",
    ],
    ids=paste_id,
)
def test_no_request_slot_is_a_refusal_of_the_pool(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    assert result.phase == "kv_sizing"
    assert "mem_fraction_static" in _knobs(result, "raise")


_RELEASE = "release of its memory for a colocated trainer"


@pytest.mark.parametrize(
    "paste",
    [
        "fix: sglang won't offload when rollout is done in collocated mode, it may cause oom",
        "In colocated mode SGLang should offload after the rollout so the actor has memory; "
        "now the actor OOMs.",
        "- we offload the rollout engine before training, still CUDA out of memory",
        "The trainer OOMs because `SGLang did not release` its GPU memory.",
        "Workaround for SGLang release_memory_occupation returning too early causing OOM",
        "vLLM sleeps fine, but the inference engine releases its memory late and the actor OOMs",
    ],
    ids=paste_id,
)
def test_the_release_said_in_words_names_sglangs_release(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    said = [f.message for f in result.findings if _RELEASE in f.message]
    assert len(said) == 1
    # what the release keeps, and that the call can return before every rank let go
    assert "swa_memory_pool.py" in said[0] and "dp_size replies" in said[0]
    assert _knobs(result, "lower")[:1] == ["mem_fraction_static"]


@pytest.mark.parametrize(
    "paste",
    [
        "python -m sglang.launch_server --model m --cpu-offload-gb 20 runs out of memory",
        "sglang offloads the weights to the CPU and still OOMs",
        "after upgrading, the sglang 0.5.8 release notes say nothing about this OOM",
        "OOM after the new release of our trainer",
    ],
    ids=paste_id,
)
def test_offload_to_the_cpu_or_a_release_version_names_no_release(paste: str) -> None:
    result = diagnose_text(paste)
    assert not any(_RELEASE in f.message for f in result.findings)


@pytest.mark.parametrize(
    "paste",
    [
        "python -m sglang.launch_server --model /m/DeepSeek-V3.2 --kt-weight-path /m "
        "--kt-num-gpu-experts 8 --tp 4\ntorch.OutOfMemoryError: CUDA out of memory.",
        "KTransformers on four 3090s: every model ends in CUDA out of memory at launch.",
        "ktransformers always gets oom, even with kt_num_gpu_experts=1",
        "* with `--kt-num-gpu-experts 120` it OOMs on the 24 GB cards",
        "vLLM can't run it at all; ktransformers starts and then runs out of memory.",
    ],
    ids=paste_id,
)
def test_ktransformers_gpu_experts_are_its_lever(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    lowered = _knobs(result, "lower")
    assert lowered[0] == "kt_num_gpu_experts"
    assert any("kt_ep_wrapper.py:206-209" in s.why for s in result.suggestions)


@pytest.mark.parametrize(
    "paste",
    [
        "transformers 4.57 with sglang runs out of memory at launch",
        "HF Transformers OOMs where SGLang does not",
    ],
    ids=paste_id,
)
def test_transformers_alone_names_no_ktransformers(paste: str) -> None:
    result = diagnose_text(paste)
    assert "kt_num_gpu_experts" not in _knobs(result, "lower")


_TOO_BIG = "the weights alone exceed one GPU"


@pytest.mark.parametrize(
    "paste",
    [
        "Try to run a model which is too big for a single GPU (without more TP). It fails with "
        "CUDA out of memory.",
        "a 70b model is too large for one gpu, so it runs out of memory",
        "it dies with OOM: `Llama-70B doesn't fit on one card`",
        "- the checkpoint cannot fit in a single GPU -> torch.OutOfMemoryError",
        "vLLM says the same: the model is Too big for a single GPU, out of memory at start",
    ],
    ids=paste_id,
)
def test_weights_too_big_for_one_gpu_place_the_failure_at_load(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    assert result.phase == "load"
    assert _knobs(result, "raise")[:1] == ["tp_size"]
    assert any(_TOO_BIG in f.message for f in result.findings)


@pytest.mark.parametrize(
    "paste",
    [
        "Llama-8B fits on one GPU fine, but OOMs under load",
        "the prompt is too big for the KV pool and the server runs out of memory",
    ],
    ids=paste_id,
)
def test_a_model_that_fits_names_no_oversized_weights(paste: str) -> None:
    result = diagnose_text(paste)
    assert not any(_TOO_BIG in f.message for f in result.findings)


@pytest.mark.parametrize(
    "paste",
    [
        "CUDA OoM with large PDFs",
        "the server hits OoM after an hour of traffic",
        "- 70B ooM's on four cards",
        "it fails with `OOm` during warmup",
        "vLLM is fine, but SGLang gets OoM at the first request",
    ],
    ids=paste_id,
)
def test_the_oom_word_in_mixed_case_is_an_out_of_memory(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "oom"
    assert result.suggestions


@pytest.mark.parametrize(
    "paste", ["the room is full of OoMPa dolls", "see tools/OoM.py"], ids=paste_id
)
def test_the_letters_inside_a_word_or_a_file_are_no_oom(paste: str) -> None:
    stated = outcome_kind(paste)
    assert stated is None or stated[0] is not EventKind.OOM


_SWA = "hybrid sliding-window (SWA) model's two KV pools"


@pytest.mark.parametrize(
    "paste",
    [
        "For SWA models the pool runs out of memory although --max-total-tokens covers the batch",
        "gemma with sliding window attention runs out of memory at 8 requests",
        "- `--swa-full-tokens-ratio 0.5` then OOM in prefill",
        "vLLM serves it; SGLang with a sliding-window model says out of memory",
    ],
    ids=paste_id,
)
def test_an_swa_model_named_explains_its_split_pools(paste: str) -> None:
    result = diagnose_text(paste)
    said = [f.message for f in result.findings if _SWA in f.message]
    assert len(said) == 1
    assert (
        "swa-full-tokens-ratio" in said[0] and "model_runner_kv_cache_mixin.py:206-248" in said[0]
    )


@pytest.mark.parametrize(
    "paste",
    [
        "Decode batch, #running-req: 4, #full token: 2642688, full token usage: 1.00, "
        "#swa token: 14592, swa token usage: 0.06, cuda graph: True\nCUDA out of memory",
        "SWAP space is full and the server ran out of memory",
    ],
    ids=paste_id,
)
def test_sglangs_own_swa_counts_and_swap_name_no_swa_model(paste: str) -> None:
    result = diagnose_text(paste)
    assert not any(_SWA in f.message for f in result.findings)
