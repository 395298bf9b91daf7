"""Helpers for the parser tests: run the CLI in-process, read real logs, transform them in tmp."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REAL_LOGS, require_real_logs, run_cli
from tests.conftest import real_log as real_log  # re-exported: the parser tests import it here

ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def parse_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """`memledger parse ARGS --format json` as a dict (asserting exit 0)."""
    code, out, err = run_cli(["parse", *args, "--format", "json"], capsys)
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return document


def truth_facts(path: Path) -> dict[str, Any]:
    """The hand-checked facts of a real log from truth.jsonl."""
    require_real_logs()
    relative = path.relative_to(REAL_LOGS).as_posix()
    for line in (REAL_LOGS / "truth.jsonl").read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            if entry["file"] == relative:
                facts: dict[str, Any] = entry["facts"]
                return facts
    raise AssertionError(f"{relative} not in truth.jsonl")


def physical_lines(path: Path) -> list[str]:
    """The file's physical lines (split on \\n only), decoded with replacement, ANSI removed."""
    return [
        ANSI_RE.sub("", line) for line in path.read_bytes().decode("utf-8", "replace").split("\n")
    ]
