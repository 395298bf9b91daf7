"""`memledger check`'s flow: the budget and the baseline first, then every log's checks (on up
to two cores, `memledger.app.fleet`), into an in-memory `CheckReport` (the Python API) or a spool on
a private temporary file (`memledger.checking.results`) that the report is written from as it is
read back: the CLI's memory stays flat in the number of logs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from memledger.app.load import label_of, load_ledger
from memledger.app.options import STDIN, STEP_SUMMARY_ENV, CheckOptions, ExtraFile, Output, PathLike
from memledger.errors import InputError
from memledger.model.ledger import Ledger

if TYPE_CHECKING:
    from memledger.checking.budget import Budget
    from memledger.checking.evaluate import LogChecks
    from memledger.checking.results import SpooledChecks
    from memledger.model.check import BaselineInfo, CheckReport


class _CheckRun(NamedTuple):
    """What a check run reads (`_check_run`)."""

    budget: Budget
    inputs: Iterator[tuple[str, Ledger] | LogChecks]
    today: date
    baseline: Ledger | None
    info: BaselineInfo


def budget_of(budget: PathLike | Budget | None) -> Budget:
    """The budget given, loaded from its file, or found (`discover_budget`)."""
    from memledger.checking.budget import Budget, discover_budget, load_budget

    if isinstance(budget, Budget):
        return budget
    return load_budget(discover_budget() if budget is None else Path(budget))


def _check_run(options: CheckOptions) -> _CheckRun:
    """What a check run reads: the budget, the baseline, and the inputs one at a time.

    A baseline path that does not exist means "no comparison" (noted), not an error.
    """
    from memledger.model.check import BaselineInfo

    budget = budget_of(options.budget)  # a bad budget fails before a long parse, not after
    # check mixes logs and saved ledgers under one command line: a saved ledger keeps its rows
    load = replace(options.load, saved_ledger_skips_grammars=True)
    baseline = options.baseline
    base: Ledger | None = None
    if options.require_baseline and (
        baseline is None
        or (
            isinstance(baseline, str | os.PathLike)
            and os.fspath(baseline) != STDIN
            and not Path(baseline).exists()
        )
    ):
        raise InputError(
            "no baseline to compare against (--require-baseline)"
            if baseline is None
            else "baseline not found (--require-baseline)",
            path=None if baseline is None else os.fspath(baseline),
        )
    if baseline is None:
        info = BaselineInfo(note="no baseline given: relative limits not compared")
    elif (
        isinstance(baseline, str | os.PathLike)
        and os.fspath(baseline) != STDIN
        and not (Path(baseline).exists())
    ):
        path = os.fspath(baseline)
        info = BaselineInfo(
            path=path, note=f"baseline {path} not found: no comparison (relative limits skipped)"
        )
    else:
        base = load_ledger(baseline, load)
        info = BaselineInfo(path=label_of(baseline), source=base.source)
    from memledger.app.fleet import check_inputs

    today = date.today() if options.today is None else options.today
    # one ledger at a time (on up to two cores): memory stays flat in the number of logs
    inputs = check_inputs(options.logs, load, budget, today=today, baseline=base)
    return _CheckRun(budget, inputs, today, base, info)


def check_report(options: CheckOptions) -> CheckReport:
    """Check every log (and the baseline, for relative limits) against the budget: the whole
    report in memory (the Python API)."""
    from memledger.checking.evaluate import check_budget

    run = _check_run(options)
    return check_budget(
        run.budget,
        run.inputs,
        today=run.today,
        baseline=run.baseline,
        baseline_info=run.info,
        strict=options.strict,
    )


def check_results(options: CheckOptions) -> SpooledChecks:
    """`check_report` for `memledger check`: each log's checks go to a private temporary file
    as they come, only the totals stay in memory (a fleet of 10,000 logs costs no more memory
    than one); the caller closes the results (`SpooledChecks.close`)."""
    from memledger.app.fleet import fleet_bar
    from memledger.app.progress import with_progress
    from memledger.checking.evaluate import LogChecks, check_log
    from memledger.checking.results import CheckSpool

    run = _check_run(options)
    spool = CheckSpool(run.budget, strict=options.strict)
    try:
        for item in with_progress(run.inputs, fleet_bar(options.logs, options.load)):
            spool.add(
                item
                if isinstance(item, LogChecks)
                else check_log(run.budget, *item, today=run.today, baseline=run.baseline)
            )
        return spool.finish(today=run.today, baseline=run.baseline, baseline_info=run.info)
    except BaseException:
        spool.close()
        raise


def run_check(options: CheckOptions) -> Output:
    """`memledger check`: the report, its exit code and, for `--format github` under GitHub
    Actions, the markdown report appended to the job summary; both are written as they are
    read back from the spooled results."""
    from memledger.checking.spool import closing_after
    from memledger.render.check import CheckFormat, CheckView, check_format, check_stream

    fmt = check_format(options.fmt)  # a bad format fails before a long parse
    stream = check_stream(fmt, CheckView(options.terminal, options.full), options.max_chars)
    results = check_results(options)
    summary_path = os.environ.get(STEP_SUMMARY_ENV)
    if fmt is CheckFormat.GITHUB and summary_path:
        summary = ExtraFile(
            Path(summary_path),
            "",
            f"${STEP_SUMMARY_ENV}",
            chunks=closing_after([check_stream(CheckFormat.MARKDOWN)(results), ["\n"]], results),
        )
        report = closing_after([stream(results)], results, last=False)
        return Output("", results.exit_code, (summary,), chunks=report)
    return Output("", results.exit_code, chunks=closing_after([stream(results)], results))
