"""A long run over many logs shows a progress bar on a terminal (count, rate, time left), as pip
and ruff do, and nothing when stderr is not a terminal (memledger.app.progress, fleet.fleet_bar)."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import pytest

from memledger.app import fleet
from memledger.app.options import LoadOptions
from memledger.app.progress import ProgressBar, bar_text, with_progress
from tests.conftest import SAMPLES


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_shows_count_rate_and_time_left() -> None:
    assert bar_text(512, 1000, 8.0) == (
        "memledger: [##########..........] 512/1,000 logs   64.0 logs/s   0:07 left"
    )
    assert bar_text(3, None, 2.0) == "memledger: 3 logs   1.5 logs/s"  # total not known
    assert bar_text(1000, 1000, 10.0).startswith("memledger: [" + "#" * 20 + "] 1,000/1,000")


def test_the_bar_redraws_in_place_at_most_ten_times_a_second_and_is_erased() -> None:
    clock, stream = Clock(), io.StringIO()
    bar = ProgressBar(40, enabled=True, stream=stream, clock=clock)
    items = []
    for item in with_progress(range(40), bar):
        items.append(item)
        clock.now += 0.05  # 20 logs a second: two steps between redraws
    assert items == list(range(40))
    frames = stream.getvalue().split("\r")
    drawn = [f for f in frames if f.startswith("memledger: [")]
    # nothing in the first half second, then a frame every 0.1 s (every second log)
    assert 9 <= len(drawn) <= 16
    last = re.fullmatch(r"memledger: \[#{19}\.\] (3[89])/40 logs   20\.0 logs/s.*", drawn[-1])
    assert last is not None, drawn[-1]
    assert stream.getvalue().endswith("\r\x1b[K")  # erased: the report starts on a clean line


def test_nothing_is_drawn_when_disabled_or_short() -> None:
    clock, stream = Clock(), io.StringIO()
    for _ in with_progress(range(100), ProgressBar(100, enabled=False, stream=stream)):
        pass
    quick = ProgressBar(3, enabled=True, stream=stream, clock=clock)
    for _ in with_progress(range(3), quick):
        clock.now += 0.1  # done in 0.3 s: no bar for a handful of logs
    assert stream.getvalue() == ""


def test_a_fleet_run_counts_its_logs_only_on_a_terminal(tmp_path: Path) -> None:
    for name in ("a.log", "b/c.log", "b/notes.md", ".git/x.log"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLES / "dp2.log", tmp_path / name)
    assert fleet.count_inputs([str(tmp_path)]) == 2  # what the walk gives, skips left out
    shown = fleet.fleet_bar([str(tmp_path)], LoadOptions(progress=True))
    assert shown.enabled and shown.total == 2
    assert not fleet.fleet_bar([str(tmp_path)], LoadOptions(progress=False)).enabled
    # one log is no fleet: its own meter (MiB read) is the one shown
    assert not fleet.fleet_bar([str(tmp_path / "a.log")], LoadOptions(progress=True)).enabled


@pytest.mark.parametrize("command", ["ledger", "check"])
def test_the_cli_draws_no_bar_when_stderr_is_not_a_terminal(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from memledger.cli import main

    for i in range(3):
        shutil.copy(SAMPLES / "dp16.log", tmp_path / f"pod-{i}.log")
    budget = tmp_path / "budget.toml"
    budget.write_text('[[budget]]\nitem = "usable"\nmin = "1 GiB"\n')
    argv = [command, str(tmp_path)] + (["--budget", str(budget)] if command == "check" else [])
    main(argv)
    err = capsys.readouterr().err
    assert "\r" not in err and "logs/s" not in err
