"""Which SGLang release a log's line formats imply, and the engine's version-dependent rules.

Data: `FORMAT_MARKS` has one entry per format change that dates a log (the lowest release that
prints it, the SGLang source file that prints it); `format_version` is the highest release any
line of a startup implies, a lower bound of the release that wrote the log. `RULES` are the
behaviours the engine applies by release, each with its range and source file. Paths are under
`python/sglang/srt/`; ranges are from the log catalog (../shared/docs/sglang-log-catalog.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from memledger.events import Event, EventKind
from memledger.sglang.release_markers import version_code


@dataclass(frozen=True)
class FormatMark:
    """A line format that only releases from `release` on print."""

    kinds: frozenset[EventKind]
    release: str
    matches: Callable[[Event], bool]
    source: str
    """The SGLang source file (and function) that prints the format."""
    shape: str
    """What distinguishes the format, in words."""


def _kinds(*kinds: EventKind) -> frozenset[EventKind]:
    return frozenset(kinds)


_CAPTURE = _kinds(EventKind.CAPTURE_BEGIN, EventKind.CAPTURE_END)


def _always(_: Event) -> bool:
    return True


def _has_server_arg(name: str) -> Callable[[Event], bool]:
    """ServerArgs prints every field it has (the dataclass repr; from 0.5.19 the resolved dict),
    so a field that first exists in a release dates the log to it or later."""
    return lambda event: name in (event.params or {})


def _device_in_capitals(event: Event) -> bool:
    """0.5.14+ writes the graph's device word in capitals (`draft extend CUDA graph`, `NPU
    graph`); 0.4.7-0.5.13 already printed `Capture draft extend cuda graph begin.`"""
    words = str(event.values.get("graph") or "").split()
    return any(word.isupper() and len(word) > 1 for word in words[:-1])


FORMAT_MARKS: tuple[FormatMark, ...] = (
    FormatMark(
        _kinds(EventKind.MEMORY_BASELINE),
        "0.5.21",
        _always,
        "distributed/bootstrap.py : measure_pre_model_load_memory",
        "`Memory baseline taken. mem usage=...`",
    ),
    FormatMark(
        _kinds(EventKind.REPLAY_SSM),
        "0.5.20",
        _always,
        "mem_cache/memory_pool.py : MambaPool.__init__",
        "ReplaySSM buffer line",
    ),
    FormatMark(
        _kinds(EventKind.SERVER_ARGS),
        "0.5.19",
        lambda e: e.values.get("form") == "dict",
        "server_args.py (printed by the launcher)",
        "`server_args={resolved dict}`",
    ),
    # The two fields below were checked against the ServerArgs of every release wheel from 0.3.0
    # to 0.5.23 (0.3.0-0.5.10.post1 lack them; each later release checked has them).
    FormatMark(
        _kinds(EventKind.SERVER_ARGS),
        "0.5.11",
        _has_server_arg("tokenizer_backend"),
        "server_args.py : ServerArgs.tokenizer_backend (v0.5.11 server_args.py:317)",
        "`tokenizer_backend=` among the server_args",
    ),
    FormatMark(
        _kinds(EventKind.SERVER_ARGS),
        "0.5.1",
        _has_server_arg("moe_runner_backend"),
        "server_args.py : ServerArgs.moe_runner_backend (v0.5.1 server_args.py:184)",
        "`moe_runner_backend=` among the server_args",
    ),
    FormatMark(
        _kinds(EventKind.ALL_REDUCE_CONFIG),
        "0.5.16",
        _always,
        "distributed/device_communicators/custom_all_reduce_v2.py : _init_workspace",
        "`All Reduce config: ...` (CustomAllReduceV2)",
    ),
    FormatMark(
        _kinds(EventKind.KV_ALLOCATED),
        "0.5.17",
        lambda e: bool(e.values.get("label") or e.values.get("va_upper_bound")),
        "mem_cache/memory_pool.py : KVCache._finalize_allocation_log",
        "a label (`Full `, `SWA `) or `VA upper bound` on the KV line",
    ),
    FormatMark(
        _kinds(EventKind.KV_ALLOCATED),
        "0.5.13",
        lambda e: "dtype" in e.values,
        "mem_cache/memory_pool.py : KVCache._finalize_allocation_log",
        "`dtype:` inside the KV line",
    ),
    FormatMark(
        _kinds(EventKind.KV_DTYPE),
        "0.5.3",
        _always,
        "model_executor/model_runner.py : ModelRunner.init_memory_pool (v0.5.3 :1425)",
        "`Using KV cache dtype: ...` (printed 0.5.3-0.5.11; not by 0.3.0-0.5.2 or 0.5.13+)",
    ),
    FormatMark(
        _kinds(EventKind.KV_ALLOCATED),
        "0.4.4",
        lambda e: e.values.get("tokens") is not None,
        "mem_cache/memory_pool.py : MHATokenToKVPool.__init__",
        "`#tokens:` in the KV line",
    ),
    FormatMark(
        _kinds(EventKind.KV_ALLOCATED),
        "0.4.2",
        _always,
        "mem_cache/memory_pool.py : MHATokenToKVPool.__init__",
        "`KV Cache is allocated. K size: ...`",
    ),
    FormatMark(
        _CAPTURE,
        "0.5.16",
        lambda e: "num_tokens_per_req" in e.values,
        "model_executor/model_runner_components/cuda_graph_setup.py : capture_decode_graph",
        "`num_tokens_per_req=` in the capture line",
    ),
    FormatMark(
        _CAPTURE,
        "0.5.14",
        lambda e: e.values.get("role_named") is True and _device_in_capitals(e),
        "model_executor/model_runner.py : ModelRunner.init_decode_cuda_graph",
        "`Capture {target|draft} {decode|verify|prefill|extend} CUDA graph ...`",
    ),
    FormatMark(
        _kinds(EventKind.CAPTURE_END),
        "0.5.22",
        lambda e: "bs" in e.values,
        "model_executor/model_runner_components/cuda_graph_setup.py : capture_decode_graph",
        "the batch sizes on the capture end line",
    ),
    FormatMark(
        _kinds(EventKind.CAPTURE_END),
        "0.4.0",
        _always,
        "model_executor/model_runner.py : ModelRunner.init_cuda_graphs (v0.4.0 :625)",
        "`Capture cuda graph end. Time elapsed: ...` (0.3.6.post3 and older print no end line)",
    ),
    FormatMark(
        _kinds(EventKind.CAPTURE_BEGIN),
        "0.4.4",
        lambda e: e.size("avail") is not None,
        "model_executor/model_runner.py : ModelRunner.init_cuda_graphs",
        "`avail mem=` on the capture begin line",
    ),
    FormatMark(
        _kinds(EventKind.LOAD_END),
        "0.5.10",
        lambda e: e.values.get("elapsed") is not None and e.values.get("dtype") is None,
        "model_executor/model_runner.py : ModelRunner.load_model",
        "`Load weight end. elapsed=...` without `dtype=`",
    ),
    FormatMark(
        _kinds(EventKind.LOAD_END),
        "0.5.9",
        lambda e: e.values.get("elapsed") is not None,
        "model_executor/model_runner.py : ModelRunner.load_model",
        "`Load weight end. elapsed=...`",
    ),
    FormatMark(
        _kinds(EventKind.LOAD_END),
        "0.4.4",
        lambda e: e.size("usage") is not None,
        "model_executor/model_runner.py : ModelRunner.load_model",
        "`mem usage=` on the load end line",
    ),
    FormatMark(
        _kinds(EventKind.DIST_INIT_END),
        "0.5.9",
        lambda e: e.values.get("elapsed") is not None,
        "model_executor/model_runner.py : ModelRunner.init_torch_distributed",
        "`Init torch distributed ends. elapsed=...`",
    ),
    FormatMark(
        _kinds(EventKind.DIST_INIT_END),
        "0.4.4",
        _always,
        "model_executor/model_runner.py : ModelRunner.init_torch_distributed",
        "`Init torch distributed ends. mem usage=...`",
    ),
    FormatMark(
        _kinds(EventKind.SUMMARY),
        "0.4.7",
        lambda e: e.size("available_gpu_mem") is not None,
        "managers/scheduler.py (the server summary line)",
        "`available_gpu_mem=` in the summary line",
    ),
    FormatMark(
        _kinds(EventKind.SUMMARY),
        "0.4.2",
        lambda e: e.values.get("chunked_prefill_size") is not None,
        "managers/scheduler.py (the server summary line)",
        "`chunked_prefill_size=` in the summary line",
    ),
)


CEILING_MARKS: tuple[FormatMark, ...] = (
    FormatMark(
        _kinds(EventKind.LOAD_END),
        "0.5.9",
        lambda e: e.size("usage") is not None and e.values.get("elapsed") is None,
        "model_executor/model_runner.py : ModelRunner.load_model",
        "`Load weight end. type=...` without `elapsed=` (0.5.9 added it first)",
    ),
    FormatMark(
        _kinds(EventKind.DIST_INIT_END),
        "0.5.9",
        lambda e: e.size("usage") is not None and e.values.get("elapsed") is None,
        "model_executor/model_runner.py : ModelRunner.init_torch_distributed",
        "`Init torch distributed ends. mem usage=...` without `elapsed=`",
    ),
)
"""Formats that later releases stopped printing: `release` is the first release without it."""


def format_ceiling(events: Iterable[Event]) -> int:
    """The first release whose formats these lines predate (0 = not known): an exclusive upper
    bound of the release that wrote the log."""
    found = 0
    for event in events:
        for mark in CEILING_MARKS:
            if event.kind in mark.kinds and mark.matches(event):
                code = version_code(mark.release)
                found = code if found == 0 else min(found, code)
    return found


def format_version(events: Iterable[Event]) -> int:
    """A lower bound of the SGLang release whose log formats these lines use (0 = unknown)."""
    found = 0
    for event in events:
        for mark in FORMAT_MARKS:
            if event.kind in mark.kinds and mark.matches(event):
                found = max(found, version_code(mark.release))
    return found


def version_text(code: int) -> str:
    """`5013` -> `0.5.13`; 0 -> `unknown`."""
    if code <= 0:
        return "unknown"
    return f"{code // 1_000_000}.{code // 1_000 % 1_000}.{code % 1_000}"


@dataclass(frozen=True)
class VersionRule:
    """A behaviour of SGLang's that the engine applies for a release range."""

    name: str
    releases: str
    """The range it holds for, e.g. `<= 0.5.13`."""
    source: str
    what: str
    replaced_in: str = ""
    """The first release that no longer follows the rule (empty while it holds)."""


EXTRA_SLOTS = VersionRule(
    "pd_decode_extra_slots",
    "<= 0.5.13",
    "disaggregation/decode.py : DecodeReqToTokenPool (pre_alloc_size)",
    "2 x max_running_requests when <= 32",
    replaced_in="0.5.14",
)
"""PD decode pre-allocated request slots before `--disaggregation-decode-extra-slots` (0.5.14)."""

SWA_ORDER = VersionRule(
    "unlabelled_swa_order",
    "<= 0.5.16",
    "mem_cache/swa_memory_pool.py : SWAKVPool.__init__",
    "the SWA pool's KV line is printed first, then the full pool's",
)
"""Which unlabelled KV line of an SWA model is the full-attention pool (its #tokens)."""

MEMORY_BASELINE = VersionRule(
    "memory_baseline",
    ">= 0.5.21",
    "distributed/bootstrap.py : measure_pre_model_load_memory",
    "`Memory baseline taken` replaces the distributed-init mem usage",
)
"""From 0.5.21 the distributed-init cost is no longer logged."""

GLOBAL_REQ_ROWS = VersionRule(
    "req_to_token_global_rows",
    "< 0.5.10",
    "model_executor/model_runner_kv_cache_mixin.py : init_memory_pool (max_num_reqs)",
    "the req_to_token pool has the global --max-running-requests rows; only the printed value "
    "is per DP (model_runner.py prints max_running_requests // dp_size)",
    replaced_in="0.5.10",
)
"""v0.5.2 model_runner.py:378-382, v0.5.8 model_runner_kv_cache_mixin.py:253, v0.5.9 :340;
per DP from v0.5.10 :849. Known to hold only when the formats bound the release below 0.5.10."""

REQ_PADDING_ROW = VersionRule(
    "req_to_token_padding_row",
    ">= 0.5.11",
    "mem_cache/memory_pool.py : ReqToTokenPool.__init__ (size + 1)",
    "one padding row (row 0) on top of the request slots",
)
"""v0.5.11 mem_cache/memory_pool.py:150. In 0.3.2-0.4.6 the pool also had max_num_reqs + 1 rows,
but the printed max_running_requests already is the pool size (v0.4.1 tp_worker.py:92-98)."""

DEFAULT_REQUESTS = VersionRule(
    "default_max_running_requests",
    ">= 0.5.2",
    "model_executor/model_runner_kv_cache_mixin.py : init_memory_pool (max_num_reqs)",
    "without --max-running-requests the pools are sized for min(max(int(T / context_len x 512), "
    "2048), 4096) requests (T: the KV tokens; from 0.5.10 also at most T // 2)",
)
"""v0.5.2 model_runner.py:1252-1261, v0.5.8 model_runner_kv_cache_mixin.py:252-265, v0.5.10
:840-851 (and the T // 2 cap), v0.5.16 mem_cache/kv_cache_configurator.py:1626-1635. Not applied
to hybrid Mamba/GDN models or speculative decoding, which cap or adjust it further."""

RULES: tuple[VersionRule, ...] = (
    EXTRA_SLOTS,
    SWA_ORDER,
    MEMORY_BASELINE,
    GLOBAL_REQ_ROWS,
    REQ_PADDING_ROW,
    DEFAULT_REQUESTS,
)


def holds(rule: VersionRule, lower: int, ceiling: int = 0) -> bool:
    """Whether the log's release is known to be in the rule's range: `lower` is the formats'
    lower bound (`format_version`), `ceiling` their exclusive upper bound (0 = unknown)."""
    for bound in rule.releases.split(","):
        operator, release = bound.split()
        limit = version_code(release)
        if operator == ">=" and not 0 < limit <= lower:
            return False
        if operator == "<" and not 0 < ceiling <= limit:
            return False
        if operator == "<=" and not 0 < ceiling <= limit + 1:
            return False
    return True
