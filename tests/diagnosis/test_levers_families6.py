"""Levers of issue 24 that a ready or failed paste gives with direction and, where the numbers are
there, value: more free at ready than SGLang's tuning guide keeps (raise the fraction, never the
verdict). Each family is read in several shapes through the whole command path. Every input is a
synthetic line."""

from __future__ import annotations

import pytest

from memledger.diagnosis.model import Diagnosis
from tests.conftest import PROSE_SHAPES, diagnose_text, knobs_of, paste_id


def _summary(free: str, stamp: str = "[2025-03-02 09:41:17]") -> str:
    return (
        f"{stamp} max_total_num_tokens=481234, chunked_prefill_size=4096, max_prefill_tokens="
        f"16384, max_running_requests=2048, context_len=32768, available_gpu_mem={free} GB"
    )


READY_LOG = """\
[2025-03-02 09:40:01] server_args=ServerArgs(model_path='org/some-8b', tp_size=1, \
mem_fraction_static=0.8, chunked_prefill_size=4096)
[2025-03-02 09:40:05 TP0] Load weight begin. avail mem=70.00 GB
[2025-03-02 09:40:30 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, \
avail mem=54.90 GB, mem usage=15.10 GB.
[2025-03-02 09:40:31 TP0] KV Cache is allocated. #tokens: 481234, K size: 18.36 GB, V size: 18.36 GB
[2025-03-02 09:40:31 TP0] Memory pool end. avail mem=18.10 GB
{summary}
[2025-03-02 09:41:19] The server is fired up and ready to roll!"""

ROOM = "free at ready"
TAGGED = "[2025-03-02 09:41:17 TP0]"


@pytest.mark.parametrize("shape", PROSE_SHAPES, ids=paste_id)
def test_much_free_at_ready_raises_the_fraction_in_each_shape(shape: str) -> None:
    result = diagnose_text(shape.format(s=_summary("13.50")))
    assert result.outcome == "ready"
    room = [f for f in result.findings if ROOM in f.message]
    assert len(room) == 1 and room[0].bytes is not None
    assert abs(room[0].bytes / 2**30 - 5.5) < 0.01  # 13.50 - the guide's 8
    assert knobs_of(result)[-1] == ("mem_fraction_static", "raise")
    assert "hyperparameter_tuning.md" in room[0].message
    # the note and its lever never take the verdict: nothing failed
    assert result.verdict.startswith("ready: no memory problem found")
    assert "fraction" not in result.verdict


def test_the_value_is_the_fraction_that_keeps_the_guides_8_gib() -> None:
    result = diagnose_text(READY_LOG.format(summary=_summary("13.50", TAGGED)))
    raised = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert [s.direction.value for s in raised] == ["raise"]
    # 0.8 + (13.50 - 8) / 70.00 = 0.8786, down to the guide's 0.01 step
    assert raised[0].value == 0.87
    assert "p_gib 70.0" in raised[0].why and "free_gib 13.5" in raised[0].why


def test_the_value_stops_at_the_ceiling() -> None:
    result = diagnose_text(READY_LOG.format(summary=_summary("48.00", TAGGED)))
    raised = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert raised[0].value == 0.95


def test_without_p_and_the_fraction_the_lever_says_what_a_value_needs() -> None:
    result = diagnose_text(_summary("19.00"))
    raised = result.suggestions[-1]
    assert (raised.knob, raised.value) == ("mem_fraction_static", None)
    assert "Load weight begin" in raised.why


@pytest.mark.parametrize(
    "paste",
    [
        _summary("7.50"),  # within the guide's 5-8 GB
        _summary("9.90"),  # below its 10 GB
        "[2025-03-02 09:40:01] server_args=ServerArgs(model_path='org/some-8b', "
        "max_total_tokens=200000)\n" + _summary("30.00"),  # a token cap sized the pool
    ],
    ids=paste_id,
)
def test_no_raise_where_the_guide_or_a_cap_says_otherwise(paste: str) -> None:
    result = diagnose_text(paste)
    assert not [f for f in result.findings if ROOM in f.message]
    assert ("mem_fraction_static", "raise") not in knobs_of(result)


def test_a_failed_startup_is_never_told_to_raise_for_room() -> None:
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.50 GiB is free."
    )
    result = diagnose_text(_summary("13.50") + "\n" + oom)
    assert result.outcome == "oom"
    assert not [f for f in result.findings if ROOM in f.message]


# DeepSeek-V3.2's DSA pool in SGLang 0.5.3 (rule dsa_indexer_left_out): 61 layers of 656 B fp8
# rows, plus 132 B a layer a token of indexer keys the sizing and the KV line leave out
def _kv_line(tokens: int, row: int, layers: int = 61, tag: str = "DP0 TP0") -> str:
    gb = (tokens + 64) * row * layers / 2**30
    stamp = f"[2025-10-07 22:29:11 {tag}]"
    return f"{stamp} KV Cache is allocated. #tokens: {tokens}, KV size: {gb:.2f} GB"


POOL_END = "[2025-10-07 22:29:11 DP0 TP0] Memory pool end. avail mem=12.40 GB"
LEFT_OUT = "indexer_left_out"


@pytest.mark.parametrize("shape", PROSE_SHAPES, ids=paste_id)
def test_the_indexer_keys_a_dsa_pool_holds_beyond_its_line(shape: str) -> None:
    result = diagnose_text(shape.format(s=_kv_line(1_200_000, 656)) + "\n" + POOL_END)
    (left,) = [f for f in result.findings if f.id == LEFT_OUT]
    # 1,200,000 x 132 B x 61 layers = 9.00 GiB
    assert left.bytes == 1_200_000 * 132 * 61
    assert "9.00 GiB" in left.message and "61 layers of fp8 DSA rows" in left.message
    # the paste does not date itself: named on the condition of the window
    assert "(if the release is 0.5.3; this log's is" in left.message
    assert "0.5.3.post1" in left.message and "model_runner.py:1274-1279" in left.message


def test_a_bf16_dsa_pool_needs_the_model_named() -> None:
    named = "\n".join(
        [
            "python -m sglang.launch_server --model deepseek-ai/DeepSeek-V3.2-Exp --tp 8",
            _kv_line(800_000, 1152),
            POOL_END,
        ]
    )
    assert [f.bytes for f in diagnose_text(named).findings if f.id == LEFT_OUT] == [
        800_000 * 132 * 61
    ]
    unnamed = _kv_line(800_000, 1152) + "\n" + POOL_END  # DeepSeek-V3's own bf16 rows
    assert not [f for f in diagnose_text(unnamed).findings if f.id == LEFT_OUT]


@pytest.mark.parametrize(
    "paste",
    [
        _kv_line(900_000, 576) + "\n" + POOL_END,  # a plain MLA pool's fp8 rows
        "[2025-10-07 22:29:11 TP0] KV Cache is allocated. #tokens: 500000, K size: 9.77 GB, "
        "V size: 9.77 GB",  # K and V: no MLA pool
        # a release outside the window (`elapsed=` on this line: 0.5.9 - 0.5.20)
        "[2025-10-07 22:29:01 DP0 TP0] Init torch distributed ends. elapsed=10.00 s, mem usage="
        "0.00 GB\n" + _kv_line(1_200_000, 656) + "\n" + POOL_END,
    ],
    ids=paste_id,
)
def test_no_indexer_finding_off_the_dsa_rows_or_the_window(paste: str) -> None:
    assert not [f for f in diagnose_text(paste).findings if f.id == LEFT_OUT]


# HiCache's refusal: its `free` figure is the host's (0.4.10 - 0.5.18), a rank's share (0.5.19+),
# or the host's with the 10 GiB reserve still in it (0.4.9 and before)
def _refusal(asked: str, free: str) -> str:
    return (
        f"ValueError: Not enough host memory available. Requesting {asked} GB but only have "
        f"{free} GB free. Please reduce the size of the hierarchical cache."
    )


def _hicache(result: Diagnosis) -> tuple[int | float | None, str]:
    (size,) = [s for s in result.suggestions if s.knob == "hicache_size"]
    assert size.direction.value == "lower"
    return size.value, size.why


@pytest.mark.parametrize("shape", PROSE_SHAPES, ids=paste_id)
def test_a_free_figure_above_the_request_is_the_old_one_with_the_reserve(shape: str) -> None:
    # refused although 35.50 > 30.00: only <= 0.4.9 printed the available RAM before the reserve
    value, why = _hicache(diagnose_text(shape.format(s=_refusal("30.00", "35.50"))))
    assert value == 24  # 35.50 - 10 GiB (10.74 GB) = 24.76 GB
    assert "v0.4.9 mem_cache/memory_pool_host.py:70-81" in why and "24.76 GB a rank" in why


def test_an_undated_refusal_below_its_figure_has_no_value_where_releases_differ() -> None:
    value, why = _hicache(diagnose_text(_refusal("200.00", "120.50")))
    assert value is None
    assert "for a value add the release" in why
    assert "v0.5.19 mem_cache/pool_host/base.py:51-59" in why and "v0.5.8 :165-176" in why


def test_a_rank_share_from_0_5_19() -> None:
    dated = "\n".join(
        [
            "[2026-03-01 10:00:00] server_args=ServerArgs(model_path='org/m', tp_size=8, "
            "enable_hierarchical_cache=True, hicache_size=200)",
            "[2026-03-01 10:00:01 TP0] Memory baseline taken. mem usage=0.50 GB",
            "[2026-03-01 10:01:00 TP0] " + _refusal("200.00", "120.50"),
        ]
    )
    value, why = _hicache(diagnose_text(dated))
    assert value == 120  # the figure is this rank's own share already
    assert "8 rank(s) on the host" in why and "0.4.10 .. 0.5.18" not in why


def test_the_hosts_figure_before_0_5_19_is_split_over_its_ranks() -> None:
    dated = "\n".join(
        [
            "[2025-09-01 10:00:00] server_args=ServerArgs(model_path='org/m', tp_size=8, "
            "enable_hierarchical_cache=True, hicache_size=200)",
            "[2025-09-01 10:00:05 TP0] Using KV cache dtype: torch.bfloat16",
            "[2025-09-01 10:01:00 TP0] " + _refusal("200.00", "120.50"),
        ]
    )
    value, why = _hicache(diagnose_text(dated))
    assert value == 15  # 120.50 GB / 8 ranks = 15.06 GB
    assert "v0.5.8 :165-176" in why and ">= 0.5.19" not in why


# Well-known families whose names spell no parameter count (weight_bytes.NAMED_FAMILIES)
def _load_oom(model: str, tp: int, shape: str = "command") -> Diagnosis:
    launch = (
        f"python -m sglang.launch_server --model-path {model} --tp {tp} --trust-remote-code"
        if shape == "command"
        else f"[2026-02-01 09:00:00] server_args=ServerArgs(model_path='{model}', tp_size={tp})"
    )
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total "
        "capacity of 79.19 GiB of which 1.02 GiB is free."
    )
    return diagnose_text(f"{launch}\n{oom}")


@pytest.mark.parametrize("shape", ["command", "server_args"])
@pytest.mark.parametrize(
    ("model", "tp", "fits"),
    [
        ("deepseek-ai/DeepSeek-V3-0324", 4, 8),  # 671B x 1 B (its fp8 checkpoint) = 624.9 GiB
        ("/models/DeepSeek-R1-0528", 2, 8),
        ("moonshotai/Kimi-K2-Instruct-0905", 8, 16),  # 1T x 1 B = 931.3 GiB
        ("zai-org/GLM-4.5-Air", 1, 4),  # 106B x 2 B (16-bit) = 197.4 GiB
        ("MiniMaxAI/MiniMax-M2", 2, 4),  # 230B x 1 B = 214.2 GiB
    ],
)
def test_a_family_without_a_count_is_estimated_from_its_model_card(
    model: str, tp: int, fits: int, shape: str
) -> None:
    result = _load_oom(model, tp, shape)
    assert result.phase.value == "load"
    assert result.verdict.startswith("OOM during weight loading")
    assert f"raise --tp-size to {fits}" in result.verdict
    (weights,) = [f for f in result.findings if f.id == "weights_exceed_budget"]
    assert "estimated from the model's name" in weights.message
    assert "whose names spell no count" in weights.message


def test_a_count_in_the_name_wins_and_an_unknown_name_gets_no_estimate() -> None:
    distill = _load_oom("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", 1)
    (weights,) = [f for f in distill.findings if f.id == "weights_exceed_budget"]
    assert "'70B' in" in weights.message and "whose names spell no count" not in weights.message
    unknown = _load_oom("acme/house-model-v2", 1)
    assert not [f for f in unknown.findings if f.id == "weights_exceed_budget"]


# The stage that grew leads (lifecycle Mention.grew): a draft-token window named beside an OOM
# whose numbers value a lower fraction
PD_DECODE = """\
[2026-03-01 10:00:00] server_args=ServerArgs(model_path='org/some-122b', tp_size=8, \
mem_fraction_static=0.7, disaggregation_mode='decode', speculative_algorithm='EAGLE', \
speculative_num_draft_tokens=8, speculative_num_steps=7)
[2026-03-01 10:00:05 TP0] Load weight begin. avail mem=78.50 GB
[2026-03-01 10:01:05 TP0] Load weight end. type=Qwen3NextForCausalLM, dtype=torch.bfloat16, \
avail mem=62.10 GB, mem usage=16.40 GB.
[2026-03-01 10:01:06 TP0] KV Cache is allocated. #tokens: 337000, K size: 19.00 GB, V size: 19.00 GB
[2026-03-01 10:01:06 TP0] Memory pool end. avail mem=23.10 GB
[2026-03-01 10:01:30] The server is fired up and ready to roll!
Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2210, in \
event_loop_overlap_disagg_decode
  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py", line 310, in \
forward_batch_generation
  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py", line 688, in verify
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total \
capacity of 79.19 GiB of which 180.00 MiB is free. Including non-PyTorch memory, this process has \
78.99 GiB memory in use."""


@pytest.mark.parametrize(
    "said",
    [
        "With a large draft-token window the PD decode OOMs mid-traffic.",
        "the verify workspace grows until the decode instance OOMs during serving",
        "- num-draft-tokens = 8 OOMs mid-traffic, 4 does not",
    ],
    ids=paste_id,
)
def test_the_draft_token_window_leads_a_valued_fraction(said: str) -> None:
    result = diagnose_text(said + "\n" + PD_DECODE)
    assert result.suggestions[0].knob == "speculative_num_draft_tokens"
    # the verdict names it before the fraction it still values (one order: rule 1 of verdict6)
    window = result.verdict.index("--speculative-num-draft-tokens")
    assert window < result.verdict.index("--mem-fraction-static to 0.69")
    valued = {s.knob: s.value for s in result.suggestions}
    assert valued["mem_fraction_static"] == 0.69 and valued["max_total_tokens"] == 334124


def test_a_pd_decode_with_a_draft_names_the_window_by_its_settings() -> None:
    # a PD decode serves only decode steps: its workspace is the verify pass's (lifecycle
    # SETTING_MENTIONS draft_window); no words needed
    assert diagnose_text(PD_DECODE).suggestions[0].knob == "speculative_num_draft_tokens"


@pytest.mark.parametrize(
    "paste",
    [
        PD_DECODE.replace("disaggregation_mode='decode', ", ""),  # not a PD decode
        # the window named, but the failure placed in warmup (no ready line), not serving
        "With a large draft-token window it fails.\n"
        + PD_DECODE.replace(
            "The server is fired up and ready to roll!", "Load weight begin. avail mem=30.00 GB"
        )
        .replace("scheduler.py", "model_runner.py")
        .replace("eagle_worker.py", "x.py"),
    ],
    ids=["colocated", "warmup"],
)
def test_elsewhere_the_valued_fraction_leads(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.suggestions[0].knob == "mem_fraction_static"
