"""JSON rendering of a ledger diff: the full, versioned `LedgerDiff` model."""

from __future__ import annotations

from memledger.diffing import LedgerDiff, SortKey, sort_rows


def render_diff_json(diff: LedgerDiff, *, sort: SortKey = SortKey.DELTA) -> str:
    """Every row (unchanged ones too), sorted by `sort`, as indented JSON."""
    ordered = diff.model_copy(update={"rows": sort_rows(diff.rows, sort)})
    return ordered.model_dump_json(indent=2) + "\n"
