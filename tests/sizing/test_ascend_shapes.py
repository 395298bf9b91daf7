"""The NPU sizing rules end to end, on synthetic startups in the shapes of Ascend deployments:
a DeepSeek-R1 PD prefill with MTP, a Qwen3-Next hybrid with DeepEP, a Qwen3-235B PD decode with
EAGLE3, each as an Ascend build of the 0.5.3 - 0.5.8 formats prints it (its own `The available
memory for KV cache is X GB` line between the KV dtype and the KV line).

The logged token counts are written with SGLang's arithmetic (v0.5.6
model_executor/model_runner.py:1367-1497, :1697-1716, page floor :1729-1733) from the rest the
build prints, with the exact cell of the model's geometry; memledger reads only the printed lines
and must land on them.
"""

from __future__ import annotations

from typing import Any

import pytest

import memledger
from memledger.model.sizing import SizingResult
from memledger.sizing import size_log, sizing_inputs
from memledger.units import GIB

PAGE = 128  # the NPU default page size (v0.5.8 hardware_backend/npu/utils.py:48-49)


def _gb(value: float) -> str:
    return f"{value / GIB:.2f}"


def _args(fields: dict[str, Any]) -> str:
    body = ", ".join(f"{key}={value!r}" for key, value in fields.items())
    return f"server_args=ServerArgs(model_path='m', {body})"


def _headroom(reqs: int, steps: int, topk: int, draft: int) -> int:
    """v0.5.6 model_executor/model_runner.py:1702-1713."""
    return reqs * steps * topk + reqs * draft + 100


def _floor(tokens: int) -> int:
    return tokens // PAGE * PAGE


def _log(lines: list[str], tag: str = "DP0 TP0 EP0") -> str:
    return "".join(
        f"[2026-01-10 10:00:{i % 60:02d} {tag}] {line}\n" for i, line in enumerate(lines)
    )


def _result(text: str) -> SizingResult:
    return size_log(sizing_inputs(memledger.load_text(text)))


def _term(result: SizingResult, name: str) -> int | float | str | None:
    return next((t.value for t in result.prediction.terms if t.name == name), None)


def _npu_args(**fields: Any) -> dict[str, Any]:
    return {
        "device": "npu",
        "attention_backend": "ascend",
        "page_size": PAGE,
        "kv_cache_dtype": "auto",
        "speculative_moe_a2a_backend": None,
        **fields,
    }


def _dsr1_prefill_mtp(printed_rest: float) -> tuple[str, int, int]:
    """DeepSeek-R1 (61 MLA layers, 576 x 2 B each), PD prefill, DP2 x TP16, MTP 3/1/4."""
    cell = 61 * 576 * 2
    mrr, steps, topk, draft = 16, 3, 1, 4
    rest = round(printed_rest * GIB)
    tokens = _floor(rest // cell + _headroom(mrr, steps, topk, draft))
    args = _npu_args(
        mem_fraction_static=0.72,
        max_running_requests=mrr,
        tp_size=16,
        dp_size=2,
        enable_dp_attention=True,
        disaggregation_mode="prefill",
        moe_a2a_backend="deepep",
        speculative_algorithm="EAGLE",
        speculative_num_steps=steps,
        speculative_eagle_topk=topk,
        speculative_num_draft_tokens=draft,
        disable_radix_cache=True,
    )
    text = _log(
        [
            _args(args),
            "Load weight begin. avail mem=60.78 GB",
            "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
            "avail mem=30.20 GB, mem usage=30.58 GB.",
            "Using KV cache dtype: torch.bfloat16",
            f"The available memory for KV cache is {printed_rest:.2f} GB.",
            f"KV Cache is allocated. #tokens: {tokens}, KV size: {_gb((tokens + PAGE) * cell)} GB",
            "Memory pool end. avail mem=16.90 GB",
            "Load weight begin. avail mem=16.90 GB",
            "Load weight end. type=DeepseekV3ForCausalLMNextN, dtype=torch.bfloat16, "
            "avail mem=14.10 GB, mem usage=2.80 GB.",
            "Using KV cache dtype: torch.bfloat16",
            "The available memory for KV cache is 4.60 GB.",
            f"KV Cache is allocated. #tokens: {tokens}, "
            f"KV size: {_gb((tokens + PAGE) * 576 * 2)} GB",
            "Memory pool end. avail mem=13.90 GB",
            f"max_total_num_tokens={tokens}, chunked_prefill_size=16384, "
            f"max_prefill_tokens=16384, max_running_requests={mrr // 2}, context_len=163840, "
            "available_gpu_mem=13.90 GB",
        ]
    )
    return text, tokens, _headroom(mrr, steps, topk, draft)


def test_dsr1_pd_prefill_mtp_divides_the_printed_rest_with_the_headroom() -> None:
    """The rest the prefill node prints is 0.02 GiB below A - P x (1 - mfs) of the ranks it
    shows (30.20 - 60.78 x 0.28 = 13.18): the printed one is divided, the MTP headroom with the
    global request count (16 x 3 x 1 + 16 x 4 + 100) added, and the draft's own rest line
    (after the target's pool) is not the target's."""
    text, tokens, headroom = _dsr1_prefill_mtp(13.16)
    result = _result(text)
    assert result.mismatch is None
    assert result.logged_max_total_num_tokens == tokens
    assert result.predicted_max_total_num_tokens == tokens
    assert _term(result, "rest (printed)") == round(13.16 * GIB)
    assert _term(result, "speculative headroom") == headroom
    assert any("a rank the log does not show" in note for note in result.prediction.notes)
    assert "The available memory for KV cache is 13.16 GB." in text
    without = _result(text.replace("The available memory for KV cache is 13.16 GB.\n", "x\n"))
    assert without.predicted_max_total_num_tokens != tokens  # the line is what decides it


def _qwen3_next_deepep(*, dp: int, draft: int) -> tuple[str, int, int]:
    """Qwen3-Next (48 layers, 12 full attention with 2 KV heads x 256, GDN state per request
    68 MiB), DeepEP, TP4, radix cache on: Mamba slots K from the ratio share, divided among the
    DP-attention workers as 0.5.4 - 0.5.6 do for a GDN model, the draft tokens' intermediate
    states in each slot (v0.5.6 model_executor/model_runner.py:1450-1497)."""
    heads = max(1, 2 // (4 // dp))
    cell = heads * 256 * 2 * 12 * 2
    per_req = 68 << 20
    printed_rest = 30.00
    rest = round(printed_rest * GIB)
    share = printed_rest * 0.9 / 1.9
    k = int((share * GIB) // per_req // (1 + draft)) // dp
    state = k * per_req * (1 + draft)
    tokens = _floor((rest - state) // cell + (_headroom(32, 2, 1, draft) if draft else 0))
    fields: dict[str, Any] = {
        "mem_fraction_static": 0.8,
        "max_running_requests": 32,
        "tp_size": 4,
        "dp_size": dp,
        "enable_dp_attention": dp > 1,
        "moe_a2a_backend": "deepep",
        "disable_radix_cache": False,
        "mamba_full_memory_ratio": 0.9,
    }
    if draft:
        fields |= {
            "speculative_algorithm": "NEXTN",
            "speculative_num_steps": 2,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": draft,
        }
    conv, ssm = (k + 1) * (4 << 20), (k + 1) * (64 << 20)
    mamba = f"conv_state size: {_gb(conv)}GB, ssm_state size: {_gb(ssm)}GB "
    if draft:
        inter = (k + 1) * draft * per_req
        mamba += (
            f"intermediate_ssm_state_cache size: {_gb(inter * 16 // 17)}GB "
            f"intermediate_conv_window_cache size: {_gb(inter // 17)}GB "
        )
    text = _log(
        [
            _args(_npu_args(**fields)),
            "Load weight begin. avail mem=60.70 GB",
            "Load weight end. type=Qwen3NextForCausalLM, dtype=torch.bfloat16, "
            "avail mem=42.14 GB, mem usage=18.56 GB.",
            "Using KV cache dtype: torch.bfloat16",
            f"The available memory for KV cache is {printed_rest:.2f} GB.",
            f"Mamba Cache is allocated. max_mamba_cache_size: {k}, {mamba}",
            f"KV Cache is allocated. #tokens: {tokens}, K size: "
            f"{_gb((tokens + PAGE) * cell // 2)} GB, V size: {_gb((tokens + PAGE) * cell // 2)} GB",
            "Memory pool end. avail mem=12.00 GB",
            f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
            f"max_running_requests={32 // dp}, context_len=262144, available_gpu_mem=11.90 GB",
        ]
    )
    return text, tokens, k


@pytest.mark.parametrize(("dp", "draft"), [(2, 0), (1, 2), (2, 2)])
def test_qwen3_next_deepep_hybrid_takes_the_printed_slots(dp: int, draft: int) -> None:
    """Whether this build's release divides a GDN model's slots among the DP workers or sizes
    them with the draft tokens (rules mamba_gdn_dp, mamba_spec_ratio: 0.5.4 - 0.5.6) the
    0.5.3 - 0.5.8 formats do not tell; the slots the Mamba line prints are taken, said so,
    and the printed rest is the one before the state (it is used)."""
    text, tokens, k = _qwen3_next_deepep(dp=dp, draft=draft)
    result = _result(text)
    logged = result.logged_max_total_num_tokens
    predicted = result.predicted_max_total_num_tokens
    assert logged == tokens and predicted is not None
    assert abs(predicted - tokens) <= 0.005 * tokens, (predicted, tokens)
    assert result.mismatch is None
    assert result.prediction.mamba_slots == k
    assert _term(result, "rest (printed)") == round(30.00 * GIB)
    assert any("the log's K = " in note for note in result.prediction.notes)


def _qwen3_235b_decode_eagle3(printed_rest: float) -> tuple[str, int, int]:
    """Qwen3-235B-A22B (94 layers, 4 KV heads x 128), PD decode, TP16 x DP16 attention (one
    rank per DP group: all 4 heads), EAGLE3 3/1/4 with a one-layer draft; the draft loads after
    the target's graphs (before 0.5.14) and holds the target's token count."""
    cell = 4 * 128 * 2 * 94 * 2
    mrr, steps, topk, draft = 256, 3, 1, 4
    rest = round(printed_rest * GIB)
    headroom = _headroom(mrr, steps, topk, draft)
    tokens = _floor(rest // cell + headroom)
    args = _npu_args(
        mem_fraction_static=0.78,
        max_running_requests=mrr,
        tp_size=16,
        dp_size=16,
        enable_dp_attention=True,
        disaggregation_mode="decode",
        moe_a2a_backend="deepep",
        speculative_algorithm="EAGLE3",
        speculative_num_steps=steps,
        speculative_eagle_topk=topk,
        speculative_num_draft_tokens=draft,
        disable_radix_cache=True,
    )
    text = _log(
        [
            _args(args),
            "Load weight begin. avail mem=60.80 GB",
            "Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, "
            "avail mem=46.21 GB, mem usage=14.59 GB.",
            "Using KV cache dtype: torch.bfloat16",
            f"The available memory for KV cache is {printed_rest:.2f} GB.",
            f"KV Cache is allocated. #tokens: {tokens}, K size: "
            f"{_gb((tokens + PAGE) * cell // 2)} GB, V size: {_gb((tokens + PAGE) * cell // 2)} GB",
            "Memory pool end. avail mem=13.05 GB",
            "Capture cuda graph begin. This can take up to several minutes. avail mem=13.05 GB",
            "Capture cuda graph end. Time elapsed: 30.00 s. mem usage=2.10 GB. avail mem=10.95 GB.",
            "Load weight begin. avail mem=10.95 GB",
            "Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, "
            "avail mem=9.95 GB, mem usage=1.00 GB.",
            "Using KV cache dtype: torch.bfloat16",
            "The available memory for KV cache is 3.10 GB.",
            f"KV Cache is allocated. #tokens: {tokens}, K size: "
            f"{_gb((tokens + PAGE) * 4 * 128 * 2)} GB, V size: "
            f"{_gb((tokens + PAGE) * 4 * 128 * 2)} GB",
            "Memory pool end. avail mem=9.60 GB",
            f"max_total_num_tokens={tokens}, chunked_prefill_size=-1, max_prefill_tokens=16384, "
            f"max_running_requests={mrr // 16}, context_len=40960, available_gpu_mem=9.40 GB",
        ]
    )
    return text, tokens, headroom


def test_qwen3_235b_pd_decode_eagle3_adds_the_headroom_of_the_global_requests() -> None:
    """256 requests x (3 x 1 + 4) + 100 = 1,892 tokens (about 1 % here) over what the printed
    rest holds: with rule npu_spec_headroom the prediction is the logged count; the draft's KV
    (one layer, the target's count) stays out of the cell before 0.5.14."""
    text, tokens, headroom = _qwen3_235b_decode_eagle3(32.40)
    result = _result(text)
    assert result.mismatch is None
    assert result.predicted_max_total_num_tokens == tokens
    assert _term(result, "speculative headroom") == headroom == 1_892
    cell = result.bytes_per_token
    assert cell is not None and abs(cell - 4 * 128 * 2 * 94 * 2) <= 0.01 * GIB / tokens
    assert any("draft KV is outside the budget" in note for note in result.prediction.notes)


def test_without_the_printed_rest_a_missing_headroom_is_named() -> None:
    """The same decode startup from a build that prints no rest (a single node: A - P x
    (1 - mfs) = 45.78 - 60.80 x 0.22 = 32.40 GiB): the release range does not say whether the
    build keeps 0.5.6's headroom, so it is not added, and the miss names it with the count it
    would give."""
    text, tokens, headroom = _qwen3_235b_decode_eagle3(32.40)
    text = text.replace("The available memory for KV cache is 32.40 GB.\n", "")
    text = text.replace(
        "avail mem=46.21 GB, mem usage=14.59 GB.", "avail mem=45.78 GB, mem usage=15.02 GB."
    )
    result = _result(text)
    predicted = result.predicted_max_total_num_tokens
    assert predicted is not None and predicted < tokens * (1 - 0.005)
    assert result.mismatch is not None
    assert f"(+{headroom:,} tokens, rule spec_headroom)" in result.mismatch
    assert "does not say whether its build keeps it" in result.mismatch


def test_without_the_printed_rest_the_world_minimum_is_named() -> None:
    """A hybrid startup whose node read 0.50 GiB more free memory than the rank SGLang sized
    by: without the printed rest the miss says which gap would make the logged pool fit."""
    text, tokens, _ = _qwen3_next_deepep(dp=2, draft=0)
    text = text.replace("The available memory for KV cache is 30.00 GB.\n", "")
    text = text.replace(
        "avail mem=42.14 GB, mem usage=18.56 GB.", "avail mem=42.64 GB, mem usage=18.06 GB."
    )
    result = _result(text)
    predicted = result.predicted_max_total_num_tokens
    assert predicted is not None and predicted > tokens * (1 + 0.005)
    assert result.mismatch is not None
    assert "prints no rest of its own (rule npu_printed_rest; it shows 1 rank)" in result.mismatch
    assert "it fits if a rank had 0.50 GiB less free" in result.mismatch


# server_args fields of 0.5.6.post2 (load_watch_interval) and of 0.5.7 (custom_sigquit_handler)
# together: a build between the two (sizing_rules.SNAPSHOT_056_057_SERVER_ARGS)
SNAPSHOT_FIELDS = {"load_watch_interval": 0.1, "custom_sigquit_handler": None}


def _without_rest(text: str, printed: str, load_end: str, shown: str) -> str:
    """The startup as a paste without its rest line, its load-end reading at `shown`."""
    text = text.replace(f"The available memory for KV cache is {printed} GB.\n", "", 1)
    return text.replace(load_end, shown, 1)


@pytest.mark.parametrize(
    ("fields", "kept"),
    [
        (SNAPSHOT_FIELDS, True),
        ({"load_watch_interval": 0.1}, False),
        ({"custom_sigquit_handler": None}, False),
    ],
)
def test_the_snapshot_server_args_keep_the_headroom_without_the_printed_rest(
    fields: dict[str, Any], kept: bool
) -> None:
    """The decode startup of a build that prints no rest line (one node: A - P x (1 - mfs) =
    45.78 - 60.80 x 0.22 = 32.40 GiB): server_args holding fields of both 0.5.6.post2 and 0.5.7
    date it between them, where rule npu_spec_headroom holds, so the headroom is added; a field
    of only one release does not, and the miss names the headroom instead."""
    text, tokens, headroom = _qwen3_235b_decode_eagle3(32.40)
    args = ", ".join(f"{key}={value!r}" for key, value in fields.items())
    head = "server_args=ServerArgs(model_path='m', "
    text = text.replace(head, f"{head}{args}, ", 1)
    text = _without_rest(
        text,
        "32.40",
        "avail mem=46.21 GB, mem usage=14.59 GB.",
        "avail mem=45.78 GB, mem usage=15.02 GB.",
    )
    result = _result(text)
    if kept:
        assert result.mismatch is None
        predicted = result.predicted_max_total_num_tokens
        assert predicted is not None and abs(predicted - tokens) <= PAGE  # readings to 0.01 GB
        assert _term(result, "speculative headroom") == headroom
        assert any(
            "holds fields of 0.5.6.post2 and 0.5.7 in its server_args" in note
            for note in result.prediction.notes
        )
    else:
        assert _term(result, "speculative headroom") is None
        assert result.mismatch is not None
        assert f"(+{headroom:,} tokens, rule spec_headroom)" in result.mismatch


def _dsa_decode_mtp(printed_rest: float, kv_dtype_line: bool) -> tuple[str, int]:
    """DeepSeek-V3.2 (61 layers), PD decode, MTP 1/1/2: sized with the indexer as uint8 + scales
    (61 x (576 x 2 + 132) B, rule dsa_indexer_cell), allocated as bf16 (61 x 704 x 2 B, rule
    npu_dsa_pool)."""
    sized, alloc = 61 * (576 * 2 + 132), 61 * 704 * 2
    mrr = 32
    tokens = _floor(round(printed_rest * GIB) // sized + _headroom(mrr, 1, 1, 2))
    args = _npu_args(
        mem_fraction_static=0.79,
        max_running_requests=mrr,
        tp_size=32,
        dp_size=8,
        enable_dp_attention=True,
        disaggregation_mode="decode",
        moe_a2a_backend="deepep",
        speculative_algorithm="EAGLE",
        speculative_num_steps=1,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=2,
        **SNAPSHOT_FIELDS,
    )
    lines = [
        _args(args),
        "Load weight begin. avail mem=60.78 GB",
        "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
        "avail mem=28.93 GB, mem usage=31.85 GB.",
        *(["Using KV cache dtype: torch.bfloat16"] if kv_dtype_line else []),
        f"The available memory for KV cache is {printed_rest:.2f} GB.",
        f"KV Cache is allocated. #tokens: {tokens}, KV size: {_gb((tokens + PAGE) * alloc)} GB",
        "Memory pool end. avail mem=11.20 GB",
        f"max_total_num_tokens={tokens}, chunked_prefill_size=-1, max_prefill_tokens=16384, "
        f"max_running_requests={mrr // 8}, context_len=163840, available_gpu_mem=9.80 GB",
    ]
    return _log(lines, tag="DP4 TP16 EP16"), tokens


@pytest.mark.parametrize("kv_dtype_line", [True, False])
def test_dsa_pool_of_a_node_without_rank_0_is_sized_with_the_indexer_cell(
    kv_dtype_line: bool,
) -> None:
    """A second node's log has no rank 0, so no `Using KV cache dtype` line: kv_cache_dtype
    `auto` is the load-end line's bf16, and the allocated bf16 DSA row is still recognised."""
    text, tokens = _dsa_decode_mtp(16.06, kv_dtype_line)
    result = _result(text)
    assert result.mismatch is None
    assert result.bytes_per_token == 61 * (576 * 2 + 132)
    assert result.predicted_max_total_num_tokens == tokens


def _gdn_capped(cap: int | None) -> tuple[str, int]:
    """A hybrid GDN startup (80 Mamba slots, radix cache off) whose KV line allocates 49,152
    B/token, four times the 12,288 of the 12 full-attention layers x 1 KV head x 256 x 2 x 2 B
    a release sizes with: from the 20.12 GiB printed rest the sizing count is far above the
    cap, the allocated pool above the rest."""
    sized, alloc = 12 * 256 * 2 * 2, 49_152
    uncapped = _floor(round(20.12 * GIB) // sized)
    tokens = uncapped if cap is None else min(uncapped, cap)
    fields: dict[str, Any] = {
        "mem_fraction_static": 0.685,
        "max_running_requests": 80,
        "tp_size": 4,
        "moe_a2a_backend": "deepep",
        "disable_radix_cache": True,
        **SNAPSHOT_FIELDS,
    }
    if cap is not None:
        fields["max_total_tokens"] = cap
    half = _gb((tokens + PAGE) * alloc // 2)
    text = _log(
        [
            _args(_npu_args(**fields)),
            "Load weight begin. avail mem=60.71 GB",
            "Load weight end. type=Qwen3NextForCausalLM, dtype=torch.bfloat16, "
            "avail mem=40.76 GB, mem usage=19.95 GB.",
            "Using KV cache dtype: torch.bfloat16",
            "The available memory for KV cache is 20.12 GB.",
            "Mamba Cache is allocated. max_mamba_cache_size: 80, conv_state size: 0.03GB, "
            "ssm_state size: 1.42GB ",
            f"KV Cache is allocated. #tokens: {tokens}, K size: {half} GB, V size: {half} GB",
            "Memory pool end. avail mem=18.55 GB",
            f"max_total_num_tokens={tokens}, chunked_prefill_size=-1, max_prefill_tokens=16384, "
            "max_running_requests=80, context_len=262144, available_gpu_mem=10.20 GB",
        ],
        tag="TP0 EP0",
    )
    return text, tokens


def test_a_count_at_the_max_total_tokens_cap_names_the_cap() -> None:
    """The logged count is the --max-total-tokens cap while the KV line's cell holds fewer
    tokens in the rest: the miss says the cap bound it and that the build sized with a smaller
    cell than it allocates (the pool exceeds the rest); without the cap it does not say so."""
    text, tokens = _gdn_capped(450_560)
    result = _result(text)
    assert result.logged_max_total_num_tokens == tokens == 450_560
    predicted = result.predicted_max_total_num_tokens
    assert predicted is not None and predicted < tokens * (1 - 0.005)
    assert result.mismatch is not None
    assert "the logged count is the --max-total-tokens cap (450,560, server_args line" in (
        result.mismatch
    )
    assert "the build sized with a smaller cell than it allocates" in result.mismatch
    uncapped, _ = _gdn_capped(None)
    uncapped = uncapped.replace(f"#tokens: {_gdn_capped(None)[1]}", "#tokens: 450560")
    uncapped = uncapped.replace(
        f"max_total_num_tokens={_gdn_capped(None)[1]}", "max_total_num_tokens=450560"
    )
    other = _result(uncapped)
    assert other.mismatch is not None and "--max-total-tokens cap" not in other.mismatch


def test_without_the_printed_rest_and_every_rank_shown_names_the_gap() -> None:
    """A TP2 paste with both ranks' readings and no rest line, whose ranks read about 0.50 GiB
    more free memory at load end than SGLang had when it sized (46.71 - 60.80 x 0.22 = 33.33
    GiB vs the 32.40 divided less the 0.43 the printing already leaves): no rank is missing
    from the log, so the miss names memory taken between the reading and the sizing, not
    another rank."""
    text, tokens, _ = _qwen3_235b_decode_eagle3(32.40)
    head = "server_args=ServerArgs(model_path='m', "
    text = text.replace(head, f"{head}load_watch_interval=0.1, custom_sigquit_handler=None, ", 1)
    text = text.replace("tp_size=16, dp_size=16", "tp_size=2, dp_size=1")
    text = text.replace("enable_dp_attention=True", "enable_dp_attention=False")
    text = text.replace("DP0 TP0 EP0", "TP0")
    text = _without_rest(
        text,
        "32.40",
        "avail mem=46.21 GB, mem usage=14.59 GB.",
        "avail mem=46.71 GB, mem usage=14.09 GB.",
    )
    loads = [line for line in text.splitlines() if "Load weight" in line][:2]
    other_rank = "".join(line.replace(" TP0]", " TP1]") + "\n" for line in loads)
    result = _result(text + other_rank)
    predicted = result.predicted_max_total_num_tokens
    assert predicted is not None and predicted > tokens * (1 + 0.005)
    assert result.mismatch is not None
    assert "and all 2 ranks print their readings: SGLang read 0.9" in result.mismatch
    alone = _result(text)  # rank 1 not shown: the other rank may have read less
    assert alone.mismatch is not None
    assert "(rule npu_printed_rest; it shows 1 rank): it fits if a rank had 0.9" in (alone.mismatch)


def test_a_dsa_pool_wider_than_sized_is_not_over_the_budget() -> None:
    """The DSA decode without its rest line, the ranks shown reading 0.10 GiB more than the
    rank SGLang sized by: the pool is allocated 61 x 1,408 B/token but sized at 61 x 1,284
    (rule npu_dsa_pool), which is no excess over the budget; the miss names the unseen ranks."""
    text, tokens = _dsa_decode_mtp(16.06, True)
    text = _without_rest(
        text,
        "16.06",
        "avail mem=28.93 GB, mem usage=31.85 GB.",
        "avail mem=28.93 GB, mem usage=31.85 GB.",
    )
    result = _result(text)
    predicted = result.predicted_max_total_num_tokens
    assert predicted is not None and predicted > tokens * (1 + 0.005)
    assert result.mismatch is not None
    assert "exceed SGLang's budget" not in result.mismatch
    assert "this log prints no rest of its own (rule npu_printed_rest; it shows 1 rank)" in (
        result.mismatch
    )


def _dsa_dated(*, dict_args: bool, baseline: bool) -> tuple[str, int, int]:
    """A DeepSeek-V3.2 Ascend startup without a rest line, dated by its formats: `Init torch
    distributed ends. elapsed=` (0.5.9 - 0.5.20), a dict server_args (0.5.19 on), a `Memory
    baseline taken` line (0.5.21 on), the load end's `elapsed=` without `dtype=` (0.5.10 on).
    Its logged count is what the rule of its release gives."""
    sized, alloc = 61 * (576 * 2 + 132), 61 * 704 * 2
    rest = round(28.93 * GIB) - round(round(60.78 * GIB) * (1 - 0.79))
    cell = alloc if baseline else sized
    tokens = _floor(rest // cell)
    fields = _npu_args(mem_fraction_static=0.79, tp_size=16)
    args = f"server_args={fields!r}" if dict_args else _args(fields)
    text = _log(
        [
            args,
            "Memory baseline taken. mem usage=0.00 GB"
            if baseline
            else "Init torch distributed ends. elapsed=10.00 s, mem usage=0.00 GB",
            "Load weight begin. avail mem=60.78 GB",
            "Load weight end. elapsed=120.00 s, type=DeepseekV32ForCausalLM, "
            "avail mem=28.93 GB, mem usage=31.85 GB.",
            f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, "
            f"KV size: {_gb((tokens + PAGE) * alloc)} GB",
            "Memory pool end. avail mem=11.20 GB",
            f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384,"
            " max_running_requests=64, context_len=163840, available_gpu_mem=9.80 GB",
        ],
        tag="TP0",
    )
    return text, tokens, cell


@pytest.mark.parametrize(("dict_args", "baseline"), [(True, False), (False, True)])
def test_the_npu_dsa_sizing_follows_the_release(dict_args: bool, baseline: bool) -> None:
    """0.5.19 still sizes the NPU DSA pool with the uint8 indexer while allocating it in bf16
    (rule npu_dsa_pool, v0.5.19 hardware_backend/npu/memory_pool_npu.py:584-594); 0.5.20 sizes it
    in the KV dtype (v0.5.20 model_executor/pool_configurator.py:466-473). A 0.5.19 - 0.5.20 log
    is sized by the rule (said so), a 0.5.21+ one by the allocated cell."""
    text, tokens, cell = _dsa_dated(dict_args=dict_args, baseline=baseline)
    result = _result(text)
    assert result.mismatch is None
    assert result.predicted_max_total_num_tokens == tokens
    assert result.bytes_per_token is not None
    assert abs(result.bytes_per_token - cell) <= 0.01 * GIB / tokens
    undecided = any(
        "may predate or follow rule 'npu_dsa_pool'" in n for n in result.prediction.notes
    )
    assert undecided is not baseline


def test_model_config_gives_the_hybrid_sizing_cell_on_the_ascend_backend() -> None:
    """The capped hybrid startup with --model-config (48 layers, full_attention_interval 4): the
    sizing cell is the KV line's x 12 / 48 (rule npu_hybrid_all_layers), which reaches the cap;
    without the config the miss names the rule and what the log lacks."""
    from memledger.model.model_config import model_dims_from_dict

    text, tokens = _gdn_capped(450_560)
    config = {"num_hidden_layers": 48, "full_attention_interval": 4, "torch_dtype": "bfloat16"}
    dims = model_dims_from_dict(config, label="config.json")
    result = size_log(sizing_inputs(memledger.load_text(text), dims))
    assert result.mismatch is None
    assert result.predicted_max_total_num_tokens == tokens
    assert result.bytes_per_token is not None
    assert abs(result.bytes_per_token - 12 * 256 * 2 * 2) <= 0.01 * GIB / tokens
    alone = _result(text)
    assert alone.mismatch is not None
    assert "(rule npu_hybrid_all_layers: the Ascend pool holds every layer" in alone.mismatch
