"""The markdown renderer: the same report as text, as GitHub-flavoured markdown."""

from __future__ import annotations

from memledger.ledger_model import Ledger
from memledger.render.rows import headline, ledger_tables
from memledger.render.tables import github_table, markdown_cell


def render_markdown(ledger: Ledger) -> str:
    """Headline as a list, then one `###` section per table, then notes."""
    head = headline(ledger)
    parts = [f"## {markdown_cell(head.title)}", ""]
    parts += [f"- **{label}**: {markdown_cell(value)}" for label, value in head.facts]
    for table in ledger_tables(ledger):
        parts += ["", f"### {table.title}", "", github_table(table)]
        if table.footnote:
            parts += ["", markdown_cell(table.footnote)]
    if ledger.notes:
        parts += ["", "### Notes", ""]
        parts += [f"- {markdown_cell(note)}" for note in ledger.notes]
    return "\n".join(parts) + "\n"
