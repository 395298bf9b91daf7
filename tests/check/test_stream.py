"""The streamed check report (`memledger check`'s spool) against the in-memory one.

`memledger check` writes each log's checks to a private temporary file as they come and renders
the report from it (`memledger.checking.results.CheckSpool`); the Python API keeps a `CheckReport`.
Both must print the same report in every format, and the spool must keep nothing per log in
memory: a fleet of 4N logs costs what N logs cost.
"""

from __future__ import annotations

import gc
import itertools
import tracemalloc
from collections.abc import Iterable
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from memledger.app.options import CheckOptions
from memledger.checking.budget import parse_budget
from memledger.checking.evaluate import check_budget, check_log
from memledger.checking.results import CheckSpool, SpooledChecks
from memledger.model.check import BaselineInfo, CheckReport
from memledger.model.ledger import Ledger
from memledger.record import to_json, validate_json
from memledger.render.check import (
    FORMATS,
    CheckFormat,
    CheckView,
    check_stream,
    pass_row,
    render_markdown,
)
from memledger.render.escape import Destination, finish
from memledger.render.tables import TABLE_ROWS, Table, text_table
from memledger.render.terminal import Terminal
from tests.check.helpers import base_ledger, head_ledger, make_ledger
from tests.check.test_render import BUDGET
from tests.conftest import REAL_LOGS, require_real_logs

TODAY = date(2026, 11, 5)
# The six outcomes of test_render's budget, plus an entry only some logs match and one with a
# tighter-limit hint, over many logs: more passes than one table chunk (TABLE_ROWS).
FLEET_BUDGET = (
    BUDGET
    + """
[[budget]]
item = "usable"
min = "100 GiB"
logs = "pod-000*.log"

[[budget]]
item = "no_such_row"
max = "1 GiB"
logs = "nothing-matches-*.log"
"""
)


def fleet(n_logs: int) -> list[tuple[str, Ledger]]:
    """n_logs inputs with ledgers that differ in their figures (pass, warn, fail...)."""
    out = []
    for i in range(n_logs):
        path = f"fleet/pod-{i:04d}.log"
        if i % 7 == 3:
            ledger = make_ledger(path, {**_summary(i), "slots": 20})  # slots passes
        else:
            ledger = replace(head_ledger(), source=replace(head_ledger().source, path=path))
        out.append((path, ledger))
    return out


def _summary(i: int) -> dict[str, float | int]:
    from tests.check.helpers import HEAD_SUMMARY

    return {**HEAD_SUMMARY, "kv_tokens_per_instance": 52_000_000 + 1000 * i}


def both(
    inputs: list[tuple[str, Ledger]], *, strict: bool = False, baseline: Ledger | None = None
) -> tuple[CheckReport, SpooledChecks]:
    budget = parse_budget(FLEET_BUDGET, path="ci/memledger.toml")
    info = BaselineInfo(source=None if baseline is None else baseline.source)
    report = check_budget(
        budget, inputs, today=TODAY, baseline=baseline, baseline_info=info, strict=strict
    )
    spool = CheckSpool(budget, strict=strict)
    for path, ledger in inputs:
        spool.add(check_log(budget, path, ledger, today=TODAY, baseline=baseline))
    return report, spool.finish(today=TODAY, baseline=baseline, baseline_info=info)


CASES = [
    pytest.param(3, False, False, id="3-logs"),
    pytest.param(TABLE_ROWS + 90, False, False, id="more-passes-than-a-table-chunk"),
    pytest.param(40, True, True, id="strict-with-baseline"),
]


@pytest.mark.parametrize(("n_logs", "strict", "with_baseline"), CASES)
def test_streamed_report_equals_the_in_memory_one(
    n_logs: int, strict: bool, with_baseline: bool
) -> None:
    baseline = base_ledger() if with_baseline else None
    report, spooled = both(fleet(n_logs), strict=strict, baseline=baseline)
    try:
        assert spooled.counts == report.counts
        assert spooled.exit_code == report.exit_code
        assert (spooled.notes, spooled.warnings) == (report.notes, report.warnings)
        views = [CheckView(), CheckView(full=True), CheckView(Terminal(width=72, colour=False))]
        for fmt, view in itertools.product(CheckFormat, views):
            whole = FORMATS.renderer(fmt, view)(report)
            streamed = "".join(check_stream(fmt, view)(spooled))
            assert streamed == whole, (fmt, view)
        for cap in (1000, 5000, 60_000):
            whole = finish(Destination.MARKDOWN, render_markdown(report, cap))
            streamed = "".join(check_stream(CheckFormat.MARKDOWN, None, cap)(spooled))
            assert streamed == whole, cap
            assert len(streamed) <= cap
    finally:
        spooled.close()


def test_streamed_json_is_the_report_model() -> None:
    report, spooled = both(fleet(25))
    try:
        text = "".join(check_stream(CheckFormat.JSON)(spooled))
    finally:
        spooled.close()
    assert validate_json(CheckReport, text) == report
    assert text == to_json(report, indent=2) + "\n"


def test_a_long_table_laid_out_in_chunks_is_the_whole_table() -> None:
    from memledger.render.check import _table_lines

    report = check_budget(
        parse_budget(FLEET_BUDGET, path="b.toml"), fleet(TABLE_ROWS * 2 + 7), today=TODAY
    )
    rows = [pass_row(check) for check in report.passes()]
    assert len(rows) > 2 * TABLE_ROWS
    # a long log path in the middle of the table: the log column must give way in every chunk
    rows[TABLE_ROWS + 3][1] = "fleet/" + "x" * 120 + ".log"
    for width in (60, 100, 300):
        whole = text_table(
            Table(["item", "log", "actual vs limit", "headroom"], rows, keep=(0, 2, 3)),
            style="plain",
            width=width,
        ).splitlines()
        assert list(_table_lines(lambda: iter(rows), width)) == whole


def _real_log() -> Path:
    """The smallest real startup log with a whole startup (a short one: the test stays fast)."""
    logs = sorted((REAL_LOGS / "single").glob("*.log"), key=lambda p: p.stat().st_size)
    return next(p for p in logs if p.stat().st_size > 4000)


def _write_fleet(folder: Path, n_logs: int) -> list[str]:
    """n_logs logs built from one real log's lines (its figures moved per log), in a tmp dir."""
    lines = _real_log().read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    folder.mkdir()
    paths = []
    for i in range(n_logs):
        path = folder / f"pod-{i:05d}.log"
        path.write_text(
            "".join(
                line.replace(" GB", f"{i % 10} GB", 1) if "avail mem=" in line else line
                for line in lines
            ),
            encoding="utf-8",
        )
        paths.append(str(path))
    return paths


def _kept_and_peak(paths: Iterable[str], budget: Path) -> tuple[int, int]:
    """Bytes the spooled results keep once every log is in, and the peak while rendering JSON."""
    from memledger.app.check import check_results

    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        results = check_results(CheckOptions(logs=tuple(paths), budget=budget))
        try:
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - start
            tracemalloc.reset_peak()
            for _ in check_stream(CheckFormat.JSON)(results):
                pass
            peak = tracemalloc.get_traced_memory()[1] - start
        finally:
            results.close()
    finally:
        tracemalloc.stop()
    return kept, peak


def test_check_keeps_no_state_per_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """4x the logs, the same memory: what the old report kept (every Check and CheckedInput,
    ~7-12 KiB a log) would be 250-450 KiB more here."""
    require_real_logs()
    # pieces and read blocks smaller than either report, so both peak at full ones
    monkeypatch.setattr("memledger.render.formats.PIECE_CHARS", 4096)
    monkeypatch.setattr("memledger.checking.spool._BLOCK", 4096)
    from memledger.app.fleet import _warm
    from memledger.app.options import LoadOptions

    _warm(LoadOptions())  # grammar, formulas and modules loaded once, outside the measurement
    budget = Path(__file__).resolve().parents[2] / "samples" / "budget.toml"
    small = _write_fleet(tmp_path / "small", 12)
    large = _write_fleet(tmp_path / "large", 48)
    _kept_and_peak(small[:2], budget)  # first-use caches (pydantic, the shape cache)
    kept_small, peak_small = _kept_and_peak(small, budget)
    kept_large, peak_large = _kept_and_peak(large, budget)
    per_log = (kept_large - kept_small) / (len(large) - len(small))
    assert per_log < 256, f"{per_log:.0f} bytes kept per log"
    assert peak_large - peak_small < 32 * 1024, (peak_small, peak_large)
