"""The engine's version-dependent rules, and its view of a log's release.

The release a log's lines imply comes from the one dating table, memledger.sglang.release_markers
(`FORMAT_MARKS`, `release_range`): `format_version` is its lower bound, `format_ceiling` its
exclusive upper bound. `RULES` are the behaviours the engine applies by release, each with its range
and source line (`vX path:line`, paths under `python/sglang/srt/`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memledger.model.events import Event
from memledger.sglang.release_markers import release_range
from memledger.sglang.releases import ReleaseRange, known_within, release_text


def format_version(events: Iterable[Event]) -> int:
    """A lower bound of the SGLang release whose log formats these lines use (0 = unknown)."""
    return release_range(events).lower


def format_ceiling(events: Iterable[Event]) -> int:
    """The first release whose formats these lines predate (0 = not known): an exclusive upper
    bound of the release that wrote the log."""
    return release_range(events).ceiling


def version_text(code: int) -> str:
    """`5013` -> `0.5.13`; 0 -> `unknown`."""
    return "unknown" if code <= 0 else release_text(code)


@dataclass(frozen=True)
class VersionRule:
    """A behaviour of SGLang's that the engine applies for a release range."""

    name: str
    releases: ReleaseRange
    source: str
    what: str
    replaced_in: str = ""
    """The first release that no longer follows the rule (empty while it holds)."""


EXTRA_SLOTS = VersionRule(
    "pd_decode_extra_slots",
    ReleaseRange(last="0.5.13"),
    "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:347-348 (pre_alloc_size)",
    "2 x max_running_requests when <= 32",
    replaced_in="0.5.14",
)
"""PD decode pre-allocated request slots before `--disaggregation-decode-extra-slots` (0.5.14)."""

SWA_ORDER = VersionRule(
    "unlabelled_swa_order",
    ReleaseRange(last="0.5.16"),
    "v0.5.8 mem_cache/swa_memory_pool.py:63,72 (SWAKVPool.__init__: SWA pool, then full)",
    "the SWA pool's KV line is printed first, then the full pool's",
)
"""Which unlabelled KV line of an SWA model is the full-attention pool (its #tokens)."""

MEMORY_BASELINE = VersionRule(
    "memory_baseline",
    ReleaseRange("0.5.21"),
    "v0.5.23 distributed/bootstrap.py:193-220 (measure_pre_model_load_memory)",
    "`Memory baseline taken` replaces the distributed-init mem usage",
)
"""From 0.5.21 the distributed-init cost is no longer logged."""

GLOBAL_REQ_ROWS = VersionRule(
    "req_to_token_global_rows",
    ReleaseRange(last="0.5.9"),
    "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:253 (init_memory_pool max_num_reqs)",
    "the req_to_token pool has the global --max-running-requests rows; only the printed value "
    "is per DP (model_runner.py prints max_running_requests // dp_size)",
    replaced_in="0.5.10",
)
"""v0.5.2 model_runner.py:378-382, v0.5.8 model_runner_kv_cache_mixin.py:253, v0.5.9 :340;
per DP from v0.5.10 :849. Known to hold only when the formats bound the release below 0.5.10."""

REQ_PADDING_ROW = VersionRule(
    "req_to_token_padding_row",
    ReleaseRange("0.5.11"),
    "v0.5.11 mem_cache/memory_pool.py:150 (ReqToTokenPool.__init__, size + 1)",
    "one padding row (row 0) on top of the request slots",
)
"""v0.5.11 mem_cache/memory_pool.py:150. In 0.3.2-0.4.6 the pool also had max_num_reqs + 1 rows,
but the printed max_running_requests already is the pool size (v0.4.1 tp_worker.py:92-98)."""

DEFAULT_REQUESTS = VersionRule(
    "default_max_running_requests",
    ReleaseRange("0.5.2"),
    "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:252-265 (init_memory_pool max_num_reqs)",
    "without --max-running-requests the pools are sized for min(max(int(T / context_len x 512), "
    "2048), 4096) requests (T: the KV tokens; from 0.5.10 also at most T // 2)",
)
"""v0.5.2 model_runner.py:1252-1261, v0.5.8 model_runner_kv_cache_mixin.py:252-265, v0.5.10
:840-851 (and the T // 2 cap), v0.5.16 mem_cache/kv_cache_configurator.py:1626-1635. Not applied
to hybrid Mamba/GDN models or speculative decoding, which cap or adjust it further."""

LOGICAL_DCP_TOKENS = VersionRule(
    "summary_logical_dcp_tokens",
    ReleaseRange("0.5.21"),
    "v0.5.21 managers/tp_worker.py:552 (get_worker_info logical_max_total_num_tokens)",
    "the summary's max_total_num_tokens is the logical capacity: the per-rank rows x "
    "attn_dcp_size (not for hybrid SWA); the KV line's #tokens stays per rank",
)
"""v0.5.21 managers/tp_worker.py:552, model_executor/model_runner.py:1395-1401,
mem_cache/kv_cache_configurator.py:319-328; v0.5.23 tp_worker.py:574. v0.5.20 tp_worker.py:549-552
printed the per-rank rows."""

FLASHINFER_INDEX_BUFFER = VersionRule(
    "flashinfer_verify_index_buffer",
    ReleaseRange("0.4.6", "0.5.7"),
    "v0.4.6.post5 layers/attention/flashinfer_backend.py:171-175, v0.5.2 :185-189, v0.5.7 "
    ":270-275 (the verify wrapper: BatchPrefillWithPagedKVCacheWrapper with FlashInfer's default "
    "backend 'auto'); flashinfer 0.2.5 prefill.py:1074-1082 (0.2.3 :1085, 0.3.1 :1415, 0.5.3 "
    ":1428-1436: with backend 'auto' or 'fa3', a 64 MiB int32 _vector_sparse_indices_buffer and a "
    "128 KiB indptr buffer); not in 0.6.1's constructor (prefill.py:1408-1560)",
    "every verify wrapper of the FlashInfer backend keeps a 64 MiB index buffer on the device: "
    "the releases whose wheel pins a FlashInfer that allocates it (METADATA flashinfer_python: "
    "0.2.3 at 0.4.6, 0.2.5 at 0.4.6.post5, 0.2.7.post1 at 0.4.9.post2, 0.2.11.post3 at 0.5.0rc2, "
    "0.3.1 at 0.5.2, 0.4.1 at 0.5.4, 0.5.0 at 0.5.5, 0.5.3 at 0.5.6 - 0.5.7; 0.6.1 at 0.5.8)",
    replaced_in="0.5.8",
)
"""The FlashInfer backend's verify wrappers' 64 MiB index buffers (formula flashinfer_index_buffer):
by the FlashInfer release each SGLang wheel pins. An image that installs another FlashInfer than
its SGLang wheel pins is not seen in a log."""

RULES: tuple[VersionRule, ...] = (
    LOGICAL_DCP_TOKENS,
    EXTRA_SLOTS,
    SWA_ORDER,
    MEMORY_BASELINE,
    GLOBAL_REQ_ROWS,
    REQ_PADDING_ROW,
    DEFAULT_REQUESTS,
    FLASHINFER_INDEX_BUFFER,
)


def holds(rule: VersionRule, lower: int, ceiling: int = 0) -> bool:
    """Whether the log's release is known to be in the rule's range: `lower` is the formats'
    lower bound (`format_version`), `ceiling` their exclusive upper bound (0 = unknown)."""
    return known_within(lower, ceiling, rule.releases)
