"""Every line SGLang prints when it changes a memory setting by itself: one `Adjustment` per text.

SGLang caps, resets or turns off a setting the user gave (or its default) while it resolves its
server arguments and sizes its pools, and says so in one info or warning line: the Mamba state
cache caps max_running_requests, speculative decoding resets it to 48, DP attention divides the
chunked prefill size, an attention backend forces its page size, a model turns CUDA graphs or the
radix cache off. Each entry is one such text: the setting it changes, the value SGLang chose (the
regex's `value` group, or `to` when the text prints none), why, how to get another value, and the
wheel line that prints it (`vX path:line`, path under `python/sglang/srt/` of `pip download
sglang==X --no-deps`, the first release read and the last where it moved).

The error-text table (memledger.sglang.errors) makes one `setting_adjusted` entry of each, so
the readers, the prefilter and the quiet-line test take them from there; the reader
(memledger.input.error_texts.read_adjustment) reads one anywhere in a line: in a log line with
its prefix, pasted alone, or quoted in a sentence. `says` is what diagnose writes of one.

Stdlib only: the scan worker imports this module through memledger.sglang.errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from memledger.sglang.levers import Lever


@dataclass(frozen=True)
class Adjustment:
    """One line SGLang prints when it changes a memory setting."""

    name: str
    """Unique id (also the error-text entry's name)."""
    regex: re.Pattern[str]
    """Searched in the line; its `value` group, when it has one, is the value SGLang chose, its
    `why` group the reason the line gives (a text that names one of several), and its other
    groups the numbers a lever's value reads as `log.NAME` (`was`: the value before)."""
    words: tuple[str, ...]
    """Every match holds one (case-sensitive): the readers' cheap test and the prefilter's."""
    setting: str
    """The server argument (or derived setting) it changes, with underscores."""
    reason: str
    """Why SGLang changes it, in a few words (`the Mamba state cache`)."""
    source: str
    """`vX path:line` of the wheel line(s) that print it."""
    example: str
    """A synthetic line of the text (checked by the shared error-text test)."""
    to: str = ""
    """The value it sets when the text prints none (`disabled`, `48`)."""
    levers: tuple[Lever, ...] = ()
    """How to get another value: one lever a flag the text names, its direction the way away
    from SGLang's choice (none: the change follows from another setting, nothing to set)."""
    at_args: bool = True
    """Printed while SGLang builds its ServerArgs, before the `server_args` line of the startup
    it belongs to (False: printed while the pools are sized, inside the startup)."""
    caps: bool = False
    """SGLang gave less than the value asked for (the requested one, or its own earlier one): a
    limit the user meets. Its levers are the Suggestions of any startup that did not fail; a row
    that sets a default only of a paste that places nothing else (the line is its subject)."""


def _row(
    name: str,
    pattern: str,
    words: tuple[str, ...],
    setting: str,
    reason: str,
    source: str,
    example: str,
    to: str = "",
    levers: tuple[Lever, ...] = (),
    at_args: bool = True,
    caps: bool = False,
) -> Adjustment:
    return Adjustment(
        name,
        re.compile(pattern),
        words,
        setting,
        reason,
        source,
        example,
        to,
        levers,
        at_args,
        caps,
    )


_NUM = r"(?P<value>-?\d+)"
_CLAUSE = r"(?:[^.;]|\.(?=\w)){0,160}"
"""The reason a line gives, to its sentence's end (a dot inside `prefill.backend`, `0.62` stays)."""
_WHOLE_PROMPT = (
    Lever(
        "max_prefill_tokens",
        "lower",
        "a prompt is prefilled whole: fewer new tokens a prefill batch, smaller activations",
    ),
    Lever(
        "context_length",
        "lower",
        "the longest prompt, prefilled whole, bounds the largest prefill's activations",
    ),
)
_DP_CHUNK = Lever(
    "chunked_prefill_size",
    "raise",
    "under DP attention a DP group prefills --chunked-prefill-size // dp_size tokens a chunk "
    "(v0.5.8 server_args.py:1934-1938, v0.5.23 arg_groups/parallel_hook.py:327-333): dp_size x "
    "the size wanted gives each group that size",
)

ADJUSTMENTS: tuple[Adjustment, ...] = (
    # ---- max_running_requests
    _row(
        "mamba_caps_running_requests",
        r"max_running_requests is capped to " + _NUM + r" by the mamba state cache"
        r"(?: \(max_mamba_cache_size=(?P<cache>\d+), (?P<per>\d+) state slots per request)?",
        ("max_running_requests is capped to",),
        "max_running_requests",
        "the Mamba state cache: max_mamba_cache_size // state slots per request",
        "v0.5.20 mem_cache/kv_cache_configurator.py:2285, v0.5.23 :3140",
        "max_running_requests is capped to 9 by the mamba state cache (max_mamba_cache_size=36, "
        "4 state slots per request). To raise it: increase --mamba-full-memory-ratio or "
        "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16.",
        levers=(
            Lever(
                "max_mamba_cache_size",
                "raise",
                "the cap is max_mamba_cache_size // the state slots a request holds (v0.5.20 "
                "mem_cache/kv_cache_configurator.py:2280-2281): the requested max_running_requests "
                "(a DP worker's share) x the slots lifts it there; the Mamba slots come out of the "
                "KV pool's budget",
                needs="the server_args line (max_running_requests)",
                value="args.max_running_requests // default(args.dp_size if "
                "args.enable_dp_attention else 1, 1) * log.per",
            ),
            Lever(
                "mamba_full_memory_ratio",
                "raise",
                "the Mamba state cache's share of the pool budget when --max-mamba-cache-size is "
                "unset (the KV pool gets the rest)",
            ),
            Lever(
                "mamba_ssm_dtype",
                "enable",
                "bfloat16 SSM state instead of float32: each slot half the bytes, twice the slots "
                "in the same budget (the line's own advice)",
            ),
        ),
        at_args=False,
        caps=True,
    ),
    _row(
        "kv_caps_running_requests",
        # `the` dropped when a reporter retypes it
        r"max_running_requests was reduced from (?:the )?requested (?P<was>\d+) to " + _NUM,
        ("max_running_requests was reduced from",),
        "max_running_requests",
        "the KV pool's capacity: at most max_total_num_tokens // 2 requests per DP worker; for a "
        "hybrid (Mamba/linear-attention) model before v0.5.18 the same line also reports the Mamba "
        "state cache's cap, max_mamba_cache_size // state slots per request",
        "v0.5.16 mem_cache/kv_cache_configurator.py:1653 (its Mamba cap applied before the line, "
        ":1637-1641; v0.5.18 :1888-1912 prints that cap as `is capped to ... by the mamba state "
        "cache` instead), v0.5.23 :3166 (MLX: v0.5.17 hardware_backend/mlx/model_runner_stub.py"
        ":208, v0.5.23 :244)",
        "max_running_requests was reduced from the requested 256 to 120 (per dp worker) due to "
        "the available KV cache capacity.",
        levers=(
            Lever(
                "mem_fraction_static",
                "raise",
                "a DP worker serves at most max_total_num_tokens // 2 requests (v0.5.23 "
                "mem_cache/kv_cache_configurator.py:3129, :3132): a larger KV pool serves more",
            ),
            Lever(
                "max_mamba_cache_size",
                "raise",
                "a hybrid (Mamba/linear-attention) model's cap when the KV pool's tokens // 2 is "
                "far above the value: v0.5.16-v0.5.17 print the Mamba state cache's cap, "
                "max_mamba_cache_size // its state slots per request (v0.5.16 "
                "mem_cache/kv_cache_configurator.py:1637-1641), in this line; its slots come out "
                "of the KV pool's budget",
            ),
        ),
        at_args=False,
        caps=True,
    ),
    _row(
        "speculative_resets_running_requests",
        r"Max running requests is reset to " + _NUM + r" for speculative decoding",
        ("Max running requests is reset to",),
        "max_running_requests",
        "speculative decoding's default (each request holds draft tokens and their KV)",
        "v0.5.4 server_args.py:1292, v0.5.8 :2136, v0.5.16 arg_groups/speculative_hook.py:257, "
        "v0.5.23 arg_groups/speculative_hook.py:444",
        "Max running requests is reset to 48 for speculative decoding. You can override this by "
        "explicitly setting --max-running-requests.",
        levers=(
            Lever(
                "max_running_requests",
                "raise",
                "48 is speculative decoding's default when none is given (v0.5.23 "
                "arg_groups/speculative_hook.py:438-445); a value given is kept, each request "
                "holding its draft tokens' KV",
            ),
        ),
    ),
    _row(
        "model_sets_running_requests",
        r"Setting max_running_requests to " + _NUM + r" for \S+",
        ("Setting max_running_requests to",),
        "max_running_requests",
        "the model architecture's default (DeepSeek-V4's pools)",
        "v0.5.16 arg_groups/deepseek_v4_hook.py:51, v0.5.23 :144",
        "Setting max_running_requests to 256 for DeepseekV4ForCausalLM.",
        levers=(
            Lever(
                "max_running_requests",
                "raise",
                "the model's default when none is given (v0.5.23 arg_groups/deepseek_v4_hook.py:"
                "138-144); a value given is kept",
            ),
        ),
    ),
    _row(
        "post_capture_running_requests",
        r"Post-capture KV sizing: max_running_requests (?P<was>\d+) -> " + _NUM,
        ("Post-capture KV sizing: max_running_requests",),
        "max_running_requests",
        "the KV pool sized again after CUDA graph capture",
        "v0.5.16 model_executor/model_runner_components/kv_pool_runtime.py:99, v0.5.23 :172",
        "Post-capture KV sizing: max_running_requests 2048 -> 1536",
        levers=(
            Lever(
                "mem_fraction_static",
                "raise",
                "the pool sized again from what the graphs left serves fewer requests (v0.5.23 "
                "model_executor/model_runner_components/kv_pool_runtime.py:162-173): a larger "
                "budget keeps more",
            ),
        ),
        at_args=False,
        caps=True,
    ),
    # ---- the KV pool's token counts
    _row(
        "swa_ring_tokens",
        r"SWA ring: swa_max_total_num_tokens \d+ -> " + _NUM,
        ("SWA ring: swa_max_total_num_tokens",),
        "swa_max_total_num_tokens",
        "the per-request SWA ring's fixed capacity (one window per request slot)",
        "v0.5.20 mem_cache/kv_cache_configurator.py:347, v0.5.23 :492",
        "SWA ring: swa_max_total_num_tokens 524288 -> 65536 (fixed per-request SWA ring capacity).",
        at_args=False,
    ),
    # ---- chunked prefill
    _row(
        "dp_attention_chunked_prefill",
        r"DP attention is enabled\. The chunked prefill size is adjusted to " + _NUM,
        ("The chunked prefill size is adjusted to",),
        "chunked_prefill_size",
        "DP attention: the chunked prefill size is divided by dp_size (by 2 in v0.3.6-v0.4.0; "
        "MoE kernel limits)",
        "v0.3.6 server_args.py:195, v0.4.0 :207, v0.4.6.post5 server_args.py:335, "
        "v0.5.4 :1174, v0.5.8 :1938, v0.5.10 :2642",
        "DP attention is enabled. The chunked prefill size is adjusted to 2048 to avoid MoE "
        "kernel issues.",
        levers=(_DP_CHUNK,),
    ),
    _row(
        "dp_attention_chunked_prefill_from",
        r"DP attention is enabled\. chunked prefill size is adjusted from (?P<was>\d+) to " + _NUM,
        ("chunked prefill size is adjusted from",),
        "chunked_prefill_size",
        "DP attention: the chunked prefill size is divided by dp_size",
        "v0.5.16 server_args.py:5610, v0.5.23 arg_groups/parallel_hook.py:333",
        "DP attention is enabled. chunked prefill size is adjusted from 8192 to 1024.",
        levers=(replace(_DP_CHUNK, value="log.was * (log.was // log.value)"),),
    ),
    _row(
        "model_turns_off_chunked_prefill",
        r"Automatically turn off? --chunked-prefill-size as it is not supported for \S+",
        ("--chunked-prefill-size as it is not supported",),
        "chunked_prefill_size",
        "the model does not support chunked prefill: each prompt is prefilled whole",
        "v0.4.6.post5 model_executor/model_runner.py:401 ('turn of'), v0.5.8 :644, "
        "v0.5.16 server_args.py:3125, v0.5.23 arg_groups/model_hook.py:1033",
        "Automatically turn off --chunked-prefill-size as it is not supported for gemma3",
        to="-1 (off)",
        levers=_WHOLE_PROMPT,
    ),
    _row(
        "chunked_prefill_off",
        r"Chunked prefill is disabled (?:because|for)(?P<why>" + _CLAUSE + ")",
        ("Chunked prefill is disabled",),
        "chunked_prefill_size",
        "--enable-mis or a multimodal model on the Transformers backend: each prompt is "
        "prefilled whole",
        "v0.5.17 server_args.py:4597, managers/scheduler.py:1148, "
        "v0.5.23 arg_groups/attention_hook.py:565, managers/scheduler.py:1368",
        "Chunked prefill is disabled because --enable-mis is set.",
        to="-1 (off)",
        levers=_WHOLE_PROMPT,
    ),
    _row(
        "small_gpu_chunked_prefill",
        r"Automatically adjust --chunked-prefill-size for small GPUs",
        ("Automatically adjust --chunked-prefill-size",),
        "chunked_prefill_size",
        "a GPU under 25,000 MB: the chunk is divided by 4 (8192 -> 2048) and "
        "cuda_graph_max_bs set to 4",
        "v0.3.6 server_args.py:176",
        "Automatically adjust --chunked-prefill-size for small GPUs.",
        to="2048",
    ),
    # ---- page size
    _row(
        "flashmla_page_size",
        r"FlashMLA only supports a page_size of 64, change page_size to " + _NUM,
        ("FlashMLA only supports a page_size",),
        "page_size",
        "the FlashMLA attention backend",
        "v0.4.6.post5 server_args.py:286, v0.5.8 :1722, v0.5.16 arg_groups/overrides.py:1692, "
        "v0.5.23 arg_groups/overrides.py:1151",
        "FlashMLA only supports a page_size of 64, change page_size to 64.",
    ),
    _row(
        "cutlass_mla_page_size",
        r"Cutlass MLA only supports a page_size of 128, change page_size to " + _NUM,
        ("Cutlass MLA only supports a page_size",),
        "page_size",
        "the Cutlass MLA attention backend",
        "v0.4.6.post5 server_args.py:292, v0.5.8 :1731, v0.5.16 arg_groups/overrides.py:1700",
        "Cutlass MLA only supports a page_size of 128, change page_size to 128.",
    ),
    _row(
        "trtllm_page_size",
        r"(?:TensorRT-LLM MLA only supports|TensorRT-LLM MHA only supports)"
        r" page_size of [\d, or]+, changing page_size from \d+ to " + _NUM,
        ("TensorRT-LLM MLA only supports", "TensorRT-LLM MHA only supports"),
        "page_size",
        "the TensorRT-LLM attention backend",
        "v0.5.4 server_args.py:1105, :1126, v0.5.8 :1746, :1767, v0.5.16 "
        "arg_groups/overrides.py:1710, :1739, v0.5.23 arg_groups/overrides.py:1161, :1185",
        "TensorRT-LLM MHA only supports page_size of 16, 32 or 64, changing page_size from 1 "
        "to 64.",
    ),
    _row(
        "fa4_page_size",
        r"FA4 backend only supports page size 128 for non-MLA model architectures, changing "
        r"page_size from \d+ to " + _NUM,
        ("FA4 backend only supports page size",),
        "page_size",
        "the FA4 attention backend on a non-MLA model",
        "v0.5.8 server_args.py:1780, v0.5.10 :2410",
        "FA4 backend only supports page size 128 for non-MLA model architectures, changing "
        "page_size from 1 to 128.",
    ),
    _row(
        "xpu_page_size",
        r"Intel XPU attention backend(?: for MLA)? only supports page_sizes? of [\[\]\d, or]+, "
        r"changing page_size from \d+ to " + _NUM,
        ("Intel XPU attention backend",),
        "page_size",
        "the Intel XPU attention backend",
        "v0.5.8 server_args.py:1813, v0.5.10 :2443, v0.5.17 arg_groups/overrides.py:2256, "
        "v0.5.23 arg_groups/overrides.py:1334",
        "Intel XPU attention backend only supports page_size of 32, 64 or 128, changing "
        "page_size from 1 to 128.",
    ),
    _row(
        "ascend_page_size",
        r"Ascend attention backend only supports a page_size of 128, change page_size to " + _NUM,
        ("Ascend attention backend only supports",),
        "page_size",
        "the Ascend attention backend",
        "v0.5.0rc2 server_args.py:413, v0.5.4 :1071",
        "At this moment Ascend attention backend only supports a page_size of 128, change "
        "page_size to 128.",
    ),
    _row(
        "cutedsl_hpc_page_size",
        r"(?:CuteDSL MLA only supports|HPC-Ops attention only supports) (?:a )?page_size of "
        r"[\d, or]+, "
        r"changing page_size from \d+ to " + _NUM,
        ("CuteDSL MLA only supports", "HPC-Ops attention only supports"),
        "page_size",
        "the CuteDSL MLA or HPC-Ops attention backend",
        "v0.5.17 arg_groups/overrides.py:2078, :2102, v0.5.23 arg_groups/overrides.py:1171, :1195",
        "CuteDSL MLA only supports page_size of 32 or 64, changing page_size from 1 to 64.",
    ),
    _row(
        "dsa_page_size",
        r"Setting page size to " + _NUM + r" for DeepSeek [DN]SA",
        ("Setting page size to",),
        "page_size",
        "DeepSeek's sparse attention (DSA/NSA) backend",
        "v0.5.4 server_args.py:1024, v0.5.8 :1153, :1159, v0.5.16 arg_groups/overrides.py:395, "
        ":402",
        "Setting page size to 64 for DeepSeek DSA.",
    ),
    _row(
        "aiter_page_size",
        r"Setting page_size=" + _NUM + r" (?:as default )?for (?:aiter|SGLANG_AITER)",
        ("Setting page_size=",),
        "page_size",
        "the AITER attention backend's KV layout (ROCm)",
        "v0.5.10 server_args.py:2071, v0.5.16 arg_groups/overrides.py:979, :1929, "
        "v0.5.23 arg_groups/overrides.py:1356",
        "Setting page_size=64 as default for SGLANG_AITER_KV_CACHE_LAYOUT=vectorized_5d.",
    ),
    _row(
        "dllm_page_size",
        r"Setting page size to " + _NUM + r" for diffusion LLM inference",
        ("Setting page size to",),
        "page_size",
        "diffusion LLM inference: the page is the dLLM block",
        "v0.5.10 server_args.py:3556, v0.5.16 arg_groups/overrides.py:2179, "
        "v0.5.23 arg_groups/overrides.py:1738",
        "Setting page size to 32 for diffusion LLM inference",
    ),
    _row(
        "dllm_page_size_fallback",
        r"Page size now falls back to " + _NUM,
        ("Page size now falls back to",),
        "page_size",
        "diffusion LLM inference: a page may not be larger than the dLLM block",
        "v0.5.10 managers/scheduler.py:451, v0.5.17 arg_groups/overrides.py:2573, "
        "v0.5.23 arg_groups/overrides.py:1747",
        "WARNING: The page size 64 should not be larger than dllm block size 32.Page size now "
        "falls back to 32",
    ),
    _row(
        "dsv4_page_size",
        r"Use dsv4 attention backend for \S+, setting page_size to " + _NUM,
        ("setting page_size to",),
        "page_size",
        "DeepSeek-V4's attention backend",
        "v0.5.16 arg_groups/overrides.py:806",
        "Use dsv4 attention backend for DeepseekV4ForCausalLM, setting page_size to 256.",
    ),
    # ---- KV cache dtype
    _row(
        "model_sets_kv_cache_dtype",
        r"Setting KV cache dtype to (?P<value>[\w.]+)",
        ("Setting KV cache dtype to",),
        "kv_cache_dtype",
        "the model or its attention backend (DeepSeek DSA by GPU generation); the KV pool's "
        "bytes a token follow it, --kv-cache-dtype sets it explicitly",
        "v0.5.4 server_args.py:1032, v0.5.8 :1167, v0.5.16 arg_groups/overrides.py:1237, "
        ":1475, v0.5.23 arg_groups/overrides.py:504, :536, :904",
        "Setting KV cache dtype to fp8_e4m3 for DeepSeek DSA on SM90 device.",
    ),
    _row(
        "backend_sets_kv_cache_dtype",
        r"required FP8 KV; setting --kv-cache-dtype=(?P<value>[\w.]+)",
        ("required FP8 KV; setting --kv-cache-dtype",),
        "kv_cache_dtype",
        "the tokenspeed_mla attention backend needs an FP8 KV cache: half the bytes a token of "
        "bfloat16",
        "v0.5.23 arg_groups/serving_hook.py:328",
        "tokenspeed_mla required FP8 KV; setting --kv-cache-dtype=fp8_e4m3.",
    ),
    _row(
        "dflash_kv_cache_dtype",
        r"DFLASH fa4 draft: overriding KV cache dtype \S+ -> (?P<value>[\w.]+)",
        ("overriding KV cache dtype",),
        "kv_cache_dtype",
        "the DFLASH draft's fa4 backend reads K in the query's dtype (draft pool only)",
        "v0.5.16 mem_cache/kv_cache_dtype.py:86, v0.5.23 :100",
        "DFLASH fa4 draft: overriding KV cache dtype fp8_e4m3 -> bfloat16 (fa4 needs K.dtype == "
        "Q.dtype; cannot read the target's quantized KV).",
        at_args=False,
    ),
    # ---- hybrid SWA pools
    _row(
        "hybrid_swa_off",
        r"Disabl(?:e|ing) hybrid SWA memory for (?P<why>\S+(?: model with hierarchical cache)?)",
        ("hybrid SWA memory for",),
        "disable_hybrid_swa_memory",
        "the model (or HiCache on it) is not supported by the hybrid SWA pool: every layer keeps "
        "its KV for the whole context, not a window",
        "v0.5.8 server_args.py:1285, :1292, :1342, :1383, :1389, "
        "v0.5.23 arg_groups/model_overrides/exaone.py:20, gemma2_gemma3.py:24, olmo2.py:21, "
        "arg_groups/overrides.py:357",
        "Disabling hybrid SWA memory for Olmo2ForCausalLM as it is not yet supported.",
        to="True",
    ),
    _row(
        "dsv4_swa_request_cap",
        r"DSV4 SWA sizing: mode=cap, swa_tokens=" + _NUM,
        ("DSV4 SWA sizing: mode=cap",),
        "swa_max_total_num_tokens",
        "DeepSeek-V4's SWA pool sized from the request cap (the worst case of "
        "--max-running-requests a DP worker, plus prefix tails), not from "
        "--swa-full-tokens-ratio",
        "v0.5.21 model_executor/pool_configurator.py:1322, v0.5.23 :1485",
        "DSV4 SWA sizing: mode=cap, swa_tokens=73728, request_cap+headroom=73600, prefix_tails=0",
        at_args=False,
    ),
    _row(
        "hicache_resets_swa_ratio",
        r"Reset swa_full_tokens_ratio to (?P<value>[\d.]+) for \S+ model with hierarchical cache",
        ("Reset swa_full_tokens_ratio to",),
        "swa_full_tokens_ratio",
        "hierarchical cache on a hybrid-SWA model: SWA and full layers get the same tokens",
        "v0.5.8 server_args.py:1337, v0.5.10 :1808, :1828, v0.5.16 arg_groups/overrides.py:1090, "
        "v0.5.23 arg_groups/overrides.py:352",
        "Reset swa_full_tokens_ratio to 1.0 for Step3p5ForCausalLM model with hierarchical cache",
    ),
    _row(
        "model_sets_swa_ratio",
        r"Setting swa_full_tokens_ratio to (?P<value>[\d.]+) for \S+",
        ("Setting swa_full_tokens_ratio to",),
        "swa_full_tokens_ratio",
        "the model's default split between SWA and full-attention tokens",
        "v0.5.16 arg_groups/overrides.py:812",
        "Setting swa_full_tokens_ratio to 0.1 for DeepseekV4ForCausalLM.",
        levers=(
            Lever(
                "swa_full_tokens_ratio",
                "raise",
                "the SWA layers hold the full layers' tokens x the ratio (v0.5.8 "
                "model_executor/model_runner_kv_cache_mixin.py:231-237); a ratio given is kept",
            ),
        ),
    ),
    # ---- CUDA graphs
    _row(
        "cuda_graph_off",
        r"(?:Cuda graph is disabled|CUDA graph is disabled|cuda graph is disabled)"
        r" (?:because|for|when)(?P<why>[^.;,]{0,160})",
        ("Cuda graph is disabled", "CUDA graph is disabled", "cuda graph is disabled"),
        "disable_cuda_graph",
        "the attention backend, DeepEP's normal mode, a prefill server, diffusion LLMs or "
        "--enable-mis",
        "v0.4.6.post5 server_args.py:318, :352, :449, v0.5.8 :1703, :1709, :1988, :2339, :2523, "
        "v0.5.16 server_args.py:3881, v0.5.23 arg_groups/attention_hook.py:125, :144, :540, "
        "arg_groups/moe_hook.py:384, arg_groups/dllm_hook.py:38, arg_groups/serving_hook.py:567",
        "Cuda graph is disabled because of using torch native attention backend",
        to="True",
    ),
    _row(
        "prefill_graph_off",
        r"Disable prefill CUDA graph(?: capture)? (?:because|for)(?P<why>" + _CLAUSE + ")",
        ("Disable prefill CUDA graph",),
        "prefill CUDA graphs",
        "the prefill graphs' backend, a LoRA or non-language model, pipeline with context "
        "parallelism, or no capture size that fits (the line names it)",
        "v0.5.17 model_executor/model_runner_components/cuda_graph_setup.py:203, "
        "v0.5.23 model_executor/model_runner_components/cuda_graph_setup.py:497, :536, :546, "
        ":558, :564, :576, :605",
        "Disable prefill CUDA graph capture because no configured capture size fits "
        "backend=fa3 with max_capture_tokens=8192 (max_capture_requests=16, context_length=4096, "
        "request-pool size=16).",
        to="off",
        at_args=False,
    ),
    _row(
        "prefill_graph_off_args",
        r"(?:disabling prefill CUDA graph|Disabling prefill CUDA graph)(?: \([^)]{0,40}\))?"
        r"(?P<why>" + _CLAUSE + ")",
        ("disabling prefill CUDA graph", "Disabling prefill CUDA graph"),
        "prefill CUDA graphs",
        "a setting the breakable or full prefill graph does not support, or the DeepSeek-V3 "
        "arch on trtllm_mla (the line names it)",
        "v0.5.17 server_args.py:4518, :4531, :4557, v0.5.23 arg_groups/cuda_graph_hook.py:245, "
        ":266, :300",
        "Breakable CUDA graph is incompatible with --enable-lora; disabling prefill CUDA graph.",
        to="off",
    ),
    _row(
        "draft_graph_off",
        r"Disable (?:DFLASH draft cuda graph because|DSpark draft cuda graph because) "
        r"(?P<why>" + _CLAUSE + ")",
        ("DFLASH draft cuda graph because", "DSpark draft cuda graph because"),
        "draft CUDA graphs",
        "the DFLASH/DSpark draft runs eager: under 1 GB free after the target's attention "
        "backend, DP attention, or a device without graph capture (the line names it)",
        "v0.5.17 speculative/dflash_worker_v2.py:350, dspark_components/dspark_worker_v2.py:330, "
        "v0.5.23 speculative/dflash_worker_v2.py:737, dspark_components/dspark_worker_v2.py:595",
        "Disable DFLASH draft cuda graph because only 0.62 GB GPU memory is available after "
        "target backend initialization.",
        to="off",
        levers=(
            Lever(
                "mem_fraction_static",
                "lower",
                "the draft captures its graphs only with 1 GB or more free after the target's "
                "attention backend (v0.5.23 speculative/dflash_worker_v2.py:727-735): a lower "
                "fraction leaves P x the difference more",
            ),
        ),
        at_args=False,
    ),
    # ---- radix cache
    _row(
        "radix_cache_off",
        r"(?:Disabling radix cache since|Radix cache is disabled (?:for|because|when)"
        r"|Radix cache and chunked prefill are disabled|disable radix cache)"
        r"(?P<why>[^.;,]{0,160})",
        (
            "Disabling radix cache since",
            "Radix cache is disabled",
            "Radix cache and chunked prefill are disabled",
            "disable radix cache",
        ),
        "disable_radix_cache",
        "the model, its attention backend, speculative decoding or a decode server (the line "
        "names it): no prefix sharing, each request holds its own KV",
        "v0.5.4 model_executor/model_runner.py:404, v0.5.8 server_args.py:1439, :1456, :2544, "
        "v0.5.10 managers/scheduler.py:732, v0.5.23 arg_groups/attention_hook.py:173, :557, "
        "arg_groups/model_hook.py:212, arg_groups/pd_disaggregation_hook.py:127, "
        "mem_cache/kv_cache_builder.py:369",
        "Disabling radix cache since trtllm_mha does not support page_size = 1, which is "
        "required by MambaRadixCache. Try to use --attention-backend triton if radix cache is "
        "necessary.",
        to="True",
    ),
    # ---- overlap schedule
    _row(
        "overlap_schedule_off",
        r"(?:Disabling overlap schedule since"
        r"|(?:Overlap scheduler is disabled|Overlap schedule is disabled)"
        r" (?:for|when|because)"
        r"|The overlap scheduler and mixed chunked prefill are disabled"
        r"|incompatible with overlap schedule)(?P<why>[^.;,]{0,160})",
        (
            "Disabling overlap schedule since",
            "Overlap scheduler is disabled",
            "Overlap schedule is disabled",
            "The overlap scheduler and mixed chunked prefill are disabled",
            "incompatible with overlap schedule",
        ),
        "disable_overlap_schedule",
        "the Mamba radix cache, speculative decoding, pipeline parallelism or an embedding model",
        "v0.3.6 server_args.py:205, v0.4.6.post5 managers/scheduler.py:269, server_args.py:386, "
        "v0.5.4 :1304, :1383, "
        "v0.5.8 server_args.py:1444, :1562, :1577, :1598, :2046, :2157, :2250, :2540, "
        "v0.5.23 arg_groups/overrides.py:920, :1725",
        "Disabling overlap schedule since MambaRadixCache is not compatible with overlap "
        "schedule currently, try to use --disable-radix-cache if overlap schedule is necessary",
        to="True",
    ),
    # ---- context length
    _row(
        "draft_context_length",
        r"Overriding the draft model's max_position_embeddings to " + _NUM,
        ("Overriding the draft model's max_position_embeddings",),
        "context_length",
        "the draft model takes the target's context length",
        "v0.5.4 configs/model_config.py:287, v0.5.8 :353, v0.5.16 :748, v0.5.23 :1310",
        "Overriding the draft model's max_position_embeddings to 131072.",
        at_args=False,
    ),
)
"""Each text once, grouped by the setting it changes."""

BY_NAME: Mapping[str, Adjustment] = {row.name: row for row in ADJUSTMENTS}


def says(values: Mapping[str, object]) -> str:
    """What diagnose writes of a `setting_adjusted` event (its `values`: the entry's name, and the
    value printed when the text prints one)."""
    row = BY_NAME[str(values.get("adjustment"))]
    to = f" to {chosen(values)}" if chosen(values) else ""
    moves = " or ".join(
        f"{'set' if lever.direction == 'enable' else lever.direction} --"
        + lever.knob.replace("_", "-")
        for lever in row.levers
    )
    lever = f"; to change it: {moves}" if moves else ""
    return f"SGLang set {row.setting}{to} ({_why(values)}; {_cited(row)}){lever}"


def noted(values: Mapping[str, object], where: str) -> str:
    """What a ledger notes of a `setting_adjusted` event printed at `where` (`file:line`): the
    setting as SGLang left it, why, the line and the row's source."""
    row = BY_NAME[str(values.get("adjustment"))]
    cited = _cited(row, ", ")  # no "...": a ledger's markdown reads it as a cut cell
    return f"{row.setting} {chosen(values)}: set by SGLang ({_why(values)}; {where}; {cited})"


def chosen(values: Mapping[str, object]) -> str:
    """The value SGLang chose: the one the line printed, else the row's."""
    return str(values.get("value") or BY_NAME[str(values.get("adjustment"))].to)


def _why(values: Mapping[str, object]) -> str:
    """The row's reason, and the line's own when its text names one of several."""
    row = BY_NAME[str(values.get("adjustment"))]
    why = str(values.get("why") or "").strip(" ,")
    return f"{row.reason}; here: {why}" if why else row.reason


def _cited(row: Adjustment, joint: str = " ... ") -> str:
    """The row's first and last release read (`v0.5.20 path:line ... v0.5.23 :line`)."""
    cited = [part for part in row.source.split(", ") if part.startswith("v")]
    return cited[0] if len(cited) == 1 else f"{cited[0]}{joint}{cited[-1]}"
