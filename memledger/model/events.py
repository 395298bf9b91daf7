"""Typed events: what the log said, one per recognised line, with its source line.

This module is the contract between the parser (grammar -> events) and everything after it
(ledger engine, renderers, checks). Events carry what was printed, never conclusions.

Field conventions (every key optional; a parser fills what the line printed):
* `Event.sizes[key]` holds byte sizes (`Size`, integer bytes + printing precision).
* `Event.values[key]` holds everything else: ints (tokens, counts, bytes printed as raw ints such as
  `capacity=` are ALSO mirrored into sizes), floats (seconds), strings (class names, dtypes), lists of
  ints (bs lists), bools.

Per kind, the keys an event may carry, and their types, are data: `sizes` and `values` of the
kind's `memledger.sglang.lines.LineSpec` (names are stable API). The transformer refuses any
other key, and a test holds every key the code reads by name to those declarations.

Error kinds (oom_message .. process_exit, read by `memledger.input.error_texts`) are kept for every rank:
`rank` is the rank that printed them (a bare continuation line takes the last prefixed rank).
"""

from __future__ import annotations

from dataclasses import field
from enum import StrEnum
from typing import Any

from memledger.record import record
from memledger.units import Size

SCHEMA_VERSION = 1

ParamValue = int | float | str | bool | None | list[Any] | dict[str, Any]
Value = int | float | str | bool | None | list[int]


class EventKind(StrEnum):
    """Every kind of memory-relevant SGLang line memledger recognises."""

    DIST_INIT_BEGIN = "dist_init_begin"
    DIST_INIT_END = "dist_init_end"
    MEMORY_BASELINE = "memory_baseline"
    LOAD_BEGIN = "load_begin"
    LOAD_END = "load_end"
    KV_ALLOCATED = "kv_allocated"
    KV_SKIPPED = "kv_skipped"
    KV_DTYPE = "kv_dtype"
    MAMBA_ALLOCATED = "mamba_allocated"
    REPLAY_SSM = "replay_ssm"
    SWA_SPLIT = "swa_split"
    SWA_POOL = "swa_pool"
    DSV4_CALC = "dsv4_calc"
    DSV4_POOL_SIZES = "dsv4_pool_sizes"
    DSV4_POOL_INIT = "dsv4_pool_init"
    ASCEND_KV_AVAIL = "ascend_kv_avail"
    HICACHE_HOST = "hicache_host"
    MEMORY_POOL_END = "memory_pool_end"
    ATTENTION_BACKEND_BEGIN = "attention_backend_begin"
    ATTENTION_BACKEND_END = "attention_backend_end"
    ATTENTION_BACKEND_DEFAULT = "attention_backend_default"
    CAPTURE_BEGIN = "capture_begin"
    CAPTURE_BS = "capture_bs"
    CAPTURE_PROGRESS = "capture_progress"
    CAPTURE_END = "capture_end"
    POST_CAPTURE_KV = "post_capture_kv"
    SUMMARY = "summary"
    SERVER_ARGS = "server_args"
    ALL_REDUCE_CONFIG = "all_reduce_config"
    SYMM_PREALLOC = "symm_prealloc"
    DEEPEP_BUFFER = "deepep_buffer"
    DCP_Q_PREPARED = "dcp_q_prepared"
    ENV_VAR = "env_var"
    STAGING_POOL = "staging_pool"
    WEIGHT_SHARD_INFO = "weight_shard_info"
    DSPARK_RECLAIMED = "dspark_reclaimed"
    DSPARK_SLOT_MAP = "dspark_slot_map"
    IMBALANCE = "imbalance"
    LORA = "lora"
    LORA_BACKEND = "lora_backend"
    GPU_CAPACITY_FALLBACK = "gpu_capacity_fallback"
    MFS_REDUCED = "mfs_reduced"
    MFS_VLM_ADJUSTED = "mfs_vlm_adjusted"
    SETTING_ADJUSTED = "setting_adjusted"
    """SGLang changing a memory setting by itself (memledger.sglang.adjustments)."""
    PLATFORM_MARKER = "platform_marker"
    GPU_NAMED = "gpu_named"
    RELEASE_NAMED = "release_named"
    READY = "ready"
    SERVING_BATCH = "serving_batch"
    """A `Prefill batch.` / `Decode batch.` line: the last one before a kept line, within reach
    (memledger.input.scan.SERVING_REACH)."""
    OOM = "oom"
    CRASH = "crash"
    OOM_MESSAGE = "oom_message"
    KV_REFUSAL = "kv_refusal"
    TRACEBACK = "traceback"
    PROCESS_EXIT = "process_exit"
    POOL_EXHAUSTED = "pool_exhausted"
    REPORTED = "reported"
    """What a reporter typed around a paste: a setting and its value, what happened at it, or a
    mention (speculative decoding, logprobs, another process) of a bare prose line."""


@record
class Event:
    """One recognised line of the log."""

    kind: EventKind
    line: int
    """1-based physical line number in the input file."""
    rank: str
    """The rank tag text (`TP0`, `DP0 TP0 EP0`, `gpu_id=0`), `""` for untagged lines."""
    sizes: dict[str, Size] = field(default_factory=dict)
    values: dict[str, Value] = field(default_factory=dict)
    params: dict[str, ParamValue] | None = None
    """server_args only: the parsed parameter map (Python literals -> JSON values)."""
    text: str = ""
    """The message after the SGLang prefix, capped in length, for evidence and --explain."""

    def size(self, key: str) -> Size | None:
        """The size printed under `key`, if any."""
        return self.sizes.get(key)

    def value(self, key: str) -> Value:
        """The value printed under `key`, if any."""
        return self.values.get(key)


class LineCause(StrEnum):
    """Why a memory-looking line is in the coverage, as the engine needs to know it."""

    GAP = "gap"
    """Matched no known shape, or a known shape that did not read: what it allocated may be a
    row the account is missing (a grammar gap, counted in the ledger's note)."""
    READ_IN_PART = "read_in_part"
    """A server_args line that was read, but whose memory bound left items out (`bounded`):
    not a grammar gap."""


@record
class UnrecognisedLine:
    """A line of the selected rank that looks like memory but matched no known shape."""

    line: int
    rank: str
    text: str
    reason: str = "unrecognised"
    """`unrecognised`, or why a known shape was rejected (e.g. `malformed number 'nan'`)."""
    cause: LineCause = field(default=LineCause.GAP, metadata={"exclude": True})
    """What the engine reads (`reason` is the same said for people); not in the JSON."""
    bounded: list[str] = field(default_factory=list, metadata={"exclude": True})
    """What the server_args memory bound left out (`server_args: ...`), each noted on the
    ledger; not in the JSON (`reason` says it)."""


@record
class RankInfo:
    """One rank seen in the log, with its key values (for --all-ranks skew views)."""

    rank: str
    n_events: int
    key_values: dict[str, float | int | None] = field(default_factory=dict)


@record
class Startup:
    """One startup (server launch) inside a log file, with the events of the selected rank."""

    index: int
    """0-based position among the file's startups."""
    first_line: int
    last_line: int
    rank: str
    """The selected rank's tag text."""
    events: list[Event]
    """Selected-rank events plus rank-agnostic ones (server_args, untagged progress bars, outcome)."""
    server_args: dict[str, ParamValue] = field(default_factory=dict)
    outcome: str
    """`ready`, `oom`, `crash` or `truncated`."""
    outcome_line: int | None = None
    outcome_text: str = ""
    unrecognised: list[UnrecognisedLine] = field(default_factory=list)
    unrecognised_count: int = 0
    """May exceed len(unrecognised): the list is capped, the count is not."""
    skipped: list[UnrecognisedLine] = field(default_factory=list)
    """Memory-looking lines that were not read, each with why (a bare line in a prefixed log)."""
    skipped_count: int = 0
    """May exceed len(skipped): the list is capped, the count is not."""
    ranks: list[RankInfo] = field(default_factory=list)


@record
class ParsedLog:
    """A whole log reduced to what memledger needs: every startup, one selected."""

    schema_version: int = SCHEMA_VERSION
    path: str
    n_lines: int
    n_startups: int
    selected: int
    """Index of the selected startup (default: the last)."""
    startup: Startup
    invalid_utf8_bytes: int = 0
    """Bytes that were not valid UTF-8 and were replaced."""
    notes: list[str] = field(default_factory=list)
    """How the input was read where the default rules did not apply: `no SGLang prefix: read N
    pasted lines`, `no rank 0 in this input: read TP3, the only rank present`."""
