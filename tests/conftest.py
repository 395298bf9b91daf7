"""Shared fixtures: where the real logs and their truth live, and the samples.

The real logs are not part of the repository. On a clone without them every test that reads them
skips with one reason (shown once in pytest's summary) and everything else runs; under CI
(`CI=true`) a missing corpus fails those tests instead, so CI never passes by skipping them.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Generator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memledger.cli import main
from memledger.model.ledger import (
    Checkpoint,
    Interval,
    Ledger,
    LedgerSource,
    Row,
    Summary,
    group_totals,
)

if TYPE_CHECKING:
    from memledger.diagnosis.model import Diagnosis

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLES = PROJECT_ROOT / "samples"
# Real logs are public data read in place, never copied: MEMLEDGER_REAL_LOGS may point elsewhere.
REAL_LOGS = Path(
    os.environ.get("MEMLEDGER_REAL_LOGS", PROJECT_ROOT.parent / "shared" / "real-logs")
)
_NOT_FOUND = f"real logs not found at {REAL_LOGS} (no truth.jsonl)"
REAL_LOGS_MISSING = (
    f"{_NOT_FOUND}: the tests that read them skip; "
    "set MEMLEDGER_REAL_LOGS to the folder of real SGLang logs to run them"
)
REAL_LOGS_REQUIRED = f"{_NOT_FOUND}, and CI=true requires them: set MEMLEDGER_REAL_LOGS"
# pytest applies this mark to a test parametrized over an empty list; on a clone without the
# corpus the only empty lists are the real-log ones (real_log_paths(), load_truth()).
_EMPTY_PARAMETER_SET = "got empty parameter set"


# The vLLM corpus: MEMLEDGER_REAL_LOGS_VLLM, else `real-logs-vllm` beside the SGLang folder.
REAL_LOGS_VLLM = Path(
    os.environ.get("MEMLEDGER_REAL_LOGS_VLLM", REAL_LOGS.parent / "real-logs-vllm")
)
REAL_LOGS_VLLM_MISSING = (
    f"vLLM real logs not found at {REAL_LOGS_VLLM} (no manifest.jsonl): the tests that read "
    "them skip; set MEMLEDGER_REAL_LOGS_VLLM to the folder of real vLLM logs to run them"
)


def vllm_manifest() -> list[dict[str, Any]]:
    """Every object of the vLLM corpus's manifest.jsonl ([] when the corpus is absent; a test
    parametrized over it then skips, whatever CI says: the vLLM corpus is optional)."""
    path = REAL_LOGS_VLLM / "manifest.jsonl"
    if not path.is_file():
        if _in_a_test():
            pytest.skip(REAL_LOGS_VLLM_MISSING)
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def real_logs_present() -> bool:
    return (REAL_LOGS / "truth.jsonl").is_file()


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def require_real_logs() -> None:
    """Skip the running test when the corpus is absent (fail it under CI=true)."""
    if real_logs_present():
        return
    if in_ci():
        pytest.fail(REAL_LOGS_REQUIRED, pytrace=False)
    pytest.skip(REAL_LOGS_MISSING)


def _in_a_test() -> bool:
    # pytest sets this while a test runs (setup, call, teardown), not while it collects modules:
    # parametrize lists built at import time get [] instead of a skip of the whole module.
    return "PYTEST_CURRENT_TEST" in os.environ


def load_truth() -> list[dict[str, Any]]:
    """Every object of truth.jsonl (the hand-checked facts of each real log)."""
    if not real_logs_present():
        if _in_a_test():
            require_real_logs()
        return []
    path = REAL_LOGS / "truth.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def real_log_paths() -> list[Path]:
    """Every *.log under the real-logs folder (whether or not truth.jsonl lists it)."""
    if not real_logs_present():
        if _in_a_test():
            require_real_logs()
        return []
    return sorted(REAL_LOGS.rglob("*.log"))


_SHORT_NAME = re.compile(r"(single|complex)/\d+")


def real_log(name: str) -> Path:
    """A real log by its short name (`single/022`: folder and number); the running test skips
    when the corpus is absent (fails under CI=true)."""
    require_real_logs()
    folder, prefix = name.split("/")
    matches = sorted((REAL_LOGS / folder).glob(f"{prefix}*.log"))
    assert len(matches) == 1, f"{name}: {matches}"
    return matches[0]


def ledger_for(
    log: str | os.PathLike[str], *, model_config: str | os.PathLike[str] | None = None
) -> Ledger:
    """The ledger `memledger ledger LOG [--model-config FILE]` builds of a log (parsed, packaged
    formulas, diagnosis), built once per log and model config in a session: the one way tests
    get the ledger of a log file. `log` is a path or a real log's short name (`single/022`)."""
    path = real_log(log) if isinstance(log, str) and _SHORT_NAME.fullmatch(log) else log
    config = None if model_config is None else os.fspath(model_config)
    return _cached_ledger(os.fspath(path), config)


@cache
def _cached_ledger(path: str, model_config: str | None) -> Ledger:
    from memledger.app.load import load_ledger
    from memledger.app.options import LoadOptions

    options = LoadOptions(model_config=None if model_config is None else Path(model_config))
    return load_ledger(path, options)


def make_ledger(
    rows: Sequence[Row] = (),
    *,
    path: str = "x.log",
    rank: str = "TP0",
    outcome: str = "ready",
    stopped_at: str | None = None,
    checkpoints: Sequence[Checkpoint] = (),
    intervals: Sequence[Interval] = (),
    summary: Summary | None = None,
    usable_bytes: int | None = None,
    **fields: Any,
) -> Ledger:
    """A hand-built ledger (one startup of one file, rank `rank`): the one constructor the
    helpers' made-up ledgers go through. `fields` are further Ledger fields (parameters, notes,
    balance_error_bytes, ...); the group totals are the rows' unless `fields` gives them."""
    return Ledger(
        source=LedgerSource(path=path, startup=0, n_startups=1, rank=rank),
        outcome=outcome,
        stopped_at=stopped_at,
        checkpoints=list(checkpoints),
        intervals=list(intervals),
        rows=list(rows),
        summary=Summary() if summary is None else summary,
        usable_bytes=usable_bytes,
        **({"groups": group_totals(list(rows))} | fields),
    )


def diagnose_paste(paste: str | Sequence[str], *, label: str = "paste.txt") -> Diagnosis:
    """What `memledger diagnose -` says of a made-up paste (text, or lines each ended by a
    newline), named `label` in its evidence: the one way tests diagnose synthetic text."""
    from memledger.app.load import build
    from memledger.app.options import LoadOptions
    from memledger.diagnosis import diagnose
    from memledger.input.parsing import parse_log

    text = paste if isinstance(paste, str) else "\n".join(paste) + "\n"
    parsed = parse_log(io.BytesIO(text.encode()), label=label)
    return diagnose(parsed, build(parsed, LoadOptions()))


PROSE_SHAPES = (
    "{s}",
    "we see this: {s}",
    "`{s}`",
    "- {s}",
    "vLLM never printed it, but SGLang does: {s}",
)
"""How people paste one line of a family: alone, after a few words, as inline code, as a bullet,
after a sentence that names the other engine (which must not turn the paste into a vLLM log)."""


def said_of(result: Diagnosis) -> str:
    """The verdict and every finding's message: all a diagnosis says in words."""
    return " ".join([result.verdict, *(f.message for f in result.findings)])


def knobs_of(result: Diagnosis) -> list[tuple[str, str]]:
    """Each suggestion's knob and direction, in order."""
    return [(s.knob, s.direction.value) for s in result.suggestions]


MEMORY_KNOBS = {
    "mem_fraction_static",
    "max_running_requests",
    "chunked_prefill_size",
    "cuda_graph_max_bs",
    "max_total_tokens",
    "context_length",
}
"""The settings that move GPU memory, as a diagnosis's suggestions name them."""


def paste_id(paste: object) -> str:
    """A test id without spaces (a landing script splits failing ids at white space)."""
    return re.sub(r"\W+", "-", str(paste))[:48].strip("-")


def diagnose_text(paste: str) -> Diagnosis:
    """What `memledger diagnose -` says of a made-up paste, through the command's own path
    (memledger.app.diagnose.diagnosis_of)."""
    from memledger.app.diagnose import diagnosis_of
    from memledger.app.options import DiagnoseOptions

    return diagnosis_of(DiagnoseOptions(log=io.BytesIO((paste + "\n").encode())))


def finding_ids(result: Diagnosis) -> list[str]:
    """The ids of a diagnosis's findings, in order."""
    return [str(f.id) for f in result.findings]


@pytest.fixture(scope="session")
def truth() -> list[dict[str, Any]]:
    return load_truth()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "real_logs: the test reads ../shared/real-logs (skips when it is absent)"
    )


def _needs_real_logs(item: pytest.Item) -> bool:
    if item.get_closest_marker("real_logs") is not None:
        return True
    return any(
        str(mark.kwargs.get("reason", "")).startswith(_EMPTY_PARAMETER_SET)
        for mark in item.iter_markers("skip")
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # before the skip marks are evaluated: an empty real-log parameter set gets the same reason
    # as every other real-log test (and fails under CI like them)
    if not real_logs_present() and _needs_real_logs(item):
        require_real_logs()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple) and isinstance(report.keywords, dict):
        if report.longrepr[2].endswith(REAL_LOGS_MISSING):
            # pytest folds skips by (file, line, reason) but files skip-marked tests apart: drop
            # the keyword, and give every such skip one place (a fixture's skip is reported at
            # the fixture), so the summary shows the missing corpus once, not once per module
            report.keywords.pop("skip", None)
            report.longrepr = (
                __file__,
                require_real_logs.__code__.co_firstlineno,
                REAL_LOGS_MISSING,
            )
    return report


def pytest_report_header(config: pytest.Config) -> str:
    if real_logs_present():
        return f"real logs: {REAL_LOGS} ({len(real_log_paths())} logs)"
    return f"real logs: none at {REAL_LOGS}" + (" (CI=true: their tests fail)" if in_ci() else "")


def run_cli(
    argv: Sequence[str | os.PathLike[str]], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """Run `memledger ARGV` in-process: (exit code, stdout, stderr). The one CLI runner."""
    code = main([os.fspath(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


_NUMBER_UNIT = re.compile(r"(?<=\d) (?=(?:%|[KMG]i?B\b|B\b))")


def unwrapped(text: str, width: int = 100) -> str:
    """Text output with the terminal wrapping undone, so a sentence can be matched whole: a line
    indented two spaces deeper than the one before continues it when its first word did not fit
    on that line (`render.terminal.fit_lines`)."""
    out: list[str] = []
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if out and line.strip():
            previous = out[-1]
            # `6.36 GiB)` wraps as one word (render.terminal.join_units, written out here: the
            # conftest imports no renderer, so tests that patch one see the module they run)
            first = _NUMBER_UNIT.sub("\x00", line.strip()).split()[0]
            deeper = indent == len(previous) - len(previous.lstrip(" ")) + 2
            if deeper and len(previous) + 1 + len(first) > width:
                out[-1] = previous + " " + line.strip()
                continue
        out.append(line)
    return "\n".join(out)


class CountingStream:
    """A byte stream that records how much was read from it."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)
        self.bytes_read = 0

    def read(self, size: int = -1, /) -> bytes:
        chunk = self._data.read(size)
        self.bytes_read += len(chunk)
        return chunk
