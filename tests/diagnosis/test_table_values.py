"""A lever a stage or a mention names gets its value from the lever table's formula
(memledger.sglang.lifecycle: `Lever.value`) over the setting the paste shows, else over SGLang's
default for the card the paste sizes (memledger.sizing.defaults.GPU_DEFAULTS: the OOM text's total
capacity, an nvidia-smi memory row), with the arithmetic in its why. Synthetic lines in SGLang's,
PyTorch's and nvidia-smi's shapes."""

from __future__ import annotations

from memledger.diagnosis import Diagnosis, Suggestion
from tests.conftest import diagnose_paste

PREFIX = "[2025-04-29 16:19:00 TP0] "
STARTUP = [
    PREFIX + "Load weight begin. avail mem=78.50 GB",
    PREFIX + "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB, "
    "mem usage=15.30 GB.",
    PREFIX + "KV Cache is allocated. #tokens: 200000, K size: 3.00 GB, V size: 3.00 GB",
    PREFIX + "Memory pool end. avail mem=3.90 GB",
    "[2025-04-29 16:20:00] The server is fired up and ready to roll!",
]


def _oom(capacity_gib: float) -> str:
    return (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a "
        f"total capacity of {capacity_gib:.2f} GiB of which 1945.00 MiB is free. Of the "
        "allocated memory 20.10 GiB is allocated by PyTorch, and 1.20 GiB is reserved by "
        "PyTorch but unallocated."
    )


def _lever(result: Diagnosis, knob: str) -> Suggestion:
    (found,) = [s for s in result.suggestions if s.knob == knob]
    return found


def test_a_serving_oom_without_frames_values_the_chunk_from_the_cards_default() -> None:
    # 79 GiB: SGLang's chunked_prefill_size for a 60-90 GiB card is 8192 (fraction_rules)
    result = diagnose_paste([*STARTUP, _oom(79.19)])
    chunk = _lever(result, "chunked_prefill_size")
    assert chunk.value == 4096
    assert "if the OOM was in a prefill" in chunk.why  # the condition stays
    assert "= 4096 with 8192 (not in the log; SGLang's default for a 79 GiB GPU" in chunk.why
    assert "not a computed fit" in chunk.why


def test_the_cards_bucket_picks_the_default_a_smaller_card_halves_a_smaller_chunk() -> None:
    result = diagnose_paste([*STARTUP, _oom(23.65)])  # a 24 GB card: 2048
    assert _lever(result, "chunked_prefill_size").value == 1024


def test_a_chunk_the_server_args_show_is_halved_and_a_disabled_one_gets_no_value() -> None:
    shown = PREFIX + "server_args=ServerArgs(model_path='m', chunked_prefill_size=2048, tp_size=1)"
    result = diagnose_paste([shown, *STARTUP, "RuntimeError: CUDA error: out of memory"])
    assert _lever(result, "chunked_prefill_size").value == 1024
    off = shown.replace("=2048", "=-1")
    result = diagnose_paste([off, *STARTUP, "RuntimeError: CUDA error: out of memory"])
    assert all(s.value is None for s in result.suggestions if s.knob == "chunked_prefill_size")


def test_an_nvidia_smi_memory_row_sizes_the_card_when_the_oom_text_does_not() -> None:
    smi = "| N/A   35C    P0    70W /  700W |   80215MiB /  81559MiB |      0%      Default |"
    bare = [*STARTUP, "RuntimeError: CUDA error: out of memory"]
    assert _lever(diagnose_paste(bare), "chunked_prefill_size").value is None
    chunk = _lever(diagnose_paste([*bare, smi]), "chunked_prefill_size")
    assert chunk.value == 4096
    assert "80 GiB GPU (line 7's)" in chunk.why


def test_a_mentions_graph_cap_is_valued_and_says_the_tp_size_it_assumed() -> None:
    paste = ["I am trying speculative decoding on one GPU", _oom(79.19)]
    graph = _lever(diagnose_paste(paste), "cuda_graph_max_bs")
    assert graph.value == 128  # 256 for a 60-90 GiB card below tp 4, halved
    assert "at tp assumed 1 is 256" in graph.why
    tp8 = PREFIX.replace("TP0", "TP7")
    graph = _lever(
        diagnose_paste([*paste, tp8 + "Load weight begin. avail mem=78.50 GB"]), "cuda_graph_max_bs"
    )
    assert graph.value == 256 and "at tp 8 is 512" in graph.why


def test_a_graph_cap_of_one_has_no_half_and_says_no_value() -> None:
    shown = PREFIX + "server_args=ServerArgs(model_path='m', cuda_graph_max_bs=1, tp_size=1)"
    lines = [
        shown,
        *STARTUP[:4],
        PREFIX + "Capture cuda graph begin. This can take up to several minutes. avail mem=3.60 GB",
        '  File "/sgl/python/sglang/srt/model_executor/cuda_graph_runner.py", line 436, in capture',
        _oom(79.19),
    ]
    graph = _lever(diagnose_paste(lines), "cuda_graph_max_bs")
    assert graph.value is None
    assert "largest batch (1 now); the failing bucket is not in the log" in graph.why
    assert "None" not in graph.why
