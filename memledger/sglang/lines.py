"""Every SGLang log line memledger reads: one `LineSpec` per line kind, and how keys are typed.

This table is the source of the input layer's per-kind knowledge:
* `words` -> `PREFILTER_WORDS`: a physical line holding none of them (and no memory-looking word)
  is skipped unread by the scanner (memledger.input.scan), so a new wording needs its words here;
* `head` -> `KNOWN_HEAD_RE`: a message starting like this that does not parse is reported as
  "malformed" in `parse --coverage`, not as "unrecognised"; only where the grammar cannot say
  how the line starts (memledger.input.linegrammar.known_head also reads the leading words of
  every line rule of the grammar: a new wording needs no head here);
* `checkpoint` -> `AVAIL_KINDS`: the line's `avail mem=` reading is a checkpoint of the engine's
  chain of free-memory readings;
* `loose_size`, `stray_size_is_problem`, `decimal_gb`: how the transformer types an unkeyed size;
* `sizes`, `values`: the keys (and value types) an event of the kind may carry, the contract
  between the parser and everything after it; the transformer drops any other key and reports
  the line as malformed, and tests/sglang/test_keys.py holds every key the code reads to them.
  The error kinds' keys are `ERROR_KEYS` (their texts: memledger.sglang.errors).
The grammar (`sglang.lark`) says what a line looks like; the example lines (`examples.py`) pin
what each shape parses to, and extension grammars are checked against them.

Stdlib only: the scan worker process imports this module, so it must stay cheap to import.
`kind` is an `memledger.model.events.EventKind` value (tests check each kind has exactly one spec).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import UnionType

from memledger.sglang.env_reports import REPORT_WORDS
from memledger.sglang.errors import PREFILTER_BY_KIND as ERROR_PREFILTER_WORDS

ValueType = type | UnionType
"""A value's type as declared (`int`, `str | None`, ...)."""


@dataclass(frozen=True)
class LineSpec:
    """What memledger knows about one kind of SGLang line besides its grammar rule."""

    kind: str
    """The event kind (an `EventKind` value; the grammar rule name before any `__variant`)."""
    head: str = ""
    """A regex for how the message starts (matched at its start, after the prefix), for a line
    whose start the grammar cannot give: its rule starts with a free word (`label? "KV"
    "Cache"`, `"Capture" graph_words "begin"`) or with one word. Else empty: the leading words
    of the rule's alternatives are the head (memledger.input.linegrammar.known_head)."""
    words: tuple[str, ...] = ()
    """Prefilter words, case-sensitive substrings of the physical line."""
    checkpoint: bool = False
    """Its `avail` size is a checkpoint (a free-memory reading after emptying the cache)."""
    loose_size: str = "size"
    """The key for a size printed without a key (`Allocating 12.34 GB host memory`)."""
    stray_size_is_problem: bool = False
    """An unkeyed size is garbage here (a line cut mid-text), never a value."""
    decimal_gb: bool = False
    """`GB` means 10^9 bytes on this line (SGLang's host-memory lines), not 2^30."""
    sizes: tuple[str, ...] = ()
    """The `Event.sizes` keys a line of this kind may carry: the transformer refuses others."""
    values: Mapping[str, ValueType] = field(default_factory=dict)
    """The `Event.values` keys a line of this kind may carry, with their types (`int | None`: a
    count SGLang may print as None); the transformer refuses other keys."""


ERROR_KEYS: dict[str, tuple[tuple[str, ...], dict[str, ValueType]]] = {
    "oom_message": (
        (
            "allocated",
            "capacity",
            "free",
            "listed_process",
            "private_pools",
            "process_in_use",
            "requested",
            "reserved_total",
            "reserved_unallocated",
        ),
        {"cause": str, "device": str, "gpu": int, "phase": str, "runtime": str},
    ),
    "kv_refusal": (
        (),
        {
            "available_gib": float,
            "max_total_tokens": int,
            "mem_fraction_static": float,
            "minimum_viable": float,
            "profiled_tokens": int,
            "shape": str,
            "swa_cap_gib": float,
            "swa_cap_tokens": int,
        },
    ),
    "pool_exhausted": (
        (),
        {
            "glued_available": int,
            "limit": int,
            "pool": str,
            "shape": str,
            "size": int,
            "tokens": int | None,
        },
    ),
    "traceback": (
        (),
        {
            "cause": str,
            "context": str,
            "exception": str | None,
            "exception_line": int,
            "frames": str,
            "free_gb": float,
            "local_gpu_memory": float,
            "message": str,
            "min_per_gpu_memory": float,
            "n_frames": int,
            "pool": str,
            "requested_gb": float,
            "result_code": int,
        },
    ),
    "process_exit": ((), {"exit_code": int, "killed": bool}),
    "reported": (
        (),
        {
            "framework": str,
            "knob": str,
            "mention": str,
            "relation": str,
            "said": str,
            "value": float,
            "where": str,  # `frame`: an errors.py row read in traceback frames
        },
    ),
    "setting_adjusted": (
        (),
        {
            "adjustment": str,
            "at": str,
            "setting": str,
            "value": str,
            "why": str,
            # the numbers a row's lever reads (memledger.sglang.adjustments)
            "was": str,
            "cache": str,
            "per": str,
        },
    ),
    "oom": ((), {"reason": str}),
    "crash": ((), {"reason": str}),
}
"""The keys of the events made of error texts (memledger.input.error_texts, .outcome, .parsing):
(sizes, values) per kind; every key of memledger.sglang.errors' entries is one of them."""


@dataclass(frozen=True)
class PlatformMarker:
    """A line only one platform's stack prints: evidence of the platform when server_args and
    the OOM text do not say it (memledger.input.parsing reads it; sglang.rows.platform_of)."""

    text: str
    """A case-sensitive substring of the physical line."""
    platform: str
    """`rocm` or `ascend` (a key of sglang.rows.PLATFORM_WORDS)."""


PLATFORM_MARKERS: tuple[PlatformMarker, ...] = (
    # logged only `if _is_hip` (python/sglang/srt/distributed/device_communicators/
    # custom_all_reduce_utils.py, the amdsmi import beside CUDA's pynvml one)
    PlatformMarker("Failed to import amdsmi with", "rocm"),
    # AMD's aiter kernel library (ROCm only) logs with this prefix: `[aiter] import [module_...]`
    PlatformMarker("[aiter] ", "rocm"),
    # Hygon DCU (HIP) stack: its fused-MoE patch prints this when its aiter import fails
    PlatformMarker("Please install aiter if you want to infer with aiter_moe", "rocm"),
    # SGLang's scheduler prewarms HCCL (Ascend collectives) on NPU: `HCCL DP prewarm start: rank=N`
    PlatformMarker("HCCL DP prewarm start", "ascend"),
)
"""Platform evidence in lines no grammar rule reads; each is checked against every real log."""


READY_TEXT = "The server is fired up and ready to roll"
"""The line that says the server is up (v0.5.8 entrypoints/http_server.py:1665): the `ready`
outcome, and the diagnosis's `serving` phase from its line on."""

ENV_VAR_HEADS = ("ENV_VAR ", "Setting ENV_VAR ")
"""How a bare environment line starts (the `env_var` kind): the only bare lines of a prefixed log
that are read, since a launcher prints them before SGLang's first prefixed line."""

ENV_VAR_NAMES = frozenset({"HCCL_BUFFSIZE"})
"""The environment variables an `env_var` line is read for (memory-relevant ones; any other
variable, a token say, is never parsed, stored nor shown)."""

_ENV_NAME = re.compile(r"(?:Setting )?ENV_VAR (\w+)[:=]")


def wanted_env_line(text: str) -> bool:
    """Whether a bare line is a launcher's `ENV_VAR NAME:value` for one of ENV_VAR_NAMES."""
    match = _ENV_NAME.match(text)
    return match is not None and match.group(1) in ENV_VAR_NAMES


def platform_marker(text: str) -> PlatformMarker | None:
    """The first marker this line holds, if any."""
    return next((m for m in PLATFORM_MARKERS if m.text in text), None)


@dataclass(frozen=True)
class ServingField:
    """One number of a serving-batch line (`#new-token: 8192`): its key as printed, the
    `Event.values` key and type."""

    printed: str
    key: str
    kind: type[int] | type[float]


SERVING_BATCH_HEADS: dict[str, str] = {
    "Prefill batch": "prefill",
    "Decode batch": "decode",
    "new fill batch": "prefill",
    "#running-req: ": "decode",
}
"""How a serving-batch message starts, and its stage. SGLang prints one per prefill batch and one
every decode_log_interval decode steps. SGLang 0.1.5 - 0.1.16 printed them bare (format
"%(message)s"): `new fill batch. #seq: N. #cached_token: N. #new_token: N. #remaining_req: N.
#running_req: N. tree_cache_hit_rate: X%.` (v0.1.5 managers/router/model_rpc.py:306-312, v0.1.16
:396-403) and `#running-req: N, #token: N, token usage: X, [gen throughput (token/s): X, ]
#queue-req: N` (v0.1.5 :182-187, v0.1.16 :244-250). From 0.1.17: v0.2.13
managers/tp_worker.py:419-427 (`[gpu=N] Prefill
batch. #new-seq, #new-token, #cached-token, cache hit rate, #running-req, #queue-req`) and
:270-277 (`[gpu=N] Decode batch. #running-req, #token, token usage, gen throughput (token/s),
#queue-req`); v0.4.6 managers/scheduler.py:992-1007 `log_prefill_stats` (`token usage` in
place of the hit rate; `#unbootstrapped-req`, `#transferring-req` in PD prefill) and
:1043-1047 `log_decode_stats`. The scanner keeps only the last one before a kept line (and before
the end), within reach (memledger.input.scan.SERVING_REACH), so millions of them stay cheap."""
SERVING_BATCH_STARTS: tuple[str, ...] = tuple(SERVING_BATCH_HEADS)
SERVING_BATCH_FIELDS: tuple[ServingField, ...] = (
    ServingField("#new-seq", "new_seq", int),
    ServingField("#new-token", "new_token", int),
    ServingField("#cached-token", "cached_token", int),
    ServingField("#running-req", "running_req", int),
    ServingField("#queue-req", "queue_req", int),
    ServingField("#token", "tokens_used", int),
    ServingField("token usage", "token_usage", float),
    # SGLang 0.1's `new fill batch.` words (v0.1.5 managers/router/model_rpc.py:306-313)
    ServingField("#seq", "new_seq", int),
    ServingField("#new_token", "new_token", int),
    ServingField("#cached_token", "cached_token", int),
    ServingField("#running_req", "running_req", int),
    ServingField("#remaining_req", "queue_req", int),
)
"""The numbers diagnose reads (v0.2.13 tp_worker.py:270-277, :419-427; v0.4.6
scheduler.py:992-1047); any other field of the line is ignored."""
_SERVING_FIELD_RE = re.compile(
    r"(#?[a-z][a-z _-]*?): ([0-9]+(?:\.[0-9]+)?)(?=[,% ]|\.(?: |$)|$)"  # 0.1: `#seq: 4. `
)
_SERVING_FIELDS = {f.printed: f for f in SERVING_BATCH_FIELDS}


def read_serving_batch(message: str) -> dict[str, int | float | str] | None:
    """The stage and numbers of a serving-batch message (after the prefix), or None."""
    stage = next((s for head, s in SERVING_BATCH_HEADS.items() if message.startswith(head)), None)
    if stage is None:
        return None
    values: dict[str, int | float | str] = {"stage": stage}
    for printed, number in _SERVING_FIELD_RE.findall(message[:1024]):
        spec = _SERVING_FIELDS.get(printed.strip())
        if spec is not None and spec.key not in values:
            values[spec.key] = int(float(number)) if spec.kind is int else float(number)
    return values


DRAFT_INIT_AFTER: dict[str, str] = {
    "load_end": "v0.5.8 managers/scheduler.py:534-536 `init_model_worker`: `init_tp_model_worker` "
    "(the target's ModelRunner: init, load, pools, graphs) then `maybe_init_draft_worker`; "
    "v0.5.16 managers/scheduler.py:845-848: the draft worker right after the target's load, "
    "before the pools",
    "capture_end": "v0.5.8 managers/scheduler.py:534-536 (the target's graphs are captured "
    "inside its ModelRunner, before the draft worker starts); v0.4.6 speculative/eagle_worker.py "
    "`__init__` after the target worker",
}
"""Line kinds of the target worker after which a distributed-init begin on the same rank is
the speculative draft worker's own (its ModelRunner runs `init_torch_distributed` again: v0.5.8
model_executor/model_runner.py:694, v0.5.16 distributed/bootstrap.py:62 `Init torch distributed
begin.`), not a new startup, until DRAFT_INIT_UNTIL or an outcome (ready, OOM, crash) ends the
startup. A capture end counts only when it is the target's (a draft's graphs end the draft)."""
DRAFT_INIT_UNTIL = "summary"
"""The scheduler's `max_total_num_tokens=...` line, printed by rank 0 once both workers are built
(v0.5.8 managers/scheduler.py:590-597; bench_one_batch.py prints it bare after its one
ModelRunner): a distributed init after it, on any rank, starts a new server."""


LINES: tuple[LineSpec, ...] = (
    # ---- distributed init / baseline
    LineSpec("dist_init_begin", words=("Init ",), values={"variant": str}),
    LineSpec(
        "dist_init_end",
        words=("Init ",),
        sizes=("usage",),
        values={"elapsed": float, "variant": str},
    ),
    LineSpec("memory_baseline", words=("Memory ",), sizes=("usage",)),
    # ---- weights
    LineSpec("load_begin", words=("Load weight",), checkpoint=True, sizes=("avail",)),
    LineSpec(
        "load_end",
        words=("Load weight",),
        checkpoint=True,
        stray_size_is_problem=True,
        sizes=("avail", "usage"),
        values={
            "bits": int,
            "dtype": str,
            "elapsed": float,
            "fmt": str,
            "overlap_commit": bool,
            "quant": str,
            "quant_algo": str,
            "type": str,
        },
    ),
    # ---- KV and state pools
    # a label of at most 8 words: `(?:\w+ )*` kept a backtracking mark per word of a 4 MiB line
    LineSpec(
        "kv_allocated",
        r"(?:\w+ ){0,8}KV Cache (?:is allocated|VA upper bound)",
        ("KV Cache",),
        sizes=("k", "kv", "v"),
        values={
            "dtype": str,
            "k_size_unpaired": str,
            "label": str,
            "tokens": int | None,
            "v_size_unpaired": str,
            "va_upper_bound": bool,
        },
    ),
    LineSpec(
        "kv_skipped",
        words=("KV Cache",),
        sizes=("kv",),
        values={"tokens": int | None},
    ),
    LineSpec("kv_dtype", words=("KV cache",), values={"dtype": str}),
    LineSpec(
        "mamba_allocated",
        words=("Mamba",),
        sizes=("conv_state", "intermediate_conv", "intermediate_ssm", "ssm_state"),
        values={"max_mamba_cache_size": int | None},
    ),
    LineSpec(
        "replay_ssm",
        "GDN ReplaySSM",
        ("ReplaySSM",),
        sizes=("beta", "d", "g", "k", "rawk", "rawv"),
        values={"L": int, "fold": int, "record_len": int | None},
    ),
    LineSpec(
        "swa_split",
        "Use [Ss]liding window memory pool",
        ("sliding window", "Sliding window"),
        values={"all_swa": bool, "full_layer_tokens": int | None, "swa_layer_tokens": int | None},
    ),
    LineSpec(
        "swa_pool",
        "SWAKVPool",
        ("SWA",),
        sizes=("usage",),
        values={"full_size": int | None, "swa_size": int | None, "va_upper_bound": bool},
    ),
    LineSpec(
        "dsv4_calc",
        words=("DSV4",),
        sizes=(
            "available_bytes",
            "c128_state_fixed",
            "c2_state_fixed",
            "c4_state_fixed",
            "swa_fixed",
            "swa_ring_fixed",
        ),
        values={
            "bytes_per_full_token": float,
            "dspark_draft_bf16": int,
            "full_token": int | None,
            "unified": bool,
            "unified_fp8": bool,
        },
    ),
    LineSpec(
        "dsv4_pool_sizes",
        words=("DSV4",),
        values={
            "c128": int,
            "c128_state": int,
            "c4": int,
            "c4_state": int,
            "full": int,
            "swa": int,
        },
    ),
    LineSpec(
        "dsv4_pool_init",
        "Initialize DeepSeekV4TokenToKVPool",
        ("DeepSeekV4",),
        values={
            "c128_size": int,
            "c128_state_pool_size": int,
            "c4_logical_size": int,
            "c4_s128_state_pool_size": int,
            "c4_size": int,
            "c4_state_pool_size": int,
            "max_num_reqs": int,
            "swa_size": int | None,
            "unified": bool,
            "unified_fp8": bool,
        },
    ),
    LineSpec(
        "ascend_kv_avail",
        "The available memory for KV cache",
        ("KV cache",),
        loose_size="avail_kv",
        sizes=("avail_kv",),
    ),
    LineSpec(
        "hicache_host",
        r"Allocating .*host (?:pool|memory)",
        loose_size="host",
        decimal_gb=True,
        sizes=("host",),
        values={
            "draft_layers": int,
            "item_bytes": int,
            "layers": int,
            "layout": str,
            "pages": int,
            "pool": str,
            "state_page_bytes": int,
            "target_layers": int,
            "tokens": int | None,
            "total_layers": int,
        },
    ),
    LineSpec("memory_pool_end", words=("Memory ",), checkpoint=True, sizes=("avail",)),
    LineSpec(
        "post_capture_kv",
        words=("Post-capture",),
        checkpoint=True,
        sizes=("avail", "free", "k", "kv", "size", "v"),
        values={
            "draft": bool,
            "dtype": str,
            "full_layer_tokens": int | None,
            "k_size_unpaired": str,
            "max_total_num_tokens": int | None,
            "swa_layer_tokens": int | None,
            "tokens": int | None,
            "v_size_unpaired": str,
        },
    ),
    # ---- attention backend and graphs
    LineSpec(
        "attention_backend_begin",
        words=("Init ",),
        checkpoint=True,
        sizes=("avail",),
    ),
    LineSpec(
        "attention_backend_end",
        words=("Init ",),
        checkpoint=True,
        sizes=("avail",),
        values={"elapsed": float},
    ),
    LineSpec("attention_backend_default", words=("backend by default",), values={"backend": str}),
    LineSpec(
        "capture_begin",
        r"Capture .*begin\b",
        ("Captur",),
        checkpoint=True,
        sizes=("avail",),
        values={
            "backend": str,
            "bs": list,
            "device": str,
            "graph": str,
            "graph_named": bool,
            "num_tokens": list,
            "num_tokens_per_req": int | None,
            "phase": str,
            "role": str,
            "role_named": bool,
            "step": int,
        },
    ),
    LineSpec(
        "capture_end",
        r"Capture .*end\b",
        ("Captur",),
        checkpoint=True,
        stray_size_is_problem=True,
        sizes=("avail", "usage"),
        values={
            "bs": list,
            "device": str,
            "elapsed": float,
            "graph": str,
            "graph_named": bool,
            "phase": str,
            "role": str,
            "role_named": bool,
            "step": int,
        },
    ),
    LineSpec(
        "capture_bs",
        r"Capture .* graph (?:bs|num tokens) \[",
        ("Captur",),
        values={
            "bs": list,
            "device": str,
            "graph": str,
            "graph_named": bool,
            "num_tokens": list,
            "phase": str,
            "role": str,
            "role_named": bool,
        },
    ),
    LineSpec(
        "capture_progress",
        r"Capturing \w",
        ("Captur",),
        sizes=("avail",),
        values={"bs": int, "num_tokens": int},
    ),
    # ---- summary and server arguments
    LineSpec(
        "summary",
        "max_total_num_tokens=",
        ("max_total_num_tokens",),
        stray_size_is_problem=True,
        sizes=("available_cpu_mem", "available_gpu_mem"),
        values={
            "chunked_prefill_size": int | None,
            "context_len": int | None,
            "max_prefill_tokens": int | None,
            "max_running_requests": int | None,
            "max_total_num_tokens": int | None,
        },
    ),
    LineSpec("server_args", "server_args=", ("server_args",), values={"form": str}),
    # ---- communication, staging, weight sharding (fork lines)
    LineSpec(
        "all_reduce_config",
        words=("All Reduce",),
        sizes=("local_buffer", "symmetric_memory"),
        values={"multicast": bool, "pull": bool},
    ),
    LineSpec(
        "symm_prealloc", "Pre-allocating symmetric memory pool", ("symmetric",), sizes=("size",)
    ),
    LineSpec(
        "deepep_buffer",
        r"Initialized DeepEP \S+ ElasticBuffer",
        ("ElasticBuffer",),
        sizes=("num_bytes",),
        values={
            "allow_hybrid_mode": bool,
            "hidden_size": int,
            "max_dispatch_tokens_per_rank": int,
            "num_bytes": int,
            "num_topk": int,
            "use_fp8_dispatch": bool,
            "world_size": int,
        },
    ),
    # --dcp-replicate-q-proj's count of MLA layers it gathered (v0.5.20 model_runner.py:1076-1079)
    # the environment SGLang's Ascend CI launchers print, bare, before the server starts
    # (`ENV_VAR HCCL_BUFFSIZE:2100`, `Setting ENV_VAR HCCL_BUFFSIZE=650`): memledger.input.parsing
    # reads a bare line only when it starts with ENV_VAR_HEADS and names one of ENV_VAR_NAMES
    LineSpec(
        "env_var", r"(?:Setting )?ENV_VAR ", ("ENV_VAR",), values={"HCCL_BUFFSIZE": int | str}
    ),
    LineSpec(
        "dcp_q_prepared",
        "dcp_replicate_q_proj: prepared",
        ("dcp_replicate_q_proj",),
        values={"layers": int},
    ),
    LineSpec(
        "staging_pool",
        "FlatAGStagingPool",
        ("FlatAG",),
        sizes=("capacity", "total"),
        values={"buffers": int | None, "capacity": int, "role": str},
    ),
    LineSpec(
        "weight_shard_info",
        r"Weight sharding|(?:DFlash|DFLASH|EAGLE|MTP|NextN|DSpark) draft: |requant-then-shard"
        r"|(?:draft|target) hoisted ",
        ("weight-sharded", "weight sharded", "requant", "hoisted"),
        values={
            "draft_name": str,
            "group_size": int,
            "hoisted": int,
            "hoisted_of": int,
            "requant_then_shard": bool,
            "requant_weights": int,
            "role": str,
            "sharded_layers": int,
        },
    ),
    LineSpec(
        "dspark_reclaimed", "DSpark ", ("DSpark",), loose_size="reclaimed", sizes=("reclaimed",)
    ),
    LineSpec(
        "dspark_slot_map",
        words=("DSpark",),
        values={"multiplier": int | None, "slots_per_req": int | None},
    ),
    LineSpec(
        "imbalance",
        words=("unbalanced",),
        values={"local_gpu_memory": float, "min_per_gpu_memory": float},
    ),
    LineSpec("lora_backend", words=("LoRA kernels",), values={"backend": str}),
    LineSpec(
        "lora",
        words=("LoRA",),
        checkpoint=True,
        sizes=("avail",),
        values={"name": str, "path": str, "phase": str},
    ),
    # nvidia-smi gave no memory total (unified-memory GPUs such as GB10 print [N/A]; MIG):
    # v0.5.16 utils/common.py:656-662, the fallback's warning at :621-625.
    LineSpec(
        "gpu_capacity_fallback",
        "Failed to get GPU memory capacity",
        ("GPU memory capacity",),
        sizes=("using_min",),
    ),
    # multimodal mem_fraction_static reduction (v0.4.2 - v0.4.8 model_executor/model_runner.py,
    # v0.4.10 server_args.py:1984, v0.3.0 - v0.4.0 model_runner.py without the value)
    LineSpec(
        "mfs_reduced",
        r"Automatically (?:reduce|turn off --chunked-prefill-size and adjust) "
        r"--mem-fraction-static",
        ("Automatically reduce --mem", "adjust --mem-fraction-static for multimodal"),
        values={"mem_fraction_static": float},
    ),
    LineSpec(
        "mfs_vlm_adjusted",
        "Multimodal model: Dynamically adjusted --mem-fraction-static",
        ("Dynamically adjusted --mem",),
        values={"mem_fraction_static": float, "mem_fraction_static_before": float},
    ),
    # ---- platform and outcome evidence (matched by memledger.input.parsing, not by the grammar)
    LineSpec(
        "platform_marker",
        words=tuple(m.text for m in PLATFORM_MARKERS),
        values={"marker": str, "platform": str},
    ),
    # what an environment output pasted beside the log prints (memledger.sglang.env_reports)
    LineSpec(
        "gpu_named",
        words=REPORT_WORDS,
        values={
            "form": str,
            "name": str,
            "total_mib": int,
            "used_mib": int,
            "gpus": int,
            "gpu": int,
            "pid": int,
            "process": str,
            "vram_total_b": int,
            "vram_used_b": int,
        },
    ),
    LineSpec("release_named", words=REPORT_WORDS, values={"form": str, "release": str}),
    LineSpec("ready", words=("fired up",), values={"reason": str}),
    # a serving-batch line: the scanner keeps the last one behind a prefix itself (its `] Decode
    # batch` marker); these words let one through without a prefix (a paste, SGLang 0.1's bare log)
    LineSpec(
        "serving_batch",
        words=("fill batch", "token usage: "),
        values={"stage": str, **{f.key: f.kind for f in SERVING_BATCH_FIELDS}},
    ),
    # ---- error texts and outcome phrases (memledger.sglang.errors: the words of its entries)
    *(
        LineSpec(kind, words=words, sizes=ERROR_KEYS[kind][0], values=ERROR_KEYS[kind][1])
        for kind, words in ERROR_PREFILTER_WORDS.items()
    ),
)

SPECS: dict[str, LineSpec] = {spec.kind: spec for spec in LINES}
"""The spec of each kind."""

MEMORY_WORDS: tuple[str, ...] = (
    "avail",
    "mem usage",
    "GB",
    "GiB",
    "MB",
    "MiB",
    "KB",
    "KiB",
    "bytes",
)
"""Units of any memory-looking line: such lines are decoded even when no kind knows them, so
`parse --coverage` can list them."""

MEMORY_WORDS_ANY_CASE: tuple[str, ...] = ("avail", "mem usage", "size", "capacity")
"""Words of a memory-looking line in any case (`Size`, `AVAIL`): the scanner matches them so."""

_MEMORY_SIZE_RE = re.compile(r"\d\s*(?:GB|GiB|MB|MiB|KB|KiB|bytes)\b")
MEMORY_LOOKING_RE = re.compile(
    _MEMORY_SIZE_RE.pattern + "|(?i:" + "|".join(MEMORY_WORDS_ANY_CASE) + ")"
)
"""A line that looks like memory; every such line passes the prefilter (MEMORY_WORDS and
MEMORY_WORDS_ANY_CASE), so coverage can account for each one."""


def looks_like_memory(text: str) -> bool:
    """Whether MEMORY_LOOKING_RE finds something in `text`, without running it on most lines:
    for ASCII text the any-case words are plain substrings of the lower-cased text."""
    if not text.isascii():
        return MEMORY_LOOKING_RE.search(text) is not None  # case folding beyond ASCII
    lowered = text.lower()
    for word in MEMORY_WORDS_ANY_CASE:
        if word in lowered:
            return True
    return _MEMORY_SIZE_RE.search(text) is not None


# a real tab and CR (not the escapes): an ERE reads no escape in a bracket expression
CUT_TAIL_ERE = (
    "([>#][ \t]*)*(([0-9]+(\\.[0-9]*)?|\\.[0-9]+|i?B|[ \t][KMGT]i?B)(\\.?\r?$|[,;])"
    "|[ \t]*[a-z_]+=[0-9]"
    "|[^ (]{0,80}, [a-z_][a-z0-9_]*=)"
)
"""How the rest of a memory line cut across two physical lines starts when it holds no memory
word, after any quote or comment markers (`> `, `#   `): a number or a unit's `B` that ends the
line or a value (`88` after `... #tokens: 1614`, `96, context_len=40960` after
`max_running_requests=40`, `B.` after `mem usage=28.00 G`, ` GB` after `avail mem=22.76`), a
key's last letters and its number (`len=40960` after `context_`, or a whole indented
`  max_running_requests=48,` of a line wrapped by hand), or the rest of a value and the next
`, key=` of a `server_args=` repr (`=None, log_requests=False` after `log_level_http`,
`lse, log_requests_level=0` after `log_requests=Fa`).
Matched at a line's start (an ERE: grep -E and Python's re read it alike), such a line is kept by
the scanner so memledger.input.wrapped can rejoin it; prose (`2. Then I ran`, `3) restart`,
`100 requests`) is not. A line that joins nothing is read as any bare line."""


def _unique(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(words))


PREFILTER_WORDS: tuple[str, ...] = _unique(
    MEMORY_WORDS + tuple(word for spec in LINES for word in spec.words)
)
"""What makes a physical line worth decoding (the scanner adds a case-blind `out of memory`)."""

KNOWN_HEAD_RE = re.compile("|".join(f"(?:{spec.head})" for spec in LINES if spec.head))
"""Heads of known shapes: a message starting like this that does not parse is malformed."""

AVAIL_KINDS: frozenset[str] = frozenset(spec.kind for spec in LINES if spec.checkpoint)
"""Kinds whose `avail` reading is a checkpoint. The tqdm progress bars and the summary's
`available_gpu_mem` are measured without emptying the cache, so they only refine (graphs) or
annotate (headroom) the account."""

# ---- keys: printed key -> canonical key -> type ---------------------------------------------

KEY_ALIASES: dict[str, str] = {
    "avail mem": "avail",
    "avail_mem": "avail",
    "mem usage": "usage",
    "Time elapsed": "elapsed",
    "elapsed": "elapsed",
    "#tokens": "tokens",
    "K size": "k",
    "V size": "v",
    "KV size": "kv",
    "physical K/V size": "kv",
    "conv_state size": "conv_state",
    "ssm_state size": "ssm_state",
    "intermediate_ssm_state_cache size": "intermediate_ssm",
    "intermediate_conv_window_cache size": "intermediate_conv",
    "swa size": "swa_size",
    "full size": "full_size",
    "free memory": "free",
    "num_tokens_per_bs": "num_tokens_per_req",
    "VA upper bound": "usage",
}
"""Printed key (or the last words of it) -> canonical key of memledger.model.events."""

SIZE_KEYS = frozenset(
    {
        "avail",
        "usage",
        "k",
        "v",
        "kv",
        "conv_state",
        "ssm_state",
        "intermediate_ssm",
        "intermediate_conv",
        "available_gpu_mem",
        "available_bytes",
        "free",
        "symmetric_memory",
        "local_buffer",
        "total",
        "rawv",
        "rawk",
        "beta",
        "host",
        "reclaimed",
    }
)
"""Keys whose value must be a number with a memory unit; anything else there is garbage."""

INT_KEYS = frozenset(
    {
        "tokens",
        "max_total_num_tokens",
        "chunked_prefill_size",
        "max_prefill_tokens",
        "max_running_requests",
        "context_len",
        "max_mamba_cache_size",
        "swa_size",
        "full_size",
        "full_layer_tokens",
        "swa_layer_tokens",
        "buffers",
        "slots_per_req",
        "multiplier",
        "num_tokens_per_req",
        "record_len",
        "full_token",
    }
)
"""Keys whose value must be an integer (or `None`)."""

RAW_BYTES_KEYS = frozenset({"capacity", "num_bytes", "total_bytes"})
"""Keys printed as raw byte counts: kept as an int value AND mirrored into sizes (exact)."""

SIGNED_SIZE_KEYS = frozenset({"usage"})
"""Sizes that are differences and may print negative (`mem usage=-0.00 GB` after a free); any
other negative size is garbage."""
