"""The Python API: typed access to parsed logs, ledgers, diagnoses, diffs and budget checks.

Every function takes a path (str or PathLike), `"-"` for stdin, a binary or text stream, or an
object already built (a `ParsedLog` or a `Ledger`), so notebooks and tests can mix them:

    import memledger
    assert memledger.ledger("server.log").summary.cuda_graph_gib < 8
    memledger.assert_budget("server.log", budget="memledger.toml")
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeAlias

from memledger.app.check import check_report
from memledger.app.diagnose import diagnosis_of
from memledger.app.diff import diff_of
from memledger.app.load import load_ledger, load_parsed
from memledger.app.options import (
    CheckOptions,
    DiagnoseOptions,
    DiffOptions,
    DiffSide,
    LoadOptions,
    PathLike,
    Source,
)
from memledger.checking.budget import Budget
from memledger.model.check import CheckReport, CheckStatus
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger

if TYPE_CHECKING:
    from memledger.compare.models import LedgerDiff
    from memledger.compare.upgrade_models import AgainstRelease
    from memledger.diagnosis import Diagnosis
    from memledger.sizing import WhatIf

TEXT_LABEL = "<text>"
GrammarFiles: TypeAlias = Sequence[PathLike]


def _grammars(grammars: GrammarFiles, extra_grammars: GrammarFiles | None) -> tuple[Path, ...]:
    """`grammars=`; the old keyword `extra_grammars=` still works, with a DeprecationWarning."""
    if extra_grammars is not None:
        warnings.warn(
            "extra_grammars= is now grammars= (the --grammar option's name)",
            DeprecationWarning,
            stacklevel=3,
        )
        grammars = [*grammars, *extra_grammars]
    return tuple(Path(file) for file in grammars)


def _options(
    rank: str | None,
    startup: int | None,
    model_config: PathLike | None = None,
    formula_files: Sequence[PathLike] = (),
    grammars: tuple[Path, ...] = (),
) -> LoadOptions:
    """The API's keywords, in their order, as the LoadOptions the CLI's options make (paths as
    `Path`)."""
    return LoadOptions(
        rank=rank,
        startup=startup,
        model_config=None if model_config is None else Path(model_config),
        formula_files=tuple(Path(file) for file in formula_files),
        grammars=grammars,
    )


def load(
    source: PathLike | IO[bytes] | IO[str],
    *,
    rank: str | None = None,
    startup: int | None = None,
    label: str | None = None,
    grammars: GrammarFiles = (),
    extra_grammars: GrammarFiles | None = None,
) -> ParsedLog:
    """Parse a log (path, "-" or stream): its startups and the selected startup's events."""
    options = _options(rank, startup, grammars=_grammars(grammars, extra_grammars))
    return load_parsed(source, options, label=label)


def load_text(
    text: str, *, rank: str | None = None, startup: int | None = None, label: str = TEXT_LABEL
) -> ParsedLog:
    """Parse log text held in a string (a path string goes to `load`, not here)."""
    return load(io.BytesIO(text.encode("utf-8")), rank=rank, startup=startup, label=label)


def ledger(
    source: Source,
    *,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    formula_files: Sequence[PathLike] = (),
    grammars: GrammarFiles = (),
    extra_grammars: GrammarFiles | None = None,
) -> Ledger:
    """The ledger of a log, saved ledger JSON, stream or `ParsedLog` (a Ledger passes through).

    `formula_files`: user formulas TOML files added to the packaged set (`--formulas`).
    `grammars`: Lark grammars for a fork's lines (`--grammar`), used when a log is parsed
    (a `ParsedLog` already was); refused for a saved ledger, as `rank` is.
    """
    files = _grammars(grammars, extra_grammars)
    return load_ledger(source, _options(rank, startup, model_config, formula_files, files))


def diagnose(
    source: PathLike | IO[bytes] | IO[str] | ParsedLog,
    *,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    formula_files: Sequence[PathLike] = (),
    grammars: GrammarFiles = (),
) -> Diagnosis:
    """Why a startup failed or came out small: `verdict`, `phase`, `shortfall_bytes`,
    `findings` and `suggestions` (a log, stream or `ParsedLog`; a saved ledger has no error
    text and is refused)."""
    options = _options(rank, startup, model_config, formula_files, _grammars(grammars, None))
    return diagnosis_of(DiagnoseOptions(log=source, load=options))


def diff(
    base: Source,
    head: Source,
    *,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    formula_files: Sequence[PathLike] = (),
    grammars: GrammarFiles = (),
    extra_grammars: GrammarFiles | None = None,
) -> LedgerDiff:
    """Diff two deployments (logs, saved ledgers or ledgers): head - base, row by row.

    The options apply to both sides, as the CLI's shared options do (a saved ledger, already
    one rank of one startup, is not re-selected)."""
    files = _grammars(grammars, extra_grammars)
    options = _options(rank, startup, model_config, formula_files, files)
    return diff_of(DiffOptions(base=DiffSide(base), head=DiffSide(head), load=options))


def check(
    source: Source | Sequence[Source],
    budget: PathLike | Budget | None = None,
    baseline: Source | None = None,
    *,
    strict: bool = False,
    today: date | None = None,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    formula_files: Sequence[PathLike] = (),
    grammars: GrammarFiles = (),
    extra_grammars: GrammarFiles | None = None,
) -> CheckReport:
    """Check one or more logs (or ledgers) against a budget; `budget=None` finds memledger.toml.

    `formula_files` and `grammars` apply to every log and the baseline; a saved ledger
    keeps the rows it was built with (a note on its ledger says so).
    Never raises on a breach: read `report.exit_code` (0 pass, 1 breach, 3 item not provided).
    Raises ConfigError for a bad budget file, InputError for a log that is not understood.
    """
    sources: list[Source] = (
        list(source) if isinstance(source, list | tuple) else [source]  # type: ignore[list-item]
    )
    files = _grammars(grammars, extra_grammars)
    options = _options(rank, startup, model_config, formula_files, files)
    return check_report(
        CheckOptions(
            logs=sources,
            budget=budget,
            baseline=baseline,
            load=options,
            strict=strict,
            today=today,
        )
    )


class BudgetFailure(AssertionError):
    """A budget check failed; the message is the CLI's breach lines, one per line."""

    def __init__(self, report: CheckReport, lines: list[str]) -> None:
        self.report = report
        self.lines = lines
        super().__init__("\n".join(lines))


class BudgetWarning(UserWarning):
    """A warn-level breach (or a waived one), reported without failing the test."""


def failure_lines(report: CheckReport) -> list[str]:
    """The breach lines that make the run fail (missing items included), as the CLI prints them."""
    from memledger.render.check import breach_line

    return [
        breach_line(check)
        for check in report.breaches()
        if check.status is CheckStatus.MISSING or report.is_failing(check)
    ]


def assert_budget(
    source: Source | Sequence[Source],
    budget: PathLike | Budget | None = None,
    baseline: Source | None = None,
    *,
    strict: bool = False,
    today: date | None = None,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    formula_files: Sequence[PathLike] = (),
    grammars: GrammarFiles = (),
    extra_grammars: GrammarFiles | None = None,
) -> CheckReport:
    """Like `check`, but raise BudgetFailure (an AssertionError) when the CLI would exit non-zero.

    Warn-level and waived breaches become `BudgetWarning`s (pytest lists them in its summary).
    """
    from memledger.render.check import breach_line

    report = check(
        source,
        budget,
        baseline,
        strict=strict,
        today=today,
        rank=rank,
        startup=startup,
        model_config=model_config,
        formula_files=formula_files,
        grammars=_grammars(grammars, extra_grammars),
    )
    lines = failure_lines(report)
    for breach in report.breaches():
        if breach.status is not CheckStatus.MISSING and not report.is_failing(breach):
            warnings.warn(BudgetWarning(breach_line(breach)), stacklevel=2)
    if lines:
        raise BudgetFailure(report, lines)
    return report


def whatif(
    source: PathLike | IO[bytes] | IO[str] | ParsedLog,
    changes: Mapping[str, int | float | str | None] | None = None,
    *,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    grammars: GrammarFiles = (),
    solve: str | None = None,
    target: Mapping[str, int] | None = None,
    **settings: int | float | str | None,
) -> WhatIf:
    """SGLang's pools under other settings, anchored on the measured log.

    Settings come as a mapping and/or keywords: `whatif(log, mem_fraction_static=0.85)`.
    `answer["KV tokens per instance"].predicted` is the figure a test can assert on (a name it
    lacks raises `NoSuchRowError`; `answer.row(name)` returns None instead).
    `whatif(log, solve="mem_fraction_static", target={"max_total_num_tokens": N})` finds the
    lowest mem_fraction_static giving N KV tokens per rank (`answer.solved.value`).
    """
    from memledger.app.options import WhatIfOptions
    from memledger.app.whatif import whatif_of

    merged = {**(changes or {}), **settings}
    wanted = None if target is None else ",".join(f"{k}={v}" for k, v in target.items())
    return whatif_of(
        WhatIfOptions(
            log=source,
            changes=merged,
            load=_options(rank, startup, model_config, grammars=_grammars(grammars, None)),
            solve=solve,
            target=wanted,
        )
    )


def against_release(
    source: PathLike | IO[bytes] | IO[str] | ParsedLog,
    release: str,
    *,
    log_release: str | None = None,
    gpu_memory_mib: int | None = None,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    grammars: GrammarFiles = (),
) -> AgainstRelease:
    """This log's KV pool under SGLang `release`'s defaults ("it was bigger on 0.5.2"), as
    `memledger diff LOG --against-release 0.5.2` prints it.

    `answer.predicted_tokens` is max_total_num_tokens per rank at `release` (`low`/`high` its
    range), `answer.delta_tokens` the logged pool minus it, `answer.settings` each default
    that sizes the pool with its status (`default`: the log ran SGLang's default, so the other
    release's is used; `set`: kept), `answer.defaults_crossed` the changes in between.
    `log_release` is the release the log ran when its line formats do not pin it;
    `gpu_memory_mib` the GPU (nvidia-smi MiB), else inferred from the log.
    """
    from memledger.app.against_release import AgainstReleaseOptions, against_release_of

    return against_release_of(
        AgainstReleaseOptions(
            log=source,
            release=release,
            log_release=log_release,
            gpu_memory_mib=gpu_memory_mib,
            load=_options(rank, startup, model_config, grammars=_grammars(grammars, None)),
        )
    )
