"""The text renderer: a terminal report of a ledger (tabulate `simple`)."""

from __future__ import annotations

from memledger.ledger_model import Ledger
from memledger.render.rows import headline, ledger_tables
from memledger.render.tables import text_table


def render_text(ledger: Ledger) -> str:
    """Headline facts, then the rows, checkpoints, intervals and summary tables, then notes."""
    head = headline(ledger)
    width = max(len(label) for label, _ in head.facts)
    parts = [head.title, "=" * len(head.title)]
    parts += [f"{label + ':':<{width + 1}} {value}" for label, value in head.facts]
    for table in ledger_tables(ledger):
        parts += ["", table.title, "-" * len(table.title), text_table(table)]
        if table.footnote:
            parts.append(table.footnote)
    if ledger.notes:
        parts += ["", "Notes", "-----"]
        parts += [f"- {note}" for note in ledger.notes]
    return "\n".join(parts) + "\n"
