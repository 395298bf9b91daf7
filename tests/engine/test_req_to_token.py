"""Issue 9, ledger side: the request table (req_to_token) row on the real logs, rule by rule,
each with the SGLang source line it encodes (release wheels, paths under python/sglang/srt/)."""

from __future__ import annotations

from typing import Any

import pytest

from memledger.model.events import Event, EventKind
from memledger.model.ledger import Ledger, Row
from memledger.sglang.releases import version_code
from memledger.sglang.request_table import (
    decode_extra_slots,
    extra_columns,
    pool_requests,
    pool_size,
    table_rows,
)
from memledger.sglang.versions import format_version, version_text
from tests.conftest import SAMPLES, ledger_for, real_log_paths


def table(found: Ledger) -> Row:
    row = found.row("req_to_token")
    assert row is not None and row.bytes is not None, [r.id for r in found.rows]
    return row


@pytest.mark.parametrize(
    ("name", "rows", "context", "draft"),
    [
        ("complex/001", 96, 163_840, 4),
        ("complex/003", 1, 163_840, 2),
        ("complex/007", 40, 40_960, 2),
    ],
)
def test_draft_tokens_widen_the_table_from_0_5_1(
    name: str, rows: int, context: int, draft: int
) -> None:
    # v0.5.1 model_executor/model_runner.py:1249-1251 (v0.5.8 model_runner_kv_cache_mixin.py:
    # 336-338): max_context_len = context_len + 4 + speculative_num_draft_tokens; the MTP/EAGLE3
    # draft shares this one table (v0.5.8 speculative/eagle_worker.py:113-114). These Ascend logs
    # print `Using KV cache dtype:` (v0.5.3 model_runner.py:1425), so they are 0.5.3 or later.
    found = ledger_for(name)
    row = table(found)
    assert found.parameters["ledger.format_version_at_least"] == "0.5.3"
    assert row.evidence.inputs["cols"] == context + 4 + draft
    assert row.bytes == rows * (context + 4 + draft) * 4


def test_no_draft_columns_before_0_5_1() -> None:
    # single/001 (0.4.2-0.4.3 formats) carries speculative_num_draft_tokens=64 in server_args, but
    # 0.4.x built the table with context_len + 4 only (v0.4.1 model_runner.py:539; still so in
    # v0.4.10.post2 :1168 and v0.5.0rc2 :1247).
    row = table(ledger_for("single/001"))
    assert row.evidence.inputs["args.speculative_num_draft_tokens"] == 64
    assert row.evidence.inputs["cols"] == 131_072 + 4


@pytest.mark.parametrize(("name", "requests"), [("complex/009", 13), ("single/014", 2048)])
def test_0_5_11_adds_the_padding_row(name: str, requests: int) -> None:
    # v0.5.11 mem_cache/memory_pool.py:149-151: torch.zeros((size + 1, max_context_len)) (slot 0
    # pads CUDA-graph batches); v0.5.10 and v0.5.10.post1 :144 allocate `size` rows. These RDNA4
    # builds print ServerArgs.tokenizer_backend (v0.5.11 server_args.py:317), new in 0.5.11.
    found = ledger_for(name)
    row = table(found)
    assert found.parameters["ledger.format_version_at_least"] == "0.5.11"
    assert found.parameters["ledger.max_running_requests"] == requests
    assert row.evidence.inputs["rows"] == requests + 1
    assert found.summary.slots == requests + 1


def test_0_5_9_has_no_padding_row() -> None:
    # v0.5.9 mem_cache/memory_pool.py:144: `size` rows, 4096 requests on single/012.
    found = ledger_for("single/012")
    assert table(found).evidence.inputs["rows"] == 4096
    assert found.parameters["ledger.format_version_at_least"] == "0.5.9"


def test_a_0_4_capture_end_line_gives_context_plus_4_columns() -> None:
    # single/017 (Dec 2024) prints `Capture cuda graph end. Time elapsed:` (v0.4.0
    # model_runner.py:625; no end line in 0.3.6.post3), so it is not 0.3.0's context_len + 8
    # (v0.3.0 model_runner.py:386) but context_len + 4 (v0.4.1 :539), with the printed 2049 rows.
    found = ledger_for("single/017")
    row = table(found)
    assert found.parameters["ledger.format_version_at_least"] == "0.4.0"
    assert row.bytes == 2049 * (32_768 + 4) * 4


def test_the_ledger_row_is_the_table_sizing_reports_for_the_logged_tokens() -> None:
    # One rule (memledger/sglang/request_table.py) read twice: the ledger's req_to_token row and
    # sizing's table for the logged token count agree on every real log and both samples. The
    # cases that once differed: the samples (0.5.19 - 0.5.20, DSPARK, page 64, dcp 1 / 8) get
    # max(4 + 5, 2 x 5 + page - 1) = 73 extra columns at the lower bound 0.5.19 (v0.5.16
    # mem_cache/allocation_sizing.py:54-61; 0.5.20 would page by page x dcp, 521 on DP2,
    # v0.5.20 :85-105); single/017 has the printed 2,049 rows (0.4.x pool
    # size max_num_reqs + 1, v0.4.1 model_executor/model_runner.py:538); complex/014 the printed
    # max_running_requests=1 (not 2,048 modelled from its tokens); complex/017 (formats 0.5.10+,
    # not known to be 0.5.11) no padding row (v0.5.11 mem_cache/memory_pool.py:149-151).
    compared: dict[str, tuple[int | None, int | None]] = {}
    for path in [SAMPLES / "dp16.log", SAMPLES / "dp2.log", *real_log_paths()]:
        found = ledger_for(path)
        row = found.row("req_to_token")
        sizing = found.sizing.logged_req_to_token_bytes if found.sizing is not None else None
        compared[path.name] = (None if row is None else row.bytes, sizing)
    differ = {name: pair for name, pair in compared.items() if pair[0] != pair[1]}
    assert differ == {}
    with_table = [name for name, (ledger, _) in compared.items() if ledger is not None]
    assert len(with_table) >= 19, with_table
    assert compared["dp16.log"][0] == 33 * (1_048_576 + 73) * 4
    assert compared["dp2.log"][0] == 209 * (1_048_576 + 73) * 4
    fragment = next(name for name in compared if name.startswith("017-mistral7b"))
    assert compared[fragment][0] == 2049 * (32_768 + 4) * 4
    dsv4 = next(name for name in compared if name.startswith("014-ascend-dsv4"))
    assert compared[dsv4][0] == 1 * (32_768 + 4) * 4


def _args(**params: Any) -> Event:
    return Event(kind=EventKind.SERVER_ARGS, line=1, rank="", params=params, values={})


def test_server_args_fields_and_the_kv_dtype_line_date_a_log() -> None:
    # Each field was checked against ServerArgs of every release wheel 0.3.0-0.5.23: absent from
    # all before its release, present in all after it.
    assert version_text(format_version([_args(model_path="m")])) == "unknown"
    assert version_text(format_version([_args(moe_runner_backend="auto")])) == "0.5.1"
    both = _args(moe_runner_backend="auto", tokenizer_backend="huggingface")
    assert version_text(format_version([both])) == "0.5.11"
    kv_dtype = Event(kind=EventKind.KV_DTYPE, line=2, rank="TP0", text="Using KV cache dtype: x")
    assert version_text(format_version([kv_dtype])) == "0.5.3"
    end = Event(kind=EventKind.CAPTURE_END, line=3, rank="TP0", text="Capture cuda graph end.")
    assert version_text(format_version([end])) == "0.4.0"


def _spec(page: int, topk: int | None = None, algorithm: str = "EAGLE") -> dict[str, object]:
    return {
        "speculative_algorithm": algorithm,
        "speculative_num_draft_tokens": 4,
        "speculative_num_steps": 3,
        "speculative_eagle_topk": topk,
        "page_size": page,
    }


@pytest.mark.parametrize(
    ("release", "args", "dcp", "extra"),
    [
        # v0.3.0 model_runner.py:386: + 8; v0.4.1 :539: + 4, draft tokens or not.
        ("0.3.0", _spec(1), 1, 8),
        ("0.4.6", _spec(1), 1, 4),
        # v0.5.1 model_runner.py:1249-1251: + 4 + speculative_num_draft_tokens, any page size.
        ("0.5.8", _spec(128), 1, 8),
        ("0.5.8", {"page_size": 64}, 1, 4),
        # v0.5.13 mem_cache/common.py:204-209: a paged tree (topk > 1) reserves 2 x alloc_len:
        # ceil((63 + 3 + 63) / 64) = 2 pages x 64 x topk 4 = 512 per step, so 1024.
        ("0.5.13", _spec(64, topk=4), 1, 1024),
        ("0.5.13", _spec(64, topk=1), 1, 8),
        # v0.5.16 allocation_sizing.py:54-61: page > 1: 2 x max(3 x 1, 4) + 128 - 1 = 135.
        ("0.5.16", _spec(128, topk=1), 1, 135),
        ("0.5.16", _spec(1, topk=1), 1, 8),
        # v0.5.20 allocation_sizing.py:11-14: the allocator's page is page_size x dcp (64 x 8).
        ("0.5.20", _spec(64, topk=1), 8, 2 * 4 + 512 - 1),
        ("0.5.16", _spec(64, topk=1), 8, 2 * 4 + 64 - 1),
        # v0.5.20 :36-40 and :101: UNO keeps draft tokens + 1 per step at every page size.
        ("0.5.20", _spec(1, algorithm="UNO"), 1, 2 * 5 + 1 - 1),
    ],
)
def test_request_table_columns_by_release(
    release: str, args: dict[str, object], dcp: int, extra: int
) -> None:
    assert extra_columns(version_code(release), args, dcp) == extra


def test_request_table_rows_by_release() -> None:
    v = version_code
    # 0.3.6 - 0.4.6: the pool is max_num_reqs + 1 (v0.4.1 model_runner.py:538), known only when
    # the formats bound the release to that span; v0.4.7 :926 builds max_num_reqs rows.
    assert pool_size(v("0.4.2"), v("0.4.4"), 2048) == 2049
    assert pool_size(v("0.4.2"), 0, 2048) == 2048
    assert pool_size(v("0.4.7"), v("0.5.9"), 2048) == 2048
    # Below 0.5.10 the whole server's count (v0.5.8 model_runner_kv_cache_mixin.py:253), from
    # 0.5.10 the per-DP one (v0.5.10 :849); unknown ceiling: the per-DP count.
    assert pool_requests(v("0.5.3"), v("0.5.9"), 4, 32) == 32
    assert pool_requests(v("0.5.3"), 0, 4, 32) == 4
    # PD decode: 2 x requests up to 32 unless the arg is given (versions.EXTRA_SLOTS).
    assert decode_extra_slots(24, None) == 48
    assert decode_extra_slots(33, None) == 0
    assert decode_extra_slots(24, 8) == 8
    # The padding row from 0.5.11 (v0.5.11 mem_cache/memory_pool.py:149-151), none in 0.5.10.
    assert table_rows(v("0.5.11"), 24, 8) == 24 + 8 + 1
    assert table_rows(v("0.5.10"), 24, 8) == 24 + 8


def test_the_free_page_list_is_on_the_gpu_from_0_4_4() -> None:
    # single/001's KV line has no #tokens (0.4.2-0.4.3): its free list was
    # torch.arange(1, size + 1, dtype=torch.int32) with no device, on the CPU (v0.4.3
    # mem_cache/memory_pool.py:147). single/020 (0.4.6.post2) has it int64 on the device
    # (v0.4.4 :175-177, v0.4.6.post2 :198-200).
    assert ledger_for("single/001").row("kv_free_pages") is None
    free = ledger_for("single/020").row("kv_free_pages")
    assert free is not None and free.bytes == 15_387 * 8
