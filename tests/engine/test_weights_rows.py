"""The samples' weights rows: one resident row in the partition, peak and release beside it.

Every expected figure is arithmetic on numbers printed in the sample logs (quoted per case), so
these tests do not copy the engine's output.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from memledger.compare.compute import diff_ledgers
from memledger.model.ledger import Ledger, RowGroup
from memledger.render import render_ledger
from memledger.units import GIB, MIB, parse_size
from tests.conftest import SAMPLES, ledger_for
from tests.engine.helpers import assert_intervals_add_up


def gb(text: str) -> int:
    return parse_size(text, "GB").bytes


@dataclass(frozen=True)
class Printed:
    """The lines behind one sample's target weights (line numbers in the sample log)."""

    log: str
    usage: str
    """`Load weight end. ... mem usage=`"""
    staging_mib: float
    """`FlatAGStagingPool allocated: role=target, ... total=` (MiB)"""
    load_end_avail: str
    after_avail: str
    """`Load weight begin. avail mem=` of the draft, the next reading (the avail rose)."""
    lines: tuple[int, int, int, int]
    """load begin, staging pool, load end, draft load begin."""


DP16 = Printed("dp16.log", "145.20", 1196.0, "30.90", "78.60", (40, 67, 76, 86))
DP2 = Printed("dp2.log", "109.91", 350.0, "65.55", "80.15", (56, 82, 89, 96))


def ledger_of(name: str) -> Ledger:
    return ledger_for(SAMPLES / name, model_config=SAMPLES / "k3-config.json")


@pytest.mark.parametrize("printed", [DP16, DP2], ids=lambda p: p.log)
def test_weights_row_is_the_resident_weights(printed: Printed) -> None:
    ledger = ledger_of(printed.log)
    released = gb(printed.after_avail) - gb(printed.load_end_avail)
    staging = round(printed.staging_mib * MIB)
    weights = ledger.row("weights")
    assert weights is not None and weights.in_partition
    assert weights.bytes == gb(printed.usage) - staging - released
    assert weights.group == RowGroup.WEIGHTS
    assert weights.interval_parts == {
        "load_begin->load_end": gb(printed.usage) - staging,
        "load_end->draft_load_begin": -released,
    }
    assert [source.line for source in weights.evidence.sources] == list(printed.lines)
    formula = weights.evidence.formula or ""
    path = str(SAMPLES / printed.log)
    begin, staging_line, end, after = printed.lines
    assert formula.startswith(f"load-end usage {printed.usage} GiB ({path}:{end}) - staging ")
    assert f"({path}:{staging_line})" in formula
    assert formula.endswith(
        f"- released {released / GIB:.2f} GiB (avail rise load_end -> draft_load_begin, "
        f"{path}:{end}, {path}:{after})"
    )
    peak, given_back = ledger.row("weights_load_peak"), ledger.row("weights_released")
    assert peak is not None and not peak.in_partition and peak.bytes == gb(printed.usage)
    assert given_back is not None and not given_back.in_partition
    assert given_back.bytes == released
    # No weights row is negative any more, and each interval still adds up.
    assert all((r.bytes or 0) >= 0 for r in ledger.rows if r.group == RowGroup.WEIGHTS)
    assert_intervals_add_up(ledger)
    assert ledger.usable_bytes is not None
    assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes


@pytest.mark.parametrize("printed", [DP16, DP2], ids=lambda p: p.log)
def test_summary_keys_keep_their_meaning(printed: Printed) -> None:
    summary = ledger_of(printed.log).summary
    released = gb(printed.after_avail) - gb(printed.load_end_avail)
    assert summary.weights_load_peak == gb(printed.usage)
    assert summary.weights_released == released
    assert summary.weights_resident == gb(printed.usage) - released


def test_the_release_interval_keeps_its_negative_drop_explained_by_the_release_part() -> None:
    ledger = ledger_of(DP16.log)
    rise = next(i for i in ledger.intervals if i.from_id == "load_end")
    assert rise.to_id == "draft_load_begin"
    assert rise.drop_bytes == rise.logged_bytes == gb("30.90") - gb("78.60")
    assert rise.named_bytes == 0 and rise.unexplained_bytes == 0
    text = render_ledger(ledger, "text", explain="load_end->draft_load_begin")
    assert "weights -47.70 (its part of 96.33)" in text
    # The informational release row is not listed as if it were the logged amount.
    assert "weights_released" not in text


def test_explain_weights_shows_both_intervals() -> None:
    text = render_ledger(ledger_of(DP16.log), "text", explain="weights")
    assert "Interval load_begin -> load_end (GiB)" in text
    assert "weights 144.03 (its part of 96.33), weight_staging 1.17" in text
    assert "Interval load_end -> draft_load_begin (GiB)" in text


def test_diff_weights_category_has_one_weights_row() -> None:
    diff = diff_ledgers(ledger_of(DP16.log), ledger_of(DP2.log))
    category = next(c for c in diff.state_pool.categories if c.id == "weights_staging")
    by_id = {row.id: row.delta_bytes for row in category.rows}
    assert "weights_released" not in by_id and "weights_load_peak" not in by_id
    dp16_resident = gb("145.20") - round(1196.0 * MIB) - (gb("78.60") - gb("30.90"))
    dp2_resident = gb("109.91") - round(350.0 * MIB) - (gb("80.15") - gb("65.55"))
    assert by_id["weights"] == dp2_resident - dp16_resident
    assert round(by_id["weights"] / GIB, 2) == -1.36
    assert sum(by_id.values()) == category.delta_bytes
