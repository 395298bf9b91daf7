"""The CSV renderer: one record per ledger row, exact bytes."""

from __future__ import annotations

from memledger.model.ledger import Ledger
from memledger.render.escape import write_csv
from memledger.render.rows import CSV_HEADERS, csv_records


def render_csv(ledger: Ledger) -> str:
    """A header line and one line per row (minimal quoting, `\\n` line ends)."""
    # Cells are single-line so that any CSV reader (not only RFC 4180 ones) splits rows right.
    return write_csv(
        CSV_HEADERS, ([_one_line(cell) for cell in record] for record in csv_records(ledger))
    )


def _one_line(cell: str) -> str:
    return cell.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
