"""The text renderer: a terminal report of a ledger (tabulate `simple`).

By default the verdict and the rows that matter (`memledger.render.brief`); with `full`, every
table: rows, checkpoints, intervals, summary and the KV-sizing arithmetic."""

from __future__ import annotations

from memledger.model.ledger import Ledger
from memledger.render.brief import (
    BRIEF_FOOTER,
    groups_table,
    pool_line,
    split_line,
    unexplained_lines,
)
from memledger.render.rows import headline, ledger_tables
from memledger.render.tables import Table, text_table
from memledger.render.terminal import PLAIN, Terminal, fit_lines, shorten_long_tokens


def _section(table: Table, width: int) -> list[str]:
    parts = ["", table.title, "-" * min(len(table.title), width), text_table(table, width=width)]
    return parts + ([table.footnote] if table.footnote else [])


def render_text(ledger: Ledger, terminal: Terminal = PLAIN, *, full: bool = False) -> str:
    """Headline facts (the verdict), then the groups largest first with the usable split, the
    state pool's figures, notable unexplained rows and the sizing verdict, then notes; with
    `full`, the rows, checkpoints, intervals, summary and sizing tables instead. Fitted to the
    terminal's width."""
    head = headline(ledger)
    width = max(len(label) for label, _ in head.facts)
    parts = [head.title, "=" * min(len(head.title), terminal.width)]
    parts += [f"{label + ':':<{width + 1}} {value}" for label, value in head.facts]
    if full:
        from memledger.render.timeline_text import ledger_timeline  # --full only

        for table in ledger_tables(ledger):
            parts += _section(table, terminal.width)
            if table.title == "Checkpoints":
                parts += ["", *ledger_timeline(ledger, terminal.width)]
    else:
        parts += _section(groups_table(ledger), terminal.width)
        parts.append(split_line(ledger))
        pool = pool_line(ledger)
        parts += [pool] if pool else []
        parts += unexplained_lines(ledger)
        if ledger.sizing is not None:
            from memledger.render.sizing import sizing_table  # the sizing section renders itself

            parts += ["", sizing_table(ledger.sizing).title]
    if ledger.notes:
        parts += ["", "Notes", "-----"]
        # "- " and the wrapped lines' indent take 2 columns; a longer token is cut in the middle
        parts += [f"- {shorten_long_tokens(note, terminal.width - 2)}" for note in ledger.notes]
    if not full:
        parts += ["", BRIEF_FOOTER]
    return fit_lines("\n".join(parts), terminal.width) + "\n"
