"""The engine package's steps and data tables: what the split made explicit."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memledger.engine import build_ledger
from memledger.engine.variables import LOG_INPUTS, missing_reason
from memledger.formulas import load_formulas, parse_formulas
from memledger.input.parsing import parse_log
from memledger.model.events import Event, EventKind, UnrecognisedLine
from memledger.sglang.release_markers import FORMAT_MARKS
from memledger.sglang.versions import RULES, format_version, version_text
from tests.conftest import PROJECT_ROOT, REAL_LOGS
from tests.engine.helpers import TEST_FORMULAS, Log, ledger_of


def _small_log() -> Log:
    log = Log()
    log.add(EventKind.LOAD_BEGIN, avail=80.0)
    log.add(EventKind.LOAD_END, avail=60.0, usage=20.0)
    return log


def test_unrecognised_memory_lines_reach_the_ledger_as_a_note() -> None:
    parsed = _small_log().parsed()
    lines = [UnrecognisedLine(line=n, rank="TP0", text="Weird avail mem=1 GB") for n in (7, 9)]
    startup = replace(parsed.startup, unrecognised=lines, unrecognised_count=5)
    ledger = build_ledger(replace(parsed, startup=startup), formulas=TEST_FORMULAS)
    note = next(n for n in ledger.notes if "matched no known line shape" in n)
    assert note.startswith("5 memory lines of this rank")
    assert "(lines 7, 9, ...)" in note
    assert "parse --coverage" in note
    assert not any("matched no known" in n for n in ledger_of(_small_log()).notes)


@pytest.mark.real_logs
def test_unrecognised_note_on_a_real_log_names_the_line() -> None:
    # complex/014 line 49: a summary line glued to another line's tail (`..., .20 GB`).
    path = next((REAL_LOGS / "complex").glob("014-*.log"))
    ledger = build_ledger(parse_log(path), formulas=load_formulas())
    notes = [n for n in ledger.notes if n.startswith("1 memory line of this rank")]
    assert len(notes) == 1 and "(line 49)" in notes[0]


def test_every_format_mark_names_its_release_and_source_file() -> None:
    for mark in FORMAT_MARKS:
        assert ".py" in mark.source, mark
        assert mark.kinds
    for rule in RULES:
        assert ".py" in rule.source and rule.releases


def _event(kind: EventKind, text: str, **values: Any) -> Event:
    return Event(kind=kind, line=1, rank="TP0", text=text, values=values)


def test_format_version_is_the_highest_release_any_line_implies() -> None:
    # the typed fields the transformer gives `Capture target decode CUDA graph begin.`
    new_capture = _event(
        EventKind.CAPTURE_BEGIN,
        "Capture target decode CUDA graph begin.",
        role="target",
        phase="decode",
        graph="target decode CUDA graph",
        graph_named=True,
        role_named=True,
    )
    # 0.4.7-0.5.13 already printed `Capture draft extend cuda graph begin.` (lower-case device)
    old_extend = _event(
        EventKind.CAPTURE_BEGIN,
        "Capture draft extend cuda graph begin.",
        role="draft",
        phase="extend",
        graph="draft extend cuda graph",
        graph_named=True,
        role_named=True,
    )
    assert version_text(format_version([old_extend])) == "unknown"
    load_end = _event(EventKind.LOAD_END, "Load weight end.", elapsed=1.0)
    assert version_text(format_version([load_end])) == "0.5.10"
    assert version_text(format_version([load_end, new_capture])) == "0.5.14"
    assert version_text(format_version([])) == "unknown"


def test_each_log_input_has_its_own_missing_text() -> None:
    names = [entry.name for entry in LOG_INPUTS]
    assert len(names) == len(set(names))
    assert "no load-begin avail reading" in missing_reason("log.load_begin_avail_gib", None)
    assert missing_reason("log.context_len", None).startswith("needs log.context_len (no summary")


def test_a_formula_over_a_log_input_reads_it_with_its_source_line() -> None:
    log = _small_log()
    formula = parse_formulas(
        '[[formula]]\nid = "probe"\nlabel = "probe"\ngroup = "workspace"\n'
        'interval = "load_end"\nexpression = "log.load_begin_avail_bytes // 1000"\n'
        'text = "avail / 1000"\nwhy = "a probe"\ninformational = true\n',
        "probe.toml",
    )
    ledger = ledger_of(log, formulas=formula)
    probe = ledger.row("probe")
    assert probe is not None and probe.bytes == round(80 * 2**30) // 1000
    assert [s.line for s in probe.evidence.sources] == [1]


def test_the_docs_list_every_log_input() -> None:
    docs = (PROJECT_ROOT / "docs" / "ledger-engine.md").read_text(encoding="utf-8")
    missing = [entry.name for entry in LOG_INPUTS if f"`{entry.name}`" not in docs]
    assert not missing, f"docs/ledger-engine.md does not list log.{missing}"
