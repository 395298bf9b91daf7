"""Every SGLang log line memledger reads: one `LineSpec` per line kind, and how keys are typed.

This table is the source of the input layer's per-kind knowledge:
* `words` -> `PREFILTER_WORDS`: a physical line holding none of them (and no memory-looking word)
  is skipped unread by the scanner (memledger.input.scan), so a new wording needs its words here;
* `head` -> `KNOWN_HEAD_RE`: a message starting like this that does not parse is reported as
  "malformed" in `parse --coverage`, not as "unrecognised";
* `checkpoint` -> `AVAIL_KINDS`: the line's `avail mem=` reading is a checkpoint of the engine's
  chain of free-memory readings;
* `loose_size`, `stray_size_is_problem`, `decimal_gb`: how the transformer types an unkeyed size.
The grammar (`sglang.lark`) says what a line looks like; the example lines (`examples.py`) pin
what each shape parses to, and extension grammars are checked against them.

Stdlib only: the scan worker process imports this module, so it must stay cheap to import.
`kind` is an `memledger.model.events.EventKind` value (tests check each kind has exactly one spec).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class LineSpec:
    """What memledger knows about one kind of SGLang line besides its grammar rule."""

    kind: str
    """The event kind (an `EventKind` value; the grammar rule name before any `__variant`)."""
    head: str = ""
    """A regex for how the message starts (matched at its start, after the prefix)."""
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


# The GPU a log names (memledger.input.parsing reads it before the grammar, for the sizing
# model's GPU capacity): a kernel-config path's `device_name=` is get_device_name() of the rank's
# GPU with spaces as `_` (v0.5.10 layers/moe/fused_moe_triton/fused_moe_triton_config.py:27,
# utils/common.py:1785-1787: torch.cuda.get_device_name), printed in the MoE and FP8-block config
# warnings; an nvidia-smi table pasted with the log prints each GPU's memory.total
# (`4MiB / 81559MiB`).
GPU_NAME_WORDS: tuple[str, ...] = ("device_name=", "MiB /", "MiB/")
_DEVICE_NAME_RE = re.compile(r"device_name=([A-Za-z0-9][A-Za-z0-9_\-]{0,80})")
_NVSMI_MEMORY_RE = re.compile(r"\|\s*\d{1,7}MiB\s*/\s*(\d{1,7})MiB\s*\|")


def gpu_evidence(text: str) -> tuple[str, str | int] | None:
    """(`device_name`, the name with spaces) or (`nvidia_smi_total_mib`, an nvidia-smi table
    row's memory.total), the first this line holds."""
    if "device_name=" in text:
        found = _DEVICE_NAME_RE.search(text)
        if found is not None:
            return "device_name", found.group(1).replace("_", " ")
    if "MiB" in text:
        total = _NVSMI_MEMORY_RE.search(text)
        if total is not None:
            return "nvidia_smi_total_mib", int(total.group(1))
    return None


_INIT = r"Init (?:torch distributed|nccl|parallel) "

LINES: tuple[LineSpec, ...] = (
    # ---- distributed init / baseline
    LineSpec("dist_init_begin", _INIT + "begin", ("Init ",)),
    LineSpec("dist_init_end", _INIT + "ends", ("Init ",)),
    LineSpec("memory_baseline", "Memory baseline taken", ("Memory ",)),
    # ---- weights
    LineSpec("load_begin", "Load weight begin", ("Load weight",), checkpoint=True),
    LineSpec(
        "load_end", "Load weight end", ("Load weight",), checkpoint=True, stray_size_is_problem=True
    ),
    # ---- KV and state pools
    # a label of at most 8 words: `(?:\w+ )*` kept a backtracking mark per word of a 4 MiB line
    LineSpec(
        "kv_allocated", r"(?:\w+ ){0,8}KV Cache (?:is allocated|VA upper bound)", ("KV Cache",)
    ),
    LineSpec("kv_skipped", "KV Cache skipped", ("KV Cache",)),
    LineSpec("kv_dtype", "Using KV cache dtype", ("KV cache",)),
    LineSpec("mamba_allocated", "Mamba Cache is allocated", ("Mamba",)),
    LineSpec("replay_ssm", "GDN ReplaySSM", ("ReplaySSM",)),
    LineSpec(
        "swa_split", "Use [Ss]liding window memory pool", ("sliding window", "Sliding window")
    ),
    LineSpec("swa_pool", "SWAKVPool", ("SWA",)),
    LineSpec("dsv4_calc", "DSV4 memory calculation", ("DSV4",)),
    LineSpec("dsv4_pool_sizes", "DSV4 pool sizes", ("DSV4",)),
    LineSpec("dsv4_pool_init", "Initialize DeepSeekV4TokenToKVPool", ("DeepSeekV4",)),
    LineSpec(
        "ascend_kv_avail", "The available memory for KV cache", ("KV cache",), loose_size="avail_kv"
    ),
    LineSpec(
        "hicache_host", r"Allocating .*host (?:pool|memory)", loose_size="host", decimal_gb=True
    ),
    LineSpec("memory_pool_end", "Memory pool end", ("Memory ",), checkpoint=True),
    LineSpec("post_capture_kv", "Post-capture KV sizing", ("Post-capture",), checkpoint=True),
    # ---- attention backend and graphs
    LineSpec(
        "attention_backend_begin", "Init attention backend begin", ("Init ",), checkpoint=True
    ),
    LineSpec("attention_backend_end", "Init attention backend end", ("Init ",), checkpoint=True),
    LineSpec("capture_begin", r"Capture .*begin\b", ("Captur",), checkpoint=True),
    LineSpec(
        "capture_end", r"Capture .*end\b", ("Captur",), checkpoint=True, stray_size_is_problem=True
    ),
    LineSpec("capture_bs", r"Capture .* graph (?:bs|num tokens) \[", ("Captur",)),
    LineSpec("capture_progress", r"Capturing \w", ("Captur",)),
    # ---- summary and server arguments
    LineSpec(
        "summary", "max_total_num_tokens=", ("max_total_num_tokens",), stray_size_is_problem=True
    ),
    LineSpec("server_args", "server_args=", ("server_args",)),
    # ---- communication, staging, weight sharding (fork lines)
    LineSpec("all_reduce_config", "All Reduce config", ("All Reduce",)),
    LineSpec("symm_prealloc", "Pre-allocating symmetric memory pool", ("symmetric",)),
    LineSpec("deepep_buffer", r"Initialized DeepEP \S+ ElasticBuffer", ("ElasticBuffer",)),
    # --dcp-replicate-q-proj's count of MLA layers it gathered (v0.5.20 model_runner.py:1076-1079)
    # the environment SGLang's Ascend CI launchers print, bare, before the server starts
    # (`ENV_VAR HCCL_BUFFSIZE:2100`, `Setting ENV_VAR HCCL_BUFFSIZE=650`): memledger.input.parsing
    # reads a bare line only when it starts with ENV_VAR_HEADS and names one of ENV_VAR_NAMES
    LineSpec("env_var", r"(?:Setting )?ENV_VAR ", ("ENV_VAR",)),
    LineSpec("dcp_q_prepared", "dcp_replicate_q_proj: prepared", ("dcp_replicate_q_proj",)),
    LineSpec("staging_pool", "FlatAGStagingPool", ("FlatAG",)),
    LineSpec(
        "weight_shard_info",
        r"Weight sharding|(?:DFlash|DFLASH|EAGLE|MTP|NextN|DSpark) draft: |requant-then-shard"
        r"|(?:draft|target) hoisted ",
        ("weight-sharded", "weight sharded", "requant", "hoisted"),
    ),
    LineSpec("dspark_reclaimed", "DSpark ", ("DSpark",), loose_size="reclaimed"),
    LineSpec("dspark_slot_map", "DSpark draft SWA slot map", ("DSpark",)),
    LineSpec("imbalance", "The memory capacity is unbalanced", ("unbalanced",)),
    LineSpec("lora", "LoRA adapter (?:un)?loading", ("LoRA",), checkpoint=True),
    # nvidia-smi gave no memory total (unified-memory GPUs such as GB10 print [N/A]; MIG):
    # v0.5.16 utils/common.py:656-662, the fallback's warning at :621-625.
    LineSpec(
        "gpu_capacity_fallback", "Failed to get GPU memory capacity", ("GPU memory capacity",)
    ),
    # multimodal mem_fraction_static reduction (v0.4.2 - v0.4.8 model_executor/model_runner.py,
    # v0.4.10 server_args.py:1984, v0.3.0 - v0.4.0 model_runner.py without the value)
    LineSpec(
        "mfs_reduced",
        r"Automatically (?:reduce|turn off --chunked-prefill-size and adjust) "
        r"--mem-fraction-static",
        ("Automatically reduce --mem", "adjust --mem-fraction-static for multimodal"),
    ),
    LineSpec(
        "mfs_vlm_adjusted",
        "Multimodal model: Dynamically adjusted --mem-fraction-static",
        ("Dynamically adjusted --mem",),
    ),
    # ---- platform and outcome evidence (matched by memledger.input.parsing, not by the grammar)
    LineSpec("platform_marker", words=tuple(m.text for m in PLATFORM_MARKERS)),
    LineSpec("gpu_named", words=GPU_NAME_WORDS),
    LineSpec("ready", words=("fired up",)),
    LineSpec("oom", words=("OOM", "OutOfMemory")),
    LineSpec(
        "crash",
        words=(
            "Error",
            "Exception",
            "Traceback",
            "sigquit",
            "scheduler is dead",
            "Exit code",
            "Initialization failed",
            "Killed",
        ),
    ),
    # ---- error texts (read by memledger.input.error_texts; the scanner adds `out of memory`)
    # `PyTorch`, `", line `: what the second half of a wrapped OOM message or frame still holds
    LineSpec("oom_message", words=("OutOfMemory", "PyTorch", "HSA_STATUS_ERROR_OUT_OF_RESOURCES")),
    LineSpec("kv_refusal", words=("enough memory", "KV cache", "profiled value")),
    LineSpec("traceback", words=("Traceback", 'File "', '", line ', ", in ")),
    LineSpec("process_exit", words=("Killed", "Exit code", "terminated with")),
    LineSpec(
        "pool_exhausted",
        words=(
            "of memory",
            # the count lines under SGLang's Prefill/Decode raise (input.error_texts)
            "Try to allocate ",
            "able tokens: ",
            "able full tokens: ",
            "able swa tokens: ",
            "pool is full",
            "maximum allowed length",
            "allocate memory",
            "bad_alloc",
            "shared memory",
            "/dev/shm",
            "Bus error",
            # a traceback's code line that builds the request-to-token table
            "ReqToTokenPool(",
            "self.req_to_token =",
        ),
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
    "([>#][ \t]*)*(([0-9]+(\\.[0-9]*)?|\\.[0-9]+|i?B)(\\.?\r?$|[,;])|[ \t]*[a-z_]+=[0-9]"
    "|[^ (]{0,80}, [a-z_][a-z0-9_]*=)"
)
"""How the rest of a memory line cut across two physical lines starts when it holds no memory
word, after any quote or comment markers (`> `, `#   `): a number or a unit's `B` that ends the
line or a value (`88` after `... #tokens: 1614`, `96, context_len=40960` after
`max_running_requests=40`, `B.` after `mem usage=28.00 G`), a key's last letters and its number
(`len=40960` after `context_`, or a whole indented `  max_running_requests=48,` of a line wrapped
by hand), or the rest of a value and the next `, key=` of a `server_args=` repr
(`=None, log_requests=False` after `log_level_http`, `lse, log_requests_level=0` after
`log_requests=Fa`).
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
