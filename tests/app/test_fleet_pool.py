"""The worker pool of a fleet run (memledger/app/fleet.py) and the signals that stop it.

`Pool.terminate` ends each worker with SIGTERM, then joins it. A worker that lets a SIGTERM go
by is joined forever: on a busy machine a worker that got no CPU until its sibling had read
every log was sent SIGTERM before its Python had reset the signal state the fork copied, which
dropped it; it lived on and waited for a task while `check` of two logs waited for it. Workers
are therefore born with SIGINT and SIGTERM blocked, and unblock them only once SIGTERM kills.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import FrameType

import pytest

from memledger.app import fleet
from memledger.app.options import LoadOptions

_STOP = {signal.SIGINT, signal.SIGTERM}


def _double(item: int) -> int:
    return 2 * item


def test_workers_are_born_with_the_stop_signals_blocked_and_die_of_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "signals.jsonl"
    real = fleet._worker_signals

    def spying() -> None:  # the initializer, run first in each worker
        born = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        # written while the stop signals are still blocked: a worker the pool terminates before
        # it runs anything (the other took all nine items) still says how it was born
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"born": sorted(born)}) + "\n")
        real()  # a SIGTERM already sent kills the worker here, as it should
        after = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        state = {
            "after": sorted(after),
            "sigterm_kills": signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
            "sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
        }
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(state) + "\n")

    def handler(signum: int, frame: FrameType | None) -> None:
        raise AssertionError("no SIGTERM is sent in this test")

    monkeypatch.setattr(fleet, "_worker_signals", spying)
    monkeypatch.setattr(fleet, "cores", lambda: 2)
    previous = signal.signal(signal.SIGTERM, handler)  # as memledger.cli.main installs one
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        assert list(fleet.map_paths(_double, range(9), LoadOptions())) == [2 * i for i in range(9)]
        # this process: its mask and its handler as they were
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)
    records = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    born = [state for state in records if "born" in state]
    started = [state for state in records if "after" in state]
    assert len(born) == 2  # the pool forked two workers, each born with the stop signals blocked
    for state in born:
        assert _STOP <= set(state["born"])  # a SIGTERM sent this early waits ...
    # ... until it kills: a worker the pool terminated early dies in real() and writes no more
    assert 1 <= len(started) <= 2
    for state in started:
        assert not _STOP & set(state["after"])
        assert state["sigterm_kills"] and state["sigint_ignored"]
