"""JSON rendering of a ledger diff: the full, versioned `LedgerDiff` model, with the state-pool
sentences the text and markdown renderers print (prose is rendering, not part of the model)."""

from __future__ import annotations

from memledger.compare.compute import sort_rows
from memledger.compare.models import LedgerDiff, SortKey, StatePoolAnalysis
from memledger.record import field_values, record, to_json
from memledger.render.diff_prose import state_pool_statement, usable_note


@record
class StatePoolDocument(StatePoolAnalysis):
    """The state-pool analysis as `diff --format json` writes it."""

    statement: str
    """The article's sentence: which side's pool is larger, by how much, and why."""
    usable_note: str | None = None
    """When usable memory differs: how the state-pool delta still closes."""


@record
class DiffDocument(LedgerDiff):
    """The document `memledger diff --format json` writes (`memledger schema diff`)."""

    state_pool: StatePoolDocument
    verdict: str = ""
    """The one-line verdict the text and markdown formats open with."""


def diff_document(diff: LedgerDiff, *, sort: SortKey = SortKey.DELTA) -> DiffDocument:
    """The diff with every row sorted by `sort` and the state-pool sentences."""
    state_pool = StatePoolDocument(
        **field_values(diff.state_pool),
        statement=state_pool_statement(diff),
        usable_note=usable_note(diff),
    )
    from memledger.render.diff_common import headline

    fields = {**field_values(diff), "rows": sort_rows(diff.rows, sort), "state_pool": state_pool}
    return DiffDocument(**fields, verdict=headline(diff))


def render_diff_json(diff: LedgerDiff, *, sort: SortKey = SortKey.DELTA) -> str:
    """Every row (unchanged ones too), sorted by `sort`, as indented JSON; `upgrade` only when
    the releases or the sizing server_args differ."""
    exclude = {name for name in ("upgrade", "engines") if getattr(diff, name) is None} or None
    return to_json(diff_document(diff, sort=sort), indent=2, exclude=exclude) + "\n"
