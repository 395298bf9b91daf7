"""Ledger schema 2: summary sizes in bytes, group totals on the ledger, v1 files upgraded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.app.open import ledger_from_document
from memledger.engine import build_ledger
from memledger.formulas import load_formulas
from memledger.input.parsing import parse_log
from memledger.model.ledger import (
    FIXED_OVERHEAD_GROUPS,
    LEDGER_SCHEMA_VERSION,
    Ledger,
    RowGroup,
    Summary,
    group_totals,
    summary_from_rows,
)
from memledger.units import GIB
from tests.conftest import SAMPLES

V1_FILE = Path(__file__).with_name("data") / "dp16-schema-v1.ledger.json"
"""`memledger ledger samples/dp16.log --format json` as written by main at f9bb8f4 (schema 1)."""


def _fresh() -> Ledger:
    return build_ledger(parse_log(SAMPLES / "dp16.log"), formulas=load_formulas())


def test_summary_sizes_are_bytes_with_gib_views() -> None:
    summary = _fresh().summary
    assert isinstance(summary.cuda_graph, int)
    assert summary.cuda_graph_gib == round(summary.cuda_graph / GIB, 6)
    assert round(summary.cuda_graph_gib, 2) == 8.08
    assert Summary.unit("slots").value == "slots"
    assert "kv_tokens_per_rank" not in Summary.byte_fields()


def test_group_totals_are_the_partition_rows_per_group_and_the_summary_agrees() -> None:
    ledger = _fresh()
    assert [g.group for g in ledger.groups] == [g for g in RowGroup if ledger.group(g)]
    for total in ledger.groups:
        rows = [r for r in ledger.rows if r.group == total.group]
        summed = [r.bytes for r in rows if r.in_partition and r.bytes is not None]
        assert total.bytes == sum(summed) and total.rows == len(rows)
    fixed = sum(g.bytes for g in ledger.groups if g.group in FIXED_OVERHEAD_GROUPS)
    assert ledger.summary.fixed_overhead == fixed
    state = ledger.group(RowGroup.STATE_POOL)
    assert state is not None and ledger.summary.state_pool == state.bytes
    assert ledger.usable_bytes is not None
    assert fixed + state.bytes == ledger.usable_bytes + ledger.balance_error_bytes


def test_a_version_1_file_is_upgraded_on_load() -> None:
    document = json.loads(V1_FILE.read_text(encoding="utf-8"))
    assert document["schema_version"] == 1 and isinstance(document["summary"]["usable"], float)
    old = document["summary"]
    loaded = ledger_from_document(document, label=str(V1_FILE))
    assert loaded.schema_version == LEDGER_SCHEMA_VERSION == 2
    assert loaded.groups == group_totals(loaded.rows)  # from the saved rows
    assert loaded.summary.usable == document["usable_bytes"]  # exact
    exact = summary_from_rows(loaded.rows)
    for name in Summary.byte_fields():
        if old.get(name) is None:
            assert getattr(loaded.summary, name) is None, name
        elif name in exact:
            # a sum of rows takes the rows' exact bytes (v1's value is that sum at 6 decimals)
            value = exact[name]
            assert value is not None and getattr(loaded.summary, name) == value, name
            assert round(value / GIB, 6) == old[name], name
        elif name != "usable":
            assert getattr(loaded.summary, name) == round(old[name] * GIB), name
    assert loaded.summary.slots == old["slots"]
    assert loaded.summary.cuda_graph_gib == pytest.approx(old["cuda_graph"], abs=1e-6)
