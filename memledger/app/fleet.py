"""Many logs in one process: `memledger ledger` over several logs or a folder (one summary line
per log, the fleet view) and `memledger check` over several logs or a folder.

An operator with one startup log per pod restart wants to see at a glance which restart came out
different; CI checks every pod's log against the budget. The logs are read in parallel (forked
worker processes, at most two: the machine this tool targets in CI has two), results come back
in the order given, and each worker sends back only what the report shows of its log (a summary
line, or that log's checks), never its ledger, and those go to a spool on a private temporary
file that the report is written from: memory stays flat in the number of logs. A folder is
walked lazily, one listing at a time, in sorted path order (`walk_folder`). A log the fleet
view cannot read is a line with its error, not the end of the run.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memledger.app.load import label_of, load_ledger
from memledger.app.options import STDIN, LoadOptions, Output, Source
from memledger.app.progress import ProgressBar, with_progress
from memledger.checking.spool import Spool, closing_after
from memledger.errors import EXIT_INPUT, EXIT_OK, ConfigError, InputError
from memledger.input.grep_early import cores
from memledger.input.log_list import LIST_PREFIX, is_log_list, missing, read_log_list
from memledger.model.fleet import FleetEntry
from memledger.model.ledger import Ledger
from memledger.render.terminal import PLAIN, Terminal

if TYPE_CHECKING:
    from memledger.checking.budget import Budget
    from memledger.checking.evaluate import LogChecks

LOG_ENDINGS = (".log", ".txt", ".out")
"""A folder's logs are the files whose name ends in one of these, or one of these and `.gz`
(any case): what SGLang's output is saved as (`server.log`, `kubectl logs > pod.txt`,
`nohup.out`). Every other file below the folder is skipped, and said so on stderr."""
LOG_RULE = "*.log, *.txt or *.out, or any of them .gz"
SKIPPED_FOLDERS = frozenset(
    {
        "__pycache__",
        "__pypackages__",
        "_build",
        "buck-out",
        "dist",
        "node_modules",
        "site-packages",
        "venv",
    }
)
"""Folders below a walked folder that are never logs' places, skipped whole as ruff skips them
(its default `exclude`), besides every hidden folder (`.git`, `.venv`, `.tox`, ...) and any
virtualenv (a folder holding `pyvenv.cfg`). A folder given on the command line is walked
whatever its name."""
MAX_WORKERS = 2
TASK_LOGS = 4
"""Logs per task sent to a worker (fewer round trips; small enough to keep both busy)."""
R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True)
class Unreadable:
    """A place in a folder the walk could not read (a folder it cannot list, a symlink loop, a
    log that is not a regular file): the fleet view shows it as an unreadable log, `check`
    stops on it (exit 3), as each does for a log it cannot read."""

    path: str
    message: str

    def error(self) -> InputError:
        return InputError(self.message, path=self.path)


Input = str | Unreadable
"""What the walk of the inputs gives: a log's path, or a place it could not read."""


def is_log_name(name: str) -> bool:
    """Whether a file in a folder is taken for a log by its name (`LOG_ENDINGS`)."""
    lower = name.lower()
    return lower.removesuffix(".gz").endswith(LOG_ENDINGS)


def note_skipped(path: str) -> None:
    """A file a folder holds that is not a log by its name (a path ending in `/`: a folder
    skipped whole): one line on stderr, as it is met."""
    from memledger.render.escape import one_line

    why = SKIPPED_FOLDER_WHY if path.endswith("/") else f"not named {LOG_RULE}"
    sys.stderr.write(f"{_LINE_START}memledger: note: {one_line(path)}: skipped, {why}\n")


_LINE_START = "\r\x1b[K" if sys.stderr.isatty() else ""
"""On a terminal a note starts by erasing the progress bar's line (`memledger.app.progress`)."""


SKIPPED_FOLDER_WHY = "a hidden folder, a virtualenv or a build/cache folder"


class SkipTally:
    """What a folder walk skipped, said on stderr in one line once the walk is done (nothing
    the user gave is skipped silently; the report itself stays the logs'); `listing`: each one
    as it is met instead (`--list-skipped`)."""

    def __init__(self, listing: bool = False) -> None:
        self.listing = listing
        self.files = 0
        self.folders: list[str] = []

    def __call__(self, path: str) -> None:
        if self.listing:
            note_skipped(path)
        if path.endswith("/"):
            self.folders.append(path)
        else:
            self.files += 1

    def summary(self) -> str | None:
        """`skipped 3 files (not *.log/...) and 2 folders (.git, .venv: ...); ...`, or None."""
        if self.listing or not (self.files or self.folders):
            return None
        parts = []
        if self.files:
            files = f"{self.files:,} file{'s' if self.files != 1 else ''}"
            parts.append(f"{files} (not *.log, *.txt, *.out or .gz)")
        if self.folders:
            names = sorted({Path(f.rstrip("/")).name for f in self.folders})
            shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            count = len(self.folders)
            parts.append(f"{count:,} folder{'s' if count != 1 else ''} ({shown})")
        return f"skipped {' and '.join(parts)}; --list-skipped names them"

    def finish(self) -> None:
        from memledger.render.escape import one_line

        said = self.summary()
        if said is not None:
            sys.stderr.write(f"{_LINE_START}memledger: note: {one_line(said)}\n")


def expand_inputs(
    sources: Sequence[Source], skipped: Callable[[str], None] | None = None
) -> Iterator[Input]:
    """The logs named on the command line, in the order given, a folder standing for the logs
    below it (`walk_folder`) and `@FILE` for the paths it lists (memledger.input.log_list). The
    sources are checked here, before the first log is read: a stream among several inputs,
    stdin twice, a list that cannot be read, a folder that cannot be listed or holds no log."""
    given: list[tuple[str, str | None]] = []  # (path, where it was listed)
    for source in sources:
        if not isinstance(source, str | os.PathLike):
            raise ConfigError("several inputs must be paths (or -), not streams")
        name = os.fspath(source)
        if is_log_list(name):
            list_file = name[len(LIST_PREFIX) :]
            given += [(entry, f"{list_file}:{line}") for entry, line in read_log_list(name)]
        else:
            given.append((name, None))
    if [name for name, _ in given].count("-") > 1:
        raise ConfigError("stdin (-) can be read only once")
    for name, listed in given:
        if name != "-" and os.path.isdir(name) and not _holds_a_log(Path(name)):
            where = f" (listed at {listed})" if listed else ""
            raise InputError(f"a folder without logs ({LOG_RULE}){where}", path=name)
    return _expanded(given, SkipTally() if skipped is None else skipped)


def _expanded(
    given: Sequence[tuple[str, str | None]], skipped: Callable[[str], None]
) -> Iterator[Input]:
    for source, listed in given:
        if source != "-" and os.path.isdir(source):
            yield from walk_folder(source, skipped)
        elif listed is not None and missing(source):
            yield Unreadable(source, f"no such file (listed at {listed})")
        else:
            yield source
    if isinstance(skipped, SkipTally):
        skipped.finish()


def count_inputs(sources: Sequence[Source]) -> int:
    """How many inputs `expand_inputs` will give (a folder walked once more, names only): the
    total of the progress bar."""
    total = 0
    for source in sources:
        name = os.fspath(source) if isinstance(source, str | os.PathLike) else "-"
        if is_log_list(name):
            total += len(read_log_list(name))
        elif name != "-" and os.path.isdir(name):
            total += sum(1 for _ in walk_folder(name, lambda _path: None))
        else:
            total += 1
    return total


def walk_folder(folder: str, skipped: Callable[[str], None] = note_skipped) -> Iterator[Input]:
    """The logs below `folder` (`is_log_name`), read lazily, one folder listing at a time, in
    the order of their paths sorted as strings (what `sorted()` of the whole list would give).
    Symbolic links are followed; a link back to a folder being walked is `Unreadable` (a
    loop), as is a folder that cannot be listed; other files are passed to `skipped`, and so
    are the folders skipped whole (`_skipped_folder`), as their path and `/`."""
    root = Path(folder)
    yield from _walk(root, {_identity(root): str(root)}, skipped)


def _identity(folder: Path) -> tuple[int, int]:
    status = folder.stat()
    return status.st_dev, status.st_ino


def _listing(folder: Path) -> list[str]:
    """A folder's entries in path order, as names with `/` after a subfolder's (its files'
    paths continue so): only the names are held, one string an entry."""
    with os.scandir(folder) as entries:
        listed = [entry.name + "/" if _is_folder(entry) else entry.name for entry in entries]
    listed.sort()
    return listed


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _walk(
    folder: Path, ancestors: dict[tuple[int, int], str], skipped: Callable[[str], None]
) -> Iterator[Input]:
    try:
        listing = _listing(folder)
    except OSError as exc:
        yield Unreadable(str(folder), f"cannot list this folder: {exc.strerror or exc}")
        return
    for key in listing:
        name = key.removesuffix("/")
        path = folder / name
        if key != name and _skipped_folder(path):
            skipped(f"{path}/")
        elif key != name:
            try:
                identity = _identity(path)
            except OSError as exc:
                yield Unreadable(str(path), f"cannot read this folder: {exc.strerror or exc}")
                continue
            if identity in ancestors:
                loop = f"a symlink loop: it leads back to {ancestors[identity]}"
                yield Unreadable(str(path), loop)
                continue
            yield from _walk(path, {**ancestors, identity: str(path)}, skipped)
        elif not is_log_name(name):
            skipped(str(path))
        elif os.path.exists(path) and not os.path.isfile(path):  # reading a FIFO would block
            yield Unreadable(str(path), "not a regular file (a pipe, socket or device)")
        else:
            yield str(path)  # a dangling link too: reading it says "no such file"


def _skipped_folder(path: Path) -> bool:
    """A hidden folder, a virtualenv or one of `SKIPPED_FOLDERS` (below the folder given)."""
    name = path.name
    return name.startswith(".") or name in SKIPPED_FOLDERS or os.path.isfile(path / "pyvenv.cfg")


def _holds_a_log(folder: Path) -> bool:
    """Whether a walk of `folder` gives anything (stops at the first; skips are not noted)."""
    return next(iter(walk_folder(str(folder), lambda _path: None)), None) is not None


def fleet_bar(sources: Sequence[Source], options: LoadOptions) -> ProgressBar:
    """The progress bar of a run over these inputs: shown on a terminal (`options.progress`
    None) for a fleet, with the number of logs as its total (a folder walked once more)."""
    enabled = (sys.stderr.isatty() if options.progress is None else options.progress) and (
        is_fleet(sources) and all(isinstance(s, str | os.PathLike) for s in sources)
    )
    return ProgressBar(count_inputs(sources) if enabled else None, enabled=enabled)


def is_fleet(sources: Sequence[Source]) -> bool:
    """Several inputs, a folder or a list of logs: the one-line-per-log view."""
    return len(sources) > 1 or any(
        isinstance(s, str | os.PathLike)
        and os.fspath(s) != "-"
        and (is_log_list(os.fspath(s)) or Path(s).is_dir())
        for s in sources
    )


def _load(item: Input, options: LoadOptions) -> FleetEntry:
    from memledger.render.fleet import line_of

    if isinstance(item, Unreadable):
        return FleetEntry(item.path, error=item.message)
    try:
        return FleetEntry(item, line=line_of(item, load_ledger(item, options)))
    except (InputError, ConfigError) as exc:
        # the line is already the log's: `a.log: no such file`, not `a.log: a.log: no such file`
        own = exc.path == item
        where = f"line {exc.line}: " if own and exc.line is not None else ""
        return FleetEntry(item, error=f"{where}{exc.message}" if own else str(exc))


def load_fleet(
    paths: Iterable[Input], options: LoadOptions, *, in_process: bool = False
) -> Iterator[FleetEntry]:
    """Each path's summary line in the order given, built by up to two worker processes."""
    quiet = replace(options, progress=False)  # two meters on one stderr would garble it
    return map_paths(lambda path: _load(path, quiet), paths, quiet, in_process=in_process)


class FleetSpool(Spool):
    """The fleet's lines as they come, on a spool (`memledger.checking.spool`: a private temporary
    file, one JSON object a log), read back once per pass a format needs: memory stays flat in
    the number of logs. Iterating gives the entries in the order added; a context manager."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False
        """Whether some log could not be read (the run exits 3)."""

    def add(self, entry: FleetEntry) -> None:
        fields = {"path": entry.path, "line": entry.line, "error": entry.error}
        self.append(json.dumps(fields).encode())  # ASCII: any path round-trips
        self.failed = self.failed or entry.error is not None

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[FleetEntry]:
        for payload in self.payloads():
            fields = json.loads(payload)
            yield FleetEntry(fields["path"], line=fields["line"], error=fields["error"])


def run_fleet(
    sources: Sequence[Source], options: LoadOptions, fmt: str, terminal: Terminal = PLAIN
) -> Output:
    """`memledger ledger LOG LOG...` / `memledger ledger DIR`: the fleet table; exit 3 when a
    log could not be read (its line says why). The lines are spooled as they come and the
    table is written from the spool (`render.fleet.fleet_stream`)."""
    from memledger.render.fleet import fleet_stream

    stream = fleet_stream(fmt, terminal)  # a bad format fails before a long run
    inputs = expand_inputs(sources, SkipTally(options.list_skipped))
    stdin = any(os.fspath(s) == STDIN for s in sources if isinstance(s, str | os.PathLike))
    spool = FleetSpool()
    try:
        for entry in with_progress(
            load_fleet(inputs, options, in_process=stdin), fleet_bar(sources, options)
        ):
            spool.add(entry)
    except BaseException:
        spool.close()
        raise
    chunks = closing_after([stream(spool)], spool)
    return Output("", EXIT_INPUT if spool.failed else EXIT_OK, chunks=chunks)


def check_inputs(
    logs: Sequence[Source],
    options: LoadOptions,
    budget: Budget,
    *,
    today: date,
    baseline: Ledger | None,
) -> Iterator[tuple[str, Ledger] | LogChecks]:
    """`check`'s inputs one at a time, a folder standing for the logs below it: several logs
    are read and checked by up to two worker processes, each sending back only its log's
    checks; one log, and sources other than paths, are loaded here."""
    from memledger.checking.evaluate import check_log

    if not all(isinstance(s, str | os.PathLike) for s in logs):
        return ((label_of(item), load_ledger(item, options)) for item in logs)
    inputs = expand_inputs(logs, SkipTally(options.list_skipped))
    head = list(islice(inputs, 2))
    if len(head) == 1:
        return _one_input(head[0], options)
    quiet = replace(options, progress=False)

    def work(item: Input) -> LogChecks:
        if isinstance(item, Unreadable):
            raise item.error()
        return check_log(budget, item, load_ledger(item, quiet), today=today, baseline=baseline)

    stdin = any(isinstance(s, str | os.PathLike) and os.fspath(s) == STDIN for s in logs)
    return map_paths(work, chain(head, inputs), quiet, in_process=stdin)


def _one_input(item: Input, options: LoadOptions) -> Iterator[tuple[str, Ledger]]:
    """A single log, read here (with its progress meter)."""
    if isinstance(item, Unreadable):
        raise item.error()
    yield item, load_ledger(item, options)


# --- up to two worker processes, results in input order ----------------------------------------

_WORK: Callable[[Any], Any] | None = None
"""The task of the pool being started: set before the fork, so workers inherit it (no pickling
of the budget or options per log)."""


def map_paths(
    work: Callable[[T], R], items: Iterable[T], options: LoadOptions, *, in_process: bool = False
) -> Iterator[R]:
    """`work(item)` for each item, in the order given, on up to two forked worker processes
    (this one only merges); in this process when there is one item, one core, stdin
    (`in_process`), no fork, or another thread alive here: a thread that holds a lock (the
    allocator's, a stream's, the import lock) at the fork leaves it held forever in the child,
    which then hangs (the `os.fork` docs). The items are read as the workers take them (a
    folder's walk goes on while its first logs are read).

    What every log needs (the parser, the engine, the packaged formulas, the grammar) is loaded
    here first, so the workers inherit it instead of each loading it again.
    """
    items = iter(items)
    head = list(islice(items, 2))
    workers = min(MAX_WORKERS, cores(), len(head))
    if workers <= 1 or in_process or not _can_fork() or _threads_alive():
        return map(work, chain(head, items))
    _warm(options)
    return _pooled(work, chain(head, items), workers)


_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
"""Blocked from each fork until the worker has set their handling (`_worker_signals`)."""


def _pooled(work: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    import multiprocessing

    global _WORK
    _WORK = work
    for stream in (sys.stdout, sys.stderr):  # a child must not inherit unwritten output
        stream.flush()
    # Workers are born with SIGINT and SIGTERM blocked (a fork keeps the mask), and unblock them
    # once the default action is set: see _worker_signals. This process's mask is restored as
    # soon as the pool (its workers forked) exists; a signal sent meanwhile is delivered then.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    restored = False
    try:
        with multiprocessing.get_context("fork").Pool(workers, _worker_signals) as pool:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            restored = True
            yield from pool.imap(_run_work, items, chunksize=TASK_LOGS)
    finally:
        if not restored:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _WORK = None


def _run_work(item: Any) -> Any:
    assert _WORK is not None
    return _WORK(item)


def _worker_signals() -> None:
    """Ctrl-C and SIGTERM are the parent's to handle: it stops the pool (Pool.terminate sends
    each worker SIGTERM, then joins it), so a worker ignores SIGINT and dies of SIGTERM.

    A worker is born with both blocked (`_pooled`) and unblocks them only here, after: a
    SIGTERM that comes before waits, then kills it. Unblocked, it could come before the child's
    Python has reset its signal state after the fork, which drops it (the parent's Python handler
    was tripped and is cleared): on a busy machine a worker that gets no CPU until the other has
    read every log was terminated that way, lived on, and waited for a task forever while the
    parent joined it (check of 2-3 logs, in-process in the test suite and as a CLI)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def _warm(options: LoadOptions) -> None:
    from memledger.formulas import load_formulas
    from memledger.input.grep_scan import stop_unclaimed
    from memledger.input.linegrammar import load_grammar

    for module in ("memledger.diagnosis", "memledger.engine", "memledger.input.parsing"):
        importlib.import_module(module)
    load_formulas(options.formula_files)
    load_grammar(options.grammars)
    stop_unclaimed()  # a grep the CLI started belongs to this process: a worker starts its own
    # what is loaded lives as long as the process: out of the collector's sight, so neither the
    # workers' collections walk it nor their pages are copied for it (the gc.freeze docs)
    gc.freeze()


def _threads_alive() -> bool:
    """Whether a thread besides this one runs here (a fork now could copy a lock it holds)."""
    return threading.active_count() > 1


def _can_fork() -> bool:
    """Fork (workers inherit what is loaded) is safe on Linux; elsewhere the logs run here."""
    import multiprocessing

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
