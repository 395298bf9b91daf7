"""Every real log: `facts_of(parse_log(...))` equals the hand-read truth.jsonl, key by key."""

from __future__ import annotations

from typing import Any

import pytest

from memledger.input.facts import FACT_KEYS, facts_of
from memledger.input.parsing import parse_log
from tests.conftest import REAL_LOGS, load_truth, real_log_paths

TRUTH = load_truth()


@pytest.mark.parametrize("entry", TRUTH, ids=[entry["file"] for entry in TRUTH])
def test_facts_equal_truth(entry: dict[str, Any]) -> None:
    facts = facts_of(parse_log(REAL_LOGS / entry["file"]))
    expected = entry["facts"]
    assert list(facts) == list(FACT_KEYS)
    assert set(facts) == set(expected)
    mismatches = {
        key: {"parsed": facts[key], "truth": value}
        for key, value in expected.items()
        if facts[key] != value or type(facts[key]) is not type(value)
    }
    assert mismatches == {}


def test_every_truth_entry_is_a_log_on_disk() -> None:
    # Logs on disk without a truth entry are still run by every real-log test (parse, ledger,
    # balance, diff): a folder with more logs than truth.jsonl lists must not fail the suite.
    listed = {entry["file"] for entry in TRUTH}
    on_disk = {path.relative_to(REAL_LOGS).as_posix() for path in real_log_paths()}
    assert listed <= on_disk, sorted(listed - on_disk)
    assert len(listed) >= 27


@pytest.mark.parametrize("entry", TRUTH, ids=[entry["file"] for entry in TRUTH])
def test_python_scanner_equals_grep_prefilter(
    entry: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the grep pipeline and the built-in scanner must keep exactly the same lines (line by line:
    # tests/input/test_scan.py)
    path = REAL_LOGS / entry["file"]
    monkeypatch.setenv("MEMLEDGER_PREFILTER", "grep")
    with_grep = parse_log(path)
    monkeypatch.setenv("MEMLEDGER_PREFILTER", "python")
    with_python = parse_log(path)
    assert with_python.startup == with_grep.startup
    assert with_python.n_lines == with_grep.n_lines
    assert with_python.n_lines == path.read_bytes().count(b"\n") + (
        0 if path.read_bytes().endswith(b"\n") else 1
    )
