"""Four families a paste names without SGLang's memory lines to place them: the sparse-attention
indexer's scores (a transient that grows with the context and the prefill chunk, outside the
fraction's budget), FlashInfer's autotune forward at startup (a batch of the request slots), a
CUDA device-side index assert (an index past a pool's end: an engine bug, not memory), and a
cache or buffer said to keep growing until the OOM (a leak). Every input is a synthetic line in
its family's shape."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import FindingId
from memledger.sglang.failure_rules import Phase
from tests.conftest import PROSE_SHAPES, diagnose_paste, knobs_of, said_of

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.\n"


def _frame(path: str, line: int, function: str) -> str:
    return f'  File "/sgl-workspace/sglang/python/sglang/srt/{path}", line {line}, in {function}\n'


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize(
    "said",
    [
        "forward_c4_indexer -> deep_gemm fp8_paged_mqa_logits -> CUDA out of memory",
        "the OOM is in fp8_mqa_logits during a 300K prefill",
        "The sparse indexer's logits grow with the context and run out of memory",
        "dsa indexer OOM on long prompts",
    ],
)
def test_the_indexer_named_in_words_places_a_prefill_oom_and_names_the_chunk(
    said: str, shape: str
) -> None:
    """The indexer's fp32 [chunk tokens x context] scores are outside the fraction's budget
    (v0.5.17 layers/attention/dsv4/indexer.py:726, :774-783): the chunk is its lever."""
    result = diagnose_paste(shape.format(s=said) + "\n" + OOM)
    assert (result.outcome, result.phase) == ("oom", Phase.SERVING)
    assert knobs_of(result)[0] == ("chunked_prefill_size", "lower")
    assert "indexer's scores" in said_of(result) and "upgrade" in said_of(result)


def test_the_indexer_in_a_frame_names_it_too() -> None:
    text = (
        "Traceback (most recent call last):\n"
        + _frame("layers/attention/dsv4/indexer.py", 780, "forward_c4_indexer")
        + OOM
    )
    result = diagnose_paste(text)
    assert ("chunked_prefill_size", "lower") in knobs_of(result)
    assert "indexer's scores" in said_of(result)


def test_a_capture_frame_outweighs_the_indexer_for_the_phase() -> None:
    """Decode-graph capture runs the indexer too: the capture frame places the failure."""
    text = (
        "Traceback (most recent call last):\n"
        + _frame("model_executor/cuda_graph_runner.py", 552, "capture_one_batch_size")
        + _frame("layers/attention/nsa/nsa_indexer.py", 413, "_get_topk_paged")
        + OOM
    )
    assert diagnose_paste(text).phase is Phase.GRAPH_CAPTURE


@pytest.mark.parametrize(
    "text",
    [
        "KV size including index is actually 65.49 GB\n" + OOM,
        "the index of the request was wrong, then: " + OOM,
    ],
)
def test_index_alone_is_not_the_indexer(text: str) -> None:
    assert "indexer's scores" not in said_of(diagnose_paste(text))


@pytest.mark.parametrize(
    ("path", "line"),
    [("model_executor/model_runner.py", 1733), ("model_executor/runner/base_runner.py", 414)],
)
def test_an_oom_in_flashinfer_autotune_names_its_batch(path: str, line: int) -> None:
    """The autotune forward is a batch of the request slots (v0.5.8
    model_executor/model_runner.py:1726-1735): fewer slots, or no autotune."""
    text = (
        "Traceback (most recent call last):\n"
        + _frame("model_executor/model_runner.py", 1688, "kernel_warmup")
        + _frame(path, line, "_flashinfer_autotune")
        + _frame("layers/logits_processor.py", 865, "_get_logits")
        + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB. GPU 0 has a "
        "total capacity of 178.35 GiB of which 2.00 GiB is free.\n"
    )
    result = diagnose_paste(text)
    assert (result.outcome, result.phase) == ("oom", Phase.AFTER_POOL)
    knobs = knobs_of(result)
    assert ("max_running_requests", "lower") in knobs
    assert ("disable_flashinfer_autotune", "enable") in knobs
    assert "FlashInfer's autotune" in result.verdict


def test_an_oom_after_the_pool_without_autotune_does_not_name_it() -> None:
    text = (
        "Traceback (most recent call last):\n"
        + _frame("model_executor/model_runner.py", 1596, "init_attention_backend")
        + OOM
    )
    result = diagnose_paste(text)
    assert result.phase is Phase.AFTER_POOL
    assert ("disable_flashinfer_autotune", "enable") not in knobs_of(result)


@pytest.mark.parametrize(
    "line",
    [
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [3,0,0], thread: "
        '[1,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` '
        "failed.",
        "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1553: indexSelectLargeIndex: block: "
        "[2,0,0], thread: [9,0,0] Assertion `srcIndex < srcSelectDimSize` failed.",
        "../aten/src/ATen/native/cuda/IndexKernel.cu:91: operator(): block: [5,0,0], thread: "
        '[105,0,0] Assertion `index >= -sizes[i] && index < sizes[i] && "index out of bounds"` '
        "failed.",
    ],
)
@pytest.mark.parametrize("shape", PROSE_SHAPES)
def test_a_device_side_index_assert_is_an_engine_bug_not_memory(line: str, shape: str) -> None:
    result = diagnose_paste(
        "python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE3\n"
        + shape.format(s=line)
        + "\n"
    )
    assert result.outcome == "crash"
    assert any(f.id == "index_out_of_bounds" for f in result.findings)
    assert "engine bug" in result.verdict and "upgrade" in result.verdict
    assert ("mem_fraction_static", "lower") not in knobs_of(result)


@pytest.mark.parametrize("shape", PROSE_SHAPES)
@pytest.mark.parametrize(
    "said",
    [
        "the attention mask cache will keep increasing and finally cause OOM",
        "The image buffer keeps growing until out of memory",
        "the tensors kept increasing, then OOM",
    ],
)
def test_a_cache_said_to_keep_growing_to_the_oom_is_a_leak(said: str, shape: str) -> None:
    result = diagnose_paste(shape.format(s=said) + "\n")
    said_all = said_of(result)
    assert "grew while serving until it ran out, a leak" in said_all
    assert result.phase is Phase.SERVING


@pytest.mark.parametrize(
    "said",
    [
        "the KV cache keeps increasing and finally OOM",
        "the radix cache keeps growing until out of memory",
        "the prefix cache kept increasing, then OOM",
    ],
)
def test_the_kv_or_radix_cache_growing_is_not_that_leak(said: str) -> None:
    result = diagnose_paste(said + "\n")
    assert not any(
        f.id is FindingId.REPORTED and "a leak (not the pools' size)" in f.message
        for f in result.findings
    )


_ADVICE_TAIL = (
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable cuda graph by --disable-cuda-graph. (Not recommended. Huge perf loss)\n"
)


@pytest.mark.parametrize(
    "command",
    [
        "python -m sglang.launch_server --model-path m --tp 8 --enable-deepep-moe "
        "--deepep-mode normal\n",
        "python3 -m sglang.launch_server --model-path m --moe-a2a-backend deepep "
        "--deepep-mode=normal --tp 8\n",
    ],
)
def test_deepep_normal_mode_with_graphs_is_named_as_no_memory_problem(command: str) -> None:
    """Before 0.4.6.post5 DeepEP's normal mode left CUDA graphs on and the capture failed
    (v0.4.6 server_args.py:301-312; from v0.4.6.post5 :351-353 SGLang turns graphs off): a paste
    of the command and the tail of SGLang's capture advice, no error line, names it."""
    result = diagnose_paste(command + _ADVICE_TAIL)
    assert "DeepEP's normal mode" in said_of(result)
    assert "not a memory problem" in said_of(result)
    assert ("mem_fraction_static", "lower") not in knobs_of(result)
    # no error line shown, yet the pair has its fix: graphs off, said first (not "no knob helps")
    assert knobs_of(result)[0] == ("disable_cuda_graph", "enable"), knobs_of(result)
    assert result.verdict.startswith("DeepEP's normal mode"), result.verdict
    assert "--disable-cuda-graph" in result.verdict.split(";")[0]


def test_deepep_auto_mode_is_not_named() -> None:
    result = diagnose_paste(
        "python -m sglang.launch_server --model-path m --tp 8 --enable-deepep-moe "
        "--deepep-mode auto\n" + _ADVICE_TAIL
    )
    assert "DeepEP's normal mode" not in said_of(result)
