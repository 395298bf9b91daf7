"""Review 3, finding 4: a startup whose log ends before the server was ready (outcome
`truncated`) never passes `check`: it is a `missing` check of `startup` (exit 3) that every
format states, beside the budget's checks on what the log showed (docs/check.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK
from tests.security.helpers import log_text, run

WHY = "startup did not finish: stopped after checkpoint load_end (line 5); the log ends there"


def _files(tmp_path: Path, lines: int | None) -> tuple[Path, Path]:
    text = log_text()
    if lines is not None:
        text = "".join(text.splitlines(keepends=True)[:lines])
    log = tmp_path / "trunc.log"
    log.write_text(text, encoding="utf-8")
    budget = tmp_path / "bw.toml"
    budget.write_text('version = 1\n[[budget]]\nitem = "weights"\nmax = "20 GiB"\n')
    return log, budget


@pytest.mark.parametrize("fmt", ["text", "markdown", "github", "junit", "json"])
def test_a_log_that_ends_after_the_kv_pool_does_not_pass(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, budget = _files(tmp_path, 6)  # the review's `head -6 base.log`
    code, out, _ = run(capsys, "check", log, "--budget", budget, "--format", fmt)
    assert code == EXIT_INPUT
    flat = " ".join(out.split())
    if fmt == "json":
        report = json.loads(out)
        startup = [c for c in report["checks"] if c["item"] == "startup"]
        assert [c["status"] for c in startup] == ["missing"] and report["exit_code"] == EXIT_INPUT
        assert startup[0]["note"].startswith(WHY)
        assert [c["status"] for c in report["checks"] if c["item"] == "weights"] == ["pass"]
    else:
        assert WHY + " (truncated)" in flat
        assert "INCOMPLETE (exit 3)" in flat or fmt == "junit"
    if fmt == "github":
        assert out.startswith("::error ") and "startup missing" in out.splitlines()[0]
    if fmt == "junit":
        assert (
            'errors="1"' in out and '<testcase classname="memledger.trunc_log" name="startup' in out
        )


@pytest.mark.parametrize(
    "lines, code",
    [
        (None, EXIT_OK),  # ready line
        (10, EXIT_OK),  # ends at the summary line: SGLang printed its sizes, a finished startup
        (9, EXIT_INPUT),  # ends after the capture: no summary, no ready line
        (4, EXIT_INPUT),  # ends before the weights loaded
    ],
)
def test_what_counts_as_finished(
    lines: int | None, code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, budget = _files(tmp_path, lines)
    got, out, _ = run(capsys, "check", log, "--budget", budget)
    assert got == code
    assert ("MISSING startup" in out) is (code == EXIT_INPUT)


def test_a_crash_stays_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, budget = _files(tmp_path, 6)
    with log.open("a", encoding="utf-8") as out:
        out.write("[2025-02-04 05:29:18 TP0] RuntimeError: CUDA error: an illegal memory access\n")
    code, text, _ = run(capsys, "check", log, "--budget", budget)
    assert code == EXIT_BUDGET_FAILED and "FAIL startup" in text and "MISSING startup" not in text
