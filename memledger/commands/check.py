"""`memledger check`: memory budgets for CI, with exit codes that say what went wrong."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime
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

FORMATS = ("text", "json", "junit", "github", "markdown")
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"

HELP_EPILOG = """\b
Exit codes:
  0  every budget passed (warn-level and waived breaches allowed)
  1  a fail-level breach (or any warn-level breach with --strict)
  2  usage or budget-file error (file:line)
  3  a log not understood, or a budgeted item this log cannot provide
\b
max_increase_pct is (head - base) / base x 100 against --baseline; an entry with both
max_increase and max_increase_pct is breached only when BOTH are exceeded.
A --baseline file that does not exist means "no comparison" (noted), not an error."""


@dataclass(frozen=True)
class CheckOptions:
    """The command line of `memledger check`, normalised."""

    logs: tuple[str, ...]
    budget: str | None
    baseline: str | None
    strict: bool
    fmt: str
    rank: str | None
    startup: int | None
    model_config: Path | None
    output: Path | None
    today: date | None
    formula_files: tuple[Path, ...] = ()
    grammars: tuple[Path, ...] = ()


def run_check(options: CheckOptions) -> int:
    """Load, check, render, write (and append the GitHub step summary); return the exit code."""
    from memledger.api import check
    from memledger.pipeline import write_output
    from memledger.render.check import render_check, render_markdown

    report = check(
        list(options.logs),
        options.budget,
        options.baseline,
        strict=options.strict,
        today=options.today,
        rank=options.rank,
        startup=options.startup,
        model_config=options.model_config,
        formula_files=options.formula_files,
        extra_grammars=options.grammars,
    )
    write_output(render_check(report, options.fmt), options.output)
    summary_path = os.environ.get(STEP_SUMMARY_ENV)
    if options.fmt == "github" and summary_path:
        append_step_summary(Path(summary_path), render_markdown(report))
    return report.exit_code


def append_step_summary(path: Path, markdown: str) -> None:
    """Append the markdown report to the job summary file GitHub Actions renders."""
    from memledger.errors import ConfigError

    try:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    except OSError as exc:
        raise ConfigError(
            f"cannot append to ${STEP_SUMMARY_ENV}: {exc.strerror or exc}", path=str(path)
        ) from None


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
@click.option("--strict", is_flag=True, help="Warn-level breaches fail too (exit 1).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help=f"github: workflow annotations, plus the markdown report appended to ${STEP_SUMMARY_ENV}.",
)
@rank_option(help="Rank to check, in every LOG (default: rank 0).")
@startup_option(help="Which startup of each file, 0-based (default: the last).")
@model_config_option()
@formulas_option(
    help="Formulas TOML with named fixed costs, added to the packaged set for every LOG and the "
    "baseline (repeatable; an entry with an existing id replaces it)."
)
@grammar_option(
    help="Extra .lark grammar for fork-specific lines, for every LOG and the baseline "
    "(repeatable; a saved ledger keeps the rows it was built with)."
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
    strict: bool,
    fmt: str,
    rank: str | None,
    startup: int | None,
    model_config: Path | None,
    formula_files: tuple[Path, ...],
    grammars: tuple[Path, ...],
    output: Path | None,
    today: datetime | None,
) -> int:
    """Check LOGs (or saved ledger JSONs) against memory budgets."""
    return run_check(
        CheckOptions(
            logs=logs,
            budget=budget,
            baseline=baseline,
            strict=strict,
            fmt=fmt,
            rank=rank,
            startup=startup,
            model_config=model_config,
            output=output,
            today=None if today is None else today.date(),
            formula_files=formula_files,
            grammars=grammars,
        )
    )
