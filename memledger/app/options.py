"""The options of every command and what a command returns: a leaf that the flow modules of
`memledger.app`, the click commands and the Python API import.

- `LoadOptions`: how a log becomes a ledger (rank, startup, model_config, formula_files,
  grammars), one name per option from the CLI down to the parser.
- `ParseOptions` ... `CheckOptions`: one per command, handed to its `memledger.app` module.
- `Output`: a command's text, exit code and extra files (the GitHub step summary);
  `memledger.app.emit` writes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias

from memledger.errors import EXIT_OK
from memledger.input.reader import ByteSource
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger
from memledger.render.terminal import PLAIN, Terminal

if TYPE_CHECKING:
    from memledger.checking.budget import Budget

Source: TypeAlias = str | os.PathLike[str] | IO[bytes] | IO[str] | ByteSource | ParsedLog | Ledger
"""Anything a ledger can come from: a path, `-` (stdin), a stream, a parsed log or a ledger."""
PathLike: TypeAlias = str | os.PathLike[str]

STDIN = "-"
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
MAX_LABEL_CHARS = 64
"""A diff's --base-label / --head-label names a side in every table (the default is the file
stem, whole; text output cuts a long one where the two sides still differ): a longer label is
refused rather than echoed whole."""
"""GitHub Actions' job summary file; `check --format github` appends its markdown report there."""


# --- options and outputs ------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadOptions:
    """How an input becomes a ledger; the same names from the CLI options to the parser."""

    rank: str | None = None
    """Rank tag such as `TP3` or `"DP1 TP8 EP8"` (default: rank 0)."""
    startup: int | None = None
    """0-based startup index (default: the last; negative counts from the end)."""
    model_config: Path | None = None
    """A Hugging Face config.json with the model dimensions some formulas need."""
    formula_files: tuple[Path, ...] = ()
    """User formulas TOML files added to the packaged set (`--formulas`)."""
    grammars: tuple[Path, ...] = ()
    """Extra Lark grammars for a fork's own lines (`--grammar`)."""
    progress: bool | None = False
    """Show a progress meter on stderr; None: when stderr is a terminal."""
    list_skipped: bool = False
    """A folder's walk names each file and folder it skips on stderr (`--list-skipped`), not one
    line counting them."""
    saved_ledger_skips_grammars: bool = False
    """For commands that mix logs and saved ledgers under one command line (`check_report` sets
    it): a saved ledger keeps its rows and notes that the grammars were not applied, instead of
    refusing `--grammar` as a one-input command does."""


@dataclass(frozen=True)
class ExtraFile:
    """A file a command appends to besides its main output (the GitHub step summary)."""

    path: Path
    text: str
    what: str
    """How the file is named in an error message (`$GITHUB_STEP_SUMMARY`)."""
    chunks: Iterable[str] = ()
    """More of the text, written as it is produced."""


@dataclass(frozen=True)
class Output:
    """What a command produced: its report, its exit code and any extra files to append to."""

    text: str
    exit_code: int = EXIT_OK
    extra_files: tuple[ExtraFile, ...] = ()
    chunks: Iterable[str] = ()
    """More of the report after `text`, written as it is produced (`check` over a fleet)."""


@dataclass(frozen=True)
class ParseOptions:
    """`memledger parse`."""

    log: Source
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    all_ranks: bool = False
    coverage: bool = False
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""


@dataclass(frozen=True)
class LedgerOptions:
    """`memledger ledger`."""

    log: Source
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    explain: str | None = None
    more_logs: Sequence[Source] = ()
    """More logs: with them (or when `log` is a folder) the fleet view, one line per log."""
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""
    full: bool = False
    """Text output: every table (`--full`), not only the verdict and the rows that matter."""


@dataclass(frozen=True)
class DiagnoseOptions:
    """`memledger diagnose`."""

    log: PathLike | IO[bytes] | IO[str] | ByteSource | ParsedLog
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    terminal: Terminal = PLAIN
    """Text output: the width to fit (`terminal_for`)."""


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff and the options given for it alone (`--base-rank`, ...)."""

    source: Source | None
    """None: not given (only HEAD, and only with `against_release`)."""
    rank: str | None = None
    startup: int | None = None
    model_config: Path | None = None
    label: str | None = None
    version: str | None = None
    """The SGLang release this side ran (`--base-version`), when the log does not pin it."""


def side_options(base: DiffSide, head: DiffSide) -> list[tuple[str, object]]:
    """(option, value) of what the diff's sides were given for one side alone that chooses what
    a side is (rank, startup, model config, BASE's release): refused where no log is read."""
    return [
        ("--base-rank", base.rank),
        ("--head-rank", head.rank),
        ("--base-startup", base.startup),
        ("--head-startup", head.startup),
        ("--base-model-config", base.model_config),
        ("--head-model-config", head.model_config),
        ("--base-version", base.version),
    ]


MISSING_HEAD = (
    "Missing argument 'HEAD' (usage: memledger diff [OPTIONS] BASE HEAD, or memledger diff "
    "[OPTIONS] LOG --against-release X.Y.Z, or memledger diff SAVED_DIFF.json)"
)
"""click's message for a missing HEAD, now that HEAD may be left out for --against-release."""


@dataclass(frozen=True)
class DiffOptions:
    """`memledger diff`: `load` is shared by both sides, a side's own options override it."""

    base: DiffSide
    head: DiffSide
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    sort: str = "delta"
    show_unchanged: bool = False
    marker: str | None = None
    max_chars: int | None = None
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""
    full: bool = False
    """Text output: every table (`--full`), not only the verdict and the rows that matter."""
    gpu_memory_mib: int | None = None
    """GPU capacity in MiB: lets the upgrade explanation check SGLang's mem_fraction_static
    defaults at each release."""
    against_release: str | None = None
    """`diff LOG --against-release X`: BASE is the one log, compared with release X's defaults
    (`run_diff` hands it to `run_against_release`; the two-log options are refused)."""


@dataclass(frozen=True)
class WhatIfOptions:
    """`memledger whatif`: the log, and setting -> value changes (`--set NAME=VALUE`)."""

    log: Source
    changes: dict[str, Any] = field(default_factory=dict)
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    solve: str | None = None
    """`--solve SETTING`: find the lowest SETTING that reaches `target`."""
    target: str | None = None
    """`--for FIGURE=N` (with `solve`)."""
    terminal: Terminal = PLAIN
    """Text output: the width to fit (`terminal_for`)."""


@dataclass(frozen=True)
class CheckOptions:
    """`memledger check`: `load` applies to every log and the baseline."""

    logs: Sequence[Source]
    budget: PathLike | Budget | None = None
    baseline: Source | None = None
    load: LoadOptions = LoadOptions()
    strict: bool = False
    today: date | None = None
    fmt: str = "text"
    require_baseline: bool = False
    """A missing baseline (not given, or a path that does not exist) is an InputError instead
    of "relative limits not compared": a CI job whose artifact download failed must not pass."""
    max_chars: int | None = None  # markdown only: size cap (a PR comment has a limit)
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""
    full: bool = False
    """Text output: every table (`--full`), not only the verdict and the rows that matter."""
