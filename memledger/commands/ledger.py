"""`memledger ledger LOG`: where every GiB of one rank's GPU went."""

from __future__ import annotations

from pathlib import Path

import click

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
@click.option("--rank", metavar="RANK", help="Rank to account for (default: rank 0).")
@click.option(
    "--startup",
    type=int,
    metavar="N",
    help="Which startup of the file, 0-based (default: the last).",
)
@click.option(
    "--model-config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Hugging Face config.json with the model dimensions some formulas need.",
)
@click.option(
    "--explain",
    metavar="ROW",
    help="Print the arithmetic and source lines behind one row (or a group, or an interval).",
)
@click.option(
    "--grammar",
    "grammars",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Extra .lark grammar for fork-specific lines (repeatable).",
)
@click.option(
    "--formulas",
    "formula_files",
    multiple=True,
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Formulas TOML with named fixed costs, added to the packaged set (repeatable; an entry "
    "with an existing id replaces it).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to FILE instead of stdout.",
)
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
