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

from enum import StrEnum
from typing import Any

from memledger.record import ConfigDict, Field, Record
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
    GPU_CAPACITY_FALLBACK = "gpu_capacity_fallback"
    MFS_REDUCED = "mfs_reduced"
    MFS_VLM_ADJUSTED = "mfs_vlm_adjusted"
    PLATFORM_MARKER = "platform_marker"
    GPU_NAMED = "gpu_named"
    READY = "ready"
    OOM = "oom"
    CRASH = "crash"
    OOM_MESSAGE = "oom_message"
    KV_REFUSAL = "kv_refusal"
    TRACEBACK = "traceback"
    PROCESS_EXIT = "process_exit"
    POOL_EXHAUSTED = "pool_exhausted"


class Event(Record):
    """One recognised line of the log."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EventKind
    line: int
    """1-based physical line number in the input file."""
    rank: str
    """The rank tag text (`TP0`, `DP0 TP0 EP0`, `gpu_id=0`), `""` for untagged lines."""
    sizes: dict[str, Size] = Field(default_factory=dict)
    values: dict[str, Value] = Field(default_factory=dict)
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


class UnrecognisedLine(Record):
    """A line of the selected rank that looks like memory but matched no known shape."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    line: int
    rank: str
    text: str
    reason: str = "unrecognised"
    """`unrecognised`, or why a known shape was rejected (e.g. `malformed number 'nan'`)."""


class RankInfo(Record):
    """One rank seen in the log, with its key values (for --all-ranks skew views)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: str
    n_events: int
    key_values: dict[str, float | int | None] = Field(default_factory=dict)


class Startup(Record):
    """One startup (server launch) inside a log file, with the events of the selected rank."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    """0-based position among the file's startups."""
    first_line: int
    last_line: int
    rank: str
    """The selected rank's tag text."""
    events: list[Event]
    """Selected-rank events plus rank-agnostic ones (server_args, untagged progress bars, outcome)."""
    server_args: dict[str, ParamValue] = Field(default_factory=dict)
    outcome: str
    """`ready`, `oom`, `crash` or `truncated`."""
    outcome_line: int | None = None
    outcome_text: str = ""
    unrecognised: list[UnrecognisedLine] = Field(default_factory=list)
    unrecognised_count: int = 0
    """May exceed len(unrecognised): the list is capped, the count is not."""
    skipped: list[UnrecognisedLine] = Field(default_factory=list)
    """Memory-looking lines that were not read, each with why (a bare line in a prefixed log)."""
    skipped_count: int = 0
    """May exceed len(skipped): the list is capped, the count is not."""
    ranks: list[RankInfo] = Field(default_factory=list)


class ParsedLog(Record):
    """A whole log reduced to what memledger needs: every startup, one selected."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    path: str
    n_lines: int
    n_startups: int
    selected: int
    """Index of the selected startup (default: the last)."""
    startup: Startup
    invalid_utf8_bytes: int = 0
    """Bytes that were not valid UTF-8 and were replaced."""
    notes: list[str] = Field(default_factory=list)
    """How the input was read where the default rules did not apply: `no SGLang prefix: read N
    pasted lines`, `no rank 0 in this input: read TP3, the only rank present`."""
