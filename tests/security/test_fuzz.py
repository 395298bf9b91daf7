"""Class 3 as a property: whatever number a log line prints, memledger ends with an exit code.

Every number of a real startup line (the samples, plus an OOM, a traceback and an exit line) is
replaced by a hostile one; `ledger` and `parse` must still end with a documented exit code and
never raise (a traceback), and never print the hostile number as a value of the ledger.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger.cli import main
from tests.conftest import SAMPLES

_EXTRA_LINES = [
    "[2025-02-04 05:29:20 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.50 GiB is free.",
    "[2025-02-04 05:29:20 TP0] RuntimeError: Not enough memory. Please try to increase "
    "--mem-fraction-static. mem_fraction_static=0.88",
    '[2025-02-04 05:29:20 TP0]   File "/sgl/srt/managers/scheduler.py", line 2121, in run',
    "[2025-02-04 05:29:21] Rank 0 scheduler is dead. Please check if there are relevant logs. "
    "exit code -9",
    "[2025-02-04 05:29:21] Capturing batches (bs=8 avail_mem=7.19 GB):  50%|#####| "
    "4/8 [00:01<00:01]",
]
HOSTILE_NUMBERS = [
    "1" + "0" * 400,
    "9" * 5000,
    "1e999999",
    "-1e999999",
    "1e-300",
    "nan",
    "inf",
    "-5.00",
    "0x10",
    "18446744073709551617",
]
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _sample_lines() -> list[str]:
    lines = (SAMPLES / "dp2.log").read_text().splitlines()
    return [line for line in lines if _NUMBER.search(line)] + _EXTRA_LINES


LINES = _sample_lines()


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(min_value=0, max_value=len(LINES) - 1),
    hostile=st.sampled_from(HOSTILE_NUMBERS),
    which=st.integers(min_value=0, max_value=20),
)
def test_F03_F04_any_log_number_ends_with_an_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int, hostile: str, which: int
) -> None:
    line = LINES[index]
    numbers = list(_NUMBER.finditer(line))
    target = numbers[which % len(numbers)]
    hostile_line = line[: target.start()] + hostile + line[target.end() :]
    body = "\n".join(LINES[:index] + [hostile_line] + LINES[index + 1 :]) + "\n"
    log = tmp_path / "hostile.log"
    log.write_text(body)
    for command in (["ledger", str(log), "--format", "json"], ["parse", str(log)]):
        code = main(command)
        out = capsys.readouterr().out
        assert code in (0, 2, 3), (command, hostile_line)
        if command[0] == "ledger" and code == 0:
            ledger = json.loads(out)
            assert all(
                row["bytes"] is None or abs(row["bytes"]) <= 1 << 62 for row in ledger["rows"]
            )
