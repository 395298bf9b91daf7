"""SGLang's mem_fraction_static default for a GPU capacity, as each release computes it (pure).

Used when a log does not print mem_fraction_static: the value is then inferred, and the rule
(release range and source line) goes with it. The capacity is an input: a log rarely prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memledger.events import ParamValue
from memledger.sglang.sizing_rules import (
    CHUNKED_PREFILL_BY_GPU,
    CHUNKED_PREFILL_LARGE_GPU,
    CUDA_GRAPH_MAX_BS_BY_GPU,
    CUDA_GRAPH_MAX_BS_LARGE_GPU,
    CUDA_GRAPH_MAX_BS_TP_SPLIT,
    MFS_ACTIVATION_MIB_PER_TOKEN,
    MFS_ACTIVATION_MIN_TOKENS,
    MFS_BASE_MIB,
    MFS_DEEPEP_MIB,
    MFS_DP_LARGE_BS,
    MFS_DP_LARGE_MIB_PER_BS,
    MFS_DP_MIB_PER_BS,
    MFS_GRAPH_MIB_PER_BS,
    MFS_LARGE_GPU_FLOOR_MIB,
    MFS_LARGE_GPU_MIB,
    MFS_PIECEWISE_MIB_PER_SIZE,
    MFS_PIECEWISE_MLA_MIB,
    MFS_PIECEWISE_SINCE,
    MFS_SPEC_MIB,
    MFS_SPEC_MIB_OLD,
    MFS_STANDALONE_MIB,
    PIECEWISE_MLA_MAX_TOKENS,
    PIECEWISE_TOKEN_RANGES,
    RULE,
    version_code,
)
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.settings import Settings

DEFAULT_MAX_PREFILL_TOKENS = 16384


@dataclass(frozen=True)
class DefaultMfs:
    """The inferred mem_fraction_static and how it was reached."""

    value: float
    rule: str
    gpu_mib: int
    reserved_mib: float
    notes: list[str] = field(default_factory=list)


def _num(knobs: dict[str, ParamValue], name: str, default: int) -> int:
    value = knobs.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def piecewise_token_sizes(max_tokens: int) -> list[int]:
    """The piecewise (prefill) graph sizes SGLang captures up to `max_tokens` (0.5.10)."""
    sizes: list[int] = []
    for start, stop, step in PIECEWISE_TOKEN_RANGES:
        sizes.extend(range(start, (max_tokens + 1) if stop is None else stop, step))
    return [s for s in sizes if s <= max_tokens]


def default_cuda_graph_max_bs(gpu_mib: int, tp: int) -> int:
    """SGLang's decode-graph max batch size for this GPU when none is given (0.5.5 - 0.5.19)."""
    for bound, small_tp, large_tp in CUDA_GRAPH_MAX_BS_BY_GPU:
        if gpu_mib < bound:
            return small_tp if tp < CUDA_GRAPH_MAX_BS_TP_SPLIT else large_tp
    return CUDA_GRAPH_MAX_BS_LARGE_GPU


def _since(inputs: SizingInputs, release: str) -> bool | None:
    code = version_code(release)
    first, last = inputs.version.first, inputs.version.last
    if first is not None and first >= code:
        return True
    if last is not None and last < code:
        return False
    return None


def _is_mla(inputs: SizingInputs) -> bool:
    return bool(inputs.target_kv) and all(pool.combined for pool in inputs.target_kv)


def default_mem_fraction_static(inputs: SizingInputs, settings: Settings) -> DefaultMfs | None:
    """SGLang's default for a GPU of `settings.gpu_memory_mib` MiB at this log's release."""
    gpu = settings.gpu_memory_mib
    if gpu is None or gpu <= 0:
        return None
    graphs = inputs.version.within(RULE["mfs_default_graphs"])
    older = inputs.version.within(RULE["mfs_default"])
    if graphs is False and older is False:
        return None
    rule = "mfs_default" if older is True or graphs is False else "mfs_default_graphs"
    notes: list[str] = []
    if graphs is None and older is None:
        notes.append(
            f"release {inputs.version.text} may use either default rule (0.5.3 - 0.5.13 or "
            "0.5.14+); the 0.5.14+ rule applied"
        )
    knobs = inputs.knobs
    tp, pp, dp = _num(knobs, "tp_size", 1), _num(knobs, "pp_size", 1), _num(knobs, "dp_size", 1)
    by_gpu = next(
        (c for bound, c in CHUNKED_PREFILL_BY_GPU if gpu < bound), CHUNKED_PREFILL_LARGE_GPU
    )
    chunked = _num(knobs, "chunked_prefill_size", inputs.logged_chunked_prefill_size or by_gpu)
    prefill = _num(knobs, "max_prefill_tokens", DEFAULT_MAX_PREFILL_TOKENS)
    max_bs = (
        settings.cuda_graph_max_bs
        or inputs.logged_max_capture_bs
        or default_cuda_graph_max_bs(gpu, tp)
    )
    mode = knobs.get("disaggregation_mode")
    decode_graphs = not knobs.get("disable_cuda_graph") and mode != "prefill"
    dp_attention = bool(knobs.get("enable_dp_attention"))
    algo = str(knobs.get("speculative_algorithm") or "").upper()
    activation = max(chunked if chunked > 0 else prefill, MFS_ACTIVATION_MIN_TOKENS)
    if rule == "mfs_default_graphs" and mode == "decode":
        running = settings.max_running_requests or max_bs or 1
        draft = _num(knobs, "speculative_num_draft_tokens", 1)
        activation = max(running * draft, MFS_ACTIVATION_MIN_TOKENS)
    reserved = MFS_BASE_MIB + activation * MFS_ACTIVATION_MIB_PER_TOKEN + tp * pp / 8 * 1024
    if decode_graphs or rule == "mfs_default":
        reserved += max_bs * MFS_GRAPH_MIB_PER_BS
    if dp_attention and (rule == "mfs_default" or mode != "prefill"):
        reserved += max_bs * dp * MFS_DP_MIB_PER_BS
        if max_bs > MFS_DP_LARGE_BS:
            reserved += max_bs * dp * MFS_DP_LARGE_MIB_PER_BS
    reserved += _prefill_graph_reserve(inputs, rule, chunked, notes)
    if gpu > MFS_LARGE_GPU_MIB:
        reserved = max(reserved, MFS_LARGE_GPU_FLOOR_MIB)
    if rule == "mfs_default":
        if algo == "STANDALONE":
            reserved += MFS_STANDALONE_MIB
        elif algo and algo not in ("NGRAM", "NONE"):
            newer = _since(inputs, MFS_PIECEWISE_SINCE)
            reserved += MFS_SPEC_MIB if newer is not False else MFS_SPEC_MIB_OLD
    elif decode_graphs and knobs.get("moe_a2a_backend") == "deepep":
        reserved += MFS_DEEPEP_MIB
    if inputs.model_type and inputs.model_type.endswith("ForConditionalGeneration"):
        notes.append(
            f"{inputs.model_type} may be multimodal: SGLang then scales the default by 0.95 x a "
            "ViT-size factor (adjust_mem_fraction_for_vlm), not applied here"
        )
    return DefaultMfs(round((gpu - reserved) / gpu, 3), rule, gpu, reserved, notes)


def _prefill_graph_reserve(
    inputs: SizingInputs, rule: str, chunked: int, notes: list[str]
) -> float:
    """The piecewise/prefill-graph term: #sizes x 8 MiB, or 1.5 GiB with an MLA backend."""
    knobs = inputs.knobs
    if rule == "mfs_default" and _since(inputs, MFS_PIECEWISE_SINCE) is False:
        return 0.0
    if knobs.get("disable_piecewise_cuda_graph") is True or (
        rule == "mfs_default_graphs" and knobs.get("disaggregation_mode") == "decode"
    ):
        return 0.0
    if _is_mla(inputs):
        return float(MFS_PIECEWISE_MLA_MIB)
    if inputs.logged_prefill_graph_sizes is not None:
        return float(inputs.logged_prefill_graph_sizes * MFS_PIECEWISE_MIB_PER_SIZE)
    if knobs.get("disable_piecewise_cuda_graph") is False:
        sizes = piecewise_token_sizes(chunked if chunked > 0 else PIECEWISE_MLA_MAX_TOKENS)
        return float(len(sizes) * MFS_PIECEWISE_MIB_PER_SIZE)
    notes.append(
        "no prefill/piecewise graph capture in the log and no disable_piecewise_cuda_graph "
        "setting: its reserve is taken as 0 (SGLang disables these graphs on AMD, NPU, "
        "multimodal, speculative and DP-attention setups)"
    )
    return 0.0
