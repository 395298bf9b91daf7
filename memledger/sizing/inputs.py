"""The numbers SGLang sized its pools with, read from one parsed startup (what was printed only)."""

from __future__ import annotations

from dataclasses import field, replace

from memledger.model.events import Event, EventKind, ParamValue, ParsedLog
from memledger.model.model_config import ModelDims
from memledger.model.sizing import CATALOGUE_NOTE
from memledger.record import record
from memledger.sglang.release_markers import VersionRange, release_range
from memledger.sglang.sizing_rules import KV_DTYPE_BYTES, SNAPSHOT_056_057_SERVER_ARGS
from memledger.sizing.fraction import PrintedFraction
from memledger.sizing.gpu import GpuCapacity, gpu_capacity
from memledger.units import GIB, int_or

# server_args knobs the sizing rules read (None when the log does not give them)
KNOBS: tuple[str, ...] = (
    "mem_fraction_static",
    "max_running_requests",
    "max_total_tokens",
    "page_size",
    "context_length",
    "kv_cache_dtype",
    "disaggregation_mode",
    "disaggregation_decode_extra_slots",
    "cuda_graph_max_bs",
    "chunked_prefill_size",
    "max_prefill_tokens",
    "dp_size",
    "tp_size",
    "pp_size",
    "dcp_size",
    "enable_dp_attention",
    "disable_radix_cache",
    "speculative_algorithm",
    "speculative_num_draft_tokens",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "swa_full_tokens_ratio",
    "mamba_full_memory_ratio",
    "max_mamba_cache_size",
    "device",
    "attention_backend",
    "mamba_scheduler_strategy",
    "mamba_radix_cache_strategy",
    "disable_overlap_schedule",
    "disable_piecewise_cuda_graph",
    "disable_cuda_graph",
    "moe_a2a_backend",
)


@record
class Reading:
    """A printed byte figure: integer bytes, its ± half unit, and where it was printed."""

    bytes: int
    half_ulp: int = 0
    line: int | None = None
    note: str = ""


@record
class KVPool:
    """One `KV Cache is allocated` line."""

    line: int
    tokens: int | None
    bytes: int
    half_ulp: int
    dtype: str | None = None
    combined: bool = False
    """One `KV size` (an MLA-style latent pool) rather than K and V sizes."""


@record
class MambaState:
    """The Mamba/linear-attention state pool (plus a ReplaySSM ring, when printed)."""

    line: int
    slots: int
    """max_mamba_cache_size (K): the pool has K + 1 slots."""
    bytes: int
    """conv + ssm state, as printed (K + 1 slots)."""
    half_ulp: int
    intermediate_bytes: int = 0
    replay_bytes: int = 0
    replay_half_ulp: int = 0
    replay_line: int | None = None


@record
class SizingInputs:
    """Everything the sizing model needs, each with the log line it came from."""

    path: str
    version: VersionRange
    format_release: int = 0
    """The formats' lower bound of the release (sglang/versions.py, as the ledger reads it; 0 =
    unknown): what the request-table rule (sglang/request_table.py) is applied at."""
    format_ceiling: int = 0
    """The first release the formats predate (exclusive; 0 = unknown)."""
    load_begin: Reading | None
    """P: free memory before the weights (minimum over the ranks that printed it)."""
    budget_avail: Reading | None
    """A: free memory when the KV pool was sized (last load end before the first pool end)."""
    knobs: dict[str, ParamValue] = field(default_factory=dict)
    server_args_line: int | None = None
    server_args_source: str = "server_args line"
    """How `server_args_line` is cited: `pasted launch command line` when the settings are a
    pasted command's (memledger.input.launch_command), not SGLang's printout."""
    target_kv: list[KVPool] = field(default_factory=list)
    draft_kv: list[KVPool] = field(default_factory=list)
    swa_full_tokens: int | None = None
    swa_swa_tokens: int | None = None
    swa_line: int | None = None
    mamba: MambaState | None = None
    logged_tokens: int | None = None
    logged_tokens_line: int | None = None
    logged_tokens_source: str = ""
    logged_max_running_requests: int | None = None
    logged_context_len: int | None = None
    model_source: str | None = None
    """ModelDims.catalogue: the model catalogue's entry these dims are (no --model-config)."""
    model_context_len: int | None = None
    """The model dims' max_position_embeddings: SGLang's context_len when neither server_args
    nor the log give one (model_config.get_context_length), as the ledger's req_to_token takes
    it (engine/variables.py _context_len)."""
    logged_kv_dtype: str | None = None
    logged_chunked_prefill_size: int | None = None
    logged_max_capture_bs: int | None = None
    """The largest batch size a decode-graph capture line lists (cuda_graph_max_bs in effect)."""
    bench_one_batch: bool = False
    """The token count is bench_one_batch's bare `max_total_num_tokens=N` print (v0.5.9
    bench_one_batch.py:266), not the scheduler's summary line."""
    model_dtype: str | None = None
    model_type: str | None = None
    """The model class the load-end line names (`type=...`)."""
    logged_prefill_graph_sizes: int | None = None
    """How many prefill/piecewise graph sizes the first such capture line lists."""
    logged_rest: Reading | None = None
    """`The available memory for KV cache is X GB` (Ascend builds print SGLang's rest)."""
    full_attention_layers: tuple[int, int] | None = None
    """(full-attention layers, num_hidden_layers) from --model-config's full_attention_interval
    (a hybrid GDN model; rule npu_hybrid_all_layers); None without them."""
    snapshot_056_057: bool = False
    """Its server_args hold fields of 0.5.6.post2 and of 0.5.7 together (no release does): a
    build between the two (sizing_rules.SNAPSHOT_056_057_SERVER_ARGS, rule npu_spec_headroom)."""
    ranks_seen: int = 0
    """How many ranks printed a load-begin reading (P and A are their minimum; SGLang's are
    every rank's)."""
    free_last: Reading | None = None
    """The last free-memory reading of the startup (headroom as the log last saw it)."""
    state_logged_bytes: int = 0
    """Target KV + draft KV + Mamba state + ReplaySSM as printed."""
    theoretical_cell_bytes: int | None = None
    """Bytes per token of the target KV from --model-config (None without one)."""
    theoretical_cell_note: str = ""
    printed_fraction: PrintedFraction | None = None
    """A mem_fraction_static line besides server_args (multimodal reduction, 0.4.10's ViT
    adjustment): the value SGLang sized with, measured."""
    gpu_capacity: GpuCapacity | None = None
    """The GPU capacity the log shows (SGLang's fallback print, a pasted nvidia-smi table, a
    named card): what SGLang's mem_fraction_static default is inferred from."""


def _reading(event: Event | None, key: str, note: str = "") -> Reading | None:
    if event is None or key not in event.sizes:
        return None
    size = event.sizes[key]
    return Reading(bytes=size.bytes, half_ulp=size.half_ulp, line=event.line, note=note)


def _min_over_ranks(parsed: ParsedLog, own: Reading | None, key: str) -> Reading | None:
    """SGLang sizes with the world minimum; the ranks this log printed stand in for the world."""
    if own is None:
        return None
    values = [
        info.key_values.get(key)
        for info in parsed.startup.ranks
        if isinstance(info.key_values.get(key), int | float)
    ]
    if len(values) < 2:
        return replace(own, note="rank 0 only")
    lowest = min(float(v) for v in values if v is not None)
    lowest_bytes = round(lowest * GIB)
    if lowest_bytes >= own.bytes:
        return replace(own, note=f"min of {len(values)} ranks")
    return replace(own, bytes=lowest_bytes, note=f"min of {len(values)} ranks (not rank 0)")


def _begin_from_load_end(parsed: ParsedLog, load_end: Event | None) -> Reading | None:
    """P when no load-begin line was printed (a fragment): the load end's `avail mem` plus its
    `mem usage`, which SGLang prints as before_avail_memory - after_avail_memory (v0.5.8
    model_executor/model_runner.py:806,947-955; v0.4.6.post2 :424,503): their sum is the free
    memory before the weights, to both printings' rounding. The minimum over the ranks that
    printed both."""
    if load_end is None or "avail" not in load_end.sizes or "usage" not in load_end.sizes:
        return None
    avail, usage = load_end.sizes["avail"], load_end.sizes["usage"]
    if usage.bytes < 0:
        return None
    sums: list[float] = []
    for info in parsed.startup.ranks:
        rank_avail = info.key_values.get("load_end_avail")
        rank_usage = info.key_values.get("load_end_usage")
        if isinstance(rank_avail, int | float) and isinstance(rank_usage, int | float):
            sums.append(float(rank_avail) + float(rank_usage))
    own = avail.bytes + usage.bytes
    note = "load-end avail + mem usage (no load-begin line), rank 0 only"
    if len(sums) >= 2:
        lowest = round(min(sums) * GIB)
        note = f"load-end avail + mem usage (no load-begin line), min of {len(sums)} ranks"
        if lowest < own:
            own, note = lowest, note + " (not rank 0)"
    return Reading(
        bytes=own, half_ulp=avail.half_ulp + usage.half_ulp, line=load_end.line, note=note
    )


def _tp_ranks_seen(parsed: ParsedLog) -> int:
    """Distinct TP indices among the rank tags of this startup (`TP0`, `DP1 TP3 EP3`)."""
    indices: set[str] = set()
    for info in parsed.startup.ranks:
        for tag in info.rank.split():
            if tag.startswith("TP") and tag[2:].isdigit():
                indices.add(tag[2:])
    return len(indices)


def _pool(event: Event) -> KVPool:
    sizes = [event.sizes[k] for k in ("k", "v", "kv") if k in event.sizes]
    tokens = event.values.get("tokens")
    dtype = event.values.get("dtype")
    return KVPool(
        line=event.line,
        tokens=int_or(tokens, None),
        bytes=sum(s.bytes for s in sizes),
        half_ulp=sum(s.half_ulp for s in sizes),
        dtype=dtype if isinstance(dtype, str) else None,
        combined="kv" in event.sizes and "k" not in event.sizes,
    )


def kv_element_bytes(
    logged: str | None, requested: ParamValue, model_bytes: float | None
) -> float | None:
    """Bytes per KV element: the KV line's dtype, else --kv-cache-dtype, else the model's."""
    for name in (logged, requested):
        if isinstance(name, str) and name.removeprefix("torch.") in KV_DTYPE_BYTES:
            return KV_DTYPE_BYTES[name.removeprefix("torch.")]
    return model_bytes


def _mla_cell(model: ModelDims, dtype_bytes: float, tp_attn: int) -> tuple[int | None, str]:
    if model.kv_lora_rank is not None and model.qk_rope_head_dim is not None:
        layers = model.mla_layers or model.num_hidden_layers
        if layers is None:
            return None, ""
        width = model.kv_lora_rank + model.qk_rope_head_dim
        cell = int(width * layers * dtype_bytes)
        return (
            cell,
            f"MLA ({model.kv_lora_rank} + {model.qk_rope_head_dim}) x {layers} layers "
            f"x {dtype_bytes:g} B",
        )
    heads, dim = model.num_key_value_heads, model.head_dim
    if dim is None and model.hidden_size and model.num_attention_heads:
        dim = model.hidden_size // model.num_attention_heads
    layers = model.num_hidden_layers
    if heads is None or dim is None or layers is None:
        return None, ""
    per_rank = max(1, heads // max(1, tp_attn))
    v_dim = model.v_head_dim or dim
    cell = int(per_rank * (dim + v_dim) * layers * dtype_bytes)
    return cell, (
        f"{per_rank} KV heads/rank x ({dim} + {v_dim}) x {layers} layers x {dtype_bytes:g} B"
    )


def sizing_inputs(
    parsed: ParsedLog, model: ModelDims | None = None, *, kv_dtype_bytes: float | None = None
) -> SizingInputs:
    """Read the sizing inputs of the selected startup (rank 0, or the rank the user chose)."""
    startup = parsed.startup
    events = startup.events
    first_pool_end = next(
        (i for i, e in enumerate(events) if e.kind is EventKind.MEMORY_POOL_END), len(events)
    )
    second_pool_end = next(
        (
            i
            for i, e in enumerate(events)
            if e.kind is EventKind.MEMORY_POOL_END and i > first_pool_end
        ),
        len(events),
    )
    before = events[:first_pool_end]
    load_begin = next((e for e in events if e.kind is EventKind.LOAD_BEGIN), None)
    load_ends = [e for e in before if e.kind is EventKind.LOAD_END and "avail" in e.sizes]
    first_load_end = next((e for e in events if e.kind is EventKind.LOAD_END), None)
    budget_event = load_ends[-1] if load_ends else None
    p = _min_over_ranks(parsed, _reading(load_begin, "avail"), "load_begin_avail")
    if p is None:
        p = _begin_from_load_end(parsed, first_load_end)
    a_own = _reading(budget_event, "avail")
    if budget_event is not None and budget_event is first_load_end:
        a = _min_over_ranks(parsed, a_own, "load_end_avail")
    elif a_own is not None:
        a = replace(a_own, note="rank 0, draft load end")
    else:
        a = None

    knobs = {k: startup.server_args[k] for k in KNOBS if k in startup.server_args}
    tp_seen = _tp_ranks_seen(parsed)
    if "tp_size" not in knobs and tp_seen > 1:
        # no server_args: the TP ranks the log tagged stand in for --tp (a lower bound)
        knobs["tp_size"] = tp_seen
    if "dcp_size" not in knobs and "attn_cp_size" in startup.server_args:
        knobs["dcp_size"] = startup.server_args["attn_cp_size"]
    settings_event = next((e for e in events if e.kind is EventKind.SERVER_ARGS), None)
    server_args_line = settings_event.line if settings_event is not None else None
    from_command = settings_event is not None and settings_event.values.get("form") == "command"

    target = [
        _pool(e)
        for e in before
        if e.kind is EventKind.KV_ALLOCATED and not e.values.get("va_upper_bound")
    ]
    draft = [
        _pool(e)
        for e in events[first_pool_end:second_pool_end]
        if e.kind is EventKind.KV_ALLOCATED and not e.values.get("va_upper_bound")
    ]
    swa = next((e for e in before if e.kind is EventKind.SWA_SPLIT), None)
    mamba_event = next((e for e in before if e.kind is EventKind.MAMBA_ALLOCATED), None)
    replay = next((e for e in before if e.kind is EventKind.REPLAY_SSM), None)
    mamba: MambaState | None = None
    slots = int_or(mamba_event.values.get("max_mamba_cache_size"), None) if mamba_event else None
    if mamba_event is not None and slots is not None:
        main = [mamba_event.sizes[k] for k in ("conv_state", "ssm_state") if k in mamba_event.sizes]
        inter = [
            mamba_event.sizes[k]
            for k in ("intermediate_ssm", "intermediate_conv")
            if k in mamba_event.sizes
        ]
        replay_sizes = (
            [s for k, s in replay.sizes.items() if k != "total"] if replay is not None else []
        )
        if replay is not None and not replay_sizes and "total" in replay.sizes:
            replay_sizes = [replay.sizes["total"]]
        mamba = MambaState(
            line=mamba_event.line,
            slots=slots,
            bytes=sum(s.bytes for s in main),
            half_ulp=sum(s.half_ulp for s in main),
            intermediate_bytes=sum(s.bytes for s in inter),
            replay_bytes=sum(s.bytes for s in replay_sizes),
            replay_half_ulp=sum(s.half_ulp for s in replay_sizes),
            replay_line=replay.line if replay is not None else None,
        )

    summary = next((e for e in events if e.kind is EventKind.SUMMARY), None)
    logged = int_or(summary.values.get("max_total_num_tokens"), None) if summary else None
    logged_line = summary.line if summary and logged is not None else None
    bench = summary is not None and set(summary.values) == {"max_total_num_tokens"}
    source = "scheduler summary line" if logged is not None else ""
    if bench and logged is not None:
        source = "bench_one_batch print"
    if logged is None and target and target[-1].tokens is not None and swa is None:
        logged, logged_line, source = target[-1].tokens, target[-1].line, "KV line #tokens"
    if logged is None and swa is not None:
        logged = int_or(swa.values.get("full_layer_tokens"), None)
        logged_line, source = swa.line, "sliding-window split line"

    kv_dtype_event = next((e for e in events if e.kind is EventKind.KV_DTYPE), None)
    logged_kv_dtype = target[0].dtype if target and target[0].dtype else None
    if logged_kv_dtype is None and kv_dtype_event is not None:
        value = kv_dtype_event.values.get("dtype")
        logged_kv_dtype = value if isinstance(value, str) else None
    model_dtype = first_load_end.values.get("dtype") if first_load_end is not None else None

    readings = [e for e in events if "avail" in e.sizes or "available_gpu_mem" in e.sizes]
    free_last: Reading | None = None
    if readings:
        last = readings[-1]
        key = "available_gpu_mem" if "available_gpu_mem" in last.sizes else "avail"
        free_last = _reading(last, key, f"{last.kind.value}")

    state = sum(p.bytes for p in target) + sum(p.bytes for p in draft)
    if mamba is not None:
        state += mamba.bytes + mamba.replay_bytes + mamba.intermediate_bytes

    cell: int | None = None
    cell_note = ""
    if model is not None:
        elem = (
            kv_dtype_bytes
            if kv_dtype_bytes is not None
            else kv_element_bytes(logged_kv_dtype, knobs.get("kv_cache_dtype"), model.dtype_bytes)
        )
        tp = int_or(knobs.get("tp_size"), None) or 1
        dp = int_or(knobs.get("dp_size"), None) or 1
        attn_tp = tp // dp if knobs.get("enable_dp_attention") else tp
        if elem is not None:
            cell, cell_note = _mla_cell(model, float(elem), attn_tp)
            if model.catalogue is not None:
                cell_note = f"{CATALOGUE_NOTE}{model.path.split(': ', 1)[-1]}: {cell_note}"

    capture_bs = [
        bs
        for e in events
        if e.kind in (EventKind.CAPTURE_BS, EventKind.CAPTURE_BEGIN)
        and isinstance(e.values.get("bs"), list)
        for bs in e.values["bs"]  # type: ignore[union-attr]
        if isinstance(bs, int)
    ]
    prefill_sizes = next(
        (
            len(e.values["num_tokens"])  # type: ignore[arg-type]
            for e in events
            if e.kind is EventKind.CAPTURE_BEGIN
            and isinstance(e.values.get("num_tokens"), list)
            and e.values.get("role") in (None, "target")
        ),
        None,
    )
    model_type = first_load_end.values.get("type") if first_load_end is not None else None
    rest_event = next((e for e in before if e.kind is EventKind.ASCEND_KV_AVAIL), None)
    dating = release_range(events)
    fraction_event = next(
        (e for e in before if e.kind in (EventKind.MFS_REDUCED, EventKind.MFS_VLM_ADJUSTED)),
        None,
    )
    return SizingInputs(
        path=parsed.path,
        logged_rest=_reading(rest_event, "avail_kv", "the rest as the log printed it"),
        version=dating,
        format_release=dating.lower,
        format_ceiling=dating.ceiling,
        load_begin=p,
        budget_avail=a,
        knobs=knobs,
        server_args_line=server_args_line,
        server_args_source="pasted launch command line" if from_command else "server_args line",
        target_kv=target,
        draft_kv=draft,
        swa_full_tokens=int_or(swa.values.get("full_layer_tokens"), None) if swa else None,
        swa_swa_tokens=int_or(swa.values.get("swa_layer_tokens"), None) if swa else None,
        swa_line=swa.line if swa else None,
        mamba=mamba,
        logged_tokens=logged,
        logged_tokens_line=logged_line,
        logged_tokens_source=source,
        logged_max_running_requests=int_or(summary.values.get("max_running_requests"), None)
        if summary
        else None,
        logged_context_len=int_or(summary.values.get("context_len"), None) if summary else None,
        model_source=None if model is None else model.catalogue,
        model_context_len=None
        if model is None
        else int_or(model.extra.get("max_position_embeddings"), None),
        logged_kv_dtype=logged_kv_dtype,
        logged_chunked_prefill_size=int_or(summary.values.get("chunked_prefill_size"), None)
        if summary
        else None,
        logged_max_capture_bs=max(capture_bs) if capture_bs else None,
        bench_one_batch=bench,
        model_dtype=model_dtype if isinstance(model_dtype, str) else None,
        model_type=model_type if isinstance(model_type, str) else None,
        logged_prefill_graph_sizes=prefill_sizes,
        free_last=free_last,
        full_attention_layers=_full_attention_layers(model),
        snapshot_056_057=all(name in startup.server_args for name in SNAPSHOT_056_057_SERVER_ARGS),
        ranks_seen=sum(
            1
            for info in parsed.startup.ranks
            if isinstance(info.key_values.get("load_begin_avail"), int | float)
        ),
        state_logged_bytes=state,
        theoretical_cell_bytes=cell,
        theoretical_cell_note=cell_note,
        printed_fraction=_printed_fraction(fraction_event),
        gpu_capacity=gpu_capacity(events),
    )


def _full_attention_layers(model: ModelDims | None) -> tuple[int, int] | None:
    """A hybrid GDN config's full-attention layers: every full_attention_interval-th of
    num_hidden_layers (v0.5.8 configs/qwen3_next.py:248-271)."""
    if model is None or not model.num_hidden_layers:
        return None
    interval = model.extra.get("full_attention_interval")
    if not isinstance(interval, int) or isinstance(interval, bool) or interval < 1:
        return None
    return model.num_hidden_layers // interval, model.num_hidden_layers


def _printed_fraction(event: Event | None) -> PrintedFraction | None:
    if event is None:
        return None

    def number(key: str) -> float | None:
        value = event.values.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    return PrintedFraction(
        line=event.line,
        value=number("mem_fraction_static"),
        before=number("mem_fraction_static_before"),
        shape="vlm" if event.kind is EventKind.MFS_VLM_ADJUSTED else "runner",
    )
