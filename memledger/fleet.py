"""`memledger ledger` over several logs or a folder: one summary line per log (the fleet view).

An operator with one startup log per pod restart wants to see at a glance which restart came out
different. The logs are read in parallel (one process per core, at most two: the machine this
tool targets in CI has two), in the order given; a log that cannot be read is a line with its
error, not the end of the run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from memledger.errors import EXIT_INPUT, EXIT_OK, ConfigError, InputError
from memledger.ledger_model import Ledger
from memledger.render.terminal import PLAIN, Terminal
from memledger.service import LoadOptions, Output, Source, load_ledger

LOG_SUFFIXES = (".log", ".log.gz")
MAX_WORKERS = 2


@dataclass(frozen=True)
class FleetEntry:
    """One input of the fleet: its ledger, or the one-line error that stopped it."""

    path: str
    ledger: Ledger | None = None
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
    try:
        return FleetEntry(path, ledger=load_ledger(path, options))
    except (InputError, ConfigError) as exc:
        return FleetEntry(path, error=str(exc))


def load_fleet(paths: Sequence[str], options: LoadOptions) -> Iterator[FleetEntry]:
    """Each path's ledger in the order given, built by up to two worker processes."""
    workers = min(MAX_WORKERS, os.cpu_count() or 1, len(paths))
    if workers <= 1 or "-" in paths:
        yield from (_load(path, options) for path in paths)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_load, paths, [options] * len(paths))


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
