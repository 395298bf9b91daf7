"""The ledger engine: one parsed startup in, the account of one rank's GPU memory out.

A pure function (no I/O). The account is built from consecutive `avail mem` readings
(checkpoints): every interval's drop is split into rows read from log lines (logged), rows
computed by the formulas file (derived) and what is left (unexplained, a row of its own).
Rows form a flat partition of usable memory = dist-init usage + avail at load begin.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memledger.events import Event, EventKind, ParamValue, ParsedLog
from memledger.formulas import (
    ExpressionError,
    Formula,
    MissingVariable,
    evaluate,
    format_value,
    render_text,
    version_code,
)
from memledger.ledger_model import (
    FIXED_OVERHEAD_GROUPS,
    Checkpoint,
    Evidence,
    Interval,
    Ledger,
    LedgerSource,
    Row,
    RowGroup,
    RowKind,
    SourceLine,
    Summary,
)
from memledger.model_config import ModelDims
from memledger.units import GIB, Size, format_gib

# `type=` class names of draft models (EAGLE, MTP/NextN, DFlash/DSpark, Medusa, ...).
DRAFT_TYPE = re.compile(r"eagle|nextn|mtp|draft|dflash|dspark|medusa|lookahead", re.IGNORECASE)

AVAIL_KINDS = frozenset(
    {
        EventKind.LOAD_BEGIN,
        EventKind.LOAD_END,
        EventKind.MEMORY_POOL_END,
        EventKind.ATTENTION_BACKEND_BEGIN,
        EventKind.ATTENTION_BACKEND_END,
        EventKind.CAPTURE_BEGIN,
        EventKind.CAPTURE_END,
        EventKind.POST_CAPTURE_KV,
        EventKind.LORA,
    }
)
"""Kinds whose `avail` reading is a checkpoint. The tqdm progress bars and the summary's
`available_gpu_mem` are measured without emptying the cache, so they only refine (graphs) or
annotate (headroom) the account."""

# Which server_args keys are copied into Ledger.parameters (for diffs): memory-relevant ones.
_PARAM_PATTERN = re.compile(
    r"^(mem_fraction_static|tp_size|dp_size|ep_size|pp_size|dcp_size|decode_context_parallel_size"
    r"|dcp_replicate_q_proj|attn_cp_size|moe_dp_size|enable_dp_attention|enable_dp_lm_head"
    r"|max_running_requests|max_total_tokens|max_prefill_tokens|chunked_prefill_size"
    r"|context_length|page_size|kv_cache_dtype|dtype|quantization|load_format|disable_radix_cache"
    r"|disable_cuda_graph|cuda_graph_max_bs\w*|cuda_graph_bs\w*|disable_custom_all_reduce"
    r"|enable_symm_mem|enable_two_batch_overlap|enable_hierarchical_cache|enable_memory_saver"
    r"|enable_piecewise_cuda_graph|disable_piecewise_cuda_graph|piecewise_cuda_graph_max_tokens"
    r"|mamba_full_memory_ratio|max_mamba_cache_size|mamba_ssm_dtype|swa_full_tokens_ratio"
    r"|disaggregation_mode|disaggregation_decode_extra_slots|speculative_algorithm"
    r"|speculative_num_draft_tokens|speculative_num_steps|speculative_eagle_topk"
    r"|speculative_\w*block_size|speculative_draft_model_path|moe_a2a_backend|deepep_mode"
    r"|moe_runner_backend|model_path|device|nnodes)$"
)
_SECRET_PATTERN = re.compile(r"key|secret|password|token(?!s)|credential", re.IGNORECASE)


LOG_PARAM_PREFIX = "log."
"""Prefix of the `Ledger.parameters` the log reveals (env-driven or auto-chosen settings)."""


@dataclass(frozen=True)
class LogSetting:
    """A setting no server_args field holds but a log line reveals: `log.<name>` in parameters."""

    name: str
    kind: EventKind
    keys: tuple[str, ...] = ()
    """Keys of the first matching line: a value as printed, a size as its printed text
    (`28.01 MB`); several keys are joined with `/` (`1/5`)."""
    role: str | None = None
    """Only lines whose `role` value is this (`target` / `draft`)."""
    count: bool = False
    """The number of matching lines instead of a value (one line per instance)."""
    unless_arg: str | None = None
    """Not recorded when server_args already holds the same value under this name."""


LOG_SETTINGS: tuple[LogSetting, ...] = (
    # SGLANG_K3_WEIGHT_SHARD_LAYERS / the fork's weight sharding (target and draft).
    LogSetting("weight_sharded_layers", EventKind.WEIGHT_SHARD_INFO, ("sharded_layers",), "target"),
    LogSetting("weight_shard_group_size", EventKind.WEIGHT_SHARD_INFO, ("group_size",), "target"),
    LogSetting("requant_then_shard", EventKind.WEIGHT_SHARD_INFO, ("requant_then_shard",)),
    LogSetting("requant_then_shard_weights", EventKind.WEIGHT_SHARD_INFO, ("requant_weights",)),
    LogSetting("hoisted_ag", EventKind.WEIGHT_SHARD_INFO, ("hoisted", "hoisted_of"), "target"),
    # SGLANG_ENABLE_K3_DRAFT_WEIGHT_SHARD: `DFlash draft: N weight-sharded layers`.
    LogSetting(
        "draft_weight_sharded_layers", EventKind.WEIGHT_SHARD_INFO, ("sharded_layers",), "draft"
    ),
    LogSetting("draft_hoisted_ag", EventKind.WEIGHT_SHARD_INFO, ("hoisted", "hoisted_of"), "draft"),
    # SGLANG_DSPARK_SWA_POOL_MULTIPLIER and the window slots each request reserves.
    LogSetting("dspark_slots_per_req", EventKind.DSPARK_SLOT_MAP, ("slots_per_req",)),
    LogSetting("dspark_swa_pool_multiplier", EventKind.DSPARK_SLOT_MAP, ("multiplier",)),
    # One `All Reduce config` line per CustomAllReduceV2 instance (one per intra-node group).
    LogSetting("custom_all_reduce_instances", EventKind.ALL_REDUCE_CONFIG, count=True),
    LogSetting(
        "custom_all_reduce_symmetric_memory", EventKind.ALL_REDUCE_CONFIG, ("symmetric_memory",)
    ),
    LogSetting("custom_all_reduce_local_buffer", EventKind.ALL_REDUCE_CONFIG, ("local_buffer",)),
    # SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK (DeepEP v2 prints it; v1 does not).
    LogSetting(
        "deepep_max_dispatch_tokens_per_rank",
        EventKind.DEEPEP_BUFFER,
        ("max_dispatch_tokens_per_rank",),
    ),
    LogSetting("deepep_use_fp8_dispatch", EventKind.DEEPEP_BUFFER, ("use_fp8_dispatch",)),
    # `auto` in server_args resolves to a torch dtype (0.5.3-0.5.12 line, else the KV line).
    LogSetting("kv_cache_dtype", EventKind.KV_DTYPE, ("dtype",)),
    LogSetting("kv_cache_dtype", EventKind.KV_ALLOCATED, ("dtype",)),
    # The batch sizes captured when server_args left them to SGLang (or differ from it).
    LogSetting(
        "cuda_graph_bs", EventKind.CAPTURE_BS, ("bs",), "target", unless_arg="cuda_graph_bs"
    ),
    LogSetting(
        "cuda_graph_bs", EventKind.CAPTURE_BEGIN, ("bs",), "target", unless_arg="cuda_graph_bs"
    ),
)
"""Settings the log reveals only indirectly, by line kind and key. The first entry of a name that
finds a line wins; a setting whose line is absent is not recorded (never guessed)."""

MAX_PARAM_TEXT = 200
"""Longer list/dict parameter texts are cut (parameters are for reading, not computing)."""


@dataclass
class _Point:
    """A checkpoint of the chain: an avail reading with a stable id."""

    id: str
    event: Event
    avail: Size
    derived_text: str | None = None
    """Set when the reading was not printed as such (e.g. load begin = end avail + usage)."""


@dataclass
class _Carve:
    """A piece of an interval's drop, becoming (part of) one row."""

    row_id: str
    label: str
    group: RowGroup
    kind: RowKind
    bytes: int
    error: int
    sources: list[Event] = field(default_factory=list)
    formula: str | None = None
    inputs: dict[str, int | float | str | None] = field(default_factory=dict)
    note: str | None = None
    in_partition: bool = True
    part_of: _Carve | None = None
    """Set on a later piece of another row (a release netted into the resident weights): the
    piece stays in its own interval's accounting but is added to that row."""


@dataclass
class _Load:
    """One model load's weights row, what the load split out of it and what it gave back."""

    role: str
    end: Event
    """The `Load weight end` line."""
    carve: _Carve
    """The resident row's load part (load-end usage less the split-out rows)."""
    usage: int | None
    """Load-end usage (the printed `mem usage`, else the load's avail drop); the load peak."""
    usage_error: int
    usage_printed: bool
    interval: str
    split: list[_Carve] = field(default_factory=list)
    """Rows logged inside the load interval (staging pools), carved out of the usage."""
    release: _Carve | None = None
    """The negative piece: the avail rise right after `Load weight end`."""
    release_interval: str | None = None

    @property
    def row_id(self) -> str:
        return self.carve.row_id


@dataclass
class _Span:
    """The interval between two consecutive checkpoints, with the events logged inside it."""

    start: _Point
    end: _Point
    events: list[Event]
    carves: list[_Carve] = field(default_factory=list)
    usage_span: bool = False
    """Closed by a line printing its own mem usage (load end, capture end) for this span."""
    rounding: int = 0
    """drop - printed usage in usage spans: printing rounding, the ledger's balance error."""
    rounding_slack: int = 0
    released: bool = False
    """The avail rose right after a load end: the drop is that load's release part."""

    @property
    def key(self) -> str:
        return f"{self.start.id}->{self.end.id}"

    @property
    def drop(self) -> int:
        return self.start.avail.bytes - self.end.avail.bytes

    @property
    def error(self) -> int:
        return self.start.avail.half_ulp + self.end.avail.half_ulp


@dataclass
class _Roles:
    """Stable ids and roles assigned to the events of one startup (by event index)."""

    ids: dict[int, str] = field(default_factory=dict)
    load_role: dict[int, str] = field(default_factory=dict)
    """load_begin / load_end index -> `target`, `draft` or `extra`."""
    load_pairs: dict[int, int] = field(default_factory=dict)
    """load_begin index -> load_end index."""
    capture_pairs: dict[int, int] = field(default_factory=dict)
    """capture_begin index -> capture_end index."""
    capture_prefix: dict[int, str] = field(default_factory=dict)
    """capture_begin index -> id prefix (`""`, `draft_`, `prefill_`, ...)."""
    progress: dict[int, list[Event]] = field(default_factory=dict)
    """capture_begin index -> its tqdm progress readings, in order."""
    has_draft: bool = False


@dataclass(frozen=True)
class _LineRow:
    """How one kind of log line becomes a row: which printed sizes it adds up."""

    row_id: str
    """`{draft}` becomes `draft_` in the draft's pool interval."""
    label: str
    group: RowGroup
    keys: tuple[str, ...]
    fallback: str | None = None
    """A size key used when none of `keys` was printed (e.g. a total)."""
    informational: str | None = None
    """Set for sizes that are not allocations of this GPU: the note shown; never summed."""


_STATE = RowGroup.STATE_POOL
_COMM = RowGroup.COMMUNICATION

LINE_ROWS: dict[EventKind, tuple[_LineRow, ...]] = {
    EventKind.MAMBA_ALLOCATED: (
        _LineRow("{draft}mamba_conv_state", "Mamba/KDA conv state", _STATE, ("conv_state",)),
        _LineRow("{draft}mamba_ssm_state", "Mamba/KDA SSM state", _STATE, ("ssm_state",)),
        _LineRow(
            "{draft}mamba_intermediate_ssm",
            "intermediate SSM state (speculative)",
            _STATE,
            ("intermediate_ssm",),
        ),
        _LineRow(
            "{draft}mamba_intermediate_conv",
            "intermediate conv window (speculative)",
            _STATE,
            ("intermediate_conv",),
        ),
    ),
    EventKind.REPLAY_SSM: (
        _LineRow(
            "{draft}replay_ssm",
            "ReplaySSM ring buffers",
            _STATE,
            ("d", "k", "g", "rawv", "rawk", "beta"),
            fallback="total",
        ),
    ),
    EventKind.SWA_POOL: (
        _LineRow("{draft}swa_kv_pool", "SWAKVPool (full + SWA KV)", _STATE, ("usage",)),
    ),
    EventKind.ALL_REDUCE_CONFIG: (
        _LineRow(
            "all_reduce_buffers",
            "custom all-reduce buffers (symmetric + local)",
            _COMM,
            ("symmetric_memory", "local_buffer"),
        ),
    ),
    EventKind.SYMM_PREALLOC: (
        _LineRow("symmetric_memory_pool", "symmetric memory pool", _COMM, ("size",)),
    ),
    EventKind.DEEPEP_BUFFER: (_LineRow("deepep_buffer", "DeepEP buffer", _COMM, ("num_bytes",)),),
    EventKind.DSPARK_RECLAIMED: (
        _LineRow(
            "dspark_reclaimed",
            "DSpark SWA draft KV reclaimed",
            _STATE,
            ("reclaimed",),
            informational="compared with a hypothetical proportional draft KV: not an allocation",
        ),
    ),
    EventKind.HICACHE_HOST: (
        _LineRow(
            "hicache_host",
            "HiCache host pool",
            _STATE,
            ("host",),
            informational="host RAM, not GPU memory",
        ),
    ),
    EventKind.ASCEND_KV_AVAIL: (
        _LineRow(
            "ascend_kv_budget",
            "memory available for KV cache (Ascend)",
            _STATE,
            ("avail_kv",),
            informational="the KV budget the runtime computed, not an allocation",
        ),
    ),
    EventKind.DSV4_CALC: (
        _LineRow(
            "dsv4_available",
            "DSV4 pool budget",
            _STATE,
            ("available_bytes",),
            informational="the DeepSeek V4 pools' budget as computed; the pools are logged apart",
        ),
    ),
}
"""Lines whose sizes become rows as they are; KV, staging, load and capture lines depend on
role and labels and are handled in `_Builder._special_carve`."""


def build_ledger(
    parsed: ParsedLog,
    *,
    formulas: Sequence[Formula],
    model_config: ModelDims | None = None,
) -> Ledger:
    """The account of the selected rank of the selected startup (pure; never raises on data)."""
    return _Builder(parsed, formulas, model_config).build()


class _Builder:
    """One ledger under construction; `build` runs the steps in order."""

    def __init__(
        self, parsed: ParsedLog, formulas: Sequence[Formula], model: ModelDims | None
    ) -> None:
        self.parsed = parsed
        self.startup = parsed.startup
        self.events = sorted(self.startup.events, key=lambda e: e.line)
        self.args: dict[str, ParamValue] = dict(self.startup.server_args)
        self.formulas = formulas
        self.model = model
        self.notes: list[str] = []
        self.info_rows: list[_Carve] = []
        self.row_intervals: dict[int, str] = {}
        self.numbers: dict[tuple[int, str], int] = {}
        """(line, key) -> half_ulp of every printed number the partition used."""
        self.index = {id(event): position for position, event in enumerate(self.events)}
        self.roles = _assign_roles(self.events, self.args)
        self.variables: dict[str, Any] = {}
        self.variable_sources: dict[str, Event] = {}
        self.format_version = 0
        self.loads: dict[int, _Load] = {}
        """id(load-end event) -> that load's weights row and release."""

    # -- steps ---------------------------------------------------------------------------------

    def build(self) -> Ledger:
        points = self._points()
        dist_event = self._dist_init_event(points)
        pre_load = self._pre_load_carves(points, dist_event)
        usable = self._usable(points, dist_event, pre_load)
        spans = self._spans(points)
        for span in spans:
            self._carve_logged(span)
        self.variables, self.variable_sources = self._variables(points, spans)
        for span in spans:
            self._carve_primary(span)
        self._finish_loads()
        formula_carves = self._carve_formulas(spans)
        for span in spans:
            self._carve_residual(span)
        tail = self._tail(points, spans)
        rows = self._rows(dist_event, pre_load, spans, tail, formula_carves)
        checkpoints = self._checkpoints(points, dist_event)
        intervals = [self._interval(span) for span in spans]
        partition = [row for row in rows if row.in_partition and row.bytes is not None]
        balance = 0 if usable is None else sum(row.bytes or 0 for row in partition) - usable
        tolerance = 0 if usable is None else sum(self.numbers.values())
        summary = self._summary(rows, usable, spans)
        return Ledger(
            source=LedgerSource(
                path=self.parsed.path,
                startup=self.parsed.selected,
                n_startups=self.parsed.n_startups,
                rank=self.startup.rank,
            ),
            outcome=self.startup.outcome,
            stopped_at=self._stopped_at(points),
            checkpoints=checkpoints,
            intervals=intervals,
            rows=rows,
            summary=summary,
            usable_bytes=usable,
            balance_error_bytes=balance,
            tolerance_bytes=tolerance,
            parameters=self._parameters(),
            notes=self.notes,
        )

    def _points(self) -> list[_Point]:
        """Every avail reading of a checkpoint kind, in log order, with its stable id."""
        points: list[_Point] = []
        for index, event in enumerate(self.events):
            avail = event.size("avail")
            if event.kind not in AVAIL_KINDS or avail is None:
                continue
            points.append(_Point(self.roles.ids[index], event, avail))
        if points and points[0].event.kind == EventKind.LOAD_END:
            # A fragment without `Load weight begin`: its printed usage recovers the reading.
            first = points[0]
            usage = first.event.size("usage")
            if usage is not None:
                start = Size(
                    bytes=first.avail.bytes + usage.bytes,
                    half_ulp=first.avail.half_ulp + usage.half_ulp,
                )
                begin_id = first.id.replace("load_end", "load_begin")
                points.insert(
                    0,
                    _Point(begin_id, first.event, start, "derived: load-end avail + mem usage"),
                )
                self.notes.append(
                    f"no `Load weight begin` reading: avail at {begin_id} taken as load-end "
                    f"avail + mem usage (line {first.event.line})"
                )
        return points

    def _dist_init_event(self, points: list[_Point]) -> Event | None:
        """The `Init torch distributed ends` line before the first reading (its mem usage)."""
        first_line = points[0].event.line if points else None
        for event in self.events:
            if first_line is not None and event.line >= first_line:
                break
            if event.kind == EventKind.DIST_INIT_END and event.size("usage") is not None:
                return event
        return None

    def _pre_load_carves(self, points: list[_Point], dist_event: Event | None) -> list[_Carve]:
        """Allocations logged before the first reading: inside dist init (informational) or
        between dist init and the first reading (added to usable)."""
        first_line = points[0].event.line if points else None
        carves: list[_Carve] = []
        for event in self.events:
            if first_line is not None and event.line >= first_line:
                break
            if event is dist_event:
                continue
            for carve in self._logged_carves(event, region="pre_load"):
                inside_init = dist_event is not None and event.line < dist_event.line
                if inside_init:
                    carve.in_partition = False
                    carve.note = "allocated during distributed init: included in nccl_init"
                    self.info_rows.append(carve)
                elif first_line is None:
                    carve.in_partition = False
                    carve.note = "no avail reading in this log: not part of an account"
                    self.info_rows.append(carve)
                else:
                    carve.note = "allocated before the first avail reading: added to usable"
                    carves.append(carve)
        return carves

    def _usable(
        self, points: list[_Point], dist_event: Event | None, pre_load: list[_Carve]
    ) -> int | None:
        """Dist-init usage + pre-load allocations + avail at load begin (None when unknown)."""
        if not points:
            self.notes.append("cannot balance: no avail reading in this log")
            return None
        first = points[0]
        if first.event.kind != EventKind.LOAD_BEGIN and first.derived_text is None:
            self.notes.append(
                f"cannot balance: no load-begin avail reading (the log starts at {first.id}, "
                f"line {first.event.line}): usable memory unknown"
            )
            return None
        usable = first.avail.bytes + sum(carve.bytes for carve in pre_load)
        self._use_number(first.event, "avail", first.avail)
        if dist_event is not None:
            usage = dist_event.size("usage")
            assert usage is not None
            usable += usage.bytes
            self._use_number(dist_event, "usage", usage)
        else:
            baseline = next((e for e in self.events if e.kind == EventKind.MEMORY_BASELINE), None)
            why = (
                "this SGLang version logs `Memory baseline taken` instead (0.5.21+)"
                if baseline is not None
                else "no `Init torch distributed ends ... mem usage` line"
            )
            self.notes.append(
                f"distributed-init usage not logged ({why}): usable = avail at load begin"
                + (" + allocations logged before it" if pre_load else "")
            )
        for carve in pre_load:
            for source in carve.sources:
                self._use_sizes(source)
        return usable

    def _spans(self, points: list[_Point]) -> list[_Span]:
        """Consecutive checkpoint pairs, each with the events logged after start, up to end."""
        spans: list[_Span] = []
        position = 0
        for start, end in zip(points, points[1:], strict=False):
            inside: list[Event] = []
            while position < len(self.events) and self.events[position].line <= end.event.line:
                event = self.events[position]
                if event.line > start.event.line or (
                    start.derived_text is not None and event is start.event
                ):
                    inside.append(event)
                position += 1
            spans.append(_Span(start, end, inside))
        return spans

    # -- carving -------------------------------------------------------------------------------

    def _region(self, span: _Span) -> str:
        """`draft` for the draft's pool interval, `post_capture` after graphs, else `target`."""
        if span.end.id.startswith("draft_memory_pool_end"):
            return "draft"
        if span.end.id.startswith("post_capture_kv"):
            return "post_capture"
        return "target"

    def _carve_logged(self, span: _Span) -> None:
        region = self._region(span)
        has_kv_lines = any(e.kind == EventKind.KV_ALLOCATED for e in span.events)
        for event in span.events:
            if self._is_own_usage(span, event):
                continue
            for carve in self._logged_carves(event, region=region):
                if event.kind == EventKind.SWA_POOL and has_kv_lines:
                    carve.in_partition = False
                    carve.note = "the sum of the KV lines of this interval, which are the rows"
                if carve.in_partition:
                    span.carves.append(carve)
                    self._use_sizes(event)
                    if event.kind == EventKind.LOAD_END:
                        # A load end whose begin is not this span's start: its usage line.
                        self._register_load(event, carve, span, carve.bytes, carve.error)
                else:
                    self.info_rows.append(carve)
                    self.row_intervals[id(carve)] = span.key

    def _is_own_usage(self, span: _Span, event: Event) -> bool:
        """The closing load/capture line of this span: handled by `_carve_primary`."""
        return event is span.end.event and self._begin_index_of(span) is not None

    def _begin_index_of(self, span: _Span) -> int | None:
        """Index of the begin event when this span is exactly a load or capture (begin -> end)."""
        start_index = self.index[id(span.start.event)]
        end_index = self.index[id(span.end.event)]
        pairs = (
            self.roles.load_pairs
            if span.end.event.kind == EventKind.LOAD_END
            else self.roles.capture_pairs
            if span.end.event.kind == EventKind.CAPTURE_END
            else {}
        )
        if pairs.get(start_index) == end_index:
            return start_index
        if span.start.derived_text is not None and start_index == end_index:
            return start_index
        return None

    def _logged_carves(self, event: Event, *, region: str) -> list[_Carve]:
        """Rows a log line names (the sizes it printed), with their ids and groups."""
        draft = region == "draft"
        special = self._special_carve(event, region)
        if special is not None:
            return special
        carves: list[_Carve] = []
        for spec in LINE_ROWS.get(event.kind, ()):
            size = _sum_sizes(*(event.size(key) for key in spec.keys))
            if size is None and spec.fallback is not None:
                size = event.size(spec.fallback)
            if size is None:
                continue
            carves.append(
                _Carve(
                    spec.row_id.format(draft="draft_" if draft else ""),
                    ("draft " if draft and "{draft}" in spec.row_id else "") + spec.label,
                    spec.group,
                    RowKind.LOGGED,
                    size.bytes,
                    size.half_ulp,
                    [event],
                    note=spec.informational,
                    in_partition=spec.informational is None,
                )
            )
        return carves

    def _special_carve(self, event: Event, region: str) -> list[_Carve] | None:
        """Lines whose row depends on role or labels (KV, staging, loads, captures)."""
        kind = event.kind
        if kind in (EventKind.KV_ALLOCATED, EventKind.KV_SKIPPED, EventKind.POST_CAPTURE_KV):
            return self._kv_carves(event, region)
        usage = event.size("usage")
        if kind == EventKind.STAGING_POOL and (total := event.size("total")) is not None:
            if str(event.value("role") or "target") == "draft":
                what = ("draft_staging", "draft weight-shard AG staging pool")
                return [_logged(event, *what, RowGroup.DRAFT_WEIGHTS, total)]
            what = ("weight_staging", "weight-shard AG staging pool")
            return [_logged(event, *what, RowGroup.WEIGHT_STAGING, total)]
        if kind == EventKind.DIST_INIT_END and usage is not None:
            row_id = "draft_nccl_init" if self.roles.has_draft else "nccl_init_2"
            return [
                _logged(event, row_id, "a later distributed init", RowGroup.COMMUNICATION, usage)
            ]
        if kind == EventKind.LOAD_END and usage is not None:
            role = self.roles.load_role.get(self.index[id(event)], "target")
            row_id = "draft_weights" if role == "draft" else "weights"
            return [_logged(event, row_id, f"{role} weights", _weights_group(role), usage)]
        if kind == EventKind.CAPTURE_END and usage is not None:
            end_id = self.roles.ids.get(self.index[id(event)], "capture_end")
            prefix = end_id.removesuffix("capture_end")
            return [
                _logged(
                    event, f"{prefix}cuda_graph", _capture_label(prefix), RowGroup.CUDA_GRAPH, usage
                )
            ]
        return None

    def _kv_carves(self, event: Event, region: str) -> list[_Carve]:
        size = event.size("kv") or _sum_sizes(event.size("k"), event.size("v"))
        if size is None:
            return []
        draft = region == "draft"
        label_text = str(event.value("label") or "").strip()
        base = "draft_kv" if draft else "kv_pool"
        if region == "post_capture" or event.kind == EventKind.POST_CAPTURE_KV:
            base = f"{base}_post_capture"
        if label_text and label_text.lower() != "full":
            base = f"{base}_{_slug(label_text)}"
        label = (
            f"{label_text + ' ' if label_text else ''}{'draft KV cache' if draft else 'KV cache'}"
        )
        if event.value("va_upper_bound"):
            carve = _logged(
                event, f"{base}_va", f"{label} (virtual reservation)", RowGroup.STATE_POOL, size
            )
            carve.note = "VA upper bound: reserved address space, backed later (post-capture KV)"
            carve.in_partition = False
            return [carve]
        carve = _logged(event, base, label, RowGroup.STATE_POOL, size)
        tokens = event.value("tokens")
        carve.note = f"#tokens {tokens}" if isinstance(tokens, int) else None
        return [carve]

    def _carve_primary(self, span: _Span) -> None:
        """Load and capture spans: the printed usage, less what other lines named inside."""
        begin_index = self._begin_index_of(span)
        if begin_index is not None:
            if span.end.event.kind == EventKind.LOAD_END:
                self._carve_load(span, begin_index)
            else:
                self._carve_capture(span, begin_index)
            return
        start = span.start.event
        if (
            start.kind == EventKind.LOAD_END
            and span.drop < 0
            and not any(carve.in_partition and carve.bytes for carve in span.carves)
        ):
            self._carve_release(span)

    def _carve_release(self, span: _Span) -> None:
        """The avail rise right after a load end: the negative part of that load's weights row.

        The interval keeps it as logged (it explains the drop); the row it belongs to is the
        resident weights, and `<row>_released` shows the amount (positive) beside it.
        """
        start = span.start.event
        load = self.loads.get(id(start))
        role = self.roles.load_role.get(self.index[id(start)], "target")
        piece = _Carve(
            _weights_row_id(role),
            f"{role} weights released after load",
            _weights_group(role),
            RowKind.LOGGED,
            span.drop,
            span.error,
            [start, span.end.event],
        )
        if load is None:
            # No load row to net against (no load begin and no printed usage): the release
            # stays a row of its own, negative and said so.
            piece.note = (
                f"negative: avail rose by {-span.drop / GIB:.2f} GiB right after "
                "`Load weight end` (the loader freed load-time copies); this load's own usage "
                "is not in the account (no load begin and no printed mem usage)"
            )
            load = _Load(role, start, piece, None, 0, False, span.key)
            self.loads[id(start)] = load
        else:
            piece.part_of = load.carve
        load.release = piece
        load.release_interval = span.key
        span.released = True
        span.carves.append(piece)
        self._use_number(start, "avail", span.start.avail)
        self._use_number(span.end.event, "avail", span.end.avail)

    def _usage_total(self, span: _Span) -> tuple[int, int]:
        """The span's printed usage (or its drop when none is printed) and its ± bound."""
        usage = span.end.event.size("usage")
        if usage is None or span.start.derived_text is not None:
            self._use_number(span.start.event, "avail", span.start.avail)
            self._use_number(span.end.event, "avail", span.end.avail)
            return span.drop, span.error
        slack = span.error + usage.half_ulp
        rounding = span.drop - usage.bytes
        self._use_number(span.end.event, "usage", usage)
        if abs(rounding) <= slack:
            span.usage_span = True
            span.rounding = rounding
            span.rounding_slack = slack
            self._use_number(span.start.event, "avail", span.start.avail)
            self._use_number(span.end.event, "avail", span.end.avail)
        else:
            self.notes.append(
                f"{span.key}: printed mem usage {usage.bytes / GIB:.2f} GiB differs from the avail "
                f"drop {span.drop / GIB:.2f} GiB by more than printing precision; the difference "
                "is an unexplained row"
            )
        return usage.bytes, usage.half_ulp

    def _carve_load(self, span: _Span, begin_index: int) -> None:
        role = self.roles.load_role.get(begin_index, "target")
        total, error = self._usage_total(span)
        split = [carve for carve in span.carves if carve.in_partition]
        others = sum(carve.bytes for carve in split)
        other_error = sum(carve.error for carve in split)
        carve = _Carve(
            _weights_row_id(role),
            f"{role} weights at load end",
            _weights_group(role),
            RowKind.LOGGED,
            total - others,
            error + other_error,
            [span.start.event, span.end.event],
            note=(
                "negative mem usage: the load freed more than it allocated"
                if total - others < 0
                else None
            ),
        )
        span.carves.insert(0, carve)
        printed = span.end.event.size("usage") is not None
        self._register_load(span.end.event, carve, span, total, error, split, printed=printed)

    def _register_load(
        self,
        end: Event,
        carve: _Carve,
        span: _Span,
        usage: int,
        usage_error: int,
        split: Sequence[_Carve] = (),
        *,
        printed: bool = True,
    ) -> None:
        role = self.roles.load_role.get(self.index[id(end)], "target")
        self.loads[id(end)] = _Load(
            role, end, carve, usage, usage_error, printed, span.key, list(split)
        )

    def _finish_loads(self) -> None:
        """Each weights row becomes the resident weights: load-end usage - split-out rows -
        released after load; the peak and the release are shown beside it (informational)."""
        for load in self.loads.values():
            if load.usage is None or not (load.split or load.release):
                continue
            carve = load.carve
            load_sources = list(carve.sources)
            released = 0 if load.release is None else -load.release.bytes
            resident = carve.bytes - released
            terms = [self._usage_term(load)]
            terms += [
                f"{_split_name(piece)} {_gib_text(piece.bytes)} ({self._where(piece.sources)})"
                for piece in load.split
            ]
            if load.release is not None and load.release_interval is not None:
                rise = load.release_interval.replace("->", " -> ")
                terms.append(
                    f"released {_gib_text(released)} (avail rise {rise}, "
                    f"{self._where(load.release.sources)})"
                )
            carve.formula = " - ".join(terms)
            carve.label = f"{load.role} weights resident ({_resident_shape(load)})"
            more = [*(e for piece in load.split for e in piece.sources)]
            more += [] if load.release is None else load.release.sources
            carve.sources = sorted({id(e): e for e in [*carve.sources, *more]}.values(), key=_line)
            carve.note = _negative_note(
                resident, "the load and what it released leave less than nothing resident"
            )
            peak = _Carve(
                f"{load.row_id}_load_peak",
                f"{load.role} weights: load-end usage (peak)",
                carve.group,
                RowKind.LOGGED,
                load.usage,
                load.usage_error,
                load_sources,
                note=(
                    "informational: the load's peak, staging allocated during the load "
                    f"included; the partition counts `{load.row_id}` (resident) and the rows "
                    "split out of it"
                ),
                in_partition=False,
            )
            self.info_rows.append(peak)
            self.row_intervals[id(peak)] = load.interval
            if load.release is None or load.release_interval is None:
                continue
            given_back = _Carve(
                f"{load.row_id}_released",
                f"{load.role} weights released after load",
                carve.group,
                RowKind.LOGGED,
                released,
                load.release.error,
                list(load.release.sources),
                note=(
                    f"informational: avail rose by {_gib_text(released)} right after "
                    "`Load weight end` (the loader freed load-time copies, e.g. "
                    f"requant-then-shard); netted into `{load.row_id}`, whose release part "
                    f"(-{_gib_text(released)}) is the logged amount of {load.release_interval}"
                ),
                in_partition=False,
            )
            self.info_rows.append(given_back)
            self.row_intervals[id(given_back)] = load.release_interval

    def _usage_term(self, load: _Load) -> str:
        where = self._where([load.end])
        if load.usage_printed:
            return f"load-end usage {_gib_text(load.usage)} ({where})"
        interval = load.interval.replace("->", " -> ")
        return f"load avail drop {_gib_text(load.usage)} ({interval}, {where})"

    def _where(self, events: Sequence[Event]) -> str:
        return ", ".join(f"{self.parsed.path}:{event.line}" for event in events)

    def _carve_capture(self, span: _Span, begin_index: int) -> None:
        total, error = self._usage_total(span)
        others = sum(carve.bytes for carve in span.carves if carve.in_partition)
        other_error = sum(carve.error for carve in span.carves if carve.in_partition)
        prefix = self.roles.capture_prefix.get(begin_index, "")
        what = _capture_label(prefix)
        graph = total - others
        progress = [e for e in self.roles.progress.get(begin_index, []) if e.size("avail")]
        if progress and not _progress_is_ours(progress, self.startup.rank):
            # tqdm bars are printed by rank 0 only, without a tag: not this rank's readings.
            self.notes.append(
                f"{span.key}: the progress bar readings are rank 0's (untagged tqdm); "
                f"{self.startup.rank} gets one graph row"
            )
            progress = []
        begin, end = span.start, span.end
        carves: list[_Carve] = []
        if progress:
            first_avail = progress[0].size("avail")
            assert first_avail is not None
            second_avail = progress[1].size("avail") if len(progress) > 1 else end.avail
            assert second_avail is not None
            static = begin.avail.bytes - first_avail.bytes
            largest = first_avail.bytes - second_avail.bytes
            static_error = begin.avail.half_ulp + first_avail.half_ulp
            largest_error = first_avail.half_ulp + second_avail.half_ulp
            first_bs = _batch_text(progress[0])
            second_source = [progress[1]] if len(progress) > 1 else [end.event]
            carves.append(
                _Carve(
                    f"{prefix}cuda_graph_static",
                    f"{what}: static buffers (begin -> first batch)",
                    RowGroup.CUDA_GRAPH,
                    RowKind.LOGGED,
                    static,
                    static_error,
                    [begin.event, progress[0]],
                    note=_negative_note(static, "tqdm avail is read without emptying the cache"),
                )
            )
            carves.append(
                _Carve(
                    f"{prefix}cuda_graph_largest_bucket",
                    f"{what}: largest bucket (captured first)",
                    RowGroup.CUDA_GRAPH,
                    RowKind.LOGGED,
                    largest,
                    largest_error,
                    [progress[0], *second_source],
                    # The batch size is evidence, not part of the label: labels name what a row
                    # is, so that a diff of two deployments does not show one side's numbers.
                    inputs={"first_batch": first_bs},
                    note=_negative_note(largest, "tqdm avail is read without emptying the cache"),
                )
            )
            if len(progress) > 1:
                rest = graph - static - largest
                carves.append(
                    _Carve(
                        f"{prefix}cuda_graph_buckets",
                        f"{what}: the other buckets",
                        RowGroup.CUDA_GRAPH,
                        RowKind.LOGGED,
                        rest,
                        error + other_error + static_error + largest_error,
                        [progress[1], end.event],
                        inputs={"buckets": len(progress) - 1},
                        note=_negative_note(rest, "tqdm avail is read without emptying the cache"),
                    )
                )
            for event in progress[:2]:
                avail = event.size("avail")
                assert avail is not None
                self._use_number(event, "avail", avail)
        else:
            carves.append(
                _Carve(
                    f"{prefix}cuda_graph",
                    what,
                    RowGroup.CUDA_GRAPH,
                    RowKind.LOGGED,
                    graph,
                    error + other_error,
                    [begin.event, end.event],
                    note=_negative_note(graph, "graph capture freed more than it allocated"),
                )
            )
        span.carves[0:0] = carves

    def _carve_formulas(self, spans: list[_Span]) -> list[_Carve]:
        """Derived rows: carved from their interval, or unknown with the reason."""
        by_end = {span.end.id: span for span in spans}
        by_key = {span.key: span for span in spans}
        outside: list[_Carve] = []
        for formula in self.formulas:
            span = None
            if formula.interval is not None:
                span = by_key.get(formula.interval) or by_end.get(formula.interval)
            try:
                if formula.when is not None and not evaluate(formula.when, self.variables):
                    continue
                carve = self._evaluate_formula(formula)
            except MissingVariable as exc:
                outside.append(self._unknown(formula, self._missing_reason(exc.name)))
                continue
            except ExpressionError as exc:
                outside.append(self._unknown(formula, f"formula failed: {exc} ({formula.origin})"))
                continue
            if formula.informational:
                carve.in_partition = False
                outside.append(carve)
                continue
            if span is None:
                reason = f"no interval ending at `{formula.interval}` in this log" + (
                    f" (the account stops at {spans[-1].end.id})" if spans else ""
                )
                outside.append(self._unknown(formula, reason, carve))
                continue
            if span.usage_span or self._begin_index_of(span) is not None:
                outside.append(
                    self._unknown(formula, f"{span.key} is a load/capture interval", carve)
                )
                continue
            span.carves.append(carve)
        return outside

    def _evaluate_formula(self, formula: Formula) -> _Carve:
        local: dict[str, Any] = {}
        for name, expression in formula.let.items():
            local[name] = evaluate(expression, self.variables, local)
        value = evaluate(formula.expression, self.variables, local)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ExpressionError(f"{formula.id} must give a number of bytes, got {value!r}")
        inputs: dict[str, int | float | str | None] = {
            name: _scalar(value) for name, value in local.items()
        }
        referenced = _referenced_names(formula)
        sources: list[Event] = []
        for name in referenced:
            if name in self.variables and name not in inputs:
                inputs[name] = _scalar(self.variables[name])
                if name == "log.format_version":
                    inputs[name] = (
                        f"{self.format_version} ({_version_text(self.format_version)} or later)"
                    )
            source = self.variable_sources.get(name)
            if source is not None and source not in sources:
                sources.append(source)
        return _Carve(
            formula.id,
            formula.label,
            formula.group,
            RowKind.DERIVED,
            round(value),
            0,
            sorted(sources, key=lambda e: e.line),
            formula=render_text(formula.text, self.variables, local),
            inputs=inputs,
            note=formula.why,
        )

    def _unknown(self, formula: Formula, reason: str, carve: _Carve | None = None) -> _Carve:
        self.notes.append(f"{formula.id} unknown: {reason}")
        return _Carve(
            formula.id,
            formula.label,
            formula.group,
            RowKind.UNKNOWN,
            0,
            0,
            carve.sources if carve else [],
            formula=carve.formula if carve else None,
            inputs=carve.inputs if carve else {},
            note=reason,
            in_partition=False,
        )

    def _missing_reason(self, name: str) -> str:
        if name.startswith("model."):
            return f"needs model dims ({name}): pass --model-config config.json" + (
                "" if self.model is None else " with that key"
            )
        if name.startswith("args."):
            return f"needs {name[5:]}, which server_args does not give"
        explanation = _LOG_NAME_HELP.get(name, "not in this log")
        return f"needs {name} ({explanation})"

    def _carve_residual(self, span: _Span) -> None:
        """What no row explains: a row of its own (usage spans keep only printing rounding)."""
        if span.usage_span:
            return
        explained = sum(carve.bytes for carve in span.carves if carve.in_partition)
        residual = span.drop - explained
        if residual == 0 and (span.released or self._begin_index_of(span) is not None):
            # A load/capture without printed usage (its row is the drop itself), or a release
            # (its drop is the weights row's release part).
            return
        error = span.error + sum(carve.error for carve in span.carves if carve.in_partition)
        self._use_number(span.start.event, "avail", span.start.avail)
        self._use_number(span.end.event, "avail", span.end.avail)
        span.carves.append(
            _Carve(
                f"unexplained.{span.end.id}",
                f"unexplained: {span.start.id} -> {span.end.id}",
                RowGroup.UNEXPLAINED,
                RowKind.RESIDUAL,
                residual,
                error,
                [span.start.event, span.end.event],
                note=_negative_note(
                    residual,
                    "the rows carved from this interval exceed its avail drop (memory freed, "
                    "or a formula over-estimates)",
                ),
            )
        )

    def _tail(self, points: list[_Point], spans: list[_Span]) -> list[_Carve]:
        """Allocations logged after the last reading, and the final free/headroom row."""
        if not points:
            return []  # every logged size became an informational row in _pre_load_carves
        last = points[-1]
        region = "post_capture" if last.id.startswith("post_capture") else "target"
        carves: list[_Carve] = []
        for event in self.events:
            if event.line <= last.event.line:
                continue
            for carve in self._logged_carves(event, region=region):
                if carve.in_partition:
                    carve.note = "logged after the last avail reading: carved from the free memory"
                    carves.append(carve)
                    self._use_sizes(event)
                else:
                    self.info_rows.append(carve)
        remaining = last.avail.bytes - sum(carve.bytes for carve in carves)
        error = last.avail.half_ulp + sum(carve.error for carve in carves)
        self._use_number(last.event, "avail", last.avail)
        if self._complete():
            captured = any(p.event.kind == EventKind.CAPTURE_END for p in points)
            note = (
                f"avail after the last checkpoint ({last.id})"
                if captured
                else f"avail at {last.id}: no CUDA graph was captured in this startup"
            )
            available = self._summary_event()
            if available is not None and (gpu := available.size("available_gpu_mem")):
                note += (
                    f"; the summary line's available_gpu_mem={gpu.bytes / GIB:.2f} GiB is read "
                    "without emptying the cache"
                )
            carves.append(
                _Carve(
                    "runtime_headroom",
                    "runtime headroom (free after startup)",
                    RowGroup.RUNTIME_HEADROOM,
                    RowKind.LOGGED,
                    remaining,
                    error,
                    [last.event],
                    note=note,
                )
            )
        else:
            carves.append(
                _Carve(
                    "free_at_stop",
                    f"free when the log stopped (after {last.id})",
                    RowGroup.RUNTIME_HEADROOM,
                    RowKind.LOGGED,
                    remaining,
                    error,
                    [last.event],
                    note=(
                        f"the startup did not finish ({self.startup.outcome}): not runtime headroom"
                    ),
                )
            )
        return carves

    # -- assembling ----------------------------------------------------------------------------

    def _rows(
        self,
        dist_event: Event | None,
        pre_load: list[_Carve],
        spans: list[_Span],
        tail: list[_Carve],
        formula_outside: list[_Carve],
    ) -> list[Row]:
        ordered: list[tuple[_Carve, str | None]] = []
        if dist_event is not None:
            usage = dist_event.size("usage")
            assert usage is not None
            ordered.append(
                (
                    _Carve(
                        "nccl_init",
                        "distributed init (NCCL/Gloo communicators, custom all-reduce)",
                        RowGroup.COMMUNICATION,
                        RowKind.LOGGED,
                        usage.bytes,
                        usage.half_ulp,
                        [dist_event],
                    ),
                    None,
                )
            )
        elif self.events:
            ordered.append(
                (
                    _Carve(
                        "nccl_init",
                        "distributed init (NCCL/Gloo communicators, custom all-reduce)",
                        RowGroup.COMMUNICATION,
                        RowKind.UNKNOWN,
                        0,
                        0,
                        note="no `Init torch distributed ends ... mem usage` line before the "
                        "first avail reading: not part of usable memory here",
                        in_partition=False,
                    ),
                    None,
                )
            )
        ordered += [(carve, None) for carve in pre_load]
        for span in spans:
            ordered += [(carve, span.key) for carve in span.carves]
        ordered += [(carve, None) for carve in tail]
        ordered += [(carve, None) for carve in formula_outside]
        ordered += [(carve, self.row_intervals.get(id(carve))) for carve in self.info_rows]
        return self._merge(ordered)

    def _merge(self, ordered: list[tuple[_Carve, str | None]]) -> list[Row]:
        """One Row per carve; ids made unique with the interval's end (`all_reduce_buffers.x`)."""
        rows: list[Row] = []
        seen: dict[str, int] = {}
        position_of: dict[int, int] = {}
        for carve, interval in ordered:
            if carve.part_of is not None and id(carve.part_of) in position_of:
                # A later piece of a row (a release): added to it, kept apart per interval.
                position = position_of[id(carve.part_of)]
                rows[position] = _add_part(rows[position], carve, interval)
                continue
            row_id = carve.row_id
            if row_id in seen:
                # Same id in the same interval: add up (two all-reduce groups, two KV lines).
                existing = rows[seen[row_id]]
                if existing.interval == interval and existing.in_partition == carve.in_partition:
                    rows[seen[row_id]] = _add_to_row(existing, carve, self.parsed.path)
                    continue
                suffix = interval.split("->")[-1] if interval else "2"
                row_id = f"{row_id}.{suffix}"
                while row_id in seen:
                    row_id += "_"
            seen[row_id] = len(rows)
            position_of[id(carve)] = len(rows)
            rows.append(self._row(carve, row_id, interval))
        return rows

    def _row(self, carve: _Carve, row_id: str, interval: str | None) -> Row:
        unknown = carve.kind == RowKind.UNKNOWN
        return Row(
            id=row_id,
            label=carve.label,
            group=carve.group,
            kind=carve.kind,
            bytes=None if unknown else carve.bytes,
            error_bytes=carve.error,
            interval=interval,
            in_partition=carve.in_partition and not unknown,
            evidence=Evidence(
                sources=[_source(self.parsed.path, event) for event in carve.sources],
                formula=carve.formula,
                inputs=carve.inputs,
                note=carve.note,
            ),
        )

    def _checkpoints(self, points: list[_Point], dist_event: Event | None) -> list[Checkpoint]:
        checkpoints: list[Checkpoint] = []
        if dist_event is not None and points and points[0].event.kind == EventKind.LOAD_BEGIN:
            # Not printed: the next reading (load begin) follows distributed init directly.
            checkpoints.append(
                Checkpoint(
                    id="dist_init_end",
                    avail_bytes=points[0].avail.bytes,
                    error_bytes=points[0].avail.half_ulp,
                    line=dist_event.line,
                    text=f"{dist_event.text} (avail not printed: the load-begin reading)",
                )
            )
        for point in points:
            text = point.event.text
            if point.derived_text:
                text = f"{point.derived_text}: {text}"
            checkpoints.append(
                Checkpoint(
                    id=point.id,
                    avail_bytes=point.avail.bytes,
                    error_bytes=point.avail.half_ulp,
                    line=point.event.line,
                    text=text,
                )
            )
        return checkpoints

    def _interval(self, span: _Span) -> Interval:
        partition = [carve for carve in span.carves if carve.in_partition]
        logged = sum(c.bytes for c in partition if c.kind == RowKind.LOGGED)
        named = sum(c.bytes for c in partition if c.kind == RowKind.DERIVED)
        return Interval(
            from_id=span.start.id,
            to_id=span.end.id,
            drop_bytes=span.drop,
            logged_bytes=logged,
            named_bytes=named,
            error_bytes=span.error + span.rounding_slack,
        )

    # -- variables and parameters ----------------------------------------------------------------

    def _summary_event(self) -> Event | None:
        return next((e for e in self.events if e.kind == EventKind.SUMMARY), None)

    def _complete(self) -> bool:
        return self.startup.outcome == "ready" or self._summary_event() is not None

    def _variables(
        self, points: list[_Point], spans: list[_Span]
    ) -> tuple[dict[str, Any], dict[str, Event]]:
        """`args.*`, `log.*` and `model.*` names for formulas, with the line each came from."""
        variables: dict[str, Any] = {f"args.{key}": value for key, value in self.args.items()}
        sources: dict[str, Event] = {}
        args_event = next((e for e in self.events if e.kind == EventKind.SERVER_ARGS), None)
        if args_event is not None:
            for key in self.args:
                sources[f"args.{key}"] = args_event
        if self.model is not None:
            variables.update(self.model.as_variables())

        def put(name: str, value: Any, source: Event | None) -> None:
            if value is None:
                return
            variables[f"log.{name}"] = value
            if source is not None:
                sources[f"log.{name}"] = source

        summary = self._summary_event()

        def summary_value(key: str) -> Any:
            return None if summary is None else summary.value(key)

        dp_size = _positive_int(self.args.get("dp_size")) or 1
        tp_size = _positive_int(self.args.get("tp_size")) or 1
        dcp_size = (
            _positive_int(self.args.get("dcp_size"))
            or _positive_int(self.args.get("decode_context_parallel_size"))
            or 1
        )
        put("dp_size", dp_size, args_event)
        put("tp_size", tp_size, args_event)
        put("dcp_size", dcp_size, args_event)
        mfs = self.args.get("mem_fraction_static")
        put("mem_fraction_static", mfs if isinstance(mfs, int | float) else None, args_event)

        context_len = summary_value("context_len")
        if isinstance(context_len, int):
            put("context_len", context_len, summary)
        elif isinstance(self.args.get("context_length"), int):
            put("context_len", self.args["context_length"], args_event)

        mrr = summary_value("max_running_requests")
        if isinstance(mrr, int):
            put("max_running_requests", mrr, summary)
        else:
            user = _positive_int(self.args.get("max_running_requests"))
            if user is not None:
                per_dp = max(1, user // dp_size) if self.args.get("enable_dp_attention") else user
                put("max_running_requests", per_dp, args_event)
                if summary is None:
                    self.notes.append(
                        "max_running_requests from server_args"
                        + (f" ({user} / dp_size {dp_size})" if per_dp != user else "")
                        + ": no summary line"
                    )
        per_dp_reqs = variables.get("log.max_running_requests")
        extra = self._extra_slots(per_dp_reqs)
        put("extra_slots", extra, args_event)
        if isinstance(per_dp_reqs, int) and extra is not None:
            put("slots", per_dp_reqs + extra + 1, sources.get("log.max_running_requests"))

        kv_event = self._target_kv_event(spans)
        tokens = kv_event.value("tokens") if kv_event else None
        total_tokens = summary_value("max_total_num_tokens")
        if isinstance(tokens, int):
            put("kv_tokens", tokens, kv_event)
        elif isinstance(total_tokens, int):
            put("kv_tokens", total_tokens, summary)
        put(
            "max_total_num_tokens", total_tokens if isinstance(total_tokens, int) else None, summary
        )

        mamba = next((e for e in self.events if e.kind == EventKind.MAMBA_ALLOCATED), None)
        if mamba is not None and isinstance(mamba.value("max_mamba_cache_size"), int):
            put("max_mamba_cache_size", mamba.value("max_mamba_cache_size"), mamba)
        slot_map = next((e for e in self.events if e.kind == EventKind.DSPARK_SLOT_MAP), None)
        if slot_map is not None:
            put("dspark_slots_per_req", slot_map.value("slots_per_req"), slot_map)
            put("dspark_multiplier", slot_map.value("multiplier"), slot_map)
        if points and (points[0].event.kind == EventKind.LOAD_BEGIN or points[0].derived_text):
            put("load_begin_avail_bytes", points[0].avail.bytes, points[0].event)
            put("load_begin_avail_gib", round(points[0].avail.bytes / GIB, 2), points[0].event)
        version = _format_version(self.events)
        put("format_version", version, None)
        self.format_version = version
        return variables, sources

    def _extra_slots(self, per_dp_reqs: Any) -> int | None:
        """PD decode's pre-allocated request slots (0 on other servers)."""
        if self.args.get("disaggregation_mode") != "decode":
            return 0
        given = self.args.get("disaggregation_decode_extra_slots")
        if isinstance(given, int) and not isinstance(given, bool):
            return given
        if not isinstance(per_dp_reqs, int):
            return None
        # Before --disaggregation-decode-extra-slots (<= 0.5.13): 2x when at most 32 requests.
        extra = 2 * per_dp_reqs if per_dp_reqs <= 32 else 0
        self.notes.append(
            f"PD decode pre-allocated slots not in server_args: assumed {extra} "
            "(2 x max_running_requests when <= 32, the rule before 0.5.14)"
        )
        return extra

    def _target_kv_event(self, spans: list[_Span]) -> Event | None:
        """The target's full-attention KV line: its #tokens is the per-rank capacity."""
        in_target = [
            event
            for span in spans
            if self._region(span) == "target"
            for event in span.events
            if event.kind == EventKind.KV_ALLOCATED and isinstance(event.value("tokens"), int)
        ]
        candidates = in_target or [
            e
            for e in self.events
            if e.kind == EventKind.KV_ALLOCATED and isinstance(e.value("tokens"), int)
        ]
        if not candidates:
            return None
        full = [e for e in candidates if str(e.value("label") or "").lower() == "full"]
        if full:
            return full[0]
        # Unlabelled SWA logs (<= 0.5.16) print the SWA pool first, then the full pool.
        swa = any(e.kind in (EventKind.SWA_POOL, EventKind.SWA_SPLIT) for e in self.events)
        return candidates[-1] if swa else candidates[0]

    def _parameters(self) -> dict[str, int | float | str | bool | None]:
        params: dict[str, int | float | str | bool | None] = {}
        for key, value in sorted(self.args.items()):
            if not _PARAM_PATTERN.match(key) or _SECRET_PATTERN.search(key):
                continue
            params[key] = _param_value(value)
        for name in (
            "dp_size",
            "tp_size",
            "dcp_size",
            "max_running_requests",
            "extra_slots",
            "slots",
            "context_len",
            "kv_tokens",
            "max_mamba_cache_size",
        ):
            value = self.variables.get(f"log.{name}")
            if value is not None:
                params[f"ledger.{name}"] = value
        params["ledger.format_version_at_least"] = _version_text(self.format_version)
        params.update(self._log_settings())
        return params

    def _log_settings(self) -> dict[str, int | float | str | bool | None]:
        """`log.<name>` for every `LOG_SETTINGS` entry whose line the log printed."""
        found: dict[str, int | float | str | bool | None] = {}
        settled: set[str] = set()
        for setting in LOG_SETTINGS:
            name = LOG_PARAM_PREFIX + setting.name
            if name in settled:
                continue
            lines = [
                e
                for e in self.events
                if e.kind == setting.kind
                and (setting.role is None or e.value("role") == setting.role)
                and all(key in e.values or key in e.sizes for key in setting.keys)
            ]
            if not lines:
                continue
            settled.add(name)  # the first entry that finds its line decides, even to skip
            if setting.count:
                found[name] = len(lines)
                continue
            printed = [_printed(lines[0], key) for key in setting.keys]
            value = printed[0] if len(printed) == 1 else "/".join(str(v) for v in printed)
            if setting.unless_arg is not None and self.args.get(setting.unless_arg) == value:
                continue
            found[name] = _param_value(value)
        return found

    # -- summary -----------------------------------------------------------------------------

    def _summary(self, rows: list[Row], usable: int | None, spans: list[_Span]) -> Summary:
        partition = [row for row in rows if row.in_partition and row.bytes is not None]

        def total(predicate: Any) -> int | None:
            chosen = [row.bytes for row in partition if predicate(row) and row.bytes is not None]
            return sum(chosen) if chosen else None

        def by_id(*row_ids: str) -> int | None:
            return total(lambda row: _base_id(row.id) in row_ids)

        def gib(byte_count: int | None) -> float | None:
            return None if byte_count is None else round(byte_count / GIB, 6)

        nccl = by_id("nccl_init")
        # The article's weights figures: the target load's peak (load-end usage, staging
        # included), what it gave back right after, and the difference.
        target = next((load for load in self.loads.values() if load.role == "target"), None)
        peak = None if target is None else target.usage
        released = None if target is None or target.release is None else -target.release.bytes
        resident = None if peak is None else peak - (released or 0)
        draft_weights = total(lambda row: _base_id(row.id).startswith("draft_weights"))
        graph = total(lambda row: row.group == RowGroup.CUDA_GRAPH)
        workspace = total(lambda row: row.group in (RowGroup.WORKSPACE, RowGroup.UNEXPLAINED))
        headroom = by_id("runtime_headroom")
        fixed = total(lambda row: row.group in FIXED_OVERHEAD_GROUPS)
        state = total(lambda row: row.group == RowGroup.STATE_POOL)
        kv_pool = total(lambda row: _base_id(row.id).startswith("kv_pool"))
        draft_kv = total(lambda row: _base_id(row.id).startswith("draft_kv"))
        per_slot_state = total(lambda row: _base_id(row.id).startswith(("mamba_", "replay_ssm")))
        slots = self.variables.get("log.slots")
        mamba_slots = self.variables.get("log.max_mamba_cache_size")
        if not isinstance(slots, int) and isinstance(mamba_slots, int):
            slots = mamba_slots + 1
            self.notes.append(
                "slots from the Mamba line (max_mamba_cache_size + 1 padding slot): "
                "max_running_requests unknown"
            )
        elif isinstance(slots, int) and isinstance(mamba_slots, int) and mamba_slots + 1 != slots:
            self.notes.append(
                f"slots {slots} (max_running_requests + extra + 1) differ from the Mamba pool's "
                f"max_mamba_cache_size {mamba_slots} + 1"
            )
        # Per-slot state divides by the state pool's own slots (K + 1 padding slot) when the
        # Mamba line prints K: with a ratio-split pool that differs from the request slots.
        state_slots = mamba_slots + 1 if isinstance(mamba_slots, int) else slots
        state_per_slot = (
            per_slot_state / state_slots
            if per_slot_state is not None and isinstance(state_slots, int) and state_slots > 0
            else None
        )
        req_to_token = next(
            (row.bytes for row in rows if row.id == "req_to_token" and row.bytes is not None), None
        )
        mfs = self.variables.get("log.mem_fraction_static")
        tokens_rank = self._kv_tokens(kv_pool)
        dcp = self.variables.get("log.dcp_size", 1)
        dp = self.variables.get("log.dp_size", 1)
        tokens_group = None if tokens_rank is None else tokens_rank * dcp
        tokens_instance = None if tokens_group is None else tokens_group * dp
        return Summary(
            usable=gib(usable),
            nccl_init=gib(nccl),
            weights_load_peak=gib(peak),
            weights_released=gib(released),
            weights_resident=gib(resident),
            weight_staging=gib(by_id("weight_staging")),
            draft_weights=gib(draft_weights),
            draft_staging=gib(by_id("draft_staging")),
            cuda_graph=gib(graph),
            cuda_graph_largest_bucket=gib(by_id("cuda_graph_largest_bucket")),
            cuda_graph_static=gib(by_id("cuda_graph_static")),
            workspace=gib(workspace),
            runtime_headroom=gib(headroom),
            fixed_overhead=gib(fixed),
            state_pool=gib(state),
            kv_pool=gib(kv_pool),
            draft_kv=gib(draft_kv),
            state_per_slot=None if state_per_slot is None else round(state_per_slot / GIB, 6),
            slots=slots if isinstance(slots, int) else None,
            req_to_token=gib(req_to_token),
            mem_fraction_static=float(mfs) if isinstance(mfs, int | float) else None,
            kv_tokens_per_rank=tokens_rank,
            kv_tokens_per_dp_group=tokens_group,
            kv_tokens_per_instance=tokens_instance,
        )

    def _kv_tokens(self, kv_pool: int | None) -> int | None:
        """Per-rank KV capacity: the KV line's #tokens, else pool bytes / bytes per token."""
        tokens = self.variables.get("log.kv_tokens")
        if isinstance(tokens, int):
            return tokens
        if kv_pool is None:
            return None
        per_token = self._bytes_per_token()
        if per_token is None:
            self.notes.append(
                "KV tokens unknown: no #tokens in the log; pass --model-config to derive them "
                "from the pool size"
            )
            return None
        self.notes.append(
            f"KV tokens per rank = KV pool bytes / {per_token} B per token (from model dims)"
        )
        return kv_pool // per_token

    def _bytes_per_token(self) -> int | None:
        if self.model is None:
            return None
        dtype = str(self.args.get("kv_cache_dtype") or "auto")
        element = 1 if "fp8" in dtype or "int8" in dtype else self.model.dtype_bytes or 2
        if self.model.kv_lora_rank is not None and self.model.qk_rope_head_dim is not None:
            layers = self.model.mla_layers or self.model.num_hidden_layers
            if layers is None:
                return None
            return int((self.model.kv_lora_rank + self.model.qk_rope_head_dim) * layers * element)
        heads = self.model.num_key_value_heads or self.model.num_attention_heads
        layers = self.model.num_hidden_layers
        head_dim = self.model.head_dim or (
            self.model.hidden_size // self.model.num_attention_heads
            if self.model.hidden_size and self.model.num_attention_heads
            else None
        )
        if heads is None or layers is None or head_dim is None:
            return None
        dp = self.variables.get("log.dp_size", 1)
        tp = self.variables.get("log.tp_size", 1)
        attn_tp = max(1, tp // dp) if self.args.get("enable_dp_attention") else tp
        per_rank = max(1, heads // attn_tp)
        v_dim = self.model.v_head_dim or head_dim
        return int(per_rank * (head_dim + v_dim) * layers * element)

    def _stopped_at(self, points: list[_Point]) -> str | None:
        if self.startup.outcome == "ready":
            return None
        summary = self._summary_event()
        if summary is not None:
            where = f"after the startup finished (summary line {summary.line})"
        elif points:
            where = f"after {points[-1].id} (line {points[-1].event.line})"
        else:
            where = "before any avail reading"
        if self.startup.outcome == "truncated":
            return f"{where}: the log ends (truncated)"
        line = f" at line {self.startup.outcome_line}" if self.startup.outcome_line else ""
        text = self.startup.outcome_text.strip()
        text = f": {text[:120]}" if text else ""
        return f"{where}: {self.startup.outcome}{line}{text}"

    # -- precision bookkeeping -----------------------------------------------------------------

    def _use_number(self, event: Event, key: str, size: Size) -> None:
        self.numbers[(event.line, key)] = size.half_ulp

    def _use_sizes(self, event: Event) -> None:
        for key, size in event.sizes.items():
            self.numbers[(event.line, key)] = size.half_ulp


# --------------------------------------------------------------------------------------------
# Roles and ids
# --------------------------------------------------------------------------------------------


def _assign_roles(events: list[Event], args: dict[str, ParamValue]) -> _Roles:
    """Stable ids for every checkpoint-kind event: target vs draft by order and `type=`."""
    roles = _Roles()
    speculative = bool(args.get("speculative_algorithm"))
    used: set[str] = set()

    def unique(base: str) -> str:
        candidate, number = base, 2
        while candidate in used:
            candidate = f"{base}_{number}"
            number += 1
        used.add(candidate)
        return candidate

    # Loads: pair begin/end, then decide each pair's role.
    pairs: list[tuple[int | None, int | None]] = []
    pending: int | None = None
    for index, event in enumerate(events):
        if event.kind == EventKind.LOAD_BEGIN:
            if pending is not None:
                pairs.append((pending, None))
            pending = index
        elif event.kind == EventKind.LOAD_END:
            pairs.append((pending, index))
            pending = None
    if pending is not None:
        pairs.append((pending, None))
    target_seen = False
    for begin, end in pairs:
        type_name = str(events[end].value("type") or "") if end is not None else ""
        if type_name and DRAFT_TYPE.search(type_name):
            role = "draft"
        elif not target_seen:
            role = "target"
        else:
            role = "draft" if speculative or type_name == "" else "extra"
        target_seen = target_seen or role == "target"
        roles.has_draft = roles.has_draft or role == "draft"
        prefix = {"target": "", "draft": "draft_", "extra": "extra_"}[role]
        for position, suffix in ((begin, "load_begin"), (end, "load_end")):
            if position is not None:
                roles.load_role[position] = role
                roles.ids[position] = unique(prefix + suffix)
        if begin is not None and end is not None:
            roles.load_pairs[begin] = end

    pool_count = 0
    backend_count = {EventKind.ATTENTION_BACKEND_BEGIN: 0, EventKind.ATTENTION_BACKEND_END: 0}
    open_captures: list[int] = []
    target_main_done = False
    for index, event in enumerate(events):
        kind = event.kind
        if kind == EventKind.MEMORY_POOL_END:
            base = "memory_pool_end"
            if pool_count > 0:
                base = "draft_memory_pool_end" if roles.has_draft or speculative else base
            pool_count += 1
            roles.ids[index] = unique(base)
        elif kind in backend_count:
            count = backend_count[kind]
            backend_count[kind] += 1
            stem = (
                "attention_backend_begin"
                if kind == EventKind.ATTENTION_BACKEND_BEGIN
                else ("attention_backend_end")
            )
            draft = count > 0 and (roles.has_draft or speculative)
            roles.ids[index] = unique(("draft_" if draft else "") + stem)
        elif kind == EventKind.CAPTURE_BEGIN:
            role, phase = _capture_role(event)
            if role == "target" and phase in (None, "decode", "verify") and not target_main_done:
                prefix = ""
                target_main_done = True
            else:
                prefix = _capture_prefix(role, phase, event.value("step"))
            roles.capture_prefix[index] = prefix
            roles.ids[index] = unique(prefix + "capture_begin")
            roles.progress[index] = []
            open_captures.append(index)
        elif kind == EventKind.CAPTURE_PROGRESS:
            if open_captures:
                roles.progress[open_captures[-1]].append(event)
        elif kind == EventKind.CAPTURE_END:
            role, phase = _capture_role(event)
            begin = next(
                (
                    candidate
                    for candidate in reversed(open_captures)
                    if _capture_role(events[candidate])[0] == role
                ),
                open_captures[-1] if open_captures else None,
            )
            if begin is not None:
                open_captures.remove(begin)
                roles.capture_pairs[begin] = index
                prefix = roles.capture_prefix[begin]
            elif role == "target" and phase in (None, "decode", "verify") and not target_main_done:
                prefix = ""
                target_main_done = True
            else:
                prefix = _capture_prefix(role, phase, event.value("step"))
            roles.ids[index] = unique(prefix + "capture_end")
        elif kind == EventKind.POST_CAPTURE_KV:
            roles.ids[index] = unique("post_capture_kv")
        elif kind == EventKind.LORA:
            roles.ids[index] = unique(f"lora_{_slug(str(event.value('phase') or 'adapter'))}")
    return roles


def _capture_role(event: Event) -> tuple[str, str | None]:
    role = event.value("role")
    if not isinstance(role, str):
        role = "draft" if "draft" in event.text.lower() else "target"
    phase = event.value("phase")
    return role, phase if isinstance(phase, str) else None


def _capture_prefix(role: str, phase: str | None, step: Any) -> str:
    prefix = "draft_" if role == "draft" else ""
    if phase in ("extend", "prefill", "piecewise", "single_cg") or (
        role == "target" and phase in ("decode", "verify")
    ):
        prefix += f"{phase}_"
    if step is not None:
        prefix += f"step{step}_"
    return prefix


def _capture_label(prefix: str) -> str:
    words = prefix.replace("_", " ").strip()
    return f"{words} CUDA graphs" if words else "CUDA graphs"


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------

_LOG_NAME_HELP = {
    "log.max_running_requests": "no summary line and no max_running_requests in server_args",
    "log.context_len": "no summary line and no context_length in server_args",
    "log.kv_tokens": "no KV #tokens and no max_total_num_tokens in the log",
    "log.slots": "max_running_requests unknown",
    "log.extra_slots": "PD decode slots unknown",
    "log.mem_fraction_static": "server_args does not give mem_fraction_static",
    "log.load_begin_avail_bytes": "no load-begin avail reading",
    "log.load_begin_avail_gib": "no load-begin avail reading",
}


def _format_version(events: Iterable[Event]) -> int:
    """A lower bound of the SGLang release whose log formats these lines use (0 = unknown)."""
    found = 0

    def at_least(text: str) -> None:
        nonlocal found
        found = max(found, version_code(text))

    for event in events:
        kind, text, values = event.kind, event.text, event.values
        if kind == EventKind.MEMORY_BASELINE:
            at_least("0.5.21")
        elif kind == EventKind.REPLAY_SSM:
            at_least("0.5.20")
        elif kind == EventKind.SERVER_ARGS and text.lstrip().startswith("server_args={"):
            at_least("0.5.19")
        elif kind == EventKind.ALL_REDUCE_CONFIG:
            at_least("0.5.16")
        elif kind == EventKind.KV_ALLOCATED:
            if values.get("label") or values.get("va_upper_bound"):
                at_least("0.5.17")
            elif values.get("dtype") is not None or "dtype:" in text:
                at_least("0.5.13")
            elif values.get("tokens") is not None:
                at_least("0.4.4")
            else:
                at_least("0.4.2")
        elif kind in (EventKind.CAPTURE_BEGIN, EventKind.CAPTURE_END):
            if "num_tokens_per_req" in values or "num_tokens_per_req" in text:
                at_least("0.5.16")
            if re.match(r"Capture (target|draft) (decode|verify|prefill|extend)", text):
                at_least("0.5.14")
            if kind == EventKind.CAPTURE_END and "bs=" in text:
                at_least("0.5.22")
            if kind == EventKind.CAPTURE_BEGIN and event.size("avail") is not None:
                at_least("0.4.4")
        elif kind == EventKind.LOAD_END:
            if values.get("elapsed") is not None:
                at_least("0.5.10" if values.get("dtype") is None else "0.5.9")
            elif event.size("usage") is not None:
                at_least("0.4.4")
        elif kind == EventKind.DIST_INIT_END:
            at_least("0.5.9" if values.get("elapsed") is not None else "0.4.4")
        elif kind == EventKind.SUMMARY:
            if event.size("available_gpu_mem") is not None:
                at_least("0.4.7")
            elif values.get("chunked_prefill_size") is not None:
                at_least("0.4.2")
    return found


def _version_text(code: int) -> str:
    if code <= 0:
        return "unknown"
    return f"{code // 1_000_000}.{code // 1_000 % 1_000}.{code % 1_000}"


def _progress_is_ours(progress: list[Event], rank: str) -> bool:
    """Untagged tqdm readings belong to rank 0 (every index in its tag is 0, or no tag)."""
    if all(event.rank == rank for event in progress):
        return True
    return all(number == "0" for number in re.findall(r"\d+", rank))


def _logged(event: Event, row_id: str, label: str, group: RowGroup, size: Size) -> _Carve:
    return _Carve(row_id, label, group, RowKind.LOGGED, size.bytes, size.half_ulp, [event])


def _weights_group(role: str) -> RowGroup:
    return RowGroup.DRAFT_WEIGHTS if role == "draft" else RowGroup.WEIGHTS


def _line(event: Event) -> int:
    return event.line


def _weights_row_id(role: str) -> str:
    return {"target": "weights", "draft": "draft_weights"}.get(role, "weights_extra")


def _split_name(carve: _Carve) -> str:
    """How a row split out of a load reads in the resident row's arithmetic."""
    return "staging" if carve.row_id in ("weight_staging", "draft_staging") else carve.row_id


def _resident_shape(load: _Load) -> str:
    terms = ["load end"]
    if load.split:
        names = {_split_name(piece) for piece in load.split}
        terms.append("staging" if names == {"staging"} else "split-out rows")
    if load.release is not None:
        terms.append("released")
    return " - ".join(terms)


def _gib_text(byte_count: int | None) -> str:
    return f"{format_gib(byte_count)} GiB"


def _sum_sizes(*sizes: Size | None) -> Size | None:
    present = [size for size in sizes if size is not None]
    if not present:
        return None
    return Size(
        bytes=sum(size.bytes for size in present),
        half_ulp=sum(size.half_ulp for size in present),
        text=" + ".join(size.text for size in present if size.text),
    )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


def _base_id(row_id: str) -> str:
    """A row id without the `.interval` suffix that keeps ids unique."""
    return row_id.split(".", 1)[0]


def _batch_text(event: Event) -> str:
    for key in ("bs", "num_tokens"):
        value = event.value(key)
        if value is not None:
            return f"{key}={value}"
    return "first batch"


def _negative_note(byte_count: int, why: str) -> str | None:
    return None if byte_count >= 0 else f"negative ({byte_count / GIB:.2f} GiB): {why}"


def _printed(event: Event, key: str) -> Any:
    """A line's value under `key`; a size as printed (`28.01 MB`), not as bytes."""
    size = event.size(key)
    if size is not None and key not in event.values:
        return size.text
    return event.value(key)


def _param_value(value: Any) -> int | float | str | bool | None:
    """A parameter as a scalar: lists and dicts become their (capped) JSON text."""
    if isinstance(value, int | float | str | bool | None):
        return value
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_PARAM_TEXT else text[: MAX_PARAM_TEXT - 3] + "..."


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _scalar(value: Any) -> int | float | str | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str | None):
        return format_value(value)
    return value


def _referenced_names(formula: Formula) -> list[str]:
    """Dotted `args.*`/`log.*`/`model.*` names an entry mentions, in order of appearance."""
    text = " ".join([formula.expression, formula.when or "", *formula.let.values(), formula.text])
    names: list[str] = []
    for match in re.finditer(r"\b(?:args|log|model)(?:\.[A-Za-z_][A-Za-z0-9_]*)+", text):
        if match.group(0) not in names:
            names.append(match.group(0))
    return names


def _source(path: str, event: Event) -> SourceLine:
    return SourceLine(path=path, line=event.line, text=event.text)


def _add_part(row: Row, piece: _Carve, interval: str | None) -> Row:
    """A row carved from two intervals: its bytes are the sum, `interval_parts` the pieces.

    The piece's evidence is already in the row (`_finish_loads` wrote the arithmetic)."""
    assert row.bytes is not None and row.interval is not None and interval is not None
    return row.model_copy(
        update={
            "bytes": row.bytes + piece.bytes,
            "error_bytes": row.error_bytes + piece.error,
            "interval_parts": {row.interval: row.bytes, interval: piece.bytes},
        }
    )


def _add_to_row(row: Row, carve: _Carve, path: str) -> Row:
    """Two carves with the same id in the same interval, as one row (their sum)."""
    sources = [*row.evidence.sources, *(_source(path, e) for e in carve.sources)]
    return row.model_copy(
        update={
            "bytes": None if row.bytes is None else row.bytes + carve.bytes,
            "error_bytes": row.error_bytes + carve.error,
            "evidence": row.evidence.model_copy(update={"sources": sources}),
        }
    )
