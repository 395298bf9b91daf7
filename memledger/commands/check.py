"""`memledger check`: memory budgets for CI, with exit codes that say what went wrong."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from memledger.app.check import run_check
from memledger.app.emit import emit, terminal_for
from memledger.app.options import CheckOptions, LoadOptions
from memledger.commands.options import (
    CHECK_FULL_HELP,
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
from memledger.errors import exit_codes_help
from memledger.render.check import CHECK_MAX_CHARS, FORMATS

HELP_EPILOG = (
    exit_codes_help(check=True)
    + """
\b
max_increase_pct is (head - base) / base x 100 against --baseline; an entry with both
max_increase and max_increase_pct is breached only when BOTH are exceeded.
A --baseline file that does not exist means "no comparison" (a warning in every format), not
an error; --require-baseline makes it one (exit 3)."""
)


@click.command("check", epilog=HELP_EPILOG)
@click.argument("logs", nargs=-1, required=True, metavar="LOG...")
@click.option(
    "--budget",
    "budget",
    metavar="FILE",
    help="Budget TOML file (default: ./memledger.toml, else [tool.memledger] in ./pyproject.toml).",
)
@click.option(
    "--baseline",
    metavar="BASE.log|BASE.json",
    help="Log or saved ledger of the base branch, for max_increase / max_increase_pct.",
)
@click.option(
    "--require-baseline",
    is_flag=True,
    help="A missing --baseline (not given, or not found) is an error (exit 3), not a skip.",
)
@click.option("--strict", is_flag=True, help="Warn-level breaches fail too (exit 1).")
@format_option(FORMATS)
@full_option(help=CHECK_FULL_HELP)
@load_options(
    rank_option(help="Rank to check, in every LOG (default: rank 0)."),
    startup_option(help="Which startup of each file, 0-based (default: the last)."),
    model_config_option(),
    formulas_option(
        help="Formulas TOML with named fixed costs, added to the packaged set for every LOG and "
        "the baseline (repeatable; an entry with an existing id replaces it)."
    ),
    grammar_option(
        help="Extra .lark grammar for fork-specific lines, for every LOG and the baseline "
        "(repeatable; a saved ledger keeps the rows it was built with)."
    ),
    list_skipped_option(),
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=1000),
    metavar="N",
    default=CHECK_MAX_CHARS,
    show_default=True,
    help="markdown: size cap (GitHub refuses comments over 65,536 characters); passes and the "
    "not-compared list give way first, then breach rows; the headline is never cut.",
)
@output_option(help="Write the report to FILE instead of stdout.")
@click.option(
    "--today",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    metavar="YYYY-MM-DD",
    help="Evaluate waivers as of this date (default: today).",
)
def check_command(
    logs: tuple[str, ...],
    budget: str | None,
    baseline: str | None,
    require_baseline: bool,
    strict: bool,
    fmt: str,
    load: LoadOptions,
    full: bool,
    max_chars: int | None,
    output: Path | None,
    today: datetime | None,
) -> int:
    """Check LOGs (or saved ledger JSONs) against memory budgets.

    A folder stands for the logs below it: its *.log, *.txt and *.out files, each also .gz, in
    sorted path order (other files and hidden, virtualenv and cache folders are skipped and
    counted on stderr). @FILE stands for the paths
    FILE lists, one per line (blank lines and # comments skipped; ./@name for a log named so)."""
    return emit(
        run_check(
            CheckOptions(
                logs=logs,
                budget=budget,
                baseline=baseline,
                load=load,
                strict=strict,
                require_baseline=require_baseline,
                today=None if today is None else today.date(),
                fmt=fmt,
                full=full,
                max_chars=max_chars,
                terminal=terminal_for(output),
            )
        ),
        output,
    )
