"""Command-line entry point: `main` runs the click group of `memledger.commands.group`.

The click layer only parses options, calls one function and maps errors to exit codes. This
module imports nothing heavy: `main` starts the big-log prefilter first through the input
layer's CLI entry (memledger.input.grep_early, then memledger.input.prestart), then imports click
and the command, so the two overlap.
"""

from __future__ import annotations

import gc
import os
import signal
import sys

GC_THRESHOLD = 100_000
"""The cyclic collector's first threshold in a CLI process (Python's default is 700). A run
allocates ~100,000 container objects importing its modules and building its tables, nearly none
of them garbage: the default runs ~70 collections that free nothing (20-40 ms of a 0.3 s
`ledger`), and on a long log, full collections that walk every table again and again. Garbage
without cycles is freed at once whatever the threshold; garbage in cycles waits for at most this
many allocations, so memory stays bounded."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType


def _terminate(signum: int, _frame: FrameType | None) -> None:
    from memledger.errors import Terminated  # lazily: main starts grep before heavier imports

    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of raising (usable in-process by tests).

    Without `argv` (the console script, `python -m memledger`) the process ends as soon as the
    output is flushed: the interpreter's teardown (freeing every module and object, ~50 ms of a
    0.3 s run) does nothing a finished command needs.
    """
    if argv is None:
        gc.set_threshold(GC_THRESHOLD, 10, 10)  # the console script's process only
        # pydantic scans every installed package's entry points for plugins when the first
        # model is built; the CLI's models want none (saves the scan, ~2-20 ms a start)
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (an embedding caller): leave signals alone
        pass
    try:
        if argv is None:
            _prestart(sys.argv[1:])
        from memledger.commands.group import run

        code = run(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if "memledger.input.grep_scan" in sys.modules:  # no grep outlives the command
            sys.modules["memledger.input.grep_scan"].stop_all()
        if "memledger.input.grep_early" in sys.modules:
            sys.modules["memledger.input.grep_early"].stop_unadopted()
    if argv is None:
        _exit_now(code)
    return code


def _prestart(args: list[str]) -> None:
    """Start grep on a big log named in `args` before the command's imports (~0.3 s), so the
    two overlap: its first stage with the stdlib only, then the rest of the pipeline
    (memledger.input.grep_early, prestart)."""
    try:
        from memledger.input.grep_early import start_early

        start_early(args)
        from memledger.input.prestart import prestart

        prestart(args)
    except Exception:  # an optimisation only: the reader starts the scan itself
        pass


def _exit_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None when the process started with that fd closed
                stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe: what could not be written is lost either way
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
