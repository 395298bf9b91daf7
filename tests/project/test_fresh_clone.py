"""The suite on a clone with nothing beside it: real-log tests skip with one reason, the rest
runs; under CI=true a missing corpus fails them (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT

# a module of each kind: truth-parametrized (empty lists at collection), real_log() in bodies,
# a marked test, and tests that never read a real log
MODULES = ["tests/input/test_facts.py", "tests/base/test_units.py", "tests/check/test_samples.py"]


def _pytest(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"CI", "PYTEST_CURRENT_TEST"}}
    env |= {"MEMLEDGER_REAL_LOGS": str(tmp_path / "no-such-folder"), **extra}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *MODULES],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_the_corpus_real_log_tests_skip_with_one_reason(tmp_path: Path) -> None:
    run = _pytest(tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    skip_lines = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skip_lines) == 1, skip_lines
    assert "real logs not found at" in skip_lines[0] and "MEMLEDGER_REAL_LOGS" in skip_lines[0]
    counts = re.search(r"(\d+) passed, (\d+) skipped", run.stdout)
    assert counts is not None, run.stdout[-500:]
    passed, skipped = int(counts.group(1)), int(counts.group(2))
    assert passed >= 15 and skipped >= 3  # the sample tests ran; every real-log one skipped
    assert f"[{skipped}]" in skip_lines[0]


def test_under_ci_a_missing_corpus_fails(tmp_path: Path) -> None:
    run = _pytest(tmp_path, CI="true")
    assert run.returncode == 1, run.stdout[-3000:]
    assert "CI=true requires them" in run.stdout
    assert not [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
