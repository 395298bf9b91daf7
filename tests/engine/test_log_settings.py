"""Settings the log reveals (`log.*` parameters): read only from lines that exist, diffed next to
the rows they plausibly moved, labelled by source in the config tables.

Expected values are read from the raw log text with regular expressions written here, not from
the parser, so a test fails if the engine records a value the log did not print.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from memledger.app.load import load_ledger
from memledger.compare.compute import diff_ledgers
from memledger.compare.models import DiffStatus, LedgerDiff, ParamDiff
from memledger.render.diff_markdown import render_diff_markdown
from memledger.render.diff_text import render_diff_text
from memledger.render.terminal import Terminal
from memledger.sglang.effects import PARAM_EFFECTS, param_effect
from memledger.sglang.rows import LOG_SETTINGS
from memledger.units import GIB
from tests.conftest import REAL_LOGS, SAMPLES, ledger_for, real_log_paths
from tests.diff.helpers import check_markdown, gfm_cell_count

DP16 = SAMPLES / "dp16.log"
DP2 = SAMPLES / "dp2.log"
SAMPLE_RANK = "DP0 TP0 EP0"

# The raw line each `log.*` parameter may come from (written independently of the grammar).
LINE_OF_SETTING: dict[str, str] = {
    "weight_sharded_layers": r"Weight sharding: \d+ weight-sharded layers",
    "weight_shard_group_size": r"Weight sharding: .*group size \d+",
    "requant_then_shard": r"requant-then-shard: \d+",
    "requant_then_shard_weights": r"requant-then-shard: \d+",
    "hoisted_ag": r"target hoisted \d+/\d+",
    "draft_weight_sharded_layers": r"draft: \d+ weight.sharded layers",
    "draft_hoisted_ag": r"draft hoisted \d+/\d+",
    "dspark_slots_per_req": r"DSpark draft SWA slot map: .*slots_per_req=",
    "dspark_swa_pool_multiplier": r"DSpark draft SWA slot map: .*multiplier=",
    "custom_all_reduce_instances": r"All Reduce config:",
    "custom_all_reduce_symmetric_memory": r"All Reduce config: .*symmetric_memory",
    "custom_all_reduce_local_buffer": r"All Reduce config: .*local_buffer",
    "deepep_max_dispatch_tokens_per_rank": r"DeepEP .*max_dispatch_tokens_per_rank=",
    "deepep_use_fp8_dispatch": r"DeepEP .*use_fp8_dispatch=",
    "kv_cache_dtype": r"Using KV cache dtype: |KV Cache is allocated.*dtype",
    "cuda_graph_bs": r"Capture .*(?:\bbs \[|bs=\[)",
}
FORK_SETTINGS = set(LINE_OF_SETTING) - {"kv_cache_dtype", "cuda_graph_bs"}
"""Lines only the K3 fork (or a DeepEP v2 / CustomAllReduceV2 build) prints."""


@cache
def _sample_diff() -> LedgerDiff:
    return diff_ledgers(ledger_for(DP16), ledger_for(DP2))


def _rank_lines(path: Path, rank: str) -> list[str]:
    """The messages of one rank's lines (the text after `[date time TAGS] `)."""
    prefix = re.compile(r"^\[[\d-]+ [\d:]+ " + re.escape(rank) + r"\] (.*)$")
    return [m.group(1) for line in path.read_text().splitlines() if (m := prefix.match(line))]


def _first_int(lines: list[str], pattern: str) -> int:
    found = next(m for line in lines if (m := re.search(pattern, line)))
    return int(found.group(1))


def _param(diff: LedgerDiff, name: str) -> ParamDiff:
    return next(p for p in diff.parameters if p.name == name)


def _moved(param: ParamDiff) -> dict[str, int | None]:
    return {c.id: c.delta_bytes for c in param.moved_rows}


# --- the article's samples ------------------------------------------------------------------------


def test_sample_diff_shows_draft_weight_sharding_next_to_draft_staging() -> None:
    base_lines, head_lines = _rank_lines(DP16, SAMPLE_RANK), _rank_lines(DP2, SAMPLE_RANK)
    pattern = r"DFlash draft: (\d+) weight-sharded layers"
    expected = (_first_int(base_lines, pattern), _first_int(head_lines, pattern))
    assert expected == (5, 0)  # the article: DP16 sets SGLANG_ENABLE_K3_DRAFT_WEIGHT_SHARD
    param = _param(_sample_diff(), "log.draft_weight_sharded_layers")
    assert (param.base, param.head, param.source) == (*expected, "log")
    moved = _moved(param)
    # DP16's draft staging pool (`FlatAGStagingPool ... role=draft ... total=1288.0 MiB`) is gone
    # in DP2: the row is removed, its Δ is minus the whole pool.
    assert moved["draft_staging"] == -1288 * 2**20
    assert "draft_weights" in moved
    assert param.why is not None and "SGLANG_ENABLE_K3_DRAFT_WEIGHT_SHARD" in param.why


def test_sample_diff_shows_the_dspark_multiplier_next_to_draft_kv() -> None:
    base_lines, head_lines = _rank_lines(DP16, SAMPLE_RANK), _rank_lines(DP2, SAMPLE_RANK)
    diff = _sample_diff()
    for key, name in (
        ("multiplier", "log.dspark_swa_pool_multiplier"),
        ("slots_per_req", "log.dspark_slots_per_req"),
    ):
        pattern = rf"DSpark draft SWA slot map: .*\b{key}=(\d+)"
        param = _param(diff, name)
        assert (param.base, param.head) == (
            _first_int(base_lines, pattern),
            _first_int(head_lines, pattern),
        )
        # Draft KV: 1.50 GB (DP16) vs 1.99 GB (DP2) as the two `KV Cache is allocated` lines print.
        delta = _moved(param)["draft_kv"]
        assert delta is not None and abs(delta - round(0.49 * GIB)) <= GIB // 100
        assert "draft_slot_map" in param.affects
    assert _param(diff, "log.dspark_swa_pool_multiplier").base == 3  # the article: "4 对 3"


def test_sample_diff_counts_custom_all_reduce_instances_next_to_nccl_init() -> None:
    base_count = sum("All Reduce config:" in line for line in _rank_lines(DP16, SAMPLE_RANK))
    head_count = sum("All Reduce config:" in line for line in _rank_lines(DP2, SAMPLE_RANK))
    assert (base_count, head_count) == (0, 2)  # the article: "共 2 次" on DP2, none on DP16
    diff = _sample_diff()
    param = _param(diff, "log.custom_all_reduce_instances")
    assert (param.base, param.head, param.status) == (None, head_count, DiffStatus.NEW)
    assert {"nccl_init", "all_reduce_buffers"} <= set(_moved(param))
    sizes = _param(diff, "log.custom_all_reduce_symmetric_memory")
    assert sizes.head == "28.01 MB"  # as printed: `symmetric_memory = 28.01 MB`


def test_equal_settings_are_not_listed_and_requant_moves_the_load_peak() -> None:
    diff = _sample_diff()
    names = {p.name for p in diff.parameters}
    # `Weight sharding: 92 weight-sharded layers (..., group size 8)` on both sides.
    assert "log.weight_sharded_layers" not in names
    assert "log.weight_shard_group_size" not in names
    assert "log.kv_cache_dtype" not in names  # torch.float8_e4m3fn on both
    param = _param(diff, "log.requant_then_shard_weights")
    assert (param.base, param.head) == (276, 92)
    # Load peak 145.20 GB (DP16) vs 109.91 GB (DP2), `Load weight end ... mem usage=`.
    peak = _moved(param)["weights_load_peak"]
    assert peak is not None and abs(peak + round(35.29 * GIB)) <= GIB // 100


def test_sample_text_config_lines_carry_the_log_source() -> None:
    # A wide terminal: this test reads whole cells (a 100-column one shortens long values).
    text = render_diff_text(_sample_diff(), terminal=Terminal(width=240), full=True)
    section = text.split("Configuration (parameters that differ)\n", 1)[1].split("\n\n", 1)[0]
    lines = section.splitlines()
    cells = {line.split()[0]: re.split(r"\s{2,}", line.strip()) for line in lines[2:-1]}
    assert cells["log.draft_weight_sharded_layers"][:4] == [
        "log.draft_weight_sharded_layers",
        "log",
        "5",
        "0",
    ]
    assert "draft_staging -1.26" in cells["log.draft_weight_sharded_layers"][4]
    assert cells["log.dspark_swa_pool_multiplier"][1:4] == ["log", "3", "4"]
    assert "draft_kv +0.49" in cells["log.dspark_swa_pool_multiplier"][4]
    assert cells["log.custom_all_reduce_instances"][1:4] == ["log", "(not logged)", "2"]
    assert cells["mem_fraction_static"][1] == "server_args"
    assert cells["ledger.slots"][1] == "ledger"
    assert lines[-1].strip().startswith("source: server_args = the server_args line; log = ")


def test_markdown_config_table_has_consistent_columns_and_a_source_per_row() -> None:
    diff = _sample_diff()
    text = render_diff_markdown(diff)
    check_markdown(text)  # every table: as many cells per row as the header (markdown-it-py)
    lines = text.splitlines()
    start = lines.index(
        "| parameter | source | base dp16 | head dp2 | rows it plausibly moved (Δ GiB) |"
    )
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    assert {gfm_cell_count(line) for line in table} == {5}
    tokens = MarkdownIt("commonmark").enable("table").parse("\n".join(table))
    cells = [t.children[0].content for t in tokens if t.type == "inline" and t.children]
    rows = [cells[i : i + 5] for i in range(5, len(cells), 5)]
    assert len(rows) == len(diff.parameters)
    for name, source, *_ in rows:
        expected = (
            "log"
            if name.startswith("log.")
            else "ledger"
            if name.startswith("ledger.")
            else "server_args"
        )
        assert source == expected, name
    assert sum(source == "log" for _, source, *_ in rows) >= 3
    after = lines[start + len(table) + 1]
    assert after.startswith("source: server_args = the server_args line; log = read from log lines")


# --- no invented values ---------------------------------------------------------------------------


def test_every_log_setting_has_a_raw_line_pattern_and_an_effect_entry() -> None:
    names = {setting.name for setting in LOG_SETTINGS}
    assert names == set(LINE_OF_SETTING)
    for name in names:
        effect = param_effect("log." + name)
        assert effect is not None and effect.pattern.startswith("log."), name
        assert effect.why, name
    # A `log.` name never falls to the server_args entry of the same bare name ...
    assert param_effect("log.kv_cache_dtype") is not param_effect("kv_cache_dtype")
    assert "kv_pool" in param_effect("log.kv_cache_dtype").row_ids  # type: ignore[union-attr]
    # ... but a `log.` name without an entry of its own still gets the generic one.
    generic = next(e for e in PARAM_EFFECTS if e.pattern == "*cuda_graph*")
    assert param_effect("log.piecewise_cuda_graph_tokens") is generic


@pytest.mark.parametrize("path", real_log_paths(), ids=lambda p: p.name)
def test_real_logs_get_log_settings_only_from_lines_they_printed(path: Path) -> None:
    text = path.read_text(errors="replace")
    revealed = {k: v for k, v in ledger_for(path).parameters.items() if k.startswith("log.")}
    for name in revealed:
        pattern = LINE_OF_SETTING[name.removeprefix("log.")]
        assert re.search(pattern, text), f"{name} recorded but no such line in {path.name}"
    for bare in FORK_SETTINGS:
        if not re.search(LINE_OF_SETTING[bare], text):
            assert "log." + bare not in revealed
    assert all(isinstance(v, int | float | str | bool) for v in revealed.values())


def test_real_logs_without_fork_lines_have_no_fork_settings() -> None:
    upstream = [
        path
        for path in real_log_paths()
        if not any(
            re.search(LINE_OF_SETTING[bare], path.read_text(errors="replace"))
            for bare in FORK_SETTINGS
        )
    ]
    assert len(upstream) >= 20, REAL_LOGS  # upstream SGLang logs: none prints these lines
    for path in upstream:
        names = {k.removeprefix("log.") for k in ledger_for(path).parameters}
        assert not names & FORK_SETTINGS, path.name


@pytest.mark.real_logs
@pytest.mark.parametrize(
    "name", ["020-qwen3-0.6b-tp1-notag-wsl-0.4.6.post2.log", "022-grok2-tp8-h100-k8s-v0.5.2rc2.log"]
)
def test_cuda_graph_bs_comes_from_the_capture_line_when_server_args_leave_it_unset(
    name: str,
) -> None:
    path = REAL_LOGS / "single" / name
    text = path.read_text(errors="replace")
    assert "cuda_graph_bs=None" in text
    listed = re.search(r"Capture cuda graph bs (\[[\d, ]*\])", text)
    assert listed is not None
    assert ledger_for(path).parameters["log.cuda_graph_bs"] == listed.group(1)


def test_cuda_graph_bs_is_not_repeated_when_server_args_already_say_it() -> None:
    # dp16 sets cuda_graph_bs [1, 2, 4, 8, 16, 24] and captures exactly those sizes.
    assert "'cuda_graph_bs': [1, 2, 4, 8, 16, 24]" in DP16.read_text()
    assert "log.cuda_graph_bs" not in ledger_for(DP16).parameters


@pytest.mark.real_logs
def test_kv_cache_dtype_auto_resolves_to_the_logged_dtype() -> None:
    path = REAL_LOGS / "single" / "012-qwen25-3b-tp1-notag-nohup-nocudagraph.log"
    text = path.read_text(errors="replace")
    printed = re.search(r"Using KV cache dtype: (\S+)", text)
    assert printed is not None and "kv_cache_dtype='auto'" in text
    parameters = ledger_for(path).parameters
    assert parameters["kv_cache_dtype"] == "auto"
    assert parameters["log.kv_cache_dtype"] == printed.group(1)


# --- DeepEP v2 (the catalog's line shape; no real log prints it) ----------------------------------

DEEPEP_LOG = """\
[2026-03-01 10:00:00] server_args={{'tp_size': 8, 'ep_size': 8, 'moe_a2a_backend': 'deepep'}}
[2026-03-01 10:00:01 TP0 EP0] Load weight begin. avail mem=78.00 GB
[2026-03-01 10:00:09 TP0 EP0] Load weight end. type=DeepseekV3ForCausalLM, avail mem=40.00 GB, \
mem usage=38.00 GB.
[2026-03-01 10:00:10 TP0 EP0] KV Cache is allocated. #tokens: 100000, KV size: 20.00 GB
[2026-03-01 10:00:10 TP0 EP0] Memory pool end. avail mem=20.00 GB
[2026-03-01 10:00:11 TP0 EP0] Capture cuda graph begin. avail mem=20.00 GB
[2026-03-01 10:00:12 TP0 EP0] Initialized DeepEP v2 ElasticBuffer: world_size=8 hidden_size=7168 \
num_topk=8 max_dispatch_tokens_per_rank={tokens} use_fp8_dispatch=True allow_hybrid_mode=False \
num_bytes={num_bytes}
[2026-03-01 10:00:20 TP0 EP0] Capture cuda graph end. mem usage={usage} GB. avail mem={avail} GB.
"""


def test_deepep_dispatch_tokens_are_shown_next_to_the_deepep_buffer(tmp_path: Path) -> None:
    sides = []
    for tokens, num_bytes, usage in ((144, 3_758_096_384, "5.00"), (120, 3_131_310_080, "4.42")):
        path = tmp_path / f"ep{tokens}.log"
        avail = f"{20 - float(usage):.2f}"
        path.write_text(
            DEEPEP_LOG.format(tokens=tokens, num_bytes=num_bytes, usage=usage, avail=avail)
        )
        sides.append(load_ledger(path))
    diff = diff_ledgers(*sides)
    assert [p.name for p in diff.parameters] == ["log.deepep_max_dispatch_tokens_per_rank"]
    param = diff.parameters[0]
    assert (param.base, param.head, param.source) == (144, 120, "log")
    assert _moved(param) == {"deepep_buffer": 3_131_310_080 - 3_758_096_384}
    assert "cuda_graph_largest_bucket" in param.affects
