"""Every real log yields a ledger that balances within its printing precision, or says why not.

The expected reason for each log is derived independently from the hand-checked facts in
truth.jsonl: no avail reading at all, or none at load begin that a load-end usage could recover.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memledger.model.ledger import Ledger, RowKind
from memledger.units import GIB
from tests.conftest import REAL_LOGS, ledger_for, load_truth, real_log_paths
from tests.engine.helpers import assert_intervals_add_up

CANNOT_BALANCE = "cannot balance: "
AVAIL_FACTS = (
    "load_begin_avail",
    "load_end_avail",
    "draft_load_end_avail",
    "mempool_end_avail",
    "capture_begin_avail",
    "capture_end_avail",
)


def reason_of(ledger: Ledger) -> str | None:
    """The engine's stated reason for not balancing (the first part of its note)."""
    for note in ledger.notes:
        if note.startswith(CANNOT_BALANCE):
            return note.removeprefix(CANNOT_BALANCE).split(" (")[0].split(":")[0]
    return None


def expected_reason(facts: dict[str, Any]) -> str | None:
    if facts["load_begin_avail"] is not None:
        return None
    if facts["load_end_avail"] is not None and facts["load_end_mem_usage"] is not None:
        return None  # load begin = load-end avail + usage
    if all(facts[key] is None for key in AVAIL_FACTS):
        return "no avail reading in this log"
    return "no load-begin avail reading"


@pytest.mark.parametrize("path", real_log_paths(), ids=lambda p: p.name)
def test_real_log_balances_or_says_why(path: Path) -> None:
    ledger = ledger_for(path)
    partition = [r for r in ledger.rows if r.in_partition]
    assert all(r.bytes is not None for r in partition)
    if ledger.usable_bytes is None:
        assert reason_of(ledger) is not None, ledger.notes
    else:
        assert reason_of(ledger) is None
        assert (
            sum(r.bytes or 0 for r in partition) == ledger.usable_bytes + ledger.balance_error_bytes
        )
        assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes
    # No hidden negatives, no silent unknowns, partial ledgers say where they stopped.
    for r in ledger.rows:
        if r.bytes is not None and r.bytes < 0 and r.in_partition:
            assert r.evidence.note and "negative" in r.evidence.note, r.id
        if r.kind == RowKind.UNKNOWN:
            assert r.bytes is None and not r.in_partition and r.evidence.note, r.id
    assert (ledger.stopped_at is None) == (ledger.outcome == "ready")
    assert len({r.id for r in ledger.rows}) == len(ledger.rows)
    assert_intervals_add_up(ledger)


def test_reasons_match_the_hand_checked_facts() -> None:
    truth = {entry["file"]: entry["facts"] for entry in load_truth()}
    measured: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    for file, facts in truth.items():
        ledger = ledger_for(REAL_LOGS / file)
        assert reason_of(ledger) == expected_reason(facts), file
        measured[reason_of(ledger) or "balances"] += 1
        expected[expected_reason(facts) or "balances"] += 1
    assert measured == expected
    assert measured["balances"] >= 20  # most real logs give a complete account


def test_worst_balance_error_is_a_few_printed_hundredths() -> None:
    errors = [
        abs(ledger_for(path).balance_error_bytes)
        for path in real_log_paths()
        if ledger_for(path).usable_bytes is not None
    ]
    # Each usage line can disagree with its two avail readings by 0.015 GiB of rounding.
    assert max(errors) / GIB <= 0.05
