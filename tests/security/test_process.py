"""Security review: outcome reading (F25), fail-open checks (F26), signals (F27), output (F28)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memledger.errors import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from tests.security.helpers import log_text, run, write_log

# --------------------------------------------------------------------------------------------
# F25: an outcome phrase inside a quoted value is data, not the outcome
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "echo",
    [
        'Receive: obj=GenerateReqInput(text="how do I fix an OOM?")',
        "Receive: obj=GenerateReqInput(text='CUDA out of memory, again', rid='1')",
        'Receive: obj=GenerateReqInput(text="Traceback (most recent call last)")',
    ],
)
def test_F25_logged_request_text_does_not_decide_the_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], echo: str
) -> None:
    log = write_log(tmp_path, extra=f"[2025-02-04 05:29:20] {echo}\n")
    code, out, _ = run(capsys, "ledger", log, "--format", "json")
    assert code == EXIT_OK
    assert json.loads(out)["outcome"] == "ready"


def test_F25_a_real_oom_line_still_is_the_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    log = write_log(tmp_path, extra=f"[2025-02-04 05:29:20 TP0] {oom}\n")
    _, out, _ = run(capsys, "ledger", log, "--format", "json")
    assert json.loads(out)["outcome"] == "oom"


# --------------------------------------------------------------------------------------------
# F26: fail-open cases in check
# --------------------------------------------------------------------------------------------


def _budget(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "budget.toml"
    path.write_text(f"version = 1\n[[budget]]\n{body}\n")
    return path


def test_F26_a_missing_baseline_is_a_warning_annotation_with_format_github(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = _budget(tmp_path, 'item = "cuda_graph"\nmax_increase_pct = 5')
    missing = tmp_path / "not-downloaded.json"
    code, out, _ = run(
        capsys, "check", write_log(tmp_path), "--budget", budget, "--baseline", missing,
        "--format", "github",
    )  # fmt: skip
    assert code == EXIT_OK  # documented: a first run has no baseline
    [warning] = [line for line in out.splitlines() if line.startswith("::warning ")]
    assert "relative limits not compared" in warning and "not found" in warning


def test_F26_require_baseline_makes_a_missing_baseline_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = _budget(tmp_path, 'item = "cuda_graph"\nmax_increase_pct = 5')
    log = write_log(tmp_path)
    missing = tmp_path / "not-downloaded.json"
    code, _, err = run(
        capsys, "check", log, "--budget", budget, "--baseline", missing, "--require-baseline"
    )
    assert code == EXIT_INPUT and "baseline not found (--require-baseline)" in err
    code, _, err = run(capsys, "check", log, "--budget", budget, "--require-baseline")
    assert code == EXIT_INPUT and "no baseline" in err
    code, _, _ = run(
        capsys, "check", log, "--budget", budget, "--baseline", log, "--require-baseline"
    )
    assert code == EXIT_OK


def test_F26_a_budget_that_checks_nothing_does_not_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = _budget(tmp_path, 'item = "cuda_graph"\nmax = "1 GiB"\nlogs = "[!"')
    log = write_log(tmp_path)
    code, out, _ = run(capsys, "check", log, "--budget", budget)
    assert code == EXIT_INPUT
    assert out.startswith("memledger check: INCOMPLETE (exit 3)")
    code, out, _ = run(capsys, "check", log, "--budget", budget, "--format", "github")
    assert code == EXIT_INPUT and "::error " in out and "nothing was checked" in out


# --------------------------------------------------------------------------------------------
# F27: Ctrl-C exits 130; SIGTERM stops the scan worker
# --------------------------------------------------------------------------------------------

_RUN_WITH_SIGINT = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from memledger.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Over the two-process threshold (reader.PARALLEL_MIN_BYTES), so a scan worker runs."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: memledger scans in one process, there is no worker to stop")
    path = tmp_path_factory.mktemp("signals") / "big.log"
    serving = (
        "[2025-02-04 05:30:00 TP0] Decode batch. #running-req: 1, #token: 5, token usage: 0.00, "
        "gen throughput (token/s): 1.0, #queue-req: 0\n"
    ) * 10_000
    with path.open("w") as handle:
        handle.write(log_text())
        for _ in range(90):  # ~120 MB
            handle.write(serving)
    return path


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(child) for child in found.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _survivors(workers: list[int]) -> list[int]:
    # The parent has exited; its workers get SIGTERM from it and may need a moment to die on a
    # loaded machine (0.2 s was flaky at load 10): poll, but a worker that outlives 10 s leaked.
    deadline = time.monotonic() + 10
    alive = [worker for worker in workers if _alive(worker)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [worker for worker in alive if _alive(worker)]
    return alive


def _start_and_signal(log: Path, sig: signal.Signals) -> tuple[int, list[int], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", _RUN_WITH_SIGINT, "ledger", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    workers: list[int] = []
    deadline = time.monotonic() + 30
    while not workers and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
        workers = _children(process.pid)
    assert workers, "the scan worker never started"
    process.send_signal(sig)
    _, err = process.communicate(timeout=60)
    return process.returncode, workers, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_F27_sigterm_stops_the_scan_worker_and_exits_143(big_log: Path) -> None:
    code, workers, err = _start_and_signal(big_log, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM and "memledger: terminated" in err
    assert not _survivors(workers)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_F27_ctrl_c_exits_130_not_the_usage_code(big_log: Path) -> None:
    code, workers, err = _start_and_signal(big_log, signal.SIGINT)
    assert code == EXIT_INTERRUPTED and "interrupted" in err
    assert not _survivors(workers)


# --------------------------------------------------------------------------------------------
# F28: output errors
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_F28_a_full_stdout_is_a_one_line_error(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "memledger", "ledger", str(write_log(tmp_path))],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == EXIT_USAGE
    assert (
        done.stderr == "memledger: error: <stdout>: cannot write output: No space left on device\n"
    )


def test_F28_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    log = str(write_log(tmp_path))
    done = subprocess.run(
        f'"{sys.executable}" -m memledger ledger "{log}" >&-',
        shell=True,
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (EXIT_OK, "")


def test_F28_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    log = str(write_log(tmp_path))
    done = subprocess.run(
        f'"{sys.executable}" -m memledger ledger "{log}" | head -c 10 >/dev/null; '
        "exit ${PIPESTATUS[0]}",
        shell=True,
        executable="/bin/bash",
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (EXIT_OK, "")


def test_F28_output_onto_a_directory_is_a_memledger_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "ledger", write_log(tmp_path), "-o", tmp_path)
    assert code == EXIT_USAGE
    assert err == f"memledger: error: {tmp_path}: cannot write output: Is a directory\n"


def test_F28_output_replaces_a_file_whole_and_leaves_no_temporary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.txt"
    target.write_text("old " * 10_000)
    target.chmod(0o640)
    code, _, _ = run(capsys, "ledger", write_log(tmp_path), "-o", target)
    assert code == EXIT_OK
    assert target.read_text().startswith("memledger ledger: ")
    assert (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.log", "report.txt"]
