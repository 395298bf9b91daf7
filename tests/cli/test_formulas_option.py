"""`--formulas FILE`: user formulas added to the packaged set, for ledger, diff and check.

Slot counts are the article's (DP16 33 = 24 + 8 + 1, DP2 209 = 192 + 16 + 1), so the user
formula below (1 MiB per request slot) has an expected value that does not come from the code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import memledger
from memledger.errors import EXIT_BUDGET_FAILED, EXIT_INPUT, EXIT_OK, EXIT_USAGE, ConfigError
from memledger.formulas import FORMULAS_ENV, load_formulas
from memledger.units import MIB
from tests.conftest import SAMPLES, run_cli

DP16 = str(SAMPLES / "dp16.log")
DP2 = str(SAMPLES / "dp2.log")
K3 = str(SAMPLES / "k3-config.json")
SLOTS = {"dp16": 24 + 8 + 1, "dp2": 192 + 16 + 1}

SCRATCH = """\
# a fork's sampler keeps a 1 MiB scratch buffer per request slot, allocated before capture
[[formula]]
id = "sampler_scratch"
label = "sampler scratch (1 MiB per request slot)"
interval = "capture_begin"
let.slots = "log.slots"
expression = "slots * 1048576"
text = "{slots} slots x 1 MiB"
why = "the fork's sampler keeps 1 MiB per request slot"
"""

BAD = """\
[[formula]]
id = "sneaky"
label = "not arithmetic"
interval = "capture_begin"
expression = "__import__('os').getcwd()"
text = "t"
why = "w"
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def rows_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in document["rows"]}


def ledger_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run_cli(["ledger", *argv, "--format", "json"], capsys)
    assert code == EXIT_OK, err
    document: dict[str, Any] = json.loads(out)
    return document


def test_user_formula_adds_a_row_carved_from_the_unexplained_residual(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = write(tmp_path, "mine.toml", SCRATCH)
    plain = ledger_json([DP2, "--model-config", K3], capsys)
    with_user = ledger_json([DP2, "--model-config", K3, "--formulas", mine], capsys)
    scratch = rows_of(with_user)["sampler_scratch"]
    assert scratch["bytes"] == SLOTS["dp2"] * MIB
    assert scratch["kind"] == "derived" and scratch["in_partition"]
    assert scratch["interval"] == "draft_attention_backend_end->capture_begin"
    assert scratch["evidence"]["formula"] == "209 slots x 1 MiB"
    assert scratch["evidence"]["inputs"]["slots"] == 209
    assert scratch["evidence"]["note"] == "the fork's sampler keeps 1 MiB per request slot"
    assert [s["line"] for s in scratch["evidence"]["sources"]]  # the summary line it read
    # Its bytes come out of that interval's unexplained row; the account is unchanged otherwise.
    before = rows_of(plain)["unexplained.capture_begin"]["bytes"]
    after = rows_of(with_user)["unexplained.capture_begin"]["bytes"]
    assert before - after == SLOTS["dp2"] * MIB
    assert with_user["usable_bytes"] == plain["usable_bytes"]
    assert with_user["balance_error_bytes"] == plain["balance_error_bytes"]
    partition = sum(r["bytes"] for r in with_user["rows"] if r["in_partition"])
    assert partition == with_user["usable_bytes"] + with_user["balance_error_bytes"]
    named = [
        next(i for i in document["intervals"] if i["to"] == "capture_begin")["named_bytes"]
        for document in (plain, with_user)
    ]
    assert named[1] - named[0] == SLOTS["dp2"] * MIB


def test_explain_shows_the_user_formula(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = write(tmp_path, "mine.toml", SCRATCH)
    code, out, _ = run_cli(
        ["ledger", DP16, "--formulas", mine, "--explain", "sampler_scratch"], capsys
    )
    assert code == EXIT_OK
    assert "33 slots x 1 MiB" in out and "the fork's sampler keeps 1 MiB" in out


def test_later_files_replace_earlier_entries_and_the_packaged_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FORMULAS_ENV, raising=False)
    first = write(tmp_path, "first.toml", SCRATCH)
    doubled = SCRATCH.replace("1048576", "2097152").replace("1 MiB", "2 MiB")
    own_req_to_token = SCRATCH.replace("sampler_scratch", "req_to_token").replace("# a", "# b")
    second = write(tmp_path, "second.toml", doubled + own_req_to_token)
    formulas = load_formulas([first, second])
    by_id = {formula.id: formula for formula in formulas}
    assert [formula.id for formula in formulas].count("sampler_scratch") == 1
    assert by_id["sampler_scratch"].expression == "slots * 2097152"
    assert by_id["sampler_scratch"].origin == f"{second}:2"
    assert by_id["req_to_token"].origin == f"{second}:11"  # the packaged entry is replaced
    assert "kv_free_pages" in by_id  # the rest of the packaged set stays
    # $MEMLEDGER_FORMULAS comes first: a file given explicitly replaces its entries.
    monkeypatch.setenv(FORMULAS_ENV, second)
    assert {f.id: f for f in load_formulas([first])}["sampler_scratch"].origin == f"{first}:2"
    assert {f.id: f for f in load_formulas()}["sampler_scratch"].origin == f"{second}:2"


@pytest.mark.parametrize(
    "command",
    [
        ["ledger", DP2],
        ["diff", DP16, DP2],
        ["check", DP2, "--budget", str(SAMPLES / "budget.toml")],
    ],
    ids=["ledger", "diff", "check"],
)
def test_a_malformed_file_exits_2_with_file_and_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "bad.toml", BAD)
    code, out, err = run_cli([*command, "--formulas", bad], capsys)
    assert code == EXIT_USAGE == ConfigError.exit_code
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith(f"memledger: error: {bad}:5: expression: ")
    assert "__import__" in lines[0]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("[[formula]\nid = 'x'\n", 1, "not valid TOML"),
        (SCRATCH.replace('why = "the', 'colour = "red"\nwhy = "the'), 2, "unknown key"),
        (SCRATCH + SCRATCH, 11, "duplicate formula id 'sampler_scratch'"),
    ],
)
def test_other_bad_files_name_their_line(
    text: str, line: int, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, "bad.toml", text)
    code, _, err = run_cli(["ledger", DP2, "--formulas", bad], capsys)
    assert code == EXIT_USAGE
    assert err.startswith(f"memledger: error: {bad}:{line}: ") and fragment in err


def test_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["ledger", DP2, "--formulas", str(tmp_path / "nope.toml")], capsys)
    assert code == EXIT_USAGE and "formulas file not found" in err


def test_diff_applies_the_file_to_both_sides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = write(tmp_path, "mine.toml", SCRATCH)
    argv = ["diff", DP16, DP2, "--model-config", K3, "--formulas", mine, "--format", "json"]
    code, out, err = run_cli(argv, capsys)
    assert code == EXIT_OK, err
    row = next(r for r in json.loads(out)["rows"] if r["id"] == "sampler_scratch")
    assert row["base_bytes"] == SLOTS["dp16"] * MIB
    assert row["head_bytes"] == SLOTS["dp2"] * MIB


def test_check_budgets_a_user_formula_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = write(tmp_path, "mine.toml", SCRATCH)
    budget = write(
        tmp_path,
        "budget.toml",
        'version = 1\n[[budget]]\nitem = "sampler_scratch"\nmax = "100 MiB"\n',
    )
    # DP16: 33 MiB passes; DP2: 209 MiB breaches; without the file the row does not exist.
    assert run_cli(["check", DP16, "--budget", budget, "--formulas", mine], capsys)[0] == EXIT_OK
    code, out, _ = run_cli(["check", DP2, "--budget", budget, "--formulas", mine], capsys)
    assert code == EXIT_BUDGET_FAILED and "sampler_scratch" in out
    assert run_cli(["check", DP2, "--budget", budget], capsys)[0] == EXIT_INPUT


def test_a_saved_ledger_keeps_its_rows_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = write(tmp_path, "mine.toml", SCRATCH)
    saved = tmp_path / "dp16.json"
    assert run_cli(["ledger", DP16, "--format", "json", "-o", str(saved)], capsys)[0] == EXIT_OK
    document = ledger_json([str(saved), "--formulas", mine], capsys)
    assert "sampler_scratch" not in rows_of(document)
    assert any(
        note.startswith(f"formulas files not applied ({mine})") for note in document["notes"]
    )
    # diff mixing it with a log: the log side gets the row, the saved side keeps its own.
    argv = ["diff", str(saved), DP2, "--formulas", mine, "--format", "json"]
    code, out, err = run_cli(argv, capsys)
    assert code == EXIT_OK, err
    row = next(r for r in json.loads(out)["rows"] if r["id"] == "sampler_scratch")
    assert row["base_bytes"] is None and row["head_bytes"] == SLOTS["dp2"] * MIB


def test_python_api_takes_formula_files(tmp_path: Path) -> None:
    mine = write(tmp_path, "mine.toml", SCRATCH)
    from_path = memledger.ledger(DP16, formula_files=[mine])
    from_parsed = memledger.ledger(memledger.load(DP16), formula_files=[mine])
    for built in (from_path, from_parsed):
        scratch = built.row("sampler_scratch")
        assert scratch is not None and scratch.bytes == SLOTS["dp16"] * MIB
    assert memledger.ledger(DP16).row("sampler_scratch") is None
