"""Logs from stdin and streams are parsed as streams: never read whole into memory."""

from __future__ import annotations

import io
import subprocess
import sys

from memledger.app.load import load_ledger
from memledger.record import to_json
from tests.conftest import PROJECT_ROOT, SAMPLES

MAX_READ = 16 << 20  # no single read may ask for more than a parser chunk


class ChunkOnlyStream:
    """A byte stream that fails on any read-everything call, like a pipe of unbounded size."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.largest_read = 0

    def read(self, size: int = -1, /) -> bytes:
        assert 0 <= size <= MAX_READ, f"read({size}) would hold the whole log in memory"
        self.largest_read = max(self.largest_read, size)
        return self._data.read(size)


def test_a_log_stream_is_never_read_whole() -> None:
    serving = b"[2026-11-05 11:00:00 DP0 TP0 EP0] Decode batch. #running-req: 3, #token: 90\n"
    stream = ChunkOnlyStream((SAMPLES / "dp16.log").read_bytes() + serving * 50_000)
    ledger = load_ledger(stream)
    assert ledger.outcome == "ready"
    assert (
        ledger.summary.kv_tokens_per_instance
        == load_ledger(SAMPLES / "dp16.log").summary.kv_tokens_per_instance
    )
    assert 0 < stream.largest_read <= MAX_READ


def test_a_saved_ledger_on_stdin_is_still_recognised() -> None:
    saved = to_json(load_ledger(SAMPLES / "dp2.log"), by_alias=True).encode()
    run = subprocess.run(
        [sys.executable, "-m", "memledger", "ledger", "-", "--format", "csv"],
        input=saved,
        capture_output=True,
        cwd=PROJECT_ROOT,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert b"req_to_token" in run.stdout


class ChunkOnlyText(io.StringIO):
    """A text stream that fails on read-everything calls."""

    def read(self, size: int | None = -1, /) -> str:
        assert size is not None and 0 <= size <= MAX_READ, f"read({size}) reads the whole log"
        return super().read(size)


def test_a_text_stream_through_the_api_is_encoded_chunk_by_chunk() -> None:
    import memledger

    text = (SAMPLES / "dp2.log").read_text(encoding="utf-8")
    ledger = memledger.ledger(ChunkOnlyText(text))
    assert ledger.summary.slots == 209
    assert (
        ledger.summary.kv_tokens_per_rank
        == memledger.ledger(SAMPLES / "dp2.log").summary.kv_tokens_per_rank
    )
