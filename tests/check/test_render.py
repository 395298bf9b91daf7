"""Check report formats: text order, JUnit XML structure, GitHub annotations, markdown, JSON."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import date

from markdown_it import MarkdownIt

from memledger.checking.budget import parse_budget
from memledger.checking.evaluate import check_budget
from memledger.model.check import CheckReport, CheckStatus, ItemKind
from memledger.render.check import (
    CHECK_MARKER,
    FORMATS,
    CheckFormat,
    annotation,
    breach_line,
    escape_data,
    escape_property,
    format_quantity,
    render_check,
)
from memledger.units import GIB
from tests.check.helpers import base_ledger, head_ledger
from tests.conftest import unwrapped

TODAY = date(2026, 11, 5)

# Six entries, one of each outcome on the head ledger (see tests/check/helpers.py):
BUDGET = """\
version = 1

[[budget]]
item = "cuda_graph"
max = "8 GiB"

[[budget]]
item = "kv_tokens_per_instance"
min = 52_000_000
message = "KV capacity per instance below target: ask #inference, 50% of oncall"

[[budget]]
item = "slots"
max = 32
level = "warn"

[[budget]]
item = "fixed_overhead"
max = "10 GiB"
waived_until = 2027-01-31
reason = "DCP rollout, #123"

[[budget]]
item = "draft_slot_map"
max = "1 GiB"

[[budget]]
item = "runtime_headroom"
max_increase_pct = 10
"""
# cuda_graph 7.50 <= 8 GiB pass (line 3); kv tokens 51.0 M < 52.0 M fail (line 7);
# slots 33 > 32 warn (line 12); fixed_overhead 10.50 > 10 GiB waived (line 17);
# draft_slot_map unknown -> missing (line 23); runtime_headroom relative, no baseline -> skipped.


def report(*, strict: bool = False, baseline: bool = False) -> CheckReport:
    return check_budget(
        parse_budget(BUDGET, path="ci/memledger.toml"),
        [("logs/head.log", head_ledger())],
        today=TODAY,
        strict=strict,
        baseline=base_ledger() if baseline else None,
    )


def test_every_format_has_a_renderer() -> None:
    assert set(FORMATS.entries) == set(CheckFormat)
    for fmt in CheckFormat:
        assert render_check(report(), fmt).endswith("\n")


def test_statuses_of_the_fixture() -> None:
    statuses = [check.status for check in report().checks]
    assert statuses == [
        CheckStatus.PASS,
        CheckStatus.FAIL,
        CheckStatus.WARN,
        CheckStatus.WAIVED,
        CheckStatus.MISSING,
        CheckStatus.SKIPPED,
    ]


def test_breach_lines() -> None:
    lines = {check.item: breach_line(check) for check in report().checks}
    assert lines["kv_tokens_per_instance"] == (
        "FAIL kv_tokens_per_instance [logs/head.log]: 51,000,000 < min 52,000,000 "
        "(short by 1,000,000) -- KV capacity per instance below target: ask #inference, "
        "50% of oncall"
    )
    assert lines["slots"] == "WARN slots [logs/head.log]: 33 > max 32 (over by 1)"
    assert lines["fixed_overhead"] == (
        "WAIVED fixed_overhead [logs/head.log]: 10.50 GiB > max 10.00 GiB (over by 0.50 GiB) "
        "-- waived until 2027-01-31: DCP rollout, #123"
    )
    assert lines["draft_slot_map"] == (
        "MISSING draft_slot_map [logs/head.log]: this log cannot provide draft_slot_map: "
        "needs dspark_slot_map slots_per_req (not in this log)"
    )


def test_text_puts_breaches_first_then_passes_with_headroom() -> None:
    # Wrapped at 100 columns: each breach and the verdict are one line once unwrapped.
    lines = unwrapped(render_check(report(), "text")).splitlines()
    assert lines[0] == (
        "memledger check: INCOMPLETE (exit 3) -- 1 not provided by the log, 1 failed, 1 warned, "
        "1 waived, 1 passed, 1 not compared of 6 checks on 1 log; budget ci/memledger.toml"
    )
    assert [line.split()[0] for line in lines[1:5]] == ["MISSING", "FAIL", "WARN", "WAIVED"]
    passes = lines.index("within budget (1):")
    assert "cuda_graph" in lines[passes + 2] and "7.50 GiB <= max 8.00 GiB" in lines[passes + 2]
    assert "0.50 GiB" in lines[passes + 2]  # the headroom
    assert "not compared (1):" in lines
    assert any(line.startswith("note: no baseline given") for line in lines)


def test_values_that_round_alike_get_more_digits() -> None:
    # 7.50 GiB (rounded) against 7.5 GiB would print as 7.50 vs 7.50: more digits are shown.
    budget = parse_budget('[[budget]]\nitem = "cuda_graph"\nmax = "7.5 GiB"\n')
    tight = check_budget(budget, [("h.log", head_ledger())], today=TODAY)
    # Row bytes: 750 x floor(GiB / 100) = 8,053,063,500 B, 180 B under 7.5 GiB = 8,053,063,680 B;
    # that is 1.7e-7 GiB, equal even at 6 decimals, so whole bytes are printed.
    (check,) = tight.checks
    assert check.status is CheckStatus.PASS
    assert (
        breach_line(check)
        .split(": ", 1)[1]
        .startswith("8,053,063,500 bytes <= max 8,053,063,680 bytes")
    )
    assert format_quantity(GIB + GIB // 2, ItemKind.SIZE) == "1.50 GiB"
    assert format_quantity(45_000_000, ItemKind.COUNT) == "45,000,000"


def test_junit_is_valid_xml_with_consistent_counts() -> None:
    root = ET.fromstring(render_check(report(), "junit"))
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 6
    failures = suite.findall("testcase/failure")
    errors = suite.findall("testcase/error")
    skipped = suite.findall("testcase/skipped")
    # fail -> failure; missing -> error; waived and not-compared -> skipped; warn passes.
    assert (len(failures), len(errors), len(skipped)) == (1, 1, 2)
    for element in (suite, root):
        assert element.get("tests") == "6"
        assert element.get("failures") == "1"
        assert element.get("errors") == "1"
        assert element.get("skipped") == "2"
    assert failures[0].get("message", "").startswith("FAIL kv_tokens_per_instance")
    names = [case.get("name") for case in cases]
    assert names[0] == "cuda_graph max"
    assert {case.get("classname") for case in cases} == {"memledger.head_log"}
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties == {"budget": "ci/memledger.toml"}


def test_junit_strict_turns_warnings_into_failures() -> None:
    root = ET.fromstring(render_check(report(strict=True), "junit"))
    assert root.get("failures") == "2"
    warn_case = next(c for c in root.iter("testcase") if c.get("name") == "slots max")
    failure = warn_case.find("failure")
    assert failure is not None and failure.get("type") == "warn"


def test_github_escaping_follows_the_workflow_command_rules() -> None:
    # Messages escape %, CR, LF; properties also ':' and ','.
    assert escape_data("50% a:b,c\r\nx") == "50%25 a:b,c%0D%0Ax"
    assert escape_property("a: b, 50%") == "a%3A b%2C 50%25"
    assert (
        annotation("error", "m", file="memledger.toml", line=3, title="t: x")
        == "::error file=memledger.toml,line=3,title=t%3A x::m"
    )


def test_github_annotations_exact() -> None:
    lines = render_check(report(), "github").splitlines()
    annotations = [line for line in lines if line.startswith("::")]
    assert annotations == [
        "::error file=ci/memledger.toml,line=23,title=memledger%3A draft_slot_map missing::"
        "MISSING draft_slot_map [logs/head.log]: this log cannot provide draft_slot_map: "
        "needs dspark_slot_map slots_per_req (not in this log)",
        "::error file=ci/memledger.toml,line=7,title=memledger%3A kv_tokens_per_instance fail::"
        "FAIL kv_tokens_per_instance [logs/head.log]: 51,000,000 < min 52,000,000 "
        "(short by 1,000,000) -- KV capacity per instance below target: ask #inference, "
        "50%25 of oncall",
        "::warning file=ci/memledger.toml,line=12,title=memledger%3A slots warn::"
        "WARN slots [logs/head.log]: 33 > max 32 (over by 1)",
        "::notice file=ci/memledger.toml,line=17,title=memledger%3A fixed_overhead waived::"
        "WAIVED fixed_overhead [logs/head.log]: 10.50 GiB > max 10.00 GiB (over by 0.50 GiB) "
        "-- waived until 2027-01-31: DCP rollout, #123",
        # a relative limit with no baseline is an annotation in the job, not only a note (F26);
        # a notice when no --baseline was given (a push: nothing to compare with), a warning
        # when one was given and not found (tests/security/test_process.py)
        "::notice file=ci/memledger.toml,title=memledger%3A relative limits not compared::"
        "no baseline: relative limits not compared",
    ]
    # After the annotations comes the plain text report for the job log.
    assert lines[len(annotations)].startswith("memledger check: INCOMPLETE (exit 3)")


def test_github_strict_warning_becomes_error() -> None:
    lines = render_check(report(strict=True), "github").splitlines()
    assert any(line.startswith("::error file=ci/memledger.toml,line=12,") for line in lines)


def test_markdown_parses_with_marker_tables_and_balanced_details() -> None:
    text = render_check(report(), "markdown")
    assert text.startswith(CHECK_MARKER + "\n")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables = [t for t in tokens if t.type == "table_open"]
    assert len(tables) == 2  # breaches, then passes inside <details>
    # Every row of every table has as many cells as its header.
    widths: list[int] = []
    cells = 0
    for token in tokens:
        if token.type == "tr_open":
            cells = 0
        elif token.type in {"th_open", "td_open"}:
            cells += 1
        elif token.type == "tr_close":
            widths.append(cells)
    assert set(widths) == {6, 5}
    assert text.count("<details>") == text.count("</details>") == 2
    # A `|` inside a message would split a cell; none do here, and escaping is tested directly.
    assert "fail" in text and "waived until 2027-01-31" in text


def test_json_has_budget_actual_margin_status_per_check() -> None:
    document = json.loads(render_check(report(baseline=True), "json"))
    assert document["schema_version"] == 1
    assert document["exit_code"] == 3
    first = document["checks"][0]
    assert {"item", "limit", "actual", "margin", "status", "kind"} <= set(first)
    assert (first["item"], first["status"], first["kind"]) == ("cuda_graph", "pass", "size")
    assert first["actual"] + first["margin"] == first["limit"] == 8 * GIB
    assert (first["limit_gib"], first["actual_gib"]) == (8.0, 7.5)  # display views of the bytes
    tokens = document["checks"][1]
    assert (tokens["kind"], tokens["actual"], tokens["actual_gib"]) == ("count", 51_000_000, None)
    relative = document["checks"][-1]
    assert relative["bound"] == "max_increase" and relative["status"] == "pass"
    assert document["baseline"]["source"]["path"] == "logs/base.log"
    assert document["counts"]["missing"] == 1


def test_layering_check_modules_import_neither_click_nor_lark() -> None:
    code = (
        "import sys; import memledger.checking.evaluate, memledger.checking.budget, "
        "memledger.render.check, "
        "memledger.api, memledger.testing; "
        "print(sorted(m for m in ('click', 'lark', 'memledger.cli') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
