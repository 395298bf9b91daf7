"""The review's reproductions of F5, F9 and F11, named after them (the behaviour has fuller
tests in test_parse_grammar_cache.py, test_shape_cache.py and test_parse_glued_serving.py)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memledger.input.linegrammar import LineGrammar
from memledger.input.parsing import parse_log
from tests.security_helpers import log_text, run, write_log


class _Planted:
    def __init__(self, proof: Path) -> None:
        self.proof = proof

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"echo PICKLE-RCE-EXECUTED > {self.proof}",))


def _parse_with_cache(cache: Path, log: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("MEMLEDGER_NO_GRAMMAR_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "memledger", "parse", str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_F05_a_planted_pickle_never_runs_and_a_planted_symlink_is_never_written(
    tmp_path: Path,
) -> None:
    cache, log = tmp_path / "xdg", write_log(tmp_path)
    assert _parse_with_cache(cache, log).returncode == 0
    # the grammar tables and the shape store: the review's payload at each file's own path
    files = sorted((cache / "memledger").iterdir())
    assert any(path.name.startswith("grammar-") for path in files)
    proof = tmp_path / "rce_proof.txt"
    for cached in files:
        with cached.open("wb") as planted:
            planted.write(b"whatever\n")
            pickle.dump(_Planted(proof), planted)
    done = _parse_with_cache(cache, log)
    assert done.returncode == 0 and "ready" in done.stdout
    assert not proof.exists()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious data")
    for cached in files:
        cached.unlink()
        cached.symlink_to(victim)
    assert _parse_with_cache(cache, log).returncode == 0
    assert victim.read_text() == "precious data"


def test_F09_repeated_memory_lines_reach_lark_once_per_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the review's rep.log: 100k `Memory pool end` lines that differ only in their digits
    # (shortened to 5,000): Lark parses the shape once, the rest come from the shape cache
    calls: list[str] = []
    original = LineGrammar._tree

    def counted(self: LineGrammar, message: str) -> Any:
        calls.append(message)
        return original(self, message)

    monkeypatch.setattr(LineGrammar, "_tree", counted)
    log = tmp_path / "rep.log"
    extra = "".join(
        f"[2025-02-04 05:29:40 TP0] Memory pool end. avail mem=2.{i % 100:02d} GB\n"
        for i in range(5000)
    )
    log.write_text(log_text() + extra, encoding="utf-8")
    parsed = parse_log(log)
    kept = [e for e in parsed.startup.events if e.kind == "memory_pool_end"]
    assert len(kept) > 100  # the lines were read (up to the per-kind cap)
    # once per shape at most (none when an earlier run's shape store knows it), not 5,000
    assert len([m for m in calls if m.startswith("Memory pool end.")]) <= 3


def test_F11_a_glued_decode_batch_drops_only_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decode = "[2025-02-04 05:29:16 TP0] Decode batch. #running-req: 1, #token: 5"
    lines = log_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "KV Cache is allocated" in line)
    lines[at] = decode + lines[at]  # the review's glued.log
    glued = tmp_path / "glued.log"
    glued.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "ledger", glued, "--explain", "kv_pool")
    assert code == 0 and "5.640 GiB" in out and "logged" in out
    oom = (
        "[2025-02-04 05:29:20 TP0] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB "
    )
    hidden = write_log(tmp_path, "oomhide.log", extra=oom + decode + "\n")  # the review's file
    code, out, _ = run(capsys, "parse", hidden)
    assert code == 0 and "outcome:   oom (line 11" in out
