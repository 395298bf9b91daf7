"""Diff renderers on hand-built ledgers: markdown structure (parsed), size cap, text, json, csv."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from memledger.compare.compute import diff_ledgers
from memledger.compare.models import LedgerDiff, SortKey
from memledger.errors import ConfigError
from memledger.model.ledger import Row, RowGroup, RowKind
from memledger.record import to_json
from memledger.render.diff_common import category_table, headline, summary_table
from memledger.render.diff_csv import CSV_HEADERS
from memledger.render.diff_formats import DiffFormat, render_diff
from memledger.render.diff_markdown import (
    DEFAULT_MAX_CHARS,
    marker_comment,
    render_diff_markdown,
)
from memledger.render.diff_text import composition_bars, render_diff_text
from memledger.render.tables import Table, github_table
from memledger.units import GIB
from tests.conftest import unwrapped
from tests.diff.helpers import (
    HALF_ULP,
    article_pair,
    centi,
    check_markdown,
    gfm_cell_count,
    ledger,
    row,
)


def _diff() -> LedgerDiff:
    return diff_ledgers(*article_pair())


# --- markdown -----------------------------------------------------------------------------------


def test_markdown_is_well_formed_with_marker_details_and_two_charts() -> None:
    # without the two ledgers only the bars are drawn; with them the timeline too
    assert check_markdown(render_diff_markdown(_diff()))["mermaid"] == 1
    text = render_diff_markdown(_diff(), sides=article_pair())
    counts = check_markdown(text)
    # 9: the KV-token explanation, "not attributed" on these hand-built ledgers, is collapsed
    assert counts["details"] == 9
    assert counts["mermaid"] == 2
    assert counts["tables"] >= 8
    lines = text.splitlines()
    # the verdict leads with the KV capacity each deployment holds (per instance)
    assert lines[1].startswith(
        "**memledger diff** · dp2 vs dp16: KV tokens per instance 51.12 M -> 43.04 M (-15.8%) · "
        "state pool -10.46 GiB"
    )
    assert lines[1].endswith("biggest mover: CUDA graphs +5.90 GiB (+73.8%)")
    # Inputs recorded: path, startup and rank of both sides.
    # no `#0`: GitHub would link it to issue 0 (issue 12, class 1)
    assert "`samples/dp16.log` (startup 0 of 1, rank `TP0`, ready)" in text
    assert "`samples/dp2.log` (startup 0 of 1, rank `TP0`, ready)" in text
    # The split's printed parts add up to its printed total.
    assert "| CUDA graphs + runtime headroom | 18.00 | 27.90 | +9.90 |" in text
    assert "| fixed overhead + headroom (sum) | 119.48 | 129.93 | +10.46 |" in text
    assert "Truncated" not in text


def test_markdown_marker_is_configurable_and_validated() -> None:
    text = render_diff_markdown(_diff(), marker="memledger:decode")
    check_markdown(text, marker="<!-- memledger:decode -->")
    assert marker_comment("<!-- my-bot -->") == "<!-- my-bot -->"
    for bad in ("", "a -- b", "two\nlines", "<!--  -->"):
        with pytest.raises(ConfigError):
            marker_comment(bad)


def test_markdown_collapses_unchanged_rows_unless_asked() -> None:
    base, head = article_pair()
    extra = [row(f"same_{i}", RowGroup.WORKSPACE, centi(1)) for i in range(3)]
    base = replace(base, rows=[*base.rows, *extra])
    head = replace(head, rows=[*head.rows, *extra])
    diff = diff_ledgers(base, head)
    collapsed = render_diff_markdown(diff)
    assert "3 unchanged rows collapsed" in collapsed
    assert "| `same_0` " not in collapsed
    shown = render_diff_markdown(diff, show_unchanged=True)
    assert "| `same_0` " in shown and "unchanged rows collapsed" not in shown


def test_cells_escape_pipes_and_html() -> None:
    table = github_table(Table(["a", "b"], [["x|y", "<script>"]]))
    assert "x\\|y" in table and "&lt;script>" in table
    assert {gfm_cell_count(line) for line in table.splitlines()} == {2}


def _big_pair(n_rows: int) -> tuple[LedgerDiff, int]:
    """A diff of two ledgers with n_rows rows each, long labels, every row moved."""

    def rows(shift: int) -> list[Row]:
        return [
            Row(
                id=f"layer_{i:05d}_buffer",
                label=f"layer {i} activation buffer | staging ring for expert shard {i % 97}",
                group=list(RowGroup)[i % len(RowGroup)],
                kind=RowKind.DERIVED,
                bytes=centi(100 + (i % 50) + shift * (i % 7 + 1)),
                error_bytes=HALF_ULP,
            )
            for i in range(n_rows)
        ]

    base = ledger(rows(0), path="big-base.log")
    head = ledger(rows(1), path="big-head.log")
    return diff_ledgers(base, head), len(to_json(base))


def test_a_3mb_diff_stays_under_the_cap_with_headline_and_summary_intact() -> None:
    diff, ledger_json_chars = _big_pair(13_000)  # the comment names each category once
    assert ledger_json_chars > 3_000_000  # each input ledger is a ~3 MB JSON document
    full = render_diff_markdown(diff, max_chars=10**9)
    assert len(full) > 3_000_000
    capped = render_diff_markdown(diff)  # timings: benchmarks/bench_diff.py
    assert len(capped) <= DEFAULT_MAX_CHARS
    check_markdown(capped)
    # Headline, inputs, summary and the split are the uncapped text's, character for character.
    top_end = full.index("<details>")
    top_lines = [line for line in full[:top_end].splitlines() if line]
    capped_lines = capped.splitlines()
    for line in top_lines:
        assert line in capped_lines, f"lost from the top: {line!r}"
    assert headline(diff).replace("|", "\\|") in capped  # the label's pipe is escaped
    assert "⚠️ Details truncated to stay under 60,000 characters" in capped
    assert "rows omitted (size cap)" in capped
    assert "rows cut from the middle" in capped
    # The middle is cut: the first and last rows of the full-diff table survive.
    table = summary_table(diff)
    assert len(table.rows) >= 2 and table.headers[0] == "figure"
    first_and_last = re.findall(r"\| (layer_\d{5}_buffer) \|", capped)
    assert first_and_last, "no ledger rows survived the cap"


def test_a_tiny_cap_drops_whole_sections_but_never_the_top() -> None:
    diff, _ = _big_pair(300)
    capped = render_diff_markdown(diff, max_chars=6_000)
    check_markdown(capped)
    assert "left out to keep the comment under the size cap" in capped
    for line in github_table(category_table(diff)).splitlines():
        assert line in capped


# --- text -------------------------------------------------------------------------------------


def test_text_has_inputs_split_and_bars_on_one_scale() -> None:
    text = unwrapped(render_diff_text(_diff()))
    assert "base dp16: samples/dp16.log (startup #0 of 1, rank TP0, ready)" in text
    assert "Δ% = (head - base) / base" in text
    assert (
        "Fixed overhead + headroom, head - base: +10.46 GiB = 9.90 (CUDA graphs + runtime "
        "headroom) + 3.63 (communication + workspace + unexplained) - 3.07 (weights + draft "
        "weights + staging)." in text
    )
    bars = composition_bars(_diff(), width=60)
    base_bar = re.search(r"\|([^|]*)\| 177\.70", bars[1])
    head_bar = re.search(r"\|([^|]*)\| 177\.70", bars[2])
    assert base_bar and head_bar
    # Same usable on both sides: both bars are the full width; the state pool (K) is shorter
    # on head by about 10.46 / 177.70 x 60 = 3.5 characters.
    assert len(base_bar.group(1).rstrip()) == len(head_bar.group(1).rstrip()) == 60
    assert base_bar.group(1).count("K") - head_bar.group(1).count("K") in (3, 4)
    assert base_bar.group(1).count("G") < head_bar.group(1).count("G")


def test_text_sort_option_orders_rows() -> None:
    by_id = render_diff_text(_diff(), sort=SortKey.ID, full=True)
    section = by_id[by_id.index("Rows (sorted by id)") :]
    ids = re.findall(r"^(\w+)\s{2,}", section.split("\n\n")[0], flags=re.M)[2:]
    assert ids == sorted(ids)


# --- json and csv -------------------------------------------------------------------------------


def test_json_has_base_head_delta_in_the_same_shape() -> None:
    document = json.loads(render_diff(_diff(), DiffFormat.JSON))
    assert document["schema_version"] == 1
    summary = document["summary"]
    assert set(summary["base"]) == set(summary["head"]) == set(summary["delta"])
    assert summary["delta"]["slots"] == summary["head"]["slots"] - summary["base"]["slots"]
    assert document["inputs"]["base"]["path"] == "samples/dp16.log"
    first = document["rows"][0]
    assert first["delta_bytes"] == first["head_bytes"] - first["base_bytes"]


def test_csv_is_flat_and_every_record_names_both_inputs() -> None:
    text = render_diff(_diff(), "csv", sort="id")
    records = list(csv.DictReader(io.StringIO(text)))
    assert list(records[0]) == CSV_HEADERS
    assert {r["base_path"] for r in records} == {"samples/dp16.log"}
    assert {r["head_rank"] for r in records} == {"TP0"}
    rows = [r for r in records if r["section"] == "row"]
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    for record in rows:
        if record["base"] and record["head"]:
            assert int(record["delta"]) == int(record["head"]) - int(record["base"])
    total = next(r for r in records if r["section"] == "group" and r["id"] == "TOTAL")
    assert int(total["base"]) == sum(
        int(r["base"] or 0) for r in rows if r["in_partition"] == "true"
    )
    sections = {r["section"] for r in records}
    assert {"row", "group", "category", "checkpoint", "interval.drop", "summary", "parameter"} <= (
        sections
    )


def test_bad_format_or_sort_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown format 'yaml'"):
        render_diff(_diff(), "yaml")
    with pytest.raises(ConfigError, match="unknown sort 'size'"):
        render_diff(_diff(), "text", sort="size")


def test_renderers_do_not_import_click_or_lark() -> None:
    import memledger.compare
    import memledger.render.diff_common
    import memledger.render.diff_csv
    import memledger.render.diff_formats
    import memledger.render.diff_json
    import memledger.render.diff_markdown
    import memledger.render.diff_text

    for module in (
        memledger.compare,
        memledger.render.diff_common,
        memledger.render.diff_csv,
        memledger.render.diff_formats,
        memledger.render.diff_json,
        memledger.render.diff_markdown,
        memledger.render.diff_text,
    ):
        source = open(module.__file__ or "", encoding="utf-8").read()
        assert not re.search(r"^\s*(import|from)\s+(click|lark)\b", source, flags=re.M)
    # The diff computation is a package now: every module of it stays free of tabulate too.
    package = Path(memledger.compare.__file__ or "").parent
    for path in sorted(package.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+(click|lark|tabulate)\b", source, flags=re.M)
    assert GIB == 1 << 30


def test_a_negative_group_is_named_under_the_pie_not_dropped() -> None:
    base = ledger(
        [
            row("weights", RowGroup.WEIGHTS, centi(700)),
            row("unexplained.capture_begin", RowGroup.UNEXPLAINED, centi(-150)),
            row("kv_pool", RowGroup.STATE_POOL, centi(300)),
        ],
        path="ascend.log",
    )
    head = ledger(
        [
            row("weights", RowGroup.WEIGHTS, centi(700)),
            row("kv_pool", RowGroup.STATE_POOL, centi(150)),
        ],
        path="head.log",
    )
    text = render_diff_markdown(diff_ledgers(base, head))
    check_markdown(text)
    bars = text[text.index("xychart-beta horizontal") :]
    bars = bars[: bars.index("```")]
    # a stacked bar cannot draw it: base's bar is weights then state pool, 10.00 GiB ...
    assert re.findall(r"bar \[(.*)\]", bars) == ["10.00, 8.50", "7.00, 7.00"]
    # ... so it is said in words, once (head has nothing negative)
    assert (
        text.count("Not drawn (negative, memory given back): base ascend: unexplained -1.50") == 1
    )
