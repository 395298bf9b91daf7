"""Review 3, finding 3: error texts are read with a cap per rank and startup. Past
ERROR_TEXTS_CAP lines of error text in a rank, a line holding error words is counted (in the
rank's coverage and a memory-bound note), not parsed: 50,000 allocator OOM lines took 15.9 s.
The cost is counted in calls of each reader (no timing), for every kind of error text."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from memledger.input import error_texts
from memledger.input.parsing import parse_log
from memledger.input.store import ERROR_TEXTS_CAP, ERRORS_NOT_READ
from memledger.model.events import EventKind
from tests.security.helpers import log_text, run

# one line of each kind error_texts reads, as SGLang and torch print them
KINDS = {
    EventKind.OOM_MESSAGE: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {i}.00 "
    "GiB. GPU 0 has a total capacity of 79.10 GiB of which 10.00 MiB is free.",
    EventKind.TRACEBACK: "RuntimeError: CUDA error: an illegal memory access ({i})",
    EventKind.KV_REFUSAL: "RuntimeError: Not enough memory. Please try to increase "
    "--mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.{i}",
    EventKind.POOL_EXHAUSTED: "KV cache pool is full. Retract requests. #retracted_reqs: {i}",
    EventKind.PROCESS_EXIT: "Rank 0 scheduler is dead. Exit code: -{i}",
}
RANKS = 4
LINES_PER_RANK = 500


def _log(kind: EventKind) -> bytes:
    lines = [log_text()]
    for i in range(LINES_PER_RANK * RANKS):
        text = KINDS[kind].format(i=i % 90 + 1)
        lines.append(f"[2025-02-04 05:29:40 TP{i % RANKS}] {text}\n")
    return "".join(lines).encode()


READERS = ("read_oom_message", "read_kv_refusal", "read_pool_exhausted", "read_process_exit")


@pytest.mark.parametrize("kind", list(KINDS), ids=str)
def test_many_error_lines_of_each_kind_are_read_a_bounded_number_of_times(
    kind: EventKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = dict.fromkeys(READERS, 0)
    for name in READERS:
        reader = getattr(error_texts, name)

        def counted(text: str, _reader=reader, _name=name):  # type: ignore[no-untyped-def]
            calls[_name] += 1
            return _reader(text)

        monkeypatch.setattr(error_texts, name, counted)
    parsed = parse_log(io.BytesIO(_log(kind)), label="errors.log")
    # each line is read at most a few times (a cut-line test, then the reading) while its rank
    # is under the cap; the thousands after it are not
    read_lines = ERROR_TEXTS_CAP * RANKS
    assert max(calls.values()) <= 3 * read_lines, calls
    events = [e for e in parsed.startup.events if e.kind is kind]
    for rank in range(RANKS):  # error events of every rank are kept: the first ones
        lines = [e.line for e in events if e.rank == f"TP{rank}"]
        assert len(lines) == ERROR_TEXTS_CAP and min(lines) == 12 + rank
    unread = LINES_PER_RANK * RANKS - read_lines
    assert any(f"{unread:,} lines of error text were counted, not read" in n for n in parsed.notes)
    # the selected rank's unread lines are in its coverage, with why
    coverage = parsed.startup.unrecognised
    assert parsed.startup.unrecognised_count >= LINES_PER_RANK - ERROR_TEXTS_CAP
    assert any(u.reason == ERRORS_NOT_READ for u in coverage)


def test_the_outcome_still_comes_from_the_first_oom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "ooms.log"
    log.write_bytes(_log(EventKind.OOM_MESSAGE))
    code, out, _ = run(capsys, "ledger", log)
    assert code == 0
    assert "outcome:   oom" in out and "out of memory at line 12" in out
    assert "lines of error text were counted, not read" in out.replace("\n  ", " ")
