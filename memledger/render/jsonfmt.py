"""The JSON renderer: the full, typed ledger (versioned by `schema_version`)."""

from __future__ import annotations

from memledger.model.ledger import Ledger
from memledger.record import to_json


def render_json(ledger: Ledger) -> str:
    """The ledger model as indented JSON, with interval `from`/`to` aliases."""
    return to_json(ledger, indent=2, by_alias=True) + "\n"
