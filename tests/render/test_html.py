"""`--format html`: one self-contained report, verdict first, charts as inline SVG, tables below;
each chart's numbers (the shapes' `data-*` values and tooltips) are the JSON's."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLES, real_log, run_cli

DP2, DP16 = SAMPLES / "dp2.log", SAMPLES / "dp16.log"
GIB = 1 << 30


def _run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    code, out, err = run_cli([*argv], capsys)
    assert code in (0, 1), err
    return out


def _json(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> Any:
    return json.loads(_run(capsys, *argv, "--format", "json"))


def shapes(page: str, css_class: str) -> list[dict[str, str]]:
    """Every SVG element of a class, as its attributes (and its tooltip as `title`)."""
    found = []
    pattern = rf'<(\w+) ([^>]*class="{css_class}"[^>]*)>(?:<title>(.*?)</title>)?'
    for match in re.finditer(pattern, page, flags=re.S):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', match.group(2)))
        attrs["title"] = unescape(match.group(3) or "")
        found.append(attrs)
    return found


def test_ledger_html_is_self_contained_verdict_first_and_its_points_are_the_checkpoints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = _run(capsys, "ledger", DP16, "--format", "html")
    document = _json(capsys, "ledger", DP16)
    # one file, nothing fetched: no script, no link, no external address anywhere
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page and "<link" not in page and "src=" not in page
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)
    # verdict, then the charts, then the tables
    verdict, first_svg, first_table = (
        page.index('class="verdict'),
        page.index("<svg"),
        page.index("<table"),
    )
    assert verdict < first_svg < first_table
    points = shapes(page, "point")
    free = {c["id"]: c for c in document["checkpoints"]}
    assert int(points[0]["data-bytes"]) == document["usable_bytes"]
    for point in points[1:]:
        checkpoint = free[point["data-phase"]]
        assert int(point["data-bytes"]) == checkpoint["avail_bytes"]
        # the tooltip gives the exact bytes and the log line the reading came from
        assert f"({checkpoint['avail_bytes']:,} B)" in point["title"]
        assert f"line {checkpoint['line']}" in point["title"]
    kv = next(p for p in points if p["data-phase"] == "memory_pool_end")
    assert "KV cache (kv_pool): 41.10 GiB (44,130,788,966 B), " in kv["title"]
    assert "dp16.log:132\n" in kv["title"]  # the row's source line
    (reserve,) = shapes(page, "reserve")
    row = next(r for r in document["rows"] if r["id"] == "mem_fraction_static_reserve")
    assert int(reserve["data-bytes"]) == row["bytes"]
    segments = shapes(page, "segment")
    assert {s["data-group"]: int(s["data-bytes"]) for s in segments} == {
        g["group"]: g["bytes"] for g in document["groups"] if g["bytes"] > 0
    }


def test_diff_html_draws_both_sides_aligned_by_phase(capsys: pytest.CaptureFixture[str]) -> None:
    page = _run(capsys, "diff", DP2, DP16, "--format", "html")
    for side, log in enumerate((DP2, DP16)):
        document = _json(capsys, "ledger", log)
        free = {c["id"]: c["avail_bytes"] for c in document["checkpoints"]}
        points = [p for p in shapes(page, "point") if p["data-side"] == str(side)]
        assert {p["data-phase"] for p in points} >= {"load_end", "memory_pool_end"}
        for point in points[1:]:
            assert int(point["data-bytes"]) == free[point["data-phase"]]
        segments = [s for s in shapes(page, "segment") if s["data-bar"] == str(side)]
        assert sum(int(s["data-bytes"]) for s in segments) == sum(
            g["bytes"] for g in document["groups"] if g["bytes"] > 0
        )
    # the same phase sits at the same x on both sides
    xs = {(p["data-phase"], p["data-side"]): p["cx"] for p in shapes(page, "point")}
    assert xs[("memory_pool_end", "0")] == xs[("memory_pool_end", "1")]


def test_oom_html_ends_at_the_failing_phase_with_the_shortfall(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = real_log("single/008")
    page = _run(capsys, "ledger", log, "--format", "html")
    document = _json(capsys, "ledger", log)
    (short,) = shapes(page, "shortfall")
    assert int(short["data-bytes"]) == document["diagnosis"]["shortfall_bytes"]
    assert short["data-phase"] == "load_end"  # the OOM sits where the load would have ended
    last = shapes(page, "point")[-1]
    assert int(last["data-bytes"]) == -document["diagnosis"]["shortfall_bytes"]
    assert document["diagnosis"]["verdict"] in short["title"]
    assert 'class="verdict bad"' in page


def test_check_html_draws_each_item_against_its_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv: list[str | Path] = ["check", DP2, DP16, "--budget", SAMPLES / "budget.toml"]
    page = _run(capsys, *argv, "--format", "html")
    document = _json(capsys, *argv)
    gauges = shapes(page, "gauge")
    assert len(gauges) == len(document["checks"])
    by_item: dict[str, list[dict[str, Any]]] = {}
    for check in document["checks"]:
        by_item.setdefault(check["item"], []).append(check)
    for gauge in gauges:
        check = by_item[gauge["data-item"]].pop(0)
        assert float(gauge["data-percent"]) == round(100 * check["actual"] / check["limit"], 1)
        colour = "#e15759" if check["breached"] else "#59a14f"
        assert gauge["fill"] == colour
    assert page.index("FAIL (exit 1)") < page.index("<svg")


def test_html_refuses_explain_and_several_logs(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["ledger", DP16, "--format", "html", "--explain", "kv_pool"], capsys)
    assert code == 2 and "--explain prints text, markdown or json, not html" in err
    code, _, err = run_cli(["ledger", DP2, DP16, "--format", "html"], capsys)
    assert code == 2 and "html" in err
