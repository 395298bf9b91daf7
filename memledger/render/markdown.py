"""The markdown renderer: the same report as text, as GitHub-flavoured markdown."""

from __future__ import annotations

from memledger.model.ledger import Ledger
from memledger.render.rows import headline, ledger_tables
from memledger.render.tables import github_table, inert_block_start, markdown_cell


def render_markdown(ledger: Ledger) -> str:
    """Headline as a list, then one `###` section per table, then notes."""
    head = headline(ledger)
    parts = [f"## {markdown_cell(head.title)}", ""]
    parts += [f"- **{label}**: {markdown_cell(value)}" for label, value in head.facts]
    parts += pictures(ledger)
    for table in ledger_tables(ledger, name_the_log=True):
        parts += ["", f"### {table.title}", "", github_table(table)]
        if table.footnote:
            parts += ["", *footnote_lines(table.footnote)]
    if ledger.notes:
        parts += ["", "### Notes", ""]
        parts += [f"- {inert_block_start(markdown_cell(note))}" for note in ledger.notes]
    return "\n".join(parts) + "\n"


def pictures(ledger: Ledger) -> list[str]:
    """The startup timeline and where the memory went, as Mermaid charts with their tables."""
    from memledger.render.mermaid import pictures_markdown
    from memledger.render.timeline import bar_of, timeline_of

    name = ledger.source.path.rsplit("/", 1)[-1]
    shown, behind = pictures_markdown(
        [timeline_of(ledger, name)], [bar_of(ledger, name)], [name], name
    )
    parts = ["", "### Pictures", ""]
    for block in shown:
        parts += [block, ""]
    parts += ["<details><summary>The charts' numbers</summary>", ""]
    for block in behind:
        parts += [block, ""]
    return [*parts, "</details>"]


def footnote_lines(footnote: str) -> list[str]:
    """A table footnote as markdown: one paragraph, or a list when it has several parts.

    In the text footnote a line starts a part and an indented line continues it (wrapping);
    markdown would run the parts together into one paragraph, so each becomes a list item.
    """
    parts: list[str] = []
    for line in footnote.splitlines():
        if line[:1].isspace() and parts:
            parts[-1] += " " + line.strip()
        elif line.strip():
            parts.append(line.strip())

    if len(parts) <= 1:
        return [inert_block_start(markdown_cell(" ".join(parts)))]
    return [f"- {inert_block_start(markdown_cell(part))}" for part in parts]


# What opens a block at the start of a paragraph or list item: a list marker, heading,
# quote, setext underline or ordered-list number (markdown_cell already escapes `*`).
