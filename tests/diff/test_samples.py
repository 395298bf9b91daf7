"""`memledger diff` on the article's samples and on pairs of real logs (read in place)."""

from __future__ import annotations

import csv
import io
import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from memledger.app.load import load_ledger
from memledger.cli import main
from memledger.compare.compute import diff_ledgers
from memledger.compare.models import DiffStatus, LedgerDiff
from memledger.errors import EXIT_OK
from memledger.model.ledger import Ledger
from memledger.render.diff_formats import DiffFormat, render_diff
from memledger.render.diff_markdown import DEFAULT_MAX_CHARS
from memledger.units import GIB
from tests.conftest import (
    REAL_LOGS,
    SAMPLES,
    ledger_for,
    load_truth,
    real_log_paths,
    run_cli,
    unwrapped,
)
from tests.diff.helpers import check_markdown

DP16 = SAMPLES / "dp16.log"
DP2 = SAMPLES / "dp2.log"
K3_CONFIG = SAMPLES / "k3-config.json"

# The seed article, per card (GiB): "DP16 每卡的固定开销少 10.4 GiB ... 拆开看有三部分:
# CUDA graph 和运行时余量省了 9.9 GiB ... DCP 和每卡槽数带来的结构省了 3.6 GiB ... DP16 在
# target 和 draft 的权重 staging 上多付了 3.1 GiB".
# base = DP16, head = DP2, Δ = head - base: what DP16 saves is positive, what it pays more is
# negative.
ARTICLE_SPLIT = {
    "graphs_headroom": 9.9,
    "dcp_slots_comm_workspace": 3.6,
    "weights_staging": -3.1,
}
ARTICLE_FIXED_GAP = 10.4
ARTICLE_KV_PER_INSTANCE = (51.1e6, 43.0e6)  # "KV tokens per instance: 51.1 M vs 43.0 M"


@pytest.fixture(scope="module")
def sample_diff_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`memledger diff samples/dp16.log samples/dp2.log --model-config ... --format json`."""
    target = tmp_path_factory.mktemp("diff") / "diff.json"
    argv = ["diff", str(DP16), str(DP2), "--model-config", str(K3_CONFIG), "--format", "json"]
    assert main([*argv, "-o", str(target)]) == EXIT_OK
    document: dict[str, Any] = json.loads(target.read_text())
    return document


# --- the article, reproduced ------------------------------------------------------------------


def test_samples_reproduce_the_article_fixed_overhead_split(
    sample_diff_json: dict[str, Any],
) -> None:
    analysis = sample_diff_json["state_pool"]
    categories = {c["id"]: c for c in analysis["categories"]}
    assert set(categories) == set(ARTICLE_SPLIT)
    for category_id, article_gib in ARTICLE_SPLIT.items():
        measured = categories[category_id]["delta_bytes"] / GIB
        assert measured == pytest.approx(article_gib, abs=0.05), category_id
    fixed_delta = analysis["fixed_overhead"]["delta_bytes"]
    assert fixed_delta / GIB == pytest.approx(ARTICLE_FIXED_GAP, abs=0.05)
    # Exactly, in bytes: the parts add up to the gap, and the gap is the state-pool difference
    # up to the usable difference (equal within printing precision on both sides).
    assert sum(c["delta_bytes"] for c in categories.values()) == fixed_delta
    state_delta = analysis["state_pool"]["delta_bytes"]
    assert state_delta == analysis["partition"]["delta_bytes"] - fixed_delta
    assert abs(analysis["partition"]["delta_bytes"]) <= analysis["partition"]["tolerance_bytes"]
    assert analysis["larger_pool_side"] == "base"
    assert analysis["statement"].startswith("base (dp16)'s state pool is larger by 10.4")


def test_samples_reproduce_kv_tokens_per_instance(sample_diff_json: dict[str, Any]) -> None:
    fields = {f["key"]: f for f in sample_diff_json["summary_fields"]}
    base_tokens = fields["kv_tokens_per_instance"]["base"]
    head_tokens = fields["kv_tokens_per_instance"]["head"]
    assert base_tokens == pytest.approx(ARTICLE_KV_PER_INSTANCE[0], rel=0.01)
    assert head_tokens == pytest.approx(ARTICLE_KV_PER_INSTANCE[1], rel=0.01)
    assert fields["slots"]["base"] == 33 and fields["slots"]["head"] == 209


# The article's row-level figures (GiB per card, DP16 | DP2): KV pool 41.1 | 34.6; AG staging
# 1196 | 350 MiB; draft weights 0.85 + 1.26 staging | 1.23; load peak 145.2 | 109.9, released
# 47.7 | 14.6; NCCL init 0.65 less; largest graph bucket 7.19 | 10.24, static 0.17 | 1.33;
# req_to_token 0.13 | 0.82; draft slot map 0.02 | 0.16; runtime headroom 4.0 less; KDA state
# 16.16 (conv 2.35) on DP16; draft KV 1.5 | 2.0; state per slot 0.64 | 0.08.
ARTICLE_ROWS = {
    "kv_pool": (41.1, 34.6),
    "weight_staging": (1196 / 1024, 350 / 1024),
    "draft_weights": (0.85, 1.23),
    "draft_staging": (1.26, None),
    "weights_load_peak": (145.2, 109.9),
    "weights_released": (47.7, 14.6),
    "cuda_graph_largest_bucket": (7.19, 10.24),
    "cuda_graph_static": (0.17, 1.33),
    "req_to_token": (0.13, 0.82),
    "draft_slot_map": (0.02, 0.16),
    "draft_kv": (1.5, 2.0),
    "mamba_conv_state": (2.35, None),
}


def test_samples_rows_and_verdict_match_the_article(capsys: pytest.CaptureFixture[str]) -> None:
    diff = diff_ledgers(ledger_for(DP16), ledger_for(DP2))
    rows = {r.id: r for r in diff.rows}
    for row_id, (base_gib, head_gib) in ARTICLE_ROWS.items():
        row = rows[row_id]
        assert row.base_bytes is not None
        assert row.base_bytes / GIB == pytest.approx(base_gib, abs=0.03), row_id
        if head_gib is not None:
            assert row.head_bytes is not None
            assert row.head_bytes / GIB == pytest.approx(head_gib, abs=0.03), row_id
    kda = rows["mamba_ssm_state"].base_bytes, rows["mamba_conv_state"].base_bytes
    assert kda[0] is not None and kda[1] is not None
    assert (kda[0] + kda[1]) / GIB == pytest.approx(16.16, abs=0.02)  # "16.16 GiB" KDA state
    nccl = rows["nccl_init"]
    assert nccl.delta_bytes is not None and nccl.delta_bytes / GIB == pytest.approx(0.65, abs=0.02)
    fields = {f.key: f for f in diff.summary_fields}
    headroom = fields["runtime_headroom"].delta
    assert isinstance(headroom, float | int) and headroom == pytest.approx(4.0, abs=0.05)
    per_slot = fields["state_per_slot"]
    assert [per_slot.base, per_slot.head] == pytest.approx([0.64, 0.08], abs=0.01)
    # the verdict leads with what the article leads with: 51.1 M vs 43.0 M tokens per instance
    code, out, _ = run_cli(["diff", str(DP16), str(DP2)], capsys)
    assert code == EXIT_OK
    verdict = unwrapped(out).splitlines()[0]  # the verdict is the first line
    assert verdict.startswith(
        "dp2 vs dp16: KV tokens per instance 51.08 M -> 43.00 M (-15.8%) · state pool -10.43 GiB"
    )


def test_samples_text_prints_a_split_that_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        ["diff", str(DP16), str(DP2), "--model-config", str(K3_CONFIG)], capsys
    )
    assert code == EXIT_OK and err == ""
    match = re.search(
        r"Fixed overhead \+ headroom, head - base: ([+-][\d.]+) GiB = ([\d.]+) \(CUDA graphs \+ "
        r"runtime "
        r"headroom\) ([+-]) ([\d.]+) \(communication \+ workspace \+ unexplained\) ([+-]) "
        r"([\d.]+) \(weights \+ draft weights \+ staging\)\.",
        unwrapped(out),
    )
    assert match, out[:2000]
    total = float(match.group(1))
    parts = [
        float(match.group(2)),
        float(match.group(3) + match.group(4)),
        float(match.group(5) + match.group(6)),
    ]
    assert round(sum(parts), 2) == total  # the printed figures add up exactly
    assert [round(p, 1) for p in parts] == [9.9, 3.6, -3.1]
    assert round(total, 1) == ARTICLE_FIXED_GAP
    assert "base dp16: " in unwrapped(out)
    assert "samples/dp16.log (startup #0 of 1, rank DP0 TP0 EP0" in unwrapped(out)


def test_samples_split_does_not_depend_on_the_model_config() -> None:
    # Without model dims the DCP Q replica is unknown and stays inside the interval's unexplained
    # residual, which is in the same category: the split must not move.
    with_dims = diff_ledgers(
        ledger_for(DP16, model_config=K3_CONFIG), ledger_for(DP2, model_config=K3_CONFIG)
    )
    without = diff_ledgers(ledger_for(DP16), ledger_for(DP2))
    assert [c.delta_bytes for c in with_dims.state_pool.categories] == [
        c.delta_bytes for c in without.state_pool.categories
    ]
    replica = next(r for r in with_dims.rows if r.id == "dcp_q_replica")
    assert replica.head_bytes is not None
    assert replica.head_bytes / GIB == pytest.approx(0.91, abs=0.05)


def test_samples_markdown_is_a_well_formed_comment(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["diff", str(DP16), str(DP2), "--model-config", str(K3_CONFIG), "--format", "markdown"]
    code, out, _ = run_cli(argv, capsys)
    assert code == EXIT_OK
    counts = check_markdown(out)
    assert counts["mermaid"] == 2
    assert len(out) <= DEFAULT_MAX_CHARS
    headline = out.splitlines()[1]
    # Article: CUDA graphs differ by 5.9 GiB, the largest single fixed-overhead mover.
    assert "state pool -10.4" in headline
    mover = re.search(r"biggest mover: CUDA graphs \+([\d.]+) GiB", headline)
    assert mover and float(mover.group(1)) == pytest.approx(5.9, abs=0.05)


def test_a_saved_ledger_diffs_like_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "dp16.json"
    code = main(["ledger", str(DP16), "--format", "json", "-o", str(saved)])
    assert code == EXIT_OK
    from_logs = diff_ledgers(ledger_for(DP16), ledger_for(DP2))
    from_saved = diff_ledgers(load_ledger(saved), ledger_for(DP2))
    assert from_saved.rows == from_logs.rows
    assert from_saved.state_pool == from_logs.state_pool
    assert from_saved.inputs.base.path == str(DP16)  # the saved ledger remembers its log


# --- real logs --------------------------------------------------------------------------------


def _outcomes() -> dict[str, str]:
    return {
        str(REAL_LOGS / item["file"]): item["facts"]["outcome"]
        for item in load_truth()
        if (REAL_LOGS / item["file"]).is_file()
    }


def _real_pairs() -> list[tuple[str, str]]:
    """Consecutive logs (mixed versions and layouts) plus every non-ready log vs a ready one."""
    paths = [str(p) for p in real_log_paths()]
    outcomes = _outcomes()
    ready = [p for p in paths if outcomes.get(p) == "ready"]
    broken = [p for p in paths if outcomes.get(p, "ready") != "ready"]
    pairs = list(pairwise(paths))
    pairs += [(ready[i % len(ready)], log) for i, log in enumerate(broken)] if ready else []
    return pairs


REAL_PAIRS = _real_pairs()


def _pair_id(pair: tuple[str, str]) -> str:
    return " vs ".join(Path(p).name[:24] for p in pair)


def _assert_sensible(diff: LedgerDiff, base: Ledger, head: Ledger) -> None:
    analysis = diff.state_pool
    assert (
        sum(c.delta_bytes or 0 for c in analysis.categories) == analysis.fixed_overhead.delta_bytes
    )
    assert diff.total.base_bytes == sum(r.bytes or 0 for r in base.rows if r.in_partition)
    assert diff.total.head_bytes == sum(r.bytes or 0 for r in head.rows if r.in_partition)
    text = unwrapped(render_diff(diff, DiffFormat.TEXT))
    for ledger in (base, head):
        assert ledger.source.path in text
        assert ledger.outcome in text
        if ledger.stopped_at:
            assert f"stopped {ledger.stopped_at}" in text
    markdown = render_diff(diff, DiffFormat.MARKDOWN)
    check_markdown(markdown)
    assert len(markdown) <= DEFAULT_MAX_CHARS
    document = json.loads(render_diff(diff, DiffFormat.JSON))
    assert document["inputs"]["head"]["path"] == head.source.path
    records = list(csv.reader(io.StringIO(render_diff(diff, DiffFormat.CSV))))
    assert len({len(r) for r in records}) == 1
    assert len(records) > 1


@pytest.mark.parametrize("pair", REAL_PAIRS, ids=[_pair_id(p) for p in REAL_PAIRS])
def test_real_log_pairs_diff_sensibly(pair: tuple[str, str]) -> None:
    base, head = (ledger_for(p) for p in pair)
    diff = diff_ledgers(base, head)
    _assert_sensible(diff, base, head)
    if base.stopped_at or head.stopped_at:
        headline = unwrapped(render_diff(diff, DiffFormat.TEXT)).splitlines()[0]
        for side, ledger in (("base", base), ("head", head)):
            if ledger.stopped_at:
                assert f"{side} partial ({ledger.outcome}, stopped " in headline


@pytest.mark.parametrize("path", [str(p) for p in real_log_paths()], ids=lambda p: Path(p).name)
def test_real_log_self_diff_is_all_zeros(path: str) -> None:
    ledger = ledger_for(path)
    diff = diff_ledgers(ledger, ledger)
    assert diff.counts[DiffStatus.CHANGED] == diff.counts[DiffStatus.NEW] == 0
    assert diff.counts[DiffStatus.REMOVED] == diff.counts[DiffStatus.NOT_COMPARABLE] == 0
    assert all(r.delta_bytes in (0, None) for r in diff.rows)
    assert diff.total.delta_bytes == 0
    assert all(c.delta_bytes == 0 for c in diff.checkpoints)
    assert diff.parameters == []


def test_crashed_against_ready_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    outcomes = _outcomes()
    pairs = [p for p in REAL_PAIRS if outcomes.get(p[1]) != "ready"][:6]
    assert pairs
    for base, head in pairs:
        for fmt in ("text", "markdown"):
            code, out, err = run_cli(["diff", base, head, "--format", fmt], capsys)
            assert code == EXIT_OK, (base, head, err)
            assert err == ""
            assert not re.search(r'^\s*File ".*", line \d+', out, flags=re.M)  # no stack frames
            assert head in out
