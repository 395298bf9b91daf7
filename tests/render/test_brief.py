"""Verdict first, details on request (issue 13, 'Reading it'): the short text views of `ledger`,
`diff` and `check`, the `--full` tables, one placeholder for an absent value (m1), one meaning
per word (M5), file names as labels (m2), bar colours per group (m3) and markdown tables (m4)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from memledger.compare.compute import diff_ledgers
from memledger.model.ledger import RowGroup
from memledger.render.diff_markdown import diff_bars
from memledger.render.diff_text import BRIEF_MOVERS
from memledger.render.mermaid import bars_chart
from memledger.render.tables import ABSENT
from memledger.render.timeline import GROUP_COLOURS
from tests.conftest import SAMPLES, run_cli, unwrapped

DP16, DP2 = SAMPLES / "dp16.log", SAMPLES / "dp2.log"
CONFIG = SAMPLES / "k3-config.json"


def cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    code, out, err = run_cli(list(argv), capsys)
    assert code in (0, 1), err
    return out


def test_ledger_short_view_puts_the_groups_largest_first_and_the_split_that_adds_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = cli(capsys, "ledger", DP16)
    assert out.index("balance:") < out.index("Where the memory went")
    table = out[out.index("Where the memory went") :].split("\n\n")[0]
    gib = [float(m) for m in re.findall(r"^\w+ +(-?[\d.]+) +[\d.]+%", table, flags=re.M)]
    assert gib == sorted(gib, key=abs, reverse=True) and len(gib) == 9  # every group, largest first
    assert re.search(r"^weights +96\.33 +54\.2%", table, flags=re.M)
    assert re.search(r"^cuda_graph +8\.08 +4\.5% +cuda_graph_largest_bucket 7\.19$", table, re.M)
    # fixed overhead without the free headroom: 177.70 - 4.00 - 63.78 = 109.92
    assert (
        "usable 177.70 GiB = fixed overhead 109.92 + runtime headroom (free) 4.00 + state pool "
        "63.78" in out
    )
    assert "3,192,320 KV tokens per rank" in out
    flat = unwrapped(out)
    assert "capture_begin: 0.34 GiB (--explain unexplained.capture_begin)" in flat
    assert "(--explain unexplained.draft_capture_begin)" not in flat  # 0.00 GiB: not notable
    assert out.splitlines()[-1].endswith("--full; one row: --explain ROW")
    for table_title in ("Rows", "Checkpoints", "Intervals", "Summary"):
        assert f"\n{table_title}\n" not in out
    full = cli(capsys, "ledger", DP16, "--full")
    for table_title in ("Rows", "Checkpoints", "Intervals", "Summary"):
        assert f"\n{table_title}\n" in full


def test_one_meaning_per_word_in_the_full_ledger(capsys: pytest.CaptureFixture[str]) -> None:
    full = cli(capsys, "ledger", DP16, "--full")
    # Rows TOTAL: fixed overhead (no free headroom), the headroom, the pool, their sum.
    assert re.search(r"^TOTAL +fixed overhead +109\.92 ", full, flags=re.M)
    assert re.search(r"^ +runtime headroom +4\.00 ", full, flags=re.M)
    assert re.search(r"^ +sum +177\.70 ", full, flags=re.M)
    # The summary's short keys say what they hold (the workspace group alone is 0.15).
    assert re.search(r"^fixed overhead \+ headroom \(fixed_overhead\) +113\.92", full, re.M)
    assert re.search(r"^workspace \+ unexplained \(workspace\) +0\.64", full, flags=re.M)
    assert re.search(r"^weights \+ staging resident \(weights_resident\) +97\.50", full, re.M)
    assert re.search(r"^ +subtotal +0\.15$", full[full.index("workspace   ") :], flags=re.M)


def test_diff_short_view_lists_the_largest_movers_and_full_lists_every_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = cli(capsys, "diff", DP16, DP2, "--model-config", CONFIG)
    # unwrapped: the verdict now leads with the KV tokens per instance and wraps elsewhere
    # the verdict is the first paragraph, the Summary the second (review M3: no hedge before it)
    assert "(fixed overhead + headroom +10.44 GiB)" in unwrapped(out.split("\n\n")[0])
    assert out.split("\n\n")[1].startswith("Summary\n")
    movers = out[out.index("Largest movers") :].split("\n\n")[0].splitlines()
    assert movers[0] == f"Largest movers ({BRIEF_MOVERS} of 28 changed rows)"
    assert [line.split()[0] for line in movers[3:]] == [
        "kv_pool",
        "runtime_headroom",
        "cuda_graph_largest_bucket",
        "mamba_ssm_state",
        "weights",
    ]
    assert "Composition per card" in out and "Checkpoints" not in out
    full = cli(capsys, "diff", DP16, DP2, "--model-config", CONFIG, "--full")
    for title in ("Rows (sorted by delta", "Group totals", "Checkpoints", "Intervals", "Coverage"):
        assert title in full and title not in out
    # The category rows carry both sides' values, numbers right-aligned, absent as `-`.
    assert re.search(r"^· draft_staging +1\.26 +- +-1\.26 +-$", full, flags=re.M)
    assert not re.search(r" (\?|n/a)( |$)", full.split("Composition per card")[0], flags=re.M)


def test_check_short_view_lists_breaches_and_the_passes_closest_to_their_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # wide enough for the log column whatever the clone's path (at 100 columns it gives way
    # first, and a long checkout path cut it before the `/samples` the rows are found by)
    monkeypatch.setenv("COLUMNS", "300")
    budget = tmp_path / "b.toml"
    entries = [("usable", 'min = "100 GiB"'), ("cuda_graph", 'max = "8.5 GiB"')]
    entries += [("fixed_overhead", f'max = "{200 + n} GiB"') for n in range(6)]
    entries += [("runtime_headroom", 'max = "1 GiB"')]
    budget.write_text("".join(f'[[budget]]\nitem = "{i}"\n{b}\n\n' for i, b in entries))
    argv: list[str | Path] = ["check", DP16, "--budget", budget]
    code, out, _ = run_cli(argv, capsys)
    assert code == 1
    assert out.startswith("memledger check: FAIL (exit 1)")
    assert re.search(r"^FAIL runtime_headroom \[\S*dp16\.log\]: 4\.00 GiB > max", out, re.M)
    assert "within budget (8; the 5 closest to their limit, --full lists all):" in out
    listed = re.findall(r"^  (\w+) +\S*/sa", out, flags=re.M)
    # Headroom as a share of the limit: cuda_graph 0.42 of 8.5, fixed_overhead 86-91 of 200-205,
    # usable 77.7 of 100 (the farthest, left out with the widest fixed_overhead limit).
    assert listed == ["cuda_graph", *["fixed_overhead"] * 4]
    # hints stand under the table, whole (a table cell cut them to "could be tightened to m…")
    assert re.search(
        r'^  hint fixed_overhead \[\S*dp16\.log\]: could be tightened to max = "[\d.]+ GiB"$',
        out,
        re.M,
    )
    _, full, _ = run_cli([*argv, "--full"], capsys)
    assert "within budget (8):" in full
    assert len(re.findall(r"^  \w+ +\S*/sa", full, flags=re.M)) == 8


def test_markdown_tables_align_numbers_name_a_category_once_and_cut_no_cell(
    capsys: pytest.CaptureFixture[str],
) -> None:
    diff = cli(capsys, "diff", DP16, DP2, "--model-config", CONFIG, "--format", "markdown")
    assert "|:---|---:|---:|---:|---:|" in diff  # summary: figure left, numbers right
    behind = diff[diff.index("Rows behind each category") :].split("</details>")[0]
    named = re.findall(r"^\| ([^|]*) \|", behind, flags=re.M)[1:]  # after the header
    assert sum(1 for cell in named if cell) == 3  # three categories, each named once
    ledger = cli(capsys, "ledger", DP16, "--format", "markdown")
    assert "..." not in ledger and "…" not in ledger
    assert "| target weights net of staging (load end - staging - released) |" in ledger
    # the full ledger diff fits a comment: id and label share one `row` cell, seven columns
    full = diff[diff.index("Full ledger diff") :].split("</details>")[0]
    assert "| row | group | base dp16 | head dp2 | Δ | Δ% | status |" in full
    assert "|:---|:---|---:|---:|---:|---:|:---|" in full
    assert "| `kv_pool` KV cache | state pool | 41.10 | 34.60 | -6.50 | -15.8% | changed |" in full


def test_bars_give_a_group_one_colour_in_both_and_name_the_files(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.diff.helpers import centi, ledger, row

    base = ledger(
        [
            row("weights", RowGroup.WEIGHTS, centi(3000)),
            row("kv_pool", RowGroup.STATE_POOL, centi(1000)),
        ]
    )
    head = ledger(
        [
            row("weights", RowGroup.WEIGHTS, centi(3000)),
            row("kv_pool", RowGroup.STATE_POOL, centi(5000)),
        ]
    )
    chart = bars_chart(diff_bars(diff_ledgers(base, head)), "t")
    palette = re.search(r'"plotColorPalette": "([^"]+)"', chart)
    assert palette is not None
    # the longest bar (every group) first: its visible end is the last group's colour
    assert palette.group(1).split(", ") == [
        GROUP_COLOURS[RowGroup.STATE_POOL],
        GROUP_COLOURS[RowGroup.WEIGHTS],
    ]
    assert re.findall(r"bar \[(.*)\]", chart) == ["40.00, 80.00", "30.00, 30.00"]
    assert '"base", "head"' in chart
    out = cli(capsys, "diff", DP16, DP2, "--format", "markdown")
    assert 'x-axis ["base dp16", "head dp2"]' in out
    assert "left to right: weights (dark blue), weight staging (light blue)" in out
    assert ABSENT == "-"


def test_all_ranks_splits_a_wide_rank_table_and_cuts_no_header_or_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = cli(capsys, "parse", DP16, "--all-ranks")
    ranks = out[out.index("Ranks (8; sizes in GiB):") :]
    tables = ranks.split("\n", 1)[1].split("\n\n")
    assert len(tables) == 2  # 10 key columns do not fit 100 columns: two tables
    for table in tables:
        lines = table.strip("\n").split("\n")
        assert lines[0].startswith("rank ") and len(lines) == 10  # header, rule, 8 ranks
        assert all(len(line) <= 100 for line in lines)
    assert "…" not in ranks
    assert "capture_end_avail" in tables[1] and "DP7 TP7 EP7" in tables[1]
    assert re.search(r"^DP5 TP5 EP5 +14\.05 ", tables[1], flags=re.M)
    # one precision per column (m21): 4.30 beside 4.32, 176.10 beside 176.12, never 4.3
    assert re.search(r"^DP0 TP0 EP0 +14\.07 +7\.78 +4\.30$", tables[1], flags=re.M)
    assert re.search(
        r"^DP0 TP0 EP0 +29 +176\.10 +30\.90 +145\.20 +3192320 +41\.10$", tables[0], re.M
    )


def test_the_short_ledger_says_when_there_is_no_state_pool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memledger.model.ledger import Summary
    from memledger.render.brief import pool_line
    from tests.render.helpers import small_ledger

    ledger = small_ledger()
    rows = [r for r in ledger.rows if r.group is not RowGroup.STATE_POOL]
    no_pool = replace(ledger, rows=rows, summary=Summary(mem_fraction_static=0.88))
    line = pool_line(no_pool)
    assert line == "state pool: none (no pool in this ledger); mem_fraction_static 0.88"
