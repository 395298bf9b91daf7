"""`memledger parse LOG`: the memory events of one rank at one startup, with the log's facts."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.app.emit import emit, terminal_for
from memledger.app.options import LoadOptions, ParseOptions
from memledger.app.parse import run_parse
from memledger.commands.options import (
    format_option,
    grammar_option,
    load_options,
    output_option,
    rank_option,
    startup_option,
)
from memledger.render.parse import FORMATS


@click.command("parse")
@click.argument("log", metavar="LOG")
@format_option(FORMATS)
@load_options(
    rank_option(help='Rank tag, e.g. TP3 or "DP1 TP8 EP8" (default: rank 0).'),
    startup_option(
        help="Which startup of the file, 0-based; negative counts from the end (default: the last)."
    ),
    grammar_option(),
)
@click.option("--all-ranks", is_flag=True, help="Also list every rank seen with its key values.")
@click.option(
    "--coverage",
    is_flag=True,
    help="List the memory-looking lines of this rank that were not recognised.",
)
@output_option()
def parse_command(
    log: str,
    fmt: str,
    load: LoadOptions,
    all_ranks: bool,
    coverage: bool,
    output: Path | None,
) -> int:
    """Parse LOG (an SGLang server log; `-` for stdin; .gz works) into memory events.

    Shows the startup count, the selected rank, the outcome (ready / oom / crash / truncated,
    with the deciding line) and how many memory-looking lines were not recognised.
    """
    return emit(
        run_parse(
            ParseOptions(
                log=log,
                load=load,
                fmt=fmt,
                all_ranks=all_ranks,
                coverage=coverage,
                terminal=terminal_for(output),
            )
        ),
        output,
    )
