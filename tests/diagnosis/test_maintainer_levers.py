"""diagnose on short fragments in the shape of SGLang issue threads where a maintainer answered
an OOM question; each test names the thread and checks that memledger's lever is the
maintainer's, with a value computed from the fragment's own numbers. The fragments are written
here (SGLang's line shapes, PyTorch's OOM text), not copied from the threads."""

from __future__ import annotations

import math

from memledger.diagnosis import Diagnosis
from memledger.render.diagnose import suggestion_title
from memledger.units import GIB, MIB
from tests.conftest import diagnose_paste

PREFIX = "[2025-04-29 16:19:00 TP0] "


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines, label="thread.log")


def _startup(tokens: int, kv_side_gb: float, pool_end_gb: float) -> list[str]:
    return [
        PREFIX + "Load weight begin. avail mem=78.50 GB",
        PREFIX + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=63.20 GB, mem usage=15.30 GB.",
        PREFIX + f"KV Cache is allocated. #tokens: {tokens}, K size: {kv_side_gb:.2f} GB, "
        f"V size: {kv_side_gb:.2f} GB",
        PREFIX + f"Memory pool end. avail mem={pool_end_gb:.2f} GB",
    ]


def _oom(asked: str, free_mib: int) -> str:
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {asked}. GPU 0 has a "
        f"total capacity of 79.19 GiB of which {free_mib}.00 MiB is free. Of the allocated "
        "memory 76.10 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but "
        "unallocated."
    )


def _by_knob(result: Diagnosis) -> dict[str, object]:
    return {s.knob: s.value for s in result.suggestions}


def test_capture_oom_without_the_bs_list_caps_the_graph_batch_from_sglangs_default() -> None:
    # https://github.com/sgl-project/sglang/pull/5634 and /pull/10990: capture OOMs were fixed
    # by a smaller capture batch; the log names no bs list and no server_args, so the cap
    # starts from SGLang's default for an 80 GB GPU (256 at tp < 4) and halves it.
    lines = _startup(443000, 27.04, 9.05) + [
        PREFIX + "Capture cuda graph begin. This can take up to several minutes. avail mem=8.60 GB",
        PREFIX + "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 436, in capture',
        "    ) = self.capture_one_batch_size(bs, forward)",
        _oom("1.50 GiB", 812),
    ]
    result = _diagnose(lines)
    assert (result.outcome, result.phase.value) == ("oom", "graph_capture")
    knobs = _by_knob(result)
    assert knobs["cuda_graph_max_bs"] == 128
    assert "cap --cuda-graph-max-bs at 128" in result.verdict
    (graph,) = [s for s in result.suggestions if s.knob == "cuda_graph_max_bs"]
    assert "default for a 79 GiB GPU" in graph.why and "not a computed fit" in graph.why
    # the KV cap frees exactly the missing bytes at the log's own bytes per token
    missing = round(1.5 * GIB) - 812 * MIB
    assert result.shortfall_bytes == missing
    cell = round(2 * 27.04 * GIB) / 443000
    assert knobs["max_total_tokens"] == 443000 - math.ceil(missing / cell)


def test_prefill_oom_while_serving_lowers_the_chunk_and_caps_the_kv_pool() -> None:
    # https://github.com/sgl-project/sglang/issues/6027: a runtime OOM in forward_extend; the
    # maintainers' levers were --max-total-tokens (KV size known exactly) and a lower
    # --mem-fraction-static (more room for activations).
    lines = _startup(200000, 3.00, 3.90) + [
        "[2025-07-07 18:02:00] The server is fired up and ready to roll!",
        PREFIX + "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1900, in event_loop_overlap',
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1199, in '
        "forward_extend",
        _oom("3.50 GiB", 1945),
    ]
    result = _diagnose(lines)
    assert (result.outcome, result.phase.value) == ("oom", "serving")
    knobs = _by_knob(result)
    # SGLang's chunked_prefill_size default for a 60-90 GB GPU is 8192 (not in the log)
    assert knobs["chunked_prefill_size"] == 4096
    missing = round(3.5 * GIB) - 1945 * MIB
    cell = round(2 * 3.00 * GIB) / 200000
    assert knobs["max_total_tokens"] == 200000 - math.ceil(missing / cell)
    assert knobs["mem_fraction_static"] is not None


def test_decode_oom_while_serving_does_not_infer_a_chunk() -> None:
    lines = _startup(200000, 3.00, 3.90) + [
        PREFIX + "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 1180, in '
        "forward_decode",
        _oom("3.50 GiB", 1945),
    ]
    assert "chunked_prefill_size" not in _by_knob(_diagnose(lines))


def test_refusal_without_server_args_says_the_fraction_is_not_in_the_log() -> None:
    # https://github.com/sgl-project/sglang/issues/322 and the review of
    # https://github.com/sgl-project/sglang/pull/23181 ("only related to --mem-fraction-static"):
    # the refusal is fixed by raising the fraction; minimum viable = 1 - A/P.
    lines = [
        PREFIX + "Load weight begin. avail mem=23.05 GB",
        PREFIX + "Load weight end. type=Gemma3ForConditionalGeneration, dtype=torch.bfloat16, "
        "avail mem=4.10 GB, mem usage=18.95 GB.",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ]
    result = _diagnose(lines)
    assert result.phase.value == "kv_sizing"
    assert _by_knob(result)["mem_fraction_static"] == 0.83  # first 0.01 above 1 - 4.10/23.05
    (finding,) = [f for f in result.findings if f.id == "weights_exceed_budget"]
    assert "its value is not in the log" in finding.message
    assert "its current value" not in finding.message


def test_a_token_count_over_a_million_reads_as_an_integer() -> None:
    lines = _startup(1500000, 27.04, 9.05) + [
        PREFIX + "Capture cuda graph begin. This can take up to several minutes. avail mem=8.60 GB",
        _oom("1.50 GiB", 812),
    ]
    result = _diagnose(lines)
    (cap,) = [s for s in result.suggestions if s.knob == "max_total_tokens"]
    assert isinstance(cap.value, int) and cap.value > 1_000_000
    assert suggestion_title(cap) == f"lower --max-total-tokens to {cap.value}"
    assert "e+06" not in suggestion_title(cap)


def test_refusal_where_no_fraction_leaves_sglangs_own_reserve() -> None:
    # https://github.com/sgl-project/sglang/issues/4330: CUDA OOM at 0.85, "Not enough memory"
    # at 0.84 on a 48 GB L40S. Here 1 - A/P = 1 - 6.20/44.00 = 0.859, so 0.86 is the first
    # fraction that sizes a pool; its slack 44.00 x 0.14 = 6.16 GiB is below SGLang's own
    # reserve for a 44 GiB GPU (512 + 4096 x 1.5 + 32 x 2 + 1/8 x 1024 MiB = 6.69 GiB).
    lines = [
        PREFIX + "Load weight begin. avail mem=44.00 GB",
        PREFIX + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        "avail mem=6.20 GB, mem usage=37.80 GB.",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ]
    result = _diagnose(lines)
    assert _by_knob(result)["mem_fraction_static"] == 0.86
    (stuck,) = [f for f in result.findings if f.id == "no_fraction_fits"]
    reserve = round(44.0 * GIB * (1 - round((44.0 * 1024 - 6848) / (44.0 * 1024), 3)))
    assert stuck.bytes == reserve - round(44.0 * GIB * (1 - 0.86))
    assert "raise --tp-size" in result.verdict


def test_refusal_with_room_for_sglangs_reserve_has_no_such_warning() -> None:
    lines = [
        PREFIX + "Load weight begin. avail mem=23.05 GB",
        PREFIX + "Load weight end. type=Gemma3ForConditionalGeneration, dtype=torch.bfloat16, "
        "avail mem=4.10 GB, mem usage=18.95 GB.",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ]
    result = _diagnose(lines)
    assert "no_fraction_fits" not in [f.id for f in result.findings]
    assert "tp-size" not in result.verdict
