"""Review 3, finding 1: a pasted (unprefixed) line is tidied in time linear in its length, and
only once it is bounded (parsing.MAX_PARSE_CHARS). Two regexps searched with `.sub` took time
quadratic in a line's length (35 s for one 48 KB line); the walks that replace them give the
same text on every line (checked against those regexps, kept here as the reference)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.errors import EXIT_OK
from memledger.input.parsing import MAX_PARSE_CHARS
from memledger.input.pasted import (
    _code_spans,
    _without_annotation,
    _without_elided_values,
    tidy_pasted,
)

# the patterns the walks replace (memledger at c905b0f, input/pasted.py)
OLD_ANNOTATION = re.compile(r"\s+(?:<-|<=|←|-->|==>|//|#\s).*$")
OLD_ELIDED = re.compile(
    r"(?:[A-Za-z_#][\w#/\-]*(?: [A-Za-z_#][\w#/\-]*)*)\s*[=:]\s*(?:\.{3,}|…)\s*[,;]?"
)
OLD_CODE_SPAN = re.compile(r"`+([^`]+)`+")

# every character the patterns treat apart, and a few they do not
PIECES = list("ab _#/-=:.…,;\t\n<>`é9Z") + ["...", "<-", "-->", "==>", "//", "# ", " = ..."]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_the_walks_give_what_the_patterns_gave(text: str) -> None:
    assert _without_annotation(text) == OLD_ANNOTATION.sub("", text)
    assert _without_elided_values(text) == OLD_ELIDED.sub("", text)
    assert _code_spans(text) == [m.group(1) for m in OLD_CODE_SPAN.finditer(text)]


@pytest.mark.parametrize(
    "line, message",
    [
        ("type=..., avail mem=20.40 GB", "avail mem=20.40 GB"),
        ("Memory pool end. avail mem=3.00 GB  <- here", "Memory pool end. avail mem=3.00 GB"),
        ("`Load weight begin. avail mem=4.76 GB` # after", "Load weight begin. avail mem=4.76 GB"),
        ("KV Cache is allocated. #tokens: 5, K size: ..., V size: 1 GB", None),
    ],
)
def test_tidying_still_reads_a_paste(line: str, message: str | None) -> None:
    tidied = tidy_pasted(line, MAX_PARSE_CHARS)
    if message is None:
        assert "K size" not in tidied and "V size: 1 GB" in tidied
    else:
        assert tidied == message


# the review's line shapes, each quadratic in the old patterns
HOSTILE = {
    "words before an ellipsis": "ab " * 20_000 + "...",
    "spaces": "x" + " " * 60_000 + "x",
    "tabs": "x" + "\t" * 60_000 + "x",
    "backticks": "a`" * 30_000 + "...",
    "a run of backticks": "`" * 60_000,
    "slashes": "a/" * 30_000 + "...",
    "rank tags": "TP0 " * 15_000 + "...",
    "bold": "**a" * 20_000 + "...",
}


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_a_line_past_the_bound_is_not_tidied(shape: str) -> None:
    line = "Load weight end. avail mem=8.37 GB " + HOSTILE[shape]
    assert tidy_pasted(line, MAX_PARSE_CHARS) == line


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_a_bounded_hostile_line_is_tidied_as_the_patterns_did(shape: str) -> None:
    line = ("Load weight end. avail mem=8.37 GB " + HOSTILE[shape])[:MAX_PARSE_CHARS]
    expected = OLD_ELIDED.sub("", OLD_ANNOTATION.sub("", line))
    assert _without_elided_values(_without_annotation(line)) == expected


def _paste(path: Path) -> Path:
    """A paste (no prefix anywhere) of a startup, with every hostile shape at full length and cut
    to the bound, 20 lines each: the old patterns needed minutes for one such file."""
    lines = ["Load weight begin. avail mem=22.76 GB"]
    for shape in HOSTILE.values():
        lines.append("Load weight end. avail mem=8.37 GB " + shape)
        short = ("Load weight end. avail mem=8.37 GB " + shape)[: MAX_PARSE_CHARS - 4] + " ..."
        lines += [short] * 20
    lines += [
        "Load weight end. type=Qwen2ForCausalLM, avail mem=8.37 GB, mem usage=14.00 GB.",
        "KV Cache is allocated. #tokens: 105531, K size: 2.82 GB, V size: 2.82 GB",
        "Memory pool end. avail mem=2.68 GB",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


COMMANDS = {
    "parse": ["parse", "{log}", "--coverage"],
    "ledger": ["ledger", "{log}"],
    "diagnose": ["diagnose", "{log}"],
    "whatif": ["whatif", "{log}", "--set", "mem_fraction_static=0.8"],
    "diff": ["diff", "{log}", "{log}"],
    "check": ["check", "{log}", "--budget", "{budget}"],
    "diagnose stdin": ["diagnose", "-"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_long_pasted_lines_in_every_command(command: str, tmp_path: Path) -> None:
    log = _paste(tmp_path / "paste.log")
    budget = tmp_path / "budget.toml"
    budget.write_text('version = 1\n[[budget]]\nitem = "weights"\nmax = "20 GiB"\n')
    argv = [a.format(log=log, budget=budget) for a in COMMANDS[command]]
    stdin = log.read_text(encoding="utf-8") if "-" in argv else None
    # a subprocess with a timeout: a regression fails here instead of hanging the suite
    done = subprocess.run(
        [sys.executable, "-m", "memledger", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr
    if command == "parse":
        assert done.returncode == EXIT_OK
        assert done.stdout.count("too long to parse (600") == len(HOSTILE)
        assert " load_end " in done.stdout
    else:
        assert done.returncode in (0, 1, 3) and done.stdout
