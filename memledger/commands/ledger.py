"""`memledger ledger LOG`: where every GiB of one rank's GPU went."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.commands.options import (
    formulas_option,
    grammar_option,
    model_config_option,
    output_option,
    rank_option,
    startup_option,
)
from memledger.pipeline import ledger_report, write_output
from memledger.render import OutputFormat


@click.command("ledger")
@click.argument("log", metavar="LOG")
@click.option(
    "--format",
    "fmt",
    type=click.Choice([fmt.value for fmt in OutputFormat]),
    default=OutputFormat.TEXT.value,
    show_default=True,
    help="text tables, GitHub markdown, the full JSON ledger, or one CSV record per row.",
)
@rank_option(help="Rank to account for (default: rank 0).")
@startup_option()
@model_config_option()
@click.option(
    "--explain",
    metavar="ROW",
    help="Print the arithmetic and source lines behind one row (or a group, or an interval).",
)
@grammar_option()
@formulas_option()
@output_option()
def ledger_command(
    log: str,
    fmt: str,
    rank: str | None,
    startup: int | None,
    model_config: Path | None,
    explain: str | None,
    grammars: tuple[Path, ...],
    formula_files: tuple[Path, ...],
    output: Path | None,
) -> None:
    """Account for every GiB of one rank's GPU at one startup of LOG.

    LOG is an SGLang server log (`-` for stdin) or a ledger saved with `--format json`.
    Rows are logged (file:line), derived (a formula) or residual; they sum to the usable memory
    within the log's printing precision.
    """
    report = ledger_report(
        log,
        fmt=fmt,
        explain=explain,
        rank=rank,
        startup=startup,
        model_config_path=model_config,
        extra_grammars=grammars,
        formula_files=formula_files,
    )
    write_output(report, output)
