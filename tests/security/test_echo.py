"""User text is echoed bounded: an error line shows a hostile value (a 40 KB version string, a
rank, a budget key) by its start and end; values every report would echo whole (a budget item or
message, a diff label, a whatif dtype, a saved ledger's strings) are refused past their bound,
each with a one-line error. Escaping by destination is render/escape.py's
(tests/security/test_render.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.app.options import MAX_LABEL_CHARS
from memledger.checking.budget import MAX_ITEM_CHARS, MAX_TEXT_CHARS
from memledger.errors import EXIT_INPUT, EXIT_USAGE, MESSAGE_CHARS, bounded
from memledger.input.saved_ledger import MAX_STRING_CHARS
from memledger.sizing.whatif import MAX_SETTING_CHARS
from tests.security.helpers import run, write_log

HOSTILE = "0.5." + "9" * 40_000


def test_bounded_keeps_the_start_and_the_end_within_the_limit() -> None:
    text = "start-" + "x" * 5000 + "-the hint at the end"
    shown = bounded(text, 200)
    assert len(shown) <= 200 and shown.startswith("start-") and shown.endswith("at the end")
    head, rest = shown.split("…[", 1)
    count, tail = rest.split(" characters not shown]…", 1)
    assert len(head) + int(count.replace(",", "")) + len(tail) == len(text)  # what is cut is said
    assert text.startswith(head) and text.endswith(tail)
    assert bounded("short", 200) == "short"


@pytest.mark.parametrize(
    "argv",
    [
        ["diff", "{log}", "{log}", "--base-version", HOSTILE],
        ["diff", "{log}", "--against-release", HOSTILE],
        ["ledger", "{log}", "--rank", HOSTILE],
        ["ledger", "{log}", "--explain", HOSTILE],
        ["ledger", "{log}", "--startup", HOSTILE],
        ["whatif", "{log}", "--set", f"x{HOSTILE}=1"],
        ["check", "{log}", "--budget", HOSTILE],
    ],
    ids=lambda argv: "-".join(a for a in argv[:3] if not a.startswith("{") and len(a) < 30),
)
def test_an_error_echoing_a_hostile_value_is_one_bounded_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    log = str(write_log(tmp_path))
    code, out, err = run(capsys, *[a.replace("{log}", log) for a in argv])
    assert code in (EXIT_USAGE, EXIT_INPUT) and out == ""
    assert err.count("\n") == 1 and len(err) <= MESSAGE_CHARS + 1
    assert err.startswith("memledger: error: ") and "characters not shown]" in err


def test_a_saved_ledger_string_past_the_bound_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "ledger", write_log(tmp_path), "--format", "json")
    document = json.loads(out)
    document["notes"].append("N" * (MAX_STRING_CHARS + 1))
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document), encoding="utf-8")
    argvs: list[list[str | Path]] = [["ledger", forged], ["diff", forged, forged]]
    for argv in argvs:
        code, out, err = run(capsys, *argv)
        assert code == EXIT_INPUT and out == "" and err.count("\n") == 1
        assert "notes[" in err and f"{MAX_STRING_CHARS + 1:,} characters" in err
    document["notes"][-1] = "N" * MAX_STRING_CHARS  # at the bound: read
    forged.write_text(json.dumps(document), encoding="utf-8")
    assert run(capsys, "ledger", forged)[0] == 0


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (f'item = "{"i" * (MAX_ITEM_CHARS + 1)}"\nmax = "1 GiB"', "characters long: no summary"),
        (f'item = "cuda_graph"\nmax = "1 GiB"\nmessage = "{"m" * (MAX_TEXT_CHARS + 1)}"',
         f"message is {MAX_TEXT_CHARS + 1:,} characters long"),
    ],
)  # fmt: skip
def test_budget_texts_every_report_echoes_are_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, expected: str
) -> None:
    budget = tmp_path / "budget.toml"
    budget.write_text(f"version = 1\n[[budget]]\n{entry}\n", encoding="utf-8")
    code, out, err = run(capsys, "check", write_log(tmp_path), "--budget", budget)
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
    assert f"{budget}:" in err and expected in err and len(err) <= MESSAGE_CHARS + 1


def test_a_diff_label_and_a_whatif_text_setting_are_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path)
    code, out, err = run(capsys, "diff", log, log, "--head-label", "L" * (MAX_LABEL_CHARS + 1))
    assert code == EXIT_USAGE and out == "" and f"--head-label: at most {MAX_LABEL_CHARS}" in err
    assert run(capsys, "diff", log, log, "--head-label", "L" * MAX_LABEL_CHARS)[0] == 0
    value = "f" * (MAX_SETTING_CHARS + 1)
    code, out, err = run(capsys, "whatif", log, "--set", f"kv_cache_dtype={value}")
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
    assert f"kv_cache_dtype: at most {MAX_SETTING_CHARS} characters" in err
