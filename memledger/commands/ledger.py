"""`memledger ledger LOG`: where every GiB of one rank's GPU went."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.app.emit import emit, terminal_for
from memledger.app.ledger import run_ledger
from memledger.app.options import LedgerOptions, LoadOptions
from memledger.commands.options import (
    LEDGER_FULL_HELP,
    format_option,
    formulas_option,
    full_option,
    grammar_option,
    list_skipped_option,
    load_options,
    model_config_option,
    output_option,
    rank_option,
    startup_option,
)
from memledger.render import FORMATS


@click.command("ledger")
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@format_option(FORMATS)
@full_option(help=LEDGER_FULL_HELP)
@load_options(
    rank_option(help="Rank to account for (default: rank 0)."),
    startup_option(),
    model_config_option(),
    grammar_option(),
    formulas_option(),
    list_skipped_option(),
)
@click.option(
    "--explain",
    metavar="ROW",
    help="Print the arithmetic and source lines behind one row (or a group, or an interval).",
)
@output_option()
def ledger_command(
    logs: tuple[str, ...],
    fmt: str,
    load: LoadOptions,
    full: bool,
    explain: str | None,
    output: Path | None,
) -> int:
    """Account for every GiB of one rank's GPU at one startup of LOG.

    LOG is an SGLang server log (`-` for stdin; .gz works) or a ledger saved with
    `--format json`. Rows are logged (file:line), derived (a formula) or residual; they sum to
    the usable memory within the log's printing precision.

    Several LOGs, a folder (the *.log, *.txt and *.out files below it, each also .gz, in
    sorted path order; other files and hidden, virtualenv and cache folders are skipped and
    counted on stderr) or @FILE (the paths FILE lists, one per line) give one summary line per
    log (text, csv, or json as JSON Lines), read on up to two cores.
    """
    return emit(
        run_ledger(
            LedgerOptions(
                log=logs[0],
                more_logs=logs[1:],
                load=load,
                fmt=fmt,
                full=full,
                explain=explain,
                terminal=terminal_for(output),
            )
        ),
        output,
    )
