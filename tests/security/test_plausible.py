"""F24, re-checked: a balanced ledger must also be true. Readings no GPU can give (a later avail
above the load-begin one, a load using more than the usable memory, usable memory above the GPU
the log prints or above any device) are named at file:line, and the ledger is not balanced on
them; a negative spelling of a size (`-0`) is a malformed number, as `-5` already was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.units import MAX_DEVICE_BYTES
from tests.security.helpers import run, write_log

OOM_LINE = (
    "[2025-02-04 05:29:20 TP0] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
    "2.00 GiB. GPU 0 has a total capacity of {capacity} GiB of which 1.00 GiB is free.\n"
)


def _ledger(capsys: pytest.CaptureFixture[str], log: Path) -> dict[str, object]:
    code, out, err = run(capsys, "ledger", log, "--format", "json")
    assert code == EXIT_OK and err == ""
    document: dict[str, object] = json.loads(out)
    return document


def _impossible(ledger: dict[str, object]) -> list[str]:
    notes = ledger["notes"]
    assert isinstance(notes, list)
    return [note for note in notes if note.startswith("cannot balance: impossible reading")]


@pytest.mark.parametrize("avail", ["0", "0.5"])
def test_a_later_reading_above_the_usable_memory_is_named_and_not_balanced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], avail: str
) -> None:
    # usable = 0.50 GB of distributed init + the load-begin avail; load end reads 8.37 GB
    log = write_log(tmp_path, avail=avail)
    ledger = _ledger(capsys, log)
    assert ledger["usable_bytes"] is None and ledger["balance_error_bytes"] == 0
    (note,) = _impossible(ledger)
    assert f"load_end reads avail mem=8.37 GB at {log}:5, above the usable memory" in note
    assert f"load begin, {log}:4," in note
    code, out, _ = run(capsys, "ledger", log)
    assert code == EXIT_OK and "balances" not in out
    assert "balance: not checked" in out


def test_negative_zero_is_a_malformed_reading_not_a_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path, avail="-0")
    code, out, _ = run(capsys, "parse", log, "--coverage")
    assert code == EXIT_OK and "negative size" not in out.split("coverage", 1)[0]
    assert any(line.lstrip().startswith("4 ") and "malformed" in line for line in out.splitlines())
    ledger = _ledger(capsys, log)
    notes = ledger["notes"]
    assert isinstance(notes, list) and _impossible(ledger) == []
    # the reading is recovered from load end (avail + usage), as for any malformed one
    assert any("taken as load-end avail + mem usage (line 5)" in note for note in notes)
    assert ledger["usable_bytes"] == round((8.37 + 14.00 + 0.50) * (1 << 30))


def test_usable_memory_above_any_device_is_impossible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path, avail="100000")
    ledger = _ledger(capsys, log)
    (note,) = _impossible(ledger)
    assert f"load begin, {log}:4)" in note and f"({MAX_DEVICE_BYTES >> 40} TiB)" in note
    assert ledger["usable_bytes"] is None


def test_a_load_using_more_than_the_usable_memory_is_impossible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # load begin 8.00 GB (+0.50 distributed init): load end's 8.37 GB is within the 8.50 GB,
    # but the 14 GB the load says it used is not
    log = write_log(tmp_path, avail="8.00")
    ledger = _ledger(capsys, log)
    (note,) = _impossible(ledger)
    assert f"load_end prints mem usage=14.00 GB at {log}:5" in note
    assert "more than the usable memory 8.50 GiB" in note


def test_usable_memory_above_the_capacity_the_log_prints_is_impossible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = write_log(tmp_path, "small.log", extra=OOM_LINE.format(capacity="15.00"))
    (note,) = _impossible(_ledger(capsys, small))
    assert "more than the GPU's capacity 15.00 GiB printed at" in note and f"{small}:11" in note
    # the same OOM text on a GPU that holds the readings: no note, the account balances
    fits = write_log(tmp_path, "fits.log", extra=OOM_LINE.format(capacity="23.50"))
    ledger = _ledger(capsys, fits)
    assert _impossible(ledger) == [] and ledger["usable_bytes"] is not None


def test_whatif_refuses_a_gpu_smaller_than_the_free_memory_the_log_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path)
    code, out, err = run(capsys, "whatif", log, "--set", "gpu_memory_mib=1000")
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
    assert "gpu_memory_mib=1,000 is less than the free memory" in err and f"{log}:4" in err
    code, out, _ = run(capsys, "whatif", log, "--set", "gpu_memory_mib=24576")
    assert code == EXIT_OK and "What if gpu_memory_mib=24576" in out


def test_a_saved_ledger_with_an_impossible_reading_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the same rule on a forged saved ledger, whose balance the loader recomputes: a checkpoint
    # above the usable memory (or usable above any device) is refused, not shown as "balances"
    document = _ledger(capsys, write_log(tmp_path))
    usable = document["usable_bytes"]
    assert isinstance(usable, int)
    checkpoints = document["checkpoints"]
    assert isinstance(checkpoints, list) and checkpoints[2]["id"] == "load_end"
    checkpoints[2]["avail_bytes"] = 3 * usable
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document), encoding="utf-8")
    code, out, err = run(capsys, "ledger", forged)
    assert code == EXIT_INPUT and out == "" and err.count("\n") == 1
    assert "checkpoint load_end (line 5) reads more than the usable memory" in err
    checkpoints[2]["avail_bytes"] = usable  # at most the usable memory: read
    forged.write_text(json.dumps(document), encoding="utf-8")
    assert run(capsys, "ledger", forged)[0] == EXIT_OK


def test_diff_refuses_a_gpu_smaller_than_the_free_memory_a_side_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path)
    argvs: list[list[str | Path]] = [
        ["diff", log, "--against-release", "0.5.2", "--gpu-memory-mib", "1000"],
        ["diff", log, log, "--gpu-memory-mib", "1000"],
    ]
    for argv in argvs:
        code, out, err = run(capsys, *argv)
        assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
        assert "gpu_memory_mib=1,000 is less than the free memory" in err and f"{log}:4" in err
    code, out, _ = run(
        capsys, "diff", log, "--against-release", "0.5.2", "--gpu-memory-mib", "24576"
    )
    assert code == EXIT_OK and "at 0.5.2 SGLang would size" in out
