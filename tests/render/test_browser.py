"""The pictures in a real browser: headless Chromium renders the Mermaid blocks of the markdown
comments (ledger, diff, check) with Mermaid's own JavaScript, installed from the npm registry
into a cache folder (tests/browser.py), and must draw each one: an SVG of the size the block
asks for, with its lines and bars, and no script error in the console. Screenshots are saved
next to the test's files. Skips in one line without a browser (fails under CI=true)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.browser import browser, chart_pages, html_page, mermaid_page, run, screenshot
from tests.conftest import SAMPLES, real_log, run_cli

DP2, DP16 = SAMPLES / "dp2.log", SAMPLES / "dp16.log"
SHOTS = os.environ.get("MEMLEDGER_SCREENSHOTS")
"""A folder to keep the screenshots in (docs/pictures was made so); default: the test's own."""


def _markdown(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    code, out, err = run_cli([*argv, "--format", "markdown"], capsys)
    assert code in (0, 1), err
    return out


def _view_box(svg: str) -> tuple[float, float]:
    found = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    assert found is not None, svg[:300]
    return float(found.group(1)), float(found.group(2))


def test_mermaid_charts_render_in_chromium(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    browser()
    comments = [
        _markdown(capsys, "diff", DP2, DP16),
        _markdown(capsys, "ledger", real_log("single/008")),
        _markdown(capsys, "check", DP2, DP16, "--budget", SAMPLES / "budget.toml"),
    ]
    markdown = "\n".join(comments)
    blocks = re.findall(r"```mermaid\n(.*?)```", markdown, flags=re.S)
    assert len(blocks) == 5  # diff: timeline and bars; ledger: both; check: the budget
    shots = Path(SHOTS) if SHOTS else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    rendered = run(mermaid_page(markdown, tmp_path), shots / "mermaid.png", size=(1000, 2900))
    assert rendered.state == "ok" and rendered.errors == []
    svgs = rendered.svgs()
    assert len(svgs) == len(blocks)
    for block, svg in zip(blocks, svgs, strict=True):
        asked = re.search(r'"width": (\d+), "height": (\d+)', block)
        assert asked is not None
        assert _view_box(svg) == (float(asked.group(1)), float(asked.group(2)))
        assert 'aria-roledescription="xychart"' in svg
        lines = len(re.findall(r"^    line \[", block, flags=re.M))
        bars = re.findall(r"^    bar \[(.*)\]", block, flags=re.M)
        # each line series is one path; each bar of each series one rect
        assert svg.count("<path") >= lines
        assert svg.count("<rect") >= sum(len(b.split(", ")) for b in bars)
    assert (shots / "mermaid.png").stat().st_size > 10_000


def _html(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    code, out, err = run_cli([*argv, "--format", "html"], capsys)
    assert code in (0, 1), err
    return out


def test_html_reports_render_in_chromium(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    browser()
    shots = Path(SHOTS) if SHOTS else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    reports = {
        "diff": _html(capsys, "diff", DP2, DP16),
        "ledger": _html(capsys, "ledger", DP16),
        "oom": _html(capsys, "ledger", real_log("single/008")),
        "check": _html(capsys, "check", DP2, DP16, "--budget", SAMPLES / "budget.toml"),
    }
    for name, report in reports.items():
        folder = tmp_path / name
        folder.mkdir()
        rendered = run(html_page(report, folder), shots / f"{name}-report.png", size=(1100, 1500))
        assert rendered.state == "ok" and rendered.errors == [], name
        asked = re.findall(r'<svg [^>]*width="(\d+)" height="(\d+)"', report)
        assert len(rendered.sizes) == len(asked) >= 1
        for (width, height, elements), (asked_w, asked_h) in zip(
            rendered.sizes, asked, strict=True
        ):
            # drawn at the size it asks for (within the page's 1000 px column), not empty
            assert width == min(int(asked_w), 1000) and height > 0.8 * int(asked_h) * width / int(
                asked_w
            )
            assert elements >= 10
        for page, size in chart_pages(report, folder, name):
            screenshot(page, shots / f"{page.stem}.png", size)
            assert (shots / f"{page.stem}.png").stat().st_size > 5_000
