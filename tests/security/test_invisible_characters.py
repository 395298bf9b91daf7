"""Review 3, finding 5: invisible characters (bidi marks, fillers, tags: Unicode's
default-ignorable code points and general category Cf) never reach the output raw, in any
destination. The property test of every format is tests/security/test_render.py."""

from __future__ import annotations

import json
import sys
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from memledger.render.escape import (
    INVISIBLE_RANGES,
    Destination,
    finish,
    markup_text,
    visible_controls,
)
from tests.security.helpers import log_text, run
from tests.security.test_render import DEFAULT_IGNORABLE, INVISIBLE

OWN_MARK = 0x200B  # memledger's own inert mark (render.escape)


def _raw_invisible(text: str) -> list[str]:
    return [
        f"U+{ord(c):04X}"
        for i, c in enumerate(text)
        if ord(c) != OWN_MARK
        and (unicodedata.category(c) == "Cf" or ord(c) in DEFAULT_IGNORABLE)
        and not (c == "\ufe0f" and i and unicodedata.category(text[i - 1]) == "So")
    ]


def test_the_table_is_the_whole_class_for_this_python() -> None:
    """Every Cf character of this Python's Unicode data, and every default-ignorable code point,
    is in the table (a newer Python with a newer Unicode adds none unseen)."""
    table = {code for low, high in INVISIBLE_RANGES for code in range(low, high + 1)}
    format_chars = {
        code for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) == "Cf"
    }
    assert sorted((format_chars | DEFAULT_IGNORABLE) - table) == [OWN_MARK]
    # and nothing else (a later Unicode's format characters are unassigned in an older Python)
    others = table - format_chars - DEFAULT_IGNORABLE
    assert {unicodedata.category(chr(code)) for code in others} <= {"Cn"}


def _as(destination: Destination, text: str) -> str:
    if destination is Destination.JSON:
        return json.dumps({"text": text}, ensure_ascii=False)
    if destination is Destination.JUNIT:
        return f"<testsuite name='x'><system-out>{text}</system-out></testsuite>"
    if destination is Destination.CSV:
        return f"a,b\n{text},x\n"
    return text


@pytest.mark.parametrize("destination", list(Destination))
def test_every_destination_shows_or_escapes_them(destination: Destination) -> None:
    text = "FAIL \u200f" + INVISIBLE + " PASS"
    out = finish(destination, _as(destination, text))
    assert _raw_invisible(out) == []
    if destination is Destination.JSON:
        assert json.loads(out) == {"text": text}  # the same data, escaped
    elif destination is Destination.JUNIT:
        assert ET.fromstring(out).findtext("system-out") == text
    else:  # a destination people read (a new one too): shown, as `visible_controls` does
        assert "U+200F>" in out and "U+E0041>" in out, (
            f"{destination}: show invisible characters (render.escape.visible_controls; HTML "
            "and SVG: markup_text)"
        )


def test_markup_shows_them_as_escaped_text() -> None:
    assert markup_text("a\u200fb<c>") == "a&lt;U+200F>b<c>"  # the template escaped <c> itself


def test_the_filter_is_one_function_for_new_formats() -> None:
    assert visible_controls("a\u061cb\u3164c\ufeff") == "a<U+061C>b<U+3164>c<U+FEFF>"
    assert visible_controls("x\u200by") == "x\u200by"
    # an emoji's presentation selector stays; selectors that hide text show
    assert visible_controls("\u26a0\ufe0f warn") == "\u26a0\ufe0f warn"
    assert visible_controls("\u26a0\ufe0f\ufe0f a\ufe0f") == "\u26a0\ufe0f<U+FE0F> a<U+FE0F>"


def _bidi_log(tmp_path: Path) -> Path:
    lines = log_text().split("\n")
    lines.insert(
        10,
        "[2025-02-04 05:29:20 TP0] RuntimeError: abc \u200f\u061c\u200e FAIL x "
        "\ufeff\u00ad\u3164 \u200fPASS (exit 0)\u200e",
    )
    path = tmp_path / "bidi.log"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["check", "{log}", "--budget", "{budget}"],
        ["check", "{log}", "--budget", "{budget}", "--format", "markdown"],
        ["check", "{log}", "--budget", "{budget}", "--format", "github"],
        ["check", "{log}", "--budget", "{budget}", "--format", "junit"],
        ["check", "{log}", "--budget", "{budget}", "--format", "json"],
        ["diagnose", "{log}", "--format", "markdown"],
        ["diagnose", "{log}"],
        ["ledger", "{log}"],
        ["parse", "{log}", "--coverage"],
    ],
)
def test_the_reviews_crash_line_prints_no_invisible_character(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = tmp_path / "bw.toml"
    budget.write_text('version = 1\n[[budget]]\nitem = "weights"\nmax = "20 GiB"\n')
    log = _bidi_log(tmp_path)
    code, out, err = run(capsys, *[a.format(log=log, budget=budget) for a in command])
    assert code in (0, 1) and out
    assert _raw_invisible(out + err) == []
    if "--format" not in command:
        assert "abc <U+200F><U+061C><U+200E> FAIL" in out
