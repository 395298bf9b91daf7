"""The JSON renderer: the full, typed ledger (versioned by `schema_version`)."""

from __future__ import annotations

from memledger.model.ledger import Ledger


def render_json(ledger: Ledger) -> str:
    """The ledger model as indented JSON, with interval `from`/`to` aliases."""
    return ledger.model_dump_json(indent=2, by_alias=True) + "\n"
