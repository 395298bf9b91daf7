"""The request table's (req_to_token's) rows and columns beyond context_len, by release (pure).

The ledger's req_to_token row (engine/variables.py) and the sizing model's table
(sizing/requests.py) both call these functions: one rule, two readers.

ReqToTokenPool rows are `context_len + extra` int32 entries; `extra` is headroom for what a
decode step may allocate past the context (draft tokens, page rounding). Releases are
`version_code`s; a log's is its formats' lower bound (sglang/versions.py). Paths are under
python/sglang/srt/. `--speculative-adaptive` sizes by a config file the log does not show: its
draft-token bound is taken as speculative_num_draft_tokens (not modelled beyond that).
"""

from __future__ import annotations

from collections.abc import Mapping

from memledger.sglang.releases import known_within, version_code
from memledger.sglang.sizing_rules import (
    MAX_NUM_REQS_CAP,
    MAX_NUM_REQS_FLOOR,
    MAX_NUM_REQS_PER_CONTEXT,
    RULE,
)
from memledger.sglang.versions import GLOBAL_REQ_ROWS, REQ_PADDING_ROW, holds
from memledger.units import count_or

BASE_EXTRA_COLUMNS = 4
"""context_len + 4: v0.3.6 model_executor/model_runner.py:480, v0.4.1 :539, v0.5.0rc2 :1247."""
OLDEST_EXTRA_COLUMNS = 8
"""context_len + 8 in 0.3.0 (model_runner.py:386); the log catalog dates + 4 from 0.3.2."""


PD_PREALLOC_LIMIT = 32
"""PD decode pre-allocates 2 x max_num_reqs slots when max_num_reqs <= 32 (before
--disaggregation-decode-extra-slots, 0.5.14; versions.EXTRA_SLOTS)."""


def pool_size(release: int, ceiling: int, max_num_reqs: int) -> int:
    """ReqToTokenPool's size for `max_num_reqs`: + 1 in 0.3.6 - 0.4.6 (v0.3.6
    model_executor/model_runner.py:478-480, v0.4.1 :538, v0.4.6.post2 :823-825; v0.4.7 :926 drops
    it), which those releases print as max_running_requests (v0.4.1 tp_worker.py:92-98). Known
    only when the formats bound the release to that span (`ceiling` exclusive, 0 = unknown)."""
    old = known_within(release, ceiling, RULE["req_to_token_plus_one"].releases)
    return max_num_reqs + 1 if old else max_num_reqs


def default_max_num_reqs(tokens: int, context_len: int, *, halved: bool) -> int:
    """SGLang's request count without --max-running-requests for `tokens` KV tokens (rule
    max_num_reqs_default); `halved`: the release also caps it at tokens // 2 (rule
    max_num_reqs_half)."""
    estimate = min(
        max(int(tokens / context_len * MAX_NUM_REQS_PER_CONTEXT), MAX_NUM_REQS_FLOOR),
        MAX_NUM_REQS_CAP,
    )
    return min(estimate, tokens // 2) if halved else estimate


def pool_requests(release: int, ceiling: int, per_dp: int, whole_server: int) -> int:
    """The request count the pool was sized by: the whole server's --max-running-requests where
    the formats bound the release below 0.5.10 (versions.GLOBAL_REQ_ROWS), else the per-DP count
    (what the summary line prints)."""
    return whole_server if holds(GLOBAL_REQ_ROWS, release, ceiling) else per_dp


def padding_rows(release: int) -> int:
    """The padding row (row 0) from 0.5.11: v0.5.11 mem_cache/memory_pool.py:149-151."""
    return 1 if holds(REQ_PADDING_ROW, release) else 0


def decode_extra_slots(requests: int, given: int | None) -> int:
    """PD decode's pre-allocated request slots: --disaggregation-decode-extra-slots when the
    log gives it (0.5.14+), else 2 x requests up to 32 requests (versions.EXTRA_SLOTS)."""
    if given is not None:
        return given
    return 2 * requests if requests <= PD_PREALLOC_LIMIT else 0


def table_rows(release: int, requests: int, extra_slots: int = 0) -> int:
    """req_to_token rows: the pool's request slots + PD decode's extra slots + the padding row."""
    return requests + extra_slots + padding_rows(release)


def _algorithm(args: Mapping[str, object]) -> str:
    value = args.get("speculative_algorithm")
    return value.upper() if isinstance(value, str) else ""


def alloc_len_per_decode(release: int, args: Mapping[str, object], page: int) -> int:
    """KV slots one request may take in a decode step (v0.5.13 mem_cache/common.py:155-183,
    v0.5.16 mem_cache/allocation_sizing.py:9-34, v0.5.20 :17-50)."""
    algorithm = _algorithm(args)
    if not algorithm:
        return 1
    steps = count_or(args.get("speculative_num_steps"), 1)
    topk = count_or(args.get("speculative_eagle_topk"), 1)
    tokens = count_or(args.get("speculative_num_draft_tokens"), 0)
    if algorithm == "UNO" and release >= version_code("0.5.20"):
        return tokens + 1
    # NGRAM writes no draft KV (has_draft_kv, from 0.5.16), so no per-topk page rounding.
    no_draft_kv = algorithm == "NGRAM" and release >= version_code("0.5.16")
    if page == 1 or topk == 1 or no_draft_kv:
        return max(steps * topk, tokens)
    pages_per_branch = ((page - 1) + steps + page - 1) // page
    return max(pages_per_branch * page * topk, tokens)


def extra_columns(release: int, args: Mapping[str, object], dcp_size: int = 1) -> int:
    """Columns of each req_to_token row beyond context_len at `release` (0 = unknown: the
    oldest rule)."""
    if release < version_code("0.3.2"):
        return OLDEST_EXTRA_COLUMNS
    if release < version_code("0.5.1"):
        return BASE_EXTRA_COLUMNS
    # + speculative_num_draft_tokens whenever it is set: v0.5.1 model_runner.py:1249-1251,
    # v0.5.8 model_runner_kv_cache_mixin.py:336-338, v0.5.13 mem_cache/common.py:203.
    extra = BASE_EXTRA_COLUMNS + count_or(args.get("speculative_num_draft_tokens"), 0)
    if not _algorithm(args) or release < version_code("0.5.13"):
        return extra
    page = count_or(args.get("page_size"), 1)
    topk = count_or(args.get("speculative_eagle_topk"), 1)
    if release < version_code("0.5.16"):
        # v0.5.13 mem_cache/common.py:204-209: the double-buffered reserve, page > 1 trees only.
        if page > 1 and topk > 1:
            return max(extra, 2 * alloc_len_per_decode(release, args, page))
        return extra
    if release < version_code("0.5.20"):
        # v0.5.16 mem_cache/allocation_sizing.py:54-61: reserve + page_size - 1 when page > 1.
        if page > 1:
            return max(extra, 2 * alloc_len_per_decode(release, args, page) + page - 1)
        return extra
    # v0.5.20 mem_cache/allocation_sizing.py:85-105 (v0.5.23 :96-116): the allocator's page is
    # page_size x attn_dcp_size (:11-14; v0.5.23 :22-25), and UNO reserves at every page size.
    alloc_page = page * max(1, dcp_size)
    if alloc_page > 1 or _algorithm(args) == "UNO":
        reserve = 2 * alloc_len_per_decode(release, args, alloc_page)
        return max(extra, reserve + alloc_page - 1)
    return extra


COLUMN_RULE_RELEASES: tuple[str, ...] = ("0.3.2", "0.5.1", "0.5.13", "0.5.16", "0.5.20")
"""The releases at which `extra_columns` changes its rule (and `alloc_len_per_decode`)."""


def extra_columns_by_release(
    release: int, ceiling: int, args: Mapping[str, object], dcp_size: int = 1
) -> dict[int, int]:
    """`extra_columns` at the lower bound and at every rule change inside [release, ceiling)
    (ceiling 0 = unknown: the lower bound only): one entry when the range cannot change it."""
    codes = [release]
    if ceiling:
        codes += [c for c in map(version_code, COLUMN_RULE_RELEASES) if release < c < ceiling]
    found: dict[int, int] = {}
    for code in codes:
        columns = extra_columns(code, args, dcp_size)
        if columns not in found.values():
            found[code] = columns
    return found
