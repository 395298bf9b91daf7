"""The pictures' numbers are the ledger's: each Mermaid chart of `ledger`, `diff` and `check
--format markdown` is read back (its `line [...]` and `bar [...]` series and its x axis) and
compared with the JSON the same command writes, phase by phase and group by group."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memledger.render.timeline import GROUP_ORDER
from tests.conftest import SAMPLES, real_log, run_cli

DP2, DP16 = SAMPLES / "dp2.log", SAMPLES / "dp16.log"
GIB = 1 << 30


def _out(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    code, out, err = run_cli([*argv], capsys)
    assert code in (0, 1), err
    return out


def charts(markdown: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", markdown, flags=re.S)


def series(chart: str, kind: str) -> list[list[float]]:
    return [[float(v) for v in m.split(", ")] for m in re.findall(rf"    {kind} \[(.*)\]", chart)]


def axis(chart: str) -> list[str]:
    found = re.search(r"    x-axis \[(.*)\]", chart)
    assert found is not None
    return re.findall(r'"([^"]*)"', found.group(1))


def gib(byte_count: int) -> float:
    return round(byte_count / GIB, 2)


def _free_at(document: dict[str, Any]) -> dict[str, int]:
    free = {c["id"]: c["avail_bytes"] for c in document["checkpoints"]}
    free["start"] = document["usable_bytes"]
    return free


def test_ledger_timeline_is_the_json_checkpoints_and_the_reserve(
    capsys: pytest.CaptureFixture[str],
) -> None:
    markdown = _out(capsys, "ledger", DP16, "--format", "markdown")
    document = json.loads(_out(capsys, "ledger", DP16, "--format", "json"))
    timeline, bars = charts(markdown)
    free, reserve = series(timeline, "line")
    # the start (usable), then each checkpoint's avail where free memory moved by 0.01 GiB or
    # more since the reading before (the attention backend's 0.00 steps are left out), and the
    # last reading
    readings = [document["usable_bytes"], *(c["avail_bytes"] for c in document["checkpoints"])]
    expected = [gib(readings[0])] + [
        gib(now)
        for i, (before, now) in enumerate(zip(readings, readings[1:], strict=False))
        if abs(before - now) >= GIB // 200 or i == len(readings) - 2
    ]
    assert free == expected and len(free) == 10 and free[-1] == 4.0
    row = next(r for r in document["rows"] if r["id"] == "mem_fraction_static_reserve")
    assert set(reserve) == {gib(row["bytes"])} == {21.13}
    # steps are labelled with the ledger's row names, their GiB and the line
    assert "| KV pool: KV pool | 14.07 | KV cache 41.10, Mamba/KDA SSM state 13.81," in markdown
    assert "(line 140) |" in markdown


def test_bars_are_the_json_group_totals_stacked_in_group_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    markdown = _out(capsys, "diff", DP2, DP16, "--format", "markdown")
    timeline, bars = charts(markdown)
    running = series(bars, "bar")
    for index, log in enumerate((DP2, DP16)):
        document = json.loads(_out(capsys, "ledger", log, "--format", "json"))
        totals = {g["group"]: g["bytes"] for g in document["groups"]}
        groups = [g.value for g in GROUP_ORDER if totals.get(g.value, 0) > 0]
        expected = [gib(sum(totals[g] for g in groups[:cut])) for cut in range(len(groups), 0, -1)]
        assert [bar[index] for bar in running] == expected
        # the whole bar is the sum of the rows (usable within the balance's tolerance)
        assert abs(expected[0] - gib(document["usable_bytes"])) < 0.015


def test_diff_timeline_aligns_both_sides_by_phase(capsys: pytest.CaptureFixture[str]) -> None:
    markdown = _out(capsys, "diff", DP2, DP16, "--format", "markdown")
    timeline = charts(markdown)[0]
    base, base_reserve, head, head_reserve = series(timeline, "line")
    names = axis(timeline)
    assert names[:3] == ["start", "dist init", "load end"] and "KV pool" in names
    at = names.index("KV pool")
    for values, log in ((base, DP2), (head, DP16)):
        document = json.loads(_out(capsys, "ledger", log, "--format", "json"))
        free = _free_at(document)
        assert values[at] == gib(free["memory_pool_end"])
        assert values[names.index("load end")] == gib(free["load_end"])
        assert len(values) == len(names)
    assert (base_reserve[0], head_reserve[0]) == (29.83, 21.13)


def test_an_oom_timeline_ends_at_the_failing_phase_below_zero_by_the_shortfall(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = real_log("single/008")
    markdown = _out(capsys, "ledger", log, "--format", "markdown")
    document = json.loads(_out(capsys, "ledger", log, "--format", "json"))
    timeline = charts(markdown)[0]
    free = series(timeline, "line")[0]
    shortfall = document["diagnosis"]["shortfall_bytes"]
    assert axis(timeline)[-1] == "OOM" and free[-1] == -gib(shortfall)
    assert free[:2] == [gib(document["usable_bytes"]), gib(_free_at(document)["dist_init_end"])]
    assert f"at −{gib(shortfall):.2f} GiB: the allocation asked that much more" in markdown


def test_check_chart_is_each_item_as_a_share_of_its_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    budget = SAMPLES / "budget.toml"
    markdown = _out(capsys, "check", DP2, DP16, "--budget", budget, "--format", "markdown")
    document = json.loads(_out(capsys, "check", DP2, DP16, "--budget", budget, "--format", "json"))
    (chart,) = charts(markdown)
    shares = series(chart, "bar")[0]
    names = axis(chart)
    checks = {(c["item"], c["log"].rsplit("/", 1)[-1]): c for c in document["checks"]}
    assert len(names) == len(shares) == len(checks)
    for name, share in zip(names, shares, strict=True):
        breach, item, bound, log = re.fullmatch(r"(BREACH )?(\w+) \((\w+)\) (\S+)", name).groups()  # type: ignore[union-attr]
        check = checks[(item, log)]
        assert share == round(100 * check["actual"] / check["limit"], 1)
        assert bool(breach) is check["breached"] and bound == check["bound"]
    assert set(series(chart, "line")[0]) == {100.0}


def test_diagnose_markdown_ends_the_timeline_at_the_oom(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = real_log("single/015")
    markdown = _out(capsys, "diagnose", log, "--format", "markdown")
    diagnosis = json.loads(_out(capsys, "diagnose", log, "--format", "json"))
    timeline = charts(markdown)[0]
    assert axis(timeline)[-1] == "OOM"
    assert series(timeline, "line")[0][-1] == -gib(diagnosis["shortfall_bytes"])
    assert markdown.index(diagnosis["verdict"].split(";")[0]) < markdown.index("```mermaid")


def test_ledger_text_loads_no_picture_module_and_full_draws_the_timeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `ledger LOG` (text): none of the pictures' modules nor Jinja2 is imported
    probe = (
        "import sys\nfrom memledger.cli import main\n"
        f"code = main(['ledger', {str(DP2)!r}])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('jinja2', 'markupsafe', "
        "'memledger.render.timeline', 'memledger.render.mermaid', 'memledger.render.svg', "
        "'memledger.render.html'))), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stderr.strip().splitlines()[-1] == "[]"
    # --full: one bar per checkpoint, each its avail in GiB, within 100 columns
    code, out, _ = run_cli(["ledger", DP16, "--full"], capsys)
    document = json.loads(_out(capsys, "ledger", DP16, "--format", "json"))
    section = out[out.index("Free memory at each checkpoint") :].split("\n\n")[0].splitlines()
    assert all(len(line) <= 100 for line in section)
    drawn = [float(line.rsplit("|", 1)[1]) for line in section[1:]]
    readings = [document["usable_bytes"], *(c["avail_bytes"] for c in document["checkpoints"])]
    assert drawn == [gib(b) for b in readings]
