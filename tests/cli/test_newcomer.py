"""What a new user meets first reads whole: the top-level help, a wrapped figure, the reason a
budgeted item is missing (review-newcomer.md, re-checked on a fresh clone)."""

from __future__ import annotations

import pytest

from memledger.render.terminal import fit_lines
from tests.conftest import PROJECT_ROOT, real_log, run_cli


def test_the_top_level_help_says_where_to_start_and_cuts_no_command_s_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0
    assert "memledger ledger server.log" in out and "memledger diagnose server.log" in out
    commands = out[out.index("Commands:") : out.index("Exit codes:")]
    assert "..." not in commands  # click cut "the phase,..." mid-sentence
    assert "the phase, the" in commands and "bytes missing, the knob." in commands


def test_a_number_and_its_unit_stay_on_one_line() -> None:
    line = "state pool: " + "x " * 40 + "draft KV 1.99 GiB; 209 slots; 14.76 % off"
    for width in range(60, 101):
        wrapped = fit_lines(line, width).split("\n")
        assert len(wrapped) > 1
        assert not any(w.lstrip().startswith(("GiB", "%")) for w in wrapped[1:]), width
        assert all(len(w) <= width for w in wrapped)


@pytest.mark.real_logs
def test_a_stopped_startup_s_missing_item_says_why_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = real_log("single/003")  # truncated after capture_begin
    budget = PROJECT_ROOT / "examples" / "memledger.toml"
    code, out, _ = run_cli(["check", log, "--budget", budget], capsys)
    assert code == 3
    text = " ".join(out.split())
    assert (
        "this log cannot provide cuda_graph: the startup stopped after checkpoint capture_begin"
        in text
    )
    assert "has no value for" not in text  # "no value for cuda_graph" before the reason: gone
