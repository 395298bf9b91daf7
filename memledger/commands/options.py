"""Options several commands share: one declaration each, so names, types and metavars agree.

Every file option is a `pathlib.Path` (`-` still means stdout for `-o`). Help texts are
parameters only where a command's wording genuinely differs (e.g. what `--rank` applies to).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import click

from memledger.app.options import LoadOptions

FC = TypeVar("FC", bound=Callable[..., Any] | click.Command)
R = TypeVar("R")

FILE = click.Path(path_type=Path)
"""A file option's type: a path (not checked to exist: the loader says what is wrong)."""

STARTUP_HELP = "Which startup of the file, 0-based (default: the last)."
MODEL_CONFIG_HELP = "Hugging Face config.json with the model dimensions some formulas need."
GRAMMAR_HELP = "Extra .lark grammar for fork-specific lines (repeatable)."
FORMULAS_HELP = (
    "Formulas TOML with named fixed costs, added to the packaged set (repeatable; an entry "
    "with an existing id replaces it)."
)
OUTPUT_HELP = "Write to FILE instead of stdout."


class FormatChoices(Protocol):
    """What `--format` needs of a command's format registry (`memledger.render.formats.Formats`)."""

    @property
    def names(self) -> list[str]: ...

    @property
    def help(self) -> str: ...


def format_option(formats: FormatChoices) -> Callable[[FC], FC]:
    """`--format`: the choices and the help come from the command's format registry."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(formats.names),
        default="text",
        show_default=True,
        help=formats.help,
    )


def rank_option(*param_decls: str, help: str) -> Callable[[FC], FC]:
    """`--rank RANK` (or a per-side name such as `--base-rank`): a rank tag as text."""
    return click.option(*(param_decls or ("--rank",)), metavar="RANK", help=help)


def startup_option(*param_decls: str, help: str = STARTUP_HELP) -> Callable[[FC], FC]:
    """`--startup N` (or a per-side name such as `--base-startup`): which startup, 0-based."""
    return click.option(*(param_decls or ("--startup",)), type=int, metavar="N", help=help)


def model_config_option(*param_decls: str, help: str = MODEL_CONFIG_HELP) -> Callable[[FC], FC]:
    """`--model-config FILE` (or a per-side name): a Hugging Face config.json."""
    return click.option(*(param_decls or ("--model-config",)), type=FILE, metavar="FILE", help=help)


def grammar_option(*, help: str = GRAMMAR_HELP) -> Callable[[FC], FC]:
    """`--grammar FILE` (repeatable) -> `grammars: tuple[Path, ...]`."""
    return click.option(
        "--grammar", "grammars", multiple=True, type=FILE, metavar="FILE", help=help
    )


def formulas_option(*, help: str = FORMULAS_HELP) -> Callable[[FC], FC]:
    """`--formulas FILE` (repeatable) -> `formula_files: tuple[Path, ...]`."""
    return click.option(
        "--formulas", "formula_files", multiple=True, type=FILE, metavar="FILE", help=help
    )


def output_option(*, help: str = OUTPUT_HELP) -> Callable[[FC], FC]:
    """`-o/--output FILE` -> `output: Path | None` (None or `-`: stdout)."""
    return click.option("-o", "--output", type=FILE, metavar="FILE", help=help)


def list_skipped_option() -> Callable[[FC], FC]:
    """`--list-skipped`: a folder's walk names each file and folder it skips on stderr."""
    return click.option(
        "--list-skipped",
        is_flag=True,
        help="A folder: name on stderr each file it skips (not a log by its name) and each "
        "folder (hidden, a virtualenv, node_modules, __pycache__, ...); without it one line "
        "counts them.",
    )


def load_options(*options: Callable[[FC], FC]) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """The options that say how an input becomes a ledger (`rank_option`, `startup_option`,
    `model_config_option`, `grammar_option`, `formulas_option`: the ones a command has), given
    to the command as one `load: LoadOptions` argument instead of one argument each.

    The meter on stderr shows when stderr is a terminal (`progress=None`).
    """

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(command)
        def with_load(
            *args: Any,
            rank: str | None,
            startup: int | None,
            grammars: tuple[Path, ...],
            model_config: Path | None = None,
            formula_files: tuple[Path, ...] = (),
            list_skipped: bool = False,
            **kwargs: Any,
        ) -> R:
            load = LoadOptions(
                rank=rank,
                startup=startup,
                model_config=model_config,
                formula_files=formula_files,
                grammars=grammars,
                progress=None,
                list_skipped=list_skipped,
            )
            return command(*args, load=load, **kwargs)

        # click lists options in decorator order: the first given is applied last
        return functools.reduce(
            lambda wrapped, option: option(wrapped), reversed(options), with_load
        )

    return decorate


FULL_HELP = "text: every table, not only the verdict and the rows that matter."
LEDGER_FULL_HELP = (
    "text: every table (rows, checkpoints, intervals, summary, KV sizing). Without it: the "
    "verdict, each group's total largest first with its largest row, the split of usable memory "
    "into fixed overhead, runtime headroom and state pool, the KV figures, unexplained rows of "
    "0.10 GiB or more, the sizing verdict and the notes."
)
DIFF_FULL_HELP = (
    "text: every table (all changed rows, group totals, checkpoints, intervals, configuration, "
    "coverage). Without it: the verdict, the summary, where the state-pool difference comes "
    "from, the five largest movers, the composition bars and the notes."
)
CHECK_FULL_HELP = (
    "text: every check within budget and every one not compared. Without it: the verdict, "
    "every breach and missing item, the five passes closest to their limit and the count of "
    "the rest."
)


def full_option(*, help: str = FULL_HELP) -> Callable[[FC], FC]:
    """`--full` -> `full: bool`: text output with every table, not only the short view."""
    return click.option("--full", is_flag=True, help=help)
