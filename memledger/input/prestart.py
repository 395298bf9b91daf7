"""The CLI's one entry into the input layer before the command's imports: start the grep pipeline
for the first big plain log named on the command line (or read ahead on a big stdin), so grep
reads the file while the interpreter loads click and the parser.

`memledger.cli.main` calls `grep_early.start_early` (stdlib only) and then `prestart` here; the
reader later claims the pipeline (`grep_scan.claim`, `stdin_scan.prefiltered`). Nothing here is
needed for correctness: any failure leaves the reader to start the scan itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from memledger.input import grep_early, grep_scan
from memledger.sglang.lines import PREFILTER_WORDS


def prestart(argv: Sequence[str]) -> None:
    """Start the pipeline for the first big plain log named in `argv` (a memledger command line)
    now, so it overlaps the imports; `grep_scan.claim` hands it to the reader. Adopts the first grep
    `grep_early.start_early` started for it. Any failure: nothing."""
    found = grep_early.big_log(argv, grep_early.GREP_MIN_BYTES)
    if found is None:
        return
    arg, key = found
    if key is None:  # `-`: stdin
        reopened = grep_scan.stdin_file()
        if reopened is None:
            from memledger.input import stdin_scan  # only for a pipe: reads ahead on stdin

            stdin_scan.prestart(grep_scan.stream_grep())
            return
        found = grep_early.big_log([argv[0], str(reopened)], grep_early.GREP_MIN_BYTES)
        if found is None:
            return
        arg, key = found
        if key is None:
            return
    early = grep_early.STARTED.get(key)
    grep: str | None = None
    if early is not None and "MEMLEDGER_PREFILTER" not in os.environ:
        grep = early[0]  # with -P: a grep without it fails, and the built-in scanner takes over
    else:
        grep = grep_scan.grep_program(Path(arg), key[3])
    first = None if grep is None else grep_early.adopt(key, grep)
    grep_early.stop_unadopted()  # started for a grep that is not the one to use
    if grep is None:
        return
    try:
        grep_scan.STARTED[key] = grep_scan.start(grep, arg, PREFILTER_WORDS, first)
    except OSError:
        if first is not None:
            grep_early.stop(first)
