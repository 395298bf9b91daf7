"""Every log of the vLLM corpus (tests/conftest.py `REAL_LOGS_VLLM`, read in place): read as
vLLM, every fact of its manifest recovered, a ledger that balances or says why not, sizing that
matches what the log printed or says why it could not be redone, and a diagnosis that reaches
the fix the thread stated. The corpus is optional: without it these tests skip.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memledger.app.diagnose import diagnosis_of
from memledger.app.load import load_any, load_ledger
from memledger.app.options import DiagnoseOptions, LoadOptions
from memledger.app.vllm import VllmRun
from memledger.input.engine_detect import VLLM, detect_engine
from memledger.record import to_json
from tests.conftest import REAL_LOGS_VLLM, vllm_manifest

ENTRIES = vllm_manifest()
IDS = [entry["file"][:3] for entry in ENTRIES]
GIB = 1 << 30


def _path(entry: dict[str, Any]) -> Path:
    return REAL_LOGS_VLLM / str(entry["file"])


def _runs(entry: dict[str, Any]) -> list[VllmRun]:
    first = load_any(_path(entry))
    assert isinstance(first, VllmRun), entry["file"]
    runs = [first]
    for index in range(len(first.log.startups) - 1):
        run = load_any(_path(entry), LoadOptions(startup=index))
        assert isinstance(run, VllmRun)
        runs.append(run)
    return runs


def _printed(value: float, text: str) -> bool:
    """Whether a number occurs in the log text as printed (with or without separators)."""
    shown = {f"{value:g}", f"{value:,}", str(value)}
    if float(value).is_integer():
        shown |= {f"{int(value)}", f"{int(value):,}", f"{value:.1f}", f"{value:.2f}"}
    else:
        shown |= {f"{value:.2f}", f"{value:.4f}"}
    return any(re.search(rf"(?<![\d.]){re.escape(s)}(?![\d])", text) for s in shown)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_detected_as_vllm(entry: dict[str, Any]) -> None:
    lines = _path(entry).read_text(errors="replace").splitlines()
    assert detect_engine(lines).engine == VLLM


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_every_printed_fact_is_recovered(entry: dict[str, Any]) -> None:
    """One startup of the log holds every manifest fact the log prints; a fact the log does
    not print (taken from the thread) must not occur in its text."""
    text = _path(entry).read_text(errors="replace")
    wanted = {k: v for k, v in entry["facts"].items() if v is not None}
    best: list[str] | None = None
    for run in _runs(entry):
        facts = {name: fact.value for name, fact in run.facts.items()}
        missing = [
            name
            for name, value in wanted.items()
            if not isinstance(facts.get(name), int | float)
            or abs(float(facts[name]) - float(value)) > 1e-6 * max(1.0, abs(float(value)))
        ]
        if best is None or len(missing) < len(best):
            best = missing
    assert best is not None
    for name in best:
        assert not _printed(float(wanted[name]), text), f"{name}={wanted[name]} not recovered"


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_ledger_balances_or_says_why(entry: dict[str, Any]) -> None:
    ledger = load_ledger(_path(entry))
    assert ledger.engine == "vllm"
    assert ledger.outcome == {"error": "crash"}.get(entry["outcome"], entry["outcome"]) or (
        ledger.outcome == "truncated"
    )
    if ledger.usable_bytes is None:
        assert any("balance not checked" in note for note in ledger.notes)
        return
    assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes
    for row in ledger.rows:
        if row.kind.value == "residual" and row.bytes is not None and abs(row.bytes) > GIB // 4:
            assert row.evidence.note and "budget" in row.evidence.note


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_sizing_matches_or_says_why(entry: dict[str, Any]) -> None:
    """Every startup that prints KV tokens or blocks: each recomputed figure within 0.5 % (or
    the printing precision), and at least one figure redone or a stated reason."""
    for run in _runs(entry):
        counts = {"kv_tokens", "gpu_blocks", "num_gpu_blocks"} & set(run.facts)
        for step in run.sizing.steps:
            assert step.matches is not False, (step.rule, step.value, step.logged)
        if counts:
            counted = [s for s in run.sizing.steps if s.unit in ("tokens", "blocks", "x")]
            assert counted or run.sizing.not_made, entry["file"]


KNOB_WORDS = {
    "gpu_memory_utilization": ("gpu-memory-utilization", "gpu_memory_utilization", "gmu"),
    "enforce_eager": ("enforce_eager", "enforce-eager"),
    "max_num_batched_tokens": ("max_num_batched_tokens", "max-num-batched-tokens"),
    "max_model_len": ("max_model_len", "max-model-len", "context"),
}


def _stated_knobs(conclusion: str) -> set[str]:
    return {knob for knob, words in KNOB_WORDS.items() if any(w in conclusion for w in words)}


FAILED = [e for e in ENTRIES if e["outcome"] in ("error", "oom")]


@pytest.mark.parametrize("entry", FAILED, ids=[e["file"][:3] for e in FAILED])
def test_diagnosis_reaches_the_stated_fix(entry: dict[str, Any]) -> None:
    """A failure whose log holds its failure text gets a phase; the knobs the thread's
    conclusion names are among the suggestions (or the log holds no failure to diagnose)."""
    diagnosis = diagnosis_of(DiagnoseOptions(log=_path(entry)))
    json.loads(to_json(diagnosis))
    knobs = {s.knob for s in diagnosis.suggestions}
    if diagnosis.outcome in ("oom", "crash") and diagnosis.suggestions:
        assert diagnosis.phase.value != "unknown"
    stated = _stated_knobs(entry.get("conclusion") or "")
    if diagnosis.outcome in ("oom", "crash"):
        assert stated <= knobs, (stated, knobs)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_saved_ledger_reloads(entry: dict[str, Any], tmp_path: Path) -> None:
    """`memledger ledger --format json` of a vLLM log is a saved ledger memledger reads back
    (its summary agrees with its rows as a saved ledger's must)."""
    ledger = load_ledger(_path(entry))
    saved = tmp_path / "saved.json"
    saved.write_text(to_json(ledger))
    again = load_ledger(saved)
    assert again.engine == "vllm" and again.rows == ledger.rows
