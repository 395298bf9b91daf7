"""SGLang's mem_fraction_static default for this log at a GPU capacity (pure): the log's inputs
and release range read into the arithmetic of memledger.sglang.mfs_defaults.

Used when a log does not print mem_fraction_static: the value is then inferred, and the rule
(release range and source line) goes with it. The capacity is an input: a log rarely prints it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from memledger.model.sizing import Settings
from memledger.sglang.fraction_rules import (
    CAPACITY_CAP_MIB,
    CHUNKED_PREFILL_BY_GPU,
    CHUNKED_PREFILL_LARGE_GPU,
    CHUNKED_PREFILL_SOURCE,
    CUDA_GRAPH_MAX_BS_BY_GPU,
    CUDA_GRAPH_MAX_BS_LARGE_GPU,
    CUDA_GRAPH_MAX_BS_SOURCE,
    CUDA_GRAPH_MAX_BS_TP_SPLIT,
    MFS_ACTIVATION_MIN_TOKENS,
    MFS_LARGE_GPU_MIB,
    MFS_PIECEWISE,
    MFS_PIECEWISE_MIB_PER_SIZE,
    MFS_PIECEWISE_MLA_MIB,
    MFS_SPEC_MIB,
    MFS_SPEC_MIB_OLD,
    PIECEWISE_MLA_MAX_TOKENS,
    PIECEWISE_TOKEN_RANGES,
)
from memledger.sglang.mfs_defaults import (
    MFS_BUCKET_RESERVE,
    MFS_TP_MAX_GPU_MIB,
    bucket_reserve_gib,
    legacy_mem_fraction_static,
    legacy_rules,
    mfs_from_reserved,
    prefill_activation_tokens,
    reserved_mib,
)
from memledger.sglang.releases import version_code
from memledger.sglang.sizing_rules import RULE
from memledger.sizing.capacity import CapacityPiece, reserve_piece
from memledger.sizing.inputs import SizingInputs
from memledger.units import int_or

DEFAULT_MAX_PREFILL_TOKENS = 16384
NO_PIECEWISE_BACKENDS = ("ascend", "aiter", "wave")
"""Attention backends only ROCm (aiter, wave) or Ascend (ascend) run: rule mfs_default_platform."""


@dataclass(frozen=True)
class DefaultMfs:
    """The inferred mem_fraction_static and how it was reached."""

    value: float
    rule: str
    gpu_mib: int
    reserved_mib: float
    notes: list[str] = field(default_factory=list)

    @property
    def basis(self) -> str:
        """What the default was computed from, for the arithmetic's source column."""
        if self.rule == "mfs_default_tp":
            return "SGLang's default for this tp size (no GPU capacity needed)"
        if self.rule == "mfs_default_tp_80g":
            return f"SGLang's default for this tp size on a {self.gpu_mib} MiB GPU (<= 80 GiB)"
        return (
            f"SGLang's default for a {self.gpu_mib} MiB GPU, reserved {self.reserved_mib:,.0f} MiB"
        )


def piecewise_token_sizes(max_tokens: int) -> list[int]:
    """The piecewise (prefill) graph sizes SGLang captures up to `max_tokens` (0.5.10)."""
    sizes: list[int] = []
    for start, stop, step in PIECEWISE_TOKEN_RANGES:
        sizes.extend(range(start, (max_tokens + 1) if stop is None else stop, step))
    return [s for s in sizes if s <= max_tokens]


def default_chunked_prefill(gpu_mib: int) -> int:
    """SGLang's chunked_prefill_size for this GPU when none is given (0.5.3+)."""
    return next(
        (tokens for bound, tokens in CHUNKED_PREFILL_BY_GPU if gpu_mib < bound),
        CHUNKED_PREFILL_LARGE_GPU,
    )


def capacities_of_logged_defaults(inputs: SizingInputs, low_mib: int, high_mib: int) -> range:
    """The capacities (MiB, within [low_mib, high_mib]) whose bucket defaults are the
    chunked_prefill_size and decode-graph max batch size this log prints, when no server_args
    says they were given: SGLang picks both by capacity bucket (v0.5.10 server_args.py:1166-1226,
    rules mfs_default / mfs_default_graphs), so if they were its defaults the GPU is in those
    buckets. The whole range when the log does not print them (or a bench's graphs are its
    --batch-size)."""
    knobs = inputs.knobs
    chunked = None if "chunked_prefill_size" in knobs else inputs.logged_chunked_prefill_size
    graphs = (
        None
        if "cuda_graph_max_bs" in knobs or "cuda_graph_bs" in knobs or inputs.bench_one_batch
        else inputs.logged_max_capture_bs
    )
    if chunked is None and graphs is None:
        return range(low_mib, high_mib + 1)
    tp = int_or(knobs.get("tp_size"), 1)
    bounds = sorted(
        {bound for bound, _ in CHUNKED_PREFILL_BY_GPU}
        | {bound for bound, _, _ in CUDA_GRAPH_MAX_BS_BY_GPU}
    )
    starts = [low_mib, *(b for b in bounds if low_mib < b <= high_mib)]
    kept = [
        start
        for start in starts
        if (chunked is None or default_chunked_prefill(start) == chunked)
        and (graphs is None or default_cuda_graph_max_bs(start, tp) == graphs)
    ]
    if not kept:
        return range(0)
    ends = [*starts[1:], high_mib + 1]
    return range(kept[0], ends[starts.index(kept[-1])])


def default_cuda_graph_max_bs(gpu_mib: int, tp: int) -> int:
    """SGLang's decode-graph max batch size for this GPU when none is given (0.5.5 - 0.5.19)."""
    for bound, small_tp, large_tp in CUDA_GRAPH_MAX_BS_BY_GPU:
        if gpu_mib < bound:
            return small_tp if tp < CUDA_GRAPH_MAX_BS_TP_SPLIT else large_tp
    return CUDA_GRAPH_MAX_BS_LARGE_GPU


@dataclass(frozen=True)
class GpuDefault:
    """SGLang's value of a setting the launch does not give, picked by the GPU's capacity."""

    pick: Callable[[int, int], int]
    """(the GPU's MiB, tp size) -> the value."""
    source: str
    by_tp: bool = False
    """Whether the tp size picks it too (the paste may not show it)."""


GPU_DEFAULTS: dict[str, GpuDefault] = {
    "chunked_prefill_size": GpuDefault(
        lambda gpu, _: default_chunked_prefill(gpu), CHUNKED_PREFILL_SOURCE
    ),
    "cuda_graph_max_bs": GpuDefault(
        default_cuda_graph_max_bs, f"{CUDA_GRAPH_MAX_BS_SOURCE}, releases 0.5.5-0.5.19", True
    ),
}
"""The settings SGLang defaults by GPU capacity (_handle_gpu_memory_settings), by knob: what a
lever's value starts from when the paste shows the card's size but not the setting."""


def _is_mla(inputs: SizingInputs) -> bool:
    return bool(inputs.target_kv) and all(pool.combined for pool in inputs.target_kv)


def default_mem_fraction_static(inputs: SizingInputs, settings: Settings) -> DefaultMfs | None:
    """SGLang's default for a GPU of `settings.gpu_memory_mib` MiB at this log's release."""
    gpu = settings.gpu_memory_mib
    tp = int_or(inputs.knobs.get("tp_size"), 1)
    if inputs.version.within(RULE["mfs_default"]) is False and (
        inputs.version.within(RULE["mfs_default_graphs"]) is False
    ):
        return _legacy_default(inputs, gpu, tp)
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
    tp = int_or(knobs.get("tp_size"), 1)
    by_gpu = default_chunked_prefill(gpu)
    chunked = int_or(
        knobs.get("chunked_prefill_size"), inputs.logged_chunked_prefill_size or by_gpu
    )
    prefill = int_or(knobs.get("max_prefill_tokens"), DEFAULT_MAX_PREFILL_TOKENS)
    # bench_one_batch sets cuda_graph_max_bs = max(--batch-size) only after the defaults
    bench = (
        inputs.bench_one_batch
        and inputs.version.within(RULE["bench_one_batch_graphs"]) is not False
    )
    max_bs = (
        settings.cuda_graph_max_bs
        or (None if bench else inputs.logged_max_capture_bs)
        or default_cuda_graph_max_bs(gpu, tp)
    )
    if bench and not settings.cuda_graph_max_bs:
        notes.append(
            f"bench_one_batch: the default saw this GPU's cuda_graph_max_bs {max_bs}, the "
            "captured graphs are its --batch-size (rule bench_one_batch_graphs)"
        )
    mode = knobs.get("disaggregation_mode")
    activation = prefill_activation_tokens(chunked, prefill)
    if rule == "mfs_default_graphs" and mode == "decode":
        running = settings.max_running_requests or max_bs or 1
        draft = int_or(knobs.get("speculative_num_draft_tokens"), 1)
        activation = max(running * draft, MFS_ACTIVATION_MIN_TOKENS)
    algo = knobs.get("speculative_algorithm")
    reserved = reserved_mib(
        gpu,
        rule=rule,
        activation_tokens=activation,
        cuda_graph_max_bs=max_bs,
        tp_size=tp,
        pp_size=int_or(knobs.get("pp_size"), 1),
        dp_size=int_or(knobs.get("dp_size"), 1),
        enable_dp_attention=bool(knobs.get("enable_dp_attention")),
        decode_graphs=not knobs.get("disable_cuda_graph") and mode != "prefill",
        disaggregation_mode=mode if isinstance(mode, str) else None,
        prefill_graph_mib=_prefill_graph_reserve(inputs, rule, chunked, notes),
        speculative_algorithm=algo if isinstance(algo, str) else None,
        speculative_mib=(
            MFS_SPEC_MIB if inputs.version.within(MFS_PIECEWISE) is not False else MFS_SPEC_MIB_OLD
        ),
        deepep=knobs.get("moe_a2a_backend") == "deepep",
    )
    if may_be_multimodal(inputs):
        notes.append(
            f"{inputs.model_type} may be multimodal: SGLang then scales the default by 0.95 x a "
            "ViT-size factor from the model's vision_config (rule mfs_vlm_factor), which the "
            "log does not show: not applied here"
        )
    return DefaultMfs(mfs_from_reserved(gpu, reserved), rule, gpu, reserved, notes)


TP_STEP_RULES = ("mfs_default_tp", "mfs_default_tp_80g")
LEGACY_PROBES = ("0.4.0", "0.4.6", "0.4.7", "0.4.8")
"""One release code per stretch of memledger.sglang.mfs_defaults' rules (0.4.7 is its own)."""


def _legacy_default(inputs: SizingInputs, gpu: int | None, tp: int) -> DefaultMfs | None:
    """Rules mfs_default_tp, mfs_default_tp_80g, mfs_default_buckets (before 0.5.3): the one
    rule of memledger.sglang.mfs_defaults, when it gives one value over the whole range."""
    first, last = inputs.version.first, inputs.version.last
    if first is None or last is None:
        return None
    knobs = inputs.knobs
    parallel = tp * int_or(knobs.get("pp_size"), 1)
    algo = str(knobs.get("speculative_algorithm") or "").upper()
    speculative, standalone = algo not in ("", "NONE"), algo == "STANDALONE"
    dp_attention = bool(knobs.get("enable_dp_attention"))
    codes = {first, *(c for c in map(version_code, LEGACY_PROBES) if first <= c <= last)}
    rules: list[str] = []
    values: set[float | None] = set()
    for code in sorted(codes):
        rules.extend(rule for rule in legacy_rules(code) if rule not in rules)
        values.add(
            legacy_mem_fraction_static(
                code,
                gpu,
                parallel=parallel,
                speculative=speculative,
                dp_attention=dp_attention,
                standalone=standalone,
            )
        )
    value = values.pop() if len(values) == 1 else None
    if value is None:
        return None
    reserved = 0.0
    if gpu and "mfs_default_buckets" in rules:
        reserved = 1024 * bucket_reserve_gib(
            gpu,
            parallel=parallel,
            speculative=speculative,
            dp_attention=dp_attention,
            standalone=standalone,
        )
    notes = []
    if may_be_multimodal(inputs) and inputs.version.within(RULE["mfs_vlm_factor"]) is not False:
        notes.append(
            f"{inputs.model_type} may be multimodal: SGLang then scales the default by 0.95 x a "
            "ViT-size factor (rule mfs_vlm_factor, from 0.4.10), not applied here"
        )
    if len(rules) > 1:
        notes.append(
            f"releases {inputs.version.text} span rules {', '.join(rules)}: the same default "
            f"{value:g} under each"
        )
    return DefaultMfs(value, rules[0], gpu or 0, reserved, notes)


def may_be_multimodal(inputs: SizingInputs) -> bool:
    """A `...ForConditionalGeneration` class: SGLang may treat it as multimodal."""
    return bool(inputs.model_type and inputs.model_type.endswith("ForConditionalGeneration"))


def capacity_pieces(
    inputs: SizingInputs,
    settings: Settings,
    low_mib: int,
    high_mib: int = CAPACITY_CAP_MIB,
    *,
    known_only: bool = False,
) -> list[CapacityPiece]:
    """SGLang's default over every capacity from `low_mib` to `high_mib`, piece by piece (none
    when a piece has no default; `known_only`: leave that piece out instead)."""
    bounds = {bound for bound, _ in CHUNKED_PREFILL_BY_GPU}
    bounds |= {bound for bound, _, _ in CUDA_GRAPH_MAX_BS_BY_GPU}
    bounds |= {MFS_LARGE_GPU_MIB + 1, MFS_TP_MAX_GPU_MIB + 1}
    bounds |= {bound for bound, _, _ in MFS_BUCKET_RESERVE}
    starts = [low_mib, *sorted(b for b in bounds if low_mib < b <= high_mib)]
    pieces: list[CapacityPiece] = []
    for index, start in enumerate(starts):
        last = starts[index + 1] - 1 if index + 1 < len(starts) else high_mib
        found = default_mem_fraction_static(inputs, replace(settings, gpu_memory_mib=start))
        if found is None and known_only:
            continue
        if found is None or found.rule in TP_STEP_RULES:
            return []  # a tp step does not grow with the capacity: no span to report
        pieces.append(reserve_piece(start, last, found.reserved_mib, found.rule))
    return pieces


def _prefill_graph_reserve(
    inputs: SizingInputs, rule: str, chunked: int, notes: list[str]
) -> float:
    """The piecewise/prefill-graph term: #sizes x 8 MiB, or 1.5 GiB with an MLA backend."""
    knobs = inputs.knobs
    if rule == "mfs_default" and inputs.version.within(MFS_PIECEWISE) is False:
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
    if knobs.get("device") == "npu" or knobs.get("attention_backend") in NO_PIECEWISE_BACKENDS:
        notes.append(
            "piecewise (prefill) graphs are off on ROCm and Ascend: their reserve is 0 (rule "
            "mfs_default_platform)"
        )
        return 0.0
    notes.append(
        "no prefill/piecewise graph capture in the log and no disable_piecewise_cuda_graph "
        "setting: its reserve is taken as 0 (SGLang disables these graphs on AMD, NPU, "
        "multimodal, speculative and DP-attention setups)"
    )
    return 0.0
