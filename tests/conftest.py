"""Shared fixtures: where the real logs and their truth live, and the samples."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLES = PROJECT_ROOT / "samples"
# Real logs are public data read in place, never copied: MEMLEDGER_REAL_LOGS may point elsewhere.
REAL_LOGS = Path(
    os.environ.get("MEMLEDGER_REAL_LOGS", PROJECT_ROOT.parent / "shared" / "real-logs")
)


def load_truth() -> list[dict[str, Any]]:
    """Every object of truth.jsonl (the hand-checked facts of each real log)."""
    path = REAL_LOGS / "truth.jsonl"
    if not path.is_file():
        pytest.fail(f"real logs not found at {REAL_LOGS}; set MEMLEDGER_REAL_LOGS")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def real_log_paths() -> list[Path]:
    """Every *.log under the real-logs folder (whether or not truth.jsonl lists it)."""
    return sorted(REAL_LOGS.rglob("*.log"))


@pytest.fixture(scope="session")
def truth() -> list[dict[str, Any]]:
    return load_truth()
