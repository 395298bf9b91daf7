"""Many logs in one process: `memledger ledger` over several logs or a folder (one summary line
per log, the fleet view) and `memledger check` over several logs.

An operator with one startup log per pod restart wants to see at a glance which restart came out
different; CI checks every pod's log against the budget. The logs are read in parallel (forked
worker processes, at most two: the machine this tool targets in CI has two), results come back
in the order given, and each worker sends back only what the report shows of its log (a summary
line, or that log's checks), never its ledger: memory stays flat in the number of logs. A log
the fleet view cannot read is a line with its error, not the end of the run.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memledger.errors import EXIT_INPUT, EXIT_OK, ConfigError, InputError
from memledger.ledger_model import Ledger
from memledger.render.terminal import PLAIN, Terminal
from memledger.service import LoadOptions, Output, Source, label_of, load_ledger

if TYPE_CHECKING:
    from memledger.budget import Budget
    from memledger.checking import LogChecks

LOG_SUFFIXES = (".log", ".log.gz")
MAX_WORKERS = 2
TASK_LOGS = 4
"""Logs per task sent to a worker (fewer round trips; small enough to keep both busy)."""
R = TypeVar("R")


@dataclass(frozen=True)
class FleetEntry:
    """One input of the fleet: its summary line (`render.fleet.line_of`), or the one-line error
    that stopped it. Only this travels back from a worker, never the ledger."""

    path: str
    line: dict[str, Any] | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return Path(self.path).name


def expand_inputs(sources: Sequence[Source]) -> list[str]:
    """The logs named on the command line, a folder standing for its *.log / *.log.gz files
    (recursively, sorted)."""
    paths: list[str] = []
    for given in sources:
        if not isinstance(given, str | os.PathLike):
            raise ConfigError("several inputs must be paths (or -), not streams")
        source = os.fspath(given)
        folder = Path(source)
        if source != "-" and folder.is_dir():
            found = sorted(
                str(path)
                for path in folder.rglob("*")
                if path.is_file() and path.name.endswith(LOG_SUFFIXES)
            )
            if not found:
                raise InputError("a folder without *.log or *.log.gz files", path=source)
            paths.extend(found)
        else:
            paths.append(source)
    if paths.count("-") > 1:
        raise ConfigError("stdin (-) can be read only once")
    return paths


def is_fleet(sources: Sequence[Source]) -> bool:
    """Several inputs, or a folder: the one-line-per-log view."""
    return len(sources) > 1 or any(
        isinstance(s, str | os.PathLike) and os.fspath(s) != "-" and Path(s).is_dir()
        for s in sources
    )


def _load(path: str, options: LoadOptions) -> FleetEntry:
    from memledger.render.fleet import line_of

    try:
        return FleetEntry(path, line=line_of(path, load_ledger(path, options)))
    except (InputError, ConfigError) as exc:
        # the line is already the log's: `a.log: no such file`, not `a.log: a.log: no such file`
        own = exc.path == path
        where = f"line {exc.line}: " if own and exc.line is not None else ""
        return FleetEntry(path, error=f"{where}{exc.message}" if own else str(exc))


def load_fleet(paths: Sequence[str], options: LoadOptions) -> Iterator[FleetEntry]:
    """Each path's summary line in the order given, built by up to two worker processes."""
    quiet = replace(options, progress=False)  # two meters on one stderr would garble it
    return map_paths(lambda path: _load(path, quiet), paths, quiet)


def run_fleet(
    sources: Sequence[Source], options: LoadOptions, fmt: str, terminal: Terminal = PLAIN
) -> Output:
    """`memledger ledger LOG LOG...` / `memledger ledger DIR`: the fleet table; exit 3 when a
    log could not be read (its line says why)."""
    from memledger.render.fleet import FLEET_FORMATS

    render = FLEET_FORMATS.renderer(fmt, terminal)
    entries = list(load_fleet(expand_inputs(sources), options))
    failed = any(entry.error is not None for entry in entries)
    return Output(render(entries), EXIT_INPUT if failed else EXIT_OK)


def check_inputs(
    logs: Sequence[Source],
    options: LoadOptions,
    budget: Budget,
    *,
    today: date,
    baseline: Ledger | None,
) -> Iterator[tuple[str, Ledger] | LogChecks]:
    """`check`'s inputs one at a time: several log paths are read and checked by up to two
    worker processes, each sending back only its log's checks; other sources are loaded here."""
    from memledger.checking import check_log

    paths = [os.fspath(s) for s in logs if isinstance(s, str | os.PathLike)]
    if len(paths) < 2 or len(paths) < len(logs):
        return ((label_of(item), load_ledger(item, options)) for item in logs)
    quiet = replace(options, progress=False)

    def work(path: str) -> LogChecks:
        return check_log(budget, path, load_ledger(path, quiet), today=today, baseline=baseline)

    return map_paths(work, paths, quiet)


# --- up to two worker processes, results in input order ----------------------------------------

_WORK: Callable[[str], Any] | None = None
"""The task of the pool being started: set before the fork, so workers inherit it (no pickling
of the budget or options per log)."""


def map_paths(work: Callable[[str], R], paths: Sequence[str], options: LoadOptions) -> Iterator[R]:
    """`work(path)` for each path, in the order given, on up to two forked worker processes
    (this one only merges); in this process when there is one path, one core, stdin or no fork.

    What every log needs (the parser, the engine, the packaged formulas, the grammar) is loaded
    here first, so the workers inherit it instead of each loading it again.
    """
    workers = min(MAX_WORKERS, _usable_cpus(), len(paths))
    if workers <= 1 or "-" in paths or not _can_fork():
        return map(work, paths)
    _warm(options)
    return _pooled(work, paths, workers)


def _pooled(work: Callable[[str], R], paths: Sequence[str], workers: int) -> Iterator[R]:
    import multiprocessing

    global _WORK
    _WORK = work
    for stream in (sys.stdout, sys.stderr):  # a child must not inherit unwritten output
        stream.flush()
    try:
        with multiprocessing.get_context("fork").Pool(workers, _worker_signals) as pool:
            yield from pool.imap(_run_work, paths, chunksize=TASK_LOGS)
    finally:
        _WORK = None


def _run_work(path: str) -> Any:
    assert _WORK is not None
    return _WORK(path)


def _worker_signals() -> None:
    """Ctrl-C and SIGTERM are the parent's to handle: it stops the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _warm(options: LoadOptions) -> None:
    from memledger.formulas import load_formulas
    from memledger.input.grep_scan import stop_unclaimed
    from memledger.input.linegrammar import load_grammar

    for module in ("memledger.diagnosis", "memledger.engine", "memledger.input.parsing"):
        importlib.import_module(module)
    load_formulas(options.formula_files)
    load_grammar(options.grammars)
    stop_unclaimed()  # a grep the CLI started belongs to this process: a worker starts its own


def _usable_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _can_fork() -> bool:
    """Fork (workers inherit what is loaded) is safe on Linux; elsewhere the logs run here."""
    import multiprocessing

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
