"""The engine's version-dependent rules, and its view of a log's release.

The release a log's lines imply comes from the one dating table, memledger.sglang.release_markers
(`FORMAT_MARKS`, `release_range`): `format_version` is its lower bound, `format_ceiling` its
exclusive upper bound. `RULES` are the behaviours the engine applies by release, each with its range
and source file (paths under `python/sglang/srt/`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memledger.model.events import Event
from memledger.sglang.release_markers import release_range, release_text, version_code


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

LOGICAL_DCP_TOKENS = VersionRule(
    "summary_logical_dcp_tokens",
    ">= 0.5.21",
    "managers/tp_worker.py : get_worker_info (logical_max_total_num_tokens)",
    "the summary's max_total_num_tokens is the logical capacity: the per-rank rows x "
    "attn_dcp_size (not for hybrid SWA); the KV line's #tokens stays per rank",
)
"""v0.5.21 managers/tp_worker.py:552, model_executor/model_runner.py:1395-1401,
mem_cache/kv_cache_configurator.py:319-328; v0.5.23 tp_worker.py:574. v0.5.20 tp_worker.py:549-552
printed the per-rank rows."""

RULES: tuple[VersionRule, ...] = (
    LOGICAL_DCP_TOKENS,
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
