"""Ledger renderers on hand-built ledgers: totals, formats, round trips and --explain."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.errors import EXIT_USAGE, ConfigError
from memledger.model.ledger import (
    FIXED_OVERHEAD_GROUPS,
    Evidence,
    Ledger,
    Row,
    RowGroup,
    RowKind,
)
from memledger.record import validate_json
from memledger.render import (
    FORMATS,
    OutputFormat,
    UnknownRowError,
    render_ledger,
)
from memledger.render.rows import (
    CSV_HEADERS,
    error_cell,
    gib_cell,
    group_blocks,
    ledger_rows_table,
    ledger_tables,
    signed_gib_cell,
    source_cell,
)
from memledger.render.schema import render_schema
from memledger.units import GIB
from tests.conftest import make_ledger
from tests.render.helpers import (
    CENTI,
    LOG,
    REQ_TO_TOKEN_BYTES,
    gib,
    markdown_tables,
    small_ledger,
)

# --- cells -----------------------------------------------------------------------------------


def test_gib_cell_rounds_to_two_decimals_and_never_prints_negative_zero() -> None:
    assert gib_cell(GIB) == "1.00"
    assert gib_cell(GIB // 200 - 1) == "0.00"  # just under 0.005 GiB rounds down
    assert gib_cell(-(GIB // 1000)) == "0.00"
    assert gib_cell(-GIB // 2) == "-0.50"
    assert gib_cell(None) == "-"  # the one placeholder for an absent value (m1)
    assert signed_gib_cell(GIB // 4) == "+0.25"
    assert signed_gib_cell(-GIB // 4) == "-0.25"
    assert error_cell(0) == ""
    assert error_cell(GIB // 200) == "±0.005"


# --- structure: totals are sums of their rows ------------------------------------------------


def test_group_subtotals_are_sums_of_their_partition_rows() -> None:
    ledger = small_ledger()
    blocks = group_blocks(ledger)
    assert [block.group for block in blocks][-1] == RowGroup.STATE_POOL
    for block in blocks:
        summed = [r.bytes for r in block.rows if r.in_partition and r.bytes is not None]
        assert block.subtotal_bytes == sum(summed)
    # Every row lands in exactly one block.
    assert sorted(r.id for b in blocks for r in b.rows) == sorted(r.id for r in ledger.rows)
    assert sum(b.subtotal_bytes for b in blocks) == ledger.usable_bytes


def test_rows_table_matches_the_hand_worked_account() -> None:
    table = ledger_rows_table(small_ledger())
    column = {header: index for index, header in enumerate(table.headers)}
    assert all(len(row) == len(table.headers) for row in table.rows)

    def cell(row: list[str], header: str) -> str:
        return row[column[header]]

    by_id = {row[1]: row for row in table.rows if row[1] != "subtotal"}
    subtotals = {cell(row, "what").split()[0]: row for row in table.rows if row[1] == "subtotal"}
    # The informational load peak is shown but the weights subtotal stays 5.00, not 10.00.
    assert cell(by_id["weights_load_peak"], "kind") == "logged*"
    assert cell(subtotals["weights"], "GiB") == "5.00"
    # State pool: 2.00 + 209 x 1048580 x 4 B (0.8164 GiB) = 2.82; the unknown row is not summed.
    assert cell(subtotals["state_pool"], "GiB") == "2.82"
    assert cell(subtotals["state_pool"], "source") == "1 unknown not summed"
    # Fixed overhead: 10.00 - 2.8164 - 0.90 free runtime headroom (not overhead) = 6.28; all
    # rows sum to usable 10.00.
    assert cell(by_id["fixed overhead"], "GiB") == "6.28"
    assert cell(by_id["runtime headroom"], "GiB") == "0.90"
    assert cell(by_id["state pool"], "GiB") == "2.82"
    assert cell(by_id["sum"], "GiB") == "10.00"
    assert cell(by_id["sum"], "source") == "usable 10.00"
    # Errors add up: five summed ±0.005/±0.010 fixed rows, the ±0.005 headroom, one ±0.005
    # state-pool row.
    assert cell(by_id["fixed overhead"], "±GiB") == "±0.035"
    assert cell(by_id["runtime headroom"], "±GiB") == "±0.005"
    assert cell(by_id["sum"], "±GiB") == "±0.045"
    assert table.footnote is not None and "informational" in table.footnote


def test_source_column_says_where_each_number_comes_from() -> None:
    ledger = small_ledger()
    cells = {row.id: source_cell(row) for row in ledger.rows}
    assert cells["kv_pool"] == "tiny.log:25"
    assert cells["req_to_token"] == "209 rows x 1048580 cols x 4 B"
    assert cells["unexplained_load_end__memory_pool_end"] == (
        "residual of load_end->memory_pool_end"
    )
    assert cells["draft_slot_map"] == "needs speculative_num_draft_tokens, not in server_args"


def test_logged_row_with_several_source_lines_counts_the_others() -> None:
    row = small_ledger().rows[1]
    evidence = Evidence(sources=[*row.evidence.sources, *row.evidence.sources])
    assert source_cell(replace(row, evidence=evidence)) == "tiny.log:20 (+1 lines)"


# --- formats ---------------------------------------------------------------------------------


def test_every_format_has_a_renderer_returning_a_newline_terminated_string() -> None:
    assert set(FORMATS.entries) == set(OutputFormat)
    for fmt in OutputFormat:
        text = render_ledger(small_ledger(), fmt.value)
        assert isinstance(text, str) and text.endswith("\n")


def test_unknown_format_is_a_usage_error_listing_the_choices() -> None:
    with pytest.raises(ConfigError, match="text, markdown, json, csv") as info:
        FORMATS.pick("yaml")
    assert info.value.exit_code == EXIT_USAGE


def test_text_header_names_file_startup_rank_outcome_and_balance() -> None:
    lines = render_ledger(small_ledger(), "text").splitlines()
    assert lines[0] == f"memledger ledger: {LOG}"
    header = "\n".join(lines[:10])
    for expected in (
        f"file:    {LOG}",
        "startup: 0 (the only startup in the file)",
        "rank:    TP0",
        "outcome: ready",
        "usable:  10.00 GiB",
        "balance: balances (rows - usable = +0.00 GiB, within ±0.010 GiB)",
    ):
        assert expected in header


def test_out_of_balance_and_partial_ledgers_say_so() -> None:
    partial = replace(
        small_ledger(),
        outcome="oom",
        stopped_at="load_end: out of memory at line 21",
        balance_error_bytes=GIB // 10,
    )
    text = render_ledger(partial, "text")
    assert re.search(r"^outcome: +oom$", text, re.MULTILINE)
    assert re.search(r"^stopped: +load_end: out of memory at line 21$", text, re.MULTILINE)
    assert "OUT OF BALANCE (rows - usable = +0.10 GiB, beyond ±0.010 GiB)" in text
    unknown_usable = replace(small_ledger(), usable_bytes=None)
    assert "not checked (usable memory unknown)" in render_ledger(unknown_usable, "text")


def test_text_lists_every_table_and_note() -> None:
    text = render_ledger(small_ledger(), "text", full=True)
    for title in ("Rows", "Checkpoints", "Intervals", "Summary", "Notes"):
        assert f"\n{title}\n{'-' * len(title)}\n" in text
    assert "- draft_slot_map: needs speculative_num_draft_tokens" in text
    # The interval with a named cost: drop 3.00 - logged 2.00 = 1.00; 1.00 - 0.82 = 0.18.
    interval_line = next(
        line for line in text.splitlines() if line.split()[:2] == ["load_end", "memory_pool_end"]
    )
    assert interval_line.split()[2:7] == ["3.00", "2.00", "1.00", "0.82", "0.18"]


def test_markdown_tables_have_consistent_columns_and_the_same_cells_as_text() -> None:
    ledger = small_ledger()
    markdown = render_ledger(ledger, "markdown")
    parsed = markdown_tables(markdown)
    built = ledger_tables(ledger, name_the_log=True)  # markdown's sources name the log file
    # the pictures' two tables (timeline steps, bar segments) come first: tests/render/test_pictures
    assert parsed[0][0][0] == "phase" and parsed[1][0][0] == "group (left to right)"
    parsed = parsed[2:]
    assert len(parsed) == len(built) == 4
    for cells, table in zip(parsed, built, strict=True):
        assert all(len(row) == len(table.headers) for row in cells)
        # Same content as text: only the tabulate format differs (the `*` mark is escaped).
        unescaped = [[cell.replace("\\*", "*") for cell in row] for row in cells]
        assert unescaped == [table.headers, *table.rows]


def test_markdown_escapes_pipes_and_html_in_cells() -> None:
    ledger = small_ledger()
    rows = [replace(ledger.rows[0], label="a | b <stdin>"), *ledger.rows[1:]]
    markdown = render_ledger(replace(ledger, rows=rows), "markdown")
    first_table = markdown_tables(markdown)[2]  # after the pictures' two tables
    assert all(len(row) == 7 for row in first_table)
    assert "a \\| b &lt;stdin>" in markdown


def test_csv_round_trips_through_the_csv_module() -> None:
    ledger = small_ledger()
    records = list(csv.DictReader(io.StringIO(render_ledger(ledger, "csv"))))
    assert len(records) == len(ledger.rows)
    assert list(records[0]) == CSV_HEADERS
    for record, row in zip(records, ledger.rows, strict=True):
        assert record["id"] == row.id
        assert record["group"] == row.group.value
        assert record["kind"] == row.kind.value
        assert (int(record["bytes"]) if record["bytes"] else None) == row.bytes
        assert int(record["error_bytes"]) == row.error_bytes
        assert record["in_partition"] == ("true" if row.in_partition else "false")
    partition = [r for r in records if r["in_partition"] == "true" and r["bytes"]]
    assert sum(int(r["bytes"]) for r in partition) == ledger.usable_bytes
    # A comma inside a cell survives quoting.
    assert records[-1]["note"] == "needs speculative_num_draft_tokens, not in server_args"


def test_json_validates_back_into_an_equal_ledger() -> None:
    ledger = small_ledger()
    text = render_ledger(ledger, "json")
    document = json.loads(text)
    assert document["schema_version"] == 2  # schema 2: summary sizes in bytes
    assert document["intervals"][0]["from"] == "load_begin"
    assert document["rows"][0]["gib"] == pytest.approx(0.5, abs=1e-6)
    assert validate_json(Ledger, text) == ledger


# --- --explain -------------------------------------------------------------------------------


def test_explain_derived_row_shows_formula_inputs_result_and_interval() -> None:
    text = render_ledger(small_ledger(), "text", explain="req_to_token")
    assert 209 * 1048580 * 4 == REQ_TO_TOKEN_BYTES == 876_612_880
    assert "209 rows x 1048580 cols x 4 B = 876,612,880 B = 0.816 GiB" in text
    assert "rows            = 209" in text
    assert f"{LOG}:3: server_args=ServerArgs(...)" in text
    assert "Interval load_end -> memory_pool_end (GiB)" in text


def test_explain_residual_row_shows_drop_minus_logged_minus_named() -> None:
    text = render_ledger(small_ledger(), "text", explain="unexplained_load_end__memory_pool_end")
    lines = {" ".join(line.split()[:2]): line.split() for line in text.splitlines()}
    drop_detail = "avail 4.50 at load_end (line 20) - 1.50 at memory_pool_end (line 30)"
    assert lines["drop 3.00"][2:] == drop_detail.split()
    assert lines["- logged"][2:] == ["2.00", "kv_pool", "2.00"]
    assert lines["= residual"][2:] == ["1.00"]
    assert lines["- named"][2:] == ["0.82", "req_to_token", "0.82"]
    assert lines["= unexplained"][2:] == ["0.18", "±0.010"]
    # The residual's value is exactly drop - logged - named.
    assert gib(300) - gib(200) - REQ_TO_TOKEN_BYTES == gib(100) - REQ_TO_TOKEN_BYTES
    assert f"{gib(100) - REQ_TO_TOKEN_BYTES:,} B" in text


def test_explain_unknown_row_gives_the_reason() -> None:
    text = render_ledger(small_ledger(), "text", explain="draft_slot_map")
    assert "value  unknown" in text
    assert "Why unknown\n  needs speculative_num_draft_tokens, not in server_args" in text


def test_explain_a_group_or_an_interval() -> None:
    group = render_ledger(small_ledger(), "text", explain="state_pool")
    assert group.startswith(f"group state_pool: 2.816 GiB = {gib(200) + REQ_TO_TOKEN_BYTES:,} B")
    assert "1 unknown row(s) are not in the subtotal" in group
    fixed = render_ledger(small_ledger(), "text", explain="fixed_overhead").splitlines()
    # 10.00 GiB usable - state pool (2.00 GiB + 876,612,880 B), exactly.
    assert f"= {gib(1000) - gib(200) - REQ_TO_TOKEN_BYTES:,} B" in fixed[0]
    assert [line.split() for line in fixed[1:3]] == [["communication", "0.50"], ["weights", "5.00"]]
    interval = render_ledger(small_ledger(), "text", explain="memory_pool_end->capture_begin")
    assert interval.splitlines()[0] == "Interval memory_pool_end -> capture_begin (GiB)"


def test_explain_unknown_id_is_a_usage_error_listing_valid_ids() -> None:
    with pytest.raises(UnknownRowError) as info:
        render_ledger(small_ledger(), "text", explain="nope")
    assert info.value.exit_code == EXIT_USAGE
    message = info.value.one_line()
    assert "\n" not in message
    for row in small_ledger().rows:
        assert row.id in message
    assert "groups: communication, weights" in message


def test_explain_formats() -> None:
    markdown = render_ledger(small_ledger(), "markdown", explain="req_to_token")
    assert markdown.startswith("```text\nreq_to_token: ") and markdown.endswith("```\n")
    document = json.loads(render_ledger(small_ledger(), "json", explain="req_to_token"))
    assert [row["id"] for row in document["rows"]] == ["req_to_token"]
    assert [(i["from"], i["to"]) for i in document["intervals"]] == [
        ("load_end", "memory_pool_end")
    ]
    assert [point["id"] for point in document["checkpoints"]] == ["load_end", "memory_pool_end"]
    fixed = json.loads(render_ledger(small_ledger(), "json", explain="fixed_overhead"))
    assert {row["group"] for row in fixed["rows"]} == {g.value for g in FIXED_OVERHEAD_GROUPS} - {
        "draft_weights",
        "weight_staging",
    }
    with pytest.raises(ConfigError, match="not csv"):
        render_ledger(small_ledger(), "csv", explain="req_to_token")
    with pytest.raises(UnknownRowError):
        render_ledger(small_ledger(), "json", explain="nope")


# --- schema ----------------------------------------------------------------------------------


def test_ledger_schema_describes_the_json_output() -> None:
    schema = json.loads(render_schema("ledger"))
    assert {"schema_version", "rows", "intervals", "checkpoints", "summary"} <= set(
        schema["properties"]
    )
    # Serialisation view: intervals use their aliases and carry the computed GiB fields.
    interval = schema["$defs"]["Interval"]["properties"]
    assert {"from", "to", "drop_gib", "unexplained_gib"} <= set(interval)
    assert "facts" in json.loads(render_schema("parse"))["properties"]
    with pytest.raises(ConfigError, match="unknown schema"):
        render_schema("budget")


# --- property: any ledger renders and its subtotals add up -----------------------------------

_rows = st.lists(
    st.builds(
        lambda index, group, kind, hundredths, in_partition, label: Row(
            id=f"row{index}",
            label=label,
            group=group,
            kind=kind,
            bytes=None if kind == RowKind.UNKNOWN else hundredths * CENTI,
            in_partition=in_partition,
        ),
        st.integers(0, 10**6),
        st.sampled_from(RowGroup),
        st.sampled_from(RowKind),
        st.integers(-500, 50_000),
        st.booleans(),
        st.text(min_size=1, max_size=30),
    ),
    max_size=25,
    unique_by=lambda row: row.id,
)


@settings(max_examples=60, deadline=None)
@given(rows=_rows)
def test_any_ledger_renders_and_its_totals_add_up(rows: list[Row]) -> None:
    ledger = make_ledger(rows, rank="", outcome="truncated")
    partition = [r.bytes for r in rows if r.in_partition and r.bytes is not None]
    blocks = group_blocks(ledger)
    assert sum(block.subtotal_bytes for block in blocks) == sum(partition)
    overhead = FIXED_OVERHEAD_GROUPS - {RowGroup.RUNTIME_HEADROOM}
    fixed = sum(b.subtotal_bytes for b in blocks if b.group in overhead)
    table = ledger_rows_table(ledger)
    total = next(row for row in table.rows if row[1] == "fixed overhead")
    assert total[table.headers.index("GiB")] == gib_cell(fixed)
    last = next(row for row in table.rows if row[1] == "sum")
    assert last[table.headers.index("GiB")] == gib_cell(sum(partition))
    for fmt in OutputFormat:
        assert render_ledger(ledger, fmt.value)
    assert len(list(csv.DictReader(io.StringIO(render_ledger(ledger, "csv"))))) == len(rows)
    for table_cells in markdown_tables(render_ledger(ledger, "markdown")):
        assert len({len(row) for row in table_cells}) == 1


def test_headline_numbers_startups_as_the_startup_option_does() -> None:
    ledger = small_ledger()
    for index, expected in ((2, "2 (of startups 0..2; the last)"), (0, "0 (of startups 0..2)")):
        source = replace(ledger.source, startup=index, n_startups=3)
        text = render_ledger(replace(ledger, source=source), "text")
        assert re.search(rf"^startup: +{re.escape(expected)}$", text, re.MULTILINE)
