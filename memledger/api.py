"""The Python API: typed access to parsed logs, ledgers, diffs and budget checks.

Every function takes a path (str or PathLike), `"-"` for stdin, a binary or text stream, or an
object already built (a `ParsedLog` or a `Ledger`), so notebooks and tests can mix them:

    import memledger
    assert memledger.ledger("server.log").summary.cuda_graph < 8
    memledger.assert_budget("server.log", budget="memledger.toml")
"""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import IO, TYPE_CHECKING, TypeAlias

from memledger.budget import Budget, discover_budget, load_budget
from memledger.checking import BaselineInfo, CheckReport, CheckStatus, check_budget
from memledger.events import ParsedLog
from memledger.ledger_model import Ledger

if TYPE_CHECKING:
    from memledger.diffing import LedgerDiff

Source: TypeAlias = str | os.PathLike[str] | IO[bytes] | IO[str] | ParsedLog | Ledger
"""Anything a ledger can come from: a path, "-" (stdin), a stream, a parsed log or a ledger."""
PathLike: TypeAlias = str | os.PathLike[str]
TEXT_LABEL = "<text>"


class _EncodedText:
    """A text stream read as UTF-8 bytes, chunk by chunk: the parser reads bytes, and a log must
    not be held whole in memory."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = b""
        self.name = getattr(stream, "name", None) or "<stream>"

    def read(self, size: int = -1, /) -> bytes:
        if size < 0:
            data, self._pending = self._pending + self._stream.read().encode("utf-8"), b""
            return data
        while len(self._pending) < size:
            text = self._stream.read(size)
            if not text:
                break
            self._pending += text.encode("utf-8")
        data, self._pending = self._pending[:size], self._pending[size:]
        return data


def _binary(stream: IO[bytes] | IO[str]) -> IO[bytes] | _EncodedText:
    """A text stream re-encoded as bytes (the parser reads bytes); binary streams unchanged."""
    if isinstance(stream, io.TextIOBase) or isinstance(stream.read(0), str):
        return _EncodedText(stream)  # type: ignore[arg-type]
    return stream  # type: ignore[return-value]


def _label(source: Source) -> str:
    """How an input is named in reports: its path, or the ledger's / stream's own name."""
    if isinstance(source, Ledger):
        return source.source.path
    if isinstance(source, ParsedLog):
        return source.path
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>"


def _paths(files: Sequence[PathLike]) -> tuple[Path, ...]:
    return tuple(Path(file) for file in files)


def load(
    source: PathLike | IO[bytes] | IO[str],
    *,
    rank: str | None = None,
    startup: int | None = None,
    label: str | None = None,
    extra_grammars: Sequence[PathLike] = (),
) -> ParsedLog:
    """Parse a log (path, "-" or stream): its startups and the selected startup's events."""
    from memledger.pipeline import load_parsed

    readable = source if isinstance(source, str | os.PathLike) else _binary(source)
    return load_parsed(
        readable, label=label, rank=rank, startup=startup, extra_grammars=_paths(extra_grammars)
    )


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
    extra_grammars: Sequence[PathLike] = (),
) -> Ledger:
    """The ledger of a log, saved ledger JSON, stream or `ParsedLog` (a Ledger passes through).

    `formula_files`: user formulas TOML files added to the packaged set (`--formulas`).
    `extra_grammars`: Lark grammars for a fork's lines (`--grammar`), used when a log is parsed
    (a `ParsedLog` already was); refused for a saved ledger, as `rank` is.
    """
    return _ledger(
        source,
        rank=rank,
        startup=startup,
        model_config=model_config,
        formula_files=formula_files,
        extra_grammars=extra_grammars,
    )


def _ledger(
    source: Source,
    *,
    rank: str | None,
    startup: int | None,
    model_config: PathLike | None,
    formula_files: Sequence[PathLike],
    extra_grammars: Sequence[PathLike],
    grammars_for_logs_only: bool = False,
) -> Ledger:
    """`ledger`; `grammars_for_logs_only`: a saved ledger skips the grammars (with a note)."""
    from memledger.pipeline import ledger_from_parsed, load_ledger

    if isinstance(source, Ledger):
        return source
    if isinstance(source, ParsedLog):
        return ledger_from_parsed(
            source, model_config_path=model_config, formula_files=formula_files
        )
    readable = source if isinstance(source, str | os.PathLike) else _binary(source)
    return load_ledger(
        readable,
        rank=rank,
        startup=startup,
        model_config_path=model_config,
        formula_files=formula_files,
        extra_grammars=_paths(extra_grammars),
        grammars_for_logs_only=grammars_for_logs_only,
    )


def diff(
    base: Source,
    head: Source,
    *,
    rank: str | None = None,
    startup: int | None = None,
    model_config: PathLike | None = None,
    formula_files: Sequence[PathLike] = (),
    extra_grammars: Sequence[PathLike] = (),
) -> LedgerDiff:
    """Diff two deployments (logs, saved ledgers or ledgers): head - base, row by row."""
    from memledger.diffing import diff_ledgers

    def build(side: Source) -> Ledger:
        return ledger(
            side,
            rank=rank,
            startup=startup,
            model_config=model_config,
            formula_files=formula_files,
            extra_grammars=extra_grammars,
        )

    return diff_ledgers(build(base), build(head))


def _budget(budget: PathLike | Budget | None) -> Budget:
    if isinstance(budget, Budget):
        return budget
    return load_budget(discover_budget() if budget is None else Path(budget))


def _baseline(
    baseline: Source | None, build: Callable[[Source], Ledger]
) -> tuple[Ledger | None, BaselineInfo]:
    """The baseline ledger (built like the checked logs); a missing path means "no comparison"."""
    if baseline is None:
        return None, BaselineInfo(note="no baseline given: relative limits not compared")
    if isinstance(baseline, str | os.PathLike) and os.fspath(baseline) != "-":
        path = os.fspath(baseline)
        if not Path(path).exists():
            return None, BaselineInfo(
                path=path,
                note=f"baseline {path} not found: no comparison (relative limits skipped)",
            )
    base = build(baseline)
    return base, BaselineInfo(path=_label(baseline), source=base.source)


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
    extra_grammars: Sequence[PathLike] = (),
) -> CheckReport:
    """Check one or more logs (or ledgers) against a budget; `budget=None` finds memledger.toml.

    `formula_files` and `extra_grammars` apply to every log and the baseline; a saved ledger
    keeps the rows it was built with (a note on its ledger says so).
    Never raises on a breach: read `report.exit_code` (0 pass, 1 breach, 3 item not provided).
    Raises ConfigError for a bad budget file, InputError for a log that is not understood.
    """
    loaded_budget = _budget(budget)
    sources: list[Source] = (
        list(source) if isinstance(source, list | tuple) else [source]  # type: ignore[list-item]
    )

    def build(item: Source) -> Ledger:
        return _ledger(
            item,
            rank=rank,
            startup=startup,
            model_config=model_config,
            formula_files=formula_files,
            extra_grammars=extra_grammars,
            grammars_for_logs_only=True,
        )

    inputs = [(_label(item), build(item)) for item in sources]
    base, info = _baseline(baseline, build)
    return check_budget(
        loaded_budget,
        inputs,
        today=date.today() if today is None else today,
        baseline=base,
        baseline_info=info,
        strict=strict,
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
    extra_grammars: Sequence[PathLike] = (),
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
        extra_grammars=extra_grammars,
    )
    lines = failure_lines(report)
    for breach in report.breaches():
        if breach.status is not CheckStatus.MISSING and not report.is_failing(breach):
            warnings.warn(BudgetWarning(breach_line(breach)), stacklevel=2)
    if lines:
        raise BudgetFailure(report, lines)
    return report
