"""The text renderer: a terminal report of a ledger (tabulate `simple`)."""

from __future__ import annotations

from memledger.ledger_model import Ledger
from memledger.render.rows import headline, ledger_tables
from memledger.render.tables import text_table
from memledger.render.terminal import PLAIN, Terminal, fit_lines


def render_text(ledger: Ledger, terminal: Terminal = PLAIN) -> str:
    """Headline facts, then the rows, checkpoints, intervals and summary tables, then notes;
    fitted to the terminal's width, unexplained rows coloured on a colour terminal."""
    head = headline(ledger)
    width = max(len(label) for label, _ in head.facts)
    parts = [head.title, "=" * min(len(head.title), terminal.width)]
    parts += [f"{label + ':':<{width + 1}} {value}" for label, value in head.facts]
    for table in ledger_tables(ledger):
        body = text_table(table, width=terminal.width)
        parts += ["", table.title, "-" * min(len(table.title), terminal.width), body]
        if table.footnote:
            parts.append(table.footnote)
    if ledger.notes:
        parts += ["", "Notes", "-----"]
        parts += [f"- {note}" for note in ledger.notes]
    return fit_lines("\n".join(parts), terminal.width) + "\n"
