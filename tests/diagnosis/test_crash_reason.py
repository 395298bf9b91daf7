"""How a failed startup's reason is quoted (review m20): the exception line a traceback ends with,
not its `Traceback (most recent call last):` header, and the rank it came from when that is
not the rank being read."""

from __future__ import annotations

from pathlib import Path

import pytest

from memledger.input.parsing import parse_log
from tests.conftest import ledger_for, real_log, run_cli

P = "[2026-01-01 00:00:0{s} {rank}] "


def _log(tmp_path: Path, rank: str) -> Path:
    lines = [
        P.format(s=0, rank="TP0") + "Load weight begin. avail mem=70.00 GB, mem usage=0.50 GB.",
        P.format(s=1, rank=rank) + "Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 3096, in run_scheduler',
        "    scheduler = Scheduler(",
        "ValueError: too many values to unpack (expected 2)",
        "",
        P.format(s=2, rank="TP0") + "Received sigquit from a child process.",
    ]
    path = tmp_path / "crash.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(("rank", "prefix"), [("TP0", ""), ("TP1", "TP1: ")])
def test_a_traceback_is_quoted_by_its_exception_line(
    tmp_path: Path, rank: str, prefix: str
) -> None:
    startup = parse_log(_log(tmp_path, rank)).startup
    assert (startup.outcome, startup.outcome_line) == ("crash", 2)
    assert startup.outcome_text == (
        f"{prefix}Scheduler hit an exception: ValueError: too many values to unpack (expected 2)"
    )


def test_single_007_says_which_rank_crashed_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    log = real_log("single/007")
    reason = (
        "TP6: Scheduler hit an exception: TypeError: cannot unpack non-iterable ForwardMetadata"
    )
    assert parse_log(log).startup.outcome_text == f"{reason} object"
    stopped = ledger_for(log).stopped_at or ""
    assert (
        stopped
        == f"after checkpoint capture_begin (line 449); crashed at line 539: {reason} object"
    )
    code, out, _ = run_cli(["parse", log], capsys)
    assert (
        code == 0
        and "outcome:   crash (line 539: TP6: Scheduler hit an exception: TypeError" in out
    )
