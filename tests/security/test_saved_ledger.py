"""F12 (and F2's input side): a forged saved ledger is refused with the reason, never trusted."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memledger.api import ledger
from memledger.errors import EXIT_INPUT, EXIT_OK
from memledger.input.saved_ledger import check_consistent
from memledger.model.ledger import summary_from_rows
from memledger.record import to_dict
from tests.conftest import SAMPLES, real_log_paths
from tests.security.helpers import run, write_log


@pytest.fixture
def saved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run(capsys, "ledger", write_log(tmp_path), "--format", "json")
    assert code == EXIT_OK
    document: dict[str, Any] = json.loads(out)
    return document


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        target: Any = document
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "nan": (_set(["summary", "cuda_graph"], float("nan")), "NaN"),
    "infinity": (_set(["summary", "cuda_graph"], float("inf")), "Infinity"),
    "bigint": (_set(["rows", 0, "bytes"], 10**400), "out of range"),
    "bigslots": (_set(["summary", "slots"], 10**400), "out of range"),
    "newline": (_set(["stopped_at"], "x\n::warning file=a::INJECTED"), "control character"),
    "escape": (_set(["source", "path"], "a\x1b]0;t\x07.log"), "control character"),
    "unbalanced": (_set(["rows", 0, "bytes"], 999 << 30), "inconsistent"),
    "duplicate": (lambda d: d["rows"].append(d["rows"][0]), "more than once"),
    "usable": (_set(["summary", "usable"], 1), "summary.usable"),
    "summary": (_set(["summary", "cuda_graph"], 1), "summary.cuda_graph is 1, but its rows give"),
    "groups": (_set(["groups", 0, "bytes"], 1), "group totals differ"),
    "schema": (_set(["schema_version"], 99), "schema_version 99"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_F12_forged_saved_ledgers_are_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], saved: dict[str, Any], name: str
) -> None:
    change, reason = FORGERIES[name]
    change(saved)
    forged = tmp_path / f"forge_{name}.json"
    forged.write_text(json.dumps(saved))
    runs: list[list[str | Path]] = [["ledger", forged], ["diff", write_log(tmp_path), forged]]
    for args in runs:
        code, out, err = run(capsys, *args)
        assert code == EXIT_INPUT, (args, out)
        assert err.count("\n") == 1 and reason in err and "Traceback" not in err


def test_F12_deep_json_is_refused_without_a_recursion_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = tmp_path / "deep.json"
    forged.write_text('{"schema_version": 2, "rows": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = run(capsys, "ledger", forged)
    assert code == EXIT_INPUT and "nested more than" in err


def test_F12_an_honest_saved_ledger_still_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], saved: dict[str, Any]
) -> None:
    path = tmp_path / "honest.json"
    path.write_text(json.dumps(saved))
    code, out, _ = run(capsys, "ledger", path)
    assert code == EXIT_OK and "balances" in out


@pytest.mark.parametrize(
    "path", [*sorted(SAMPLES.glob("*.log")), *real_log_paths()], ids=lambda path: path.name
)
def test_F12_the_engine_writes_ledgers_the_check_accepts(path: Path) -> None:
    # The recomputation must be the engine's own arithmetic: on every sample and real log the
    # summary figures that are sums of rows equal summary_from_rows, and the ledger passes.
    built = ledger(path)
    stated = to_dict(built.summary)
    assert {name: stated[name] for name in summary_from_rows(built.rows)} == summary_from_rows(
        built.rows
    )
    check_consistent(built, str(path))
