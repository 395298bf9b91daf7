"""`memledger diagnose` (text, markdown, json), `memledger.diagnose()`, and the diagnosis the
ledger header carries for a failed or starved startup."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import memledger
from memledger.cli import main
from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.record import to_json
from tests.conftest import SAMPLES, unwrapped
from tests.input.helpers import real_log


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_starts_with_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["diagnose", str(real_log("single/015"))], capsys)
    assert code == EXIT_OK
    first = out.splitlines()[0]
    assert first == (
        "OOM during weight loading: likely cause: quantization='awq' is set, but the failing "
        "layer is built"
    )
    assert "phase:     load" in out
    assert "error[oom_message]: TP0 ran out of GPU memory" in out
    assert max(len(line) for line in out.splitlines() if not line.startswith("  at ")) <= 100


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["diagnose", str(real_log("single/008")), "--format", "json"], capsys)
    assert code == EXIT_OK
    doc = json.loads(out)
    assert doc["outcome"] == "oom" and doc["phase"] == "load"
    assert doc["shortfall_bytes"] == round(12 * 2**30) - round(3.91 * 2**30)
    finding = doc["findings"][0]
    assert set(finding) == {"id", "severity", "message", "bytes", "evidence"}
    assert finding["evidence"] == [f"{real_log('single/008')}:536"]
    assert doc["suggestions"] == []  # the Transformers fallback: no knob lowers the peak


def test_markdown_escapes_log_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "hostile.log"
    log.write_text(
        "[2026-01-01 00:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/model_executor/model_runner.py", line 1, in load_model\n'
        "ValueError: <img src=x onerror=alert(1)> | `code` **bold**\n"
    )
    code, out, _ = _run(["diagnose", str(log), "--format", "markdown"], capsys)
    assert code == EXIT_OK
    assert "<img" not in out and "&lt;img" in out
    assert "\\|" in out and "\\`code\\`" in out
    assert "None: no memory knob helps" in out


def test_a_saved_ledger_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "saved.json"
    assert main(["ledger", str(SAMPLES / "dp2.log"), "--format", "json", "-o", str(saved)]) == 0
    code, _, err = _run(["diagnose", str(saved)], capsys)
    assert code == EXIT_INPUT and "saved ledger" in err


def test_bad_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = _run(["diagnose", str(SAMPLES / "dp2.log"), "--format", "csv"], capsys)
    assert code == EXIT_USAGE


def test_api_and_command_agree(capsys: pytest.CaptureFixture[str]) -> None:
    path = real_log("single/007")
    diagnosis = memledger.diagnose(path)
    _, out, _ = _run(["diagnose", str(path), "--format", "json"], capsys)
    assert json.loads(out) == json.loads(to_json(diagnosis))
    assert diagnosis.failed and not diagnosis.memory_problem


def test_ledger_header_carries_the_verdict_only_when_failed_or_starved(
    capsys: pytest.CaptureFixture[str],
) -> None:
    failed = memledger.ledger(real_log("single/008"))
    assert failed.diagnosis is not None and failed.diagnosis.phase == "load"
    _, out, _ = _run(["ledger", str(real_log("single/008"))], capsys)
    # the header labels align on the longest ("diagnosis" since "stopped at" became "stopped")
    verdict = r"^diagnosis: +OOM during weight loading: the Transformers fallback"
    assert re.search(verdict, out, re.M)
    starved = memledger.ledger(real_log("single/020"))
    assert starved.diagnosis is not None and starved.diagnosis.outcome == "starved"
    assert memledger.ledger(real_log("single/022")).diagnosis is None
    assert memledger.ledger(real_log("single/003")).diagnosis is None  # truncated: not failed
    _, md, _ = _run(["ledger", str(real_log("single/020")), "--format", "markdown"], capsys)
    assert "- **diagnosis**: ready, but starved" in md


def test_schema_names_the_diagnosis(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["schema", "diagnose"], capsys)
    assert code == EXIT_OK
    assert {"outcome", "phase", "shortfall_bytes", "findings", "suggestions"} <= set(
        json.loads(out)["properties"]
    )


BUDGET = str(SAMPLES / "budget.toml")


def test_check_fails_an_oom_startup_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["check", str(real_log("single/008")), "--budget", BUDGET], capsys)
    assert code == 1
    lines = unwrapped(out).splitlines()  # wrapped at 100 columns since issue 13
    assert lines[0].startswith("memledger check: FAIL (exit 1) -- 1 failed of 1 check")
    assert lines[1].startswith(f"FAIL startup [{real_log('single/008')}]: OOM during weight")
    assert lines[1].endswith("[phase load, shortfall 8.09 GiB]")
    assert "MISSING" not in out


def test_check_fails_a_crash_and_keeps_checking_the_other_logs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["check", str(real_log("single/007")), str(SAMPLES / "dp2.log"), "--budget", BUDGET]
    code, out, _ = _run(args + ["--format", "json"], capsys)
    assert code == 1
    doc = json.loads(out)
    startup = [c for c in doc["checks"] if c["item"] == "startup"]
    assert len(startup) == 1 and startup[0]["status"] == "fail"
    assert startup[0]["note"].endswith("[phase graph_capture, shortfall unknown]")
    others = {c["log"] for c in doc["checks"] if c["item"] != "startup"}
    assert others == {str(SAMPLES / "dp2.log")}  # the crashed log's entries are not checked
    assert doc["inputs"][0]["diagnosis"]["outcome"] == "crash"


def test_check_of_a_saved_failed_ledger_and_of_a_truncated_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "oom.json"
    assert main(["ledger", str(real_log("single/015")), "--format", "json", "-o", str(saved)]) == 0
    code, out, _ = _run(["check", str(saved), "--budget", BUDGET], capsys)
    assert code == 1 and "[phase load, shortfall 0.18 GiB]" in unwrapped(out)
    # a truncated log did not fail: its missing items stay exit 3, as before
    code, out, _ = _run(["check", str(real_log("single/003")), "--budget", BUDGET], capsys)
    assert code == EXIT_INPUT and "FAIL startup" not in out
    code, _, err = _run(["check", str(tmp_path / "absent.log"), "--budget", BUDGET], capsys)
    assert code == EXIT_INPUT and "absent.log" in err


def test_assert_budget_raises_on_an_oom_startup() -> None:
    with pytest.raises(memledger.BudgetFailure) as failure:
        memledger.assert_budget(real_log("single/015"), budget=BUDGET)
    assert failure.value.lines[0].startswith("FAIL startup")
