"""The open F23 case (review 3): a `--grammar` line rule sees every line it can match, or it is
refused at load with one line. `/MyFork staging buffer ready/` as a rule's head was lexed as the
generic WORD `MyFork` and the line was lost without a word."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memledger.errors import EXIT_OK, EXIT_USAGE, ConfigError
from memledger.input.extension_regex import regexp_example
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from tests.security.helpers import log_text, run

TAIL = ": role=target, buffers=2, total=512.0 MiB"


def _grammar(path: Path, head: str, terminal: str = "") -> Path:
    path.write_text(
        "%extend message: staging_pool__myfork\n"
        f'staging_pool__myfork: {head} ":" fields\n{terminal}',
        encoding="utf-8",
    )
    return path


def _log(path: Path, message: str) -> Path:
    path.write_text(log_text(extra=f"[2025-02-04 05:29:21 TP0] {message}{TAIL}\n"))
    return path


def test_the_regexp_head_of_the_review_is_refused_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grammar = _grammar(tmp_path / "fork.lark", "/MyFork staging buffer ready/")
    log = _log(tmp_path / "fork.log", "MyFork staging buffer ready")
    code, out, err = run(capsys, "parse", log, "--grammar", grammar)
    assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
    assert f"{grammar}: grammar rule 'staging_pool__myfork'" in err
    assert "never reaches it: Lark reads its start as WORD first" in err


@pytest.mark.parametrize(
    "head, terminal",
    [
        ("HEAD", "HEAD.2: /MyFork staging buffer ready/\n"),  # what the refusal says to do
        ('"MyFork" "staging" "buffer" "ready"', ""),
    ],
)
def test_what_the_refusal_suggests_reads_the_line(
    head: str, terminal: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grammar = _grammar(tmp_path / "fork.lark", head, terminal)
    log = _log(tmp_path / "fork.log", "MyFork staging buffer ready")
    code, out, _ = run(capsys, "parse", log, "--grammar", grammar)
    assert code == EXIT_OK
    assert any(" staging_pool " in line and "buffers=2" in line for line in out.splitlines())


def test_a_rule_whose_lines_hold_no_word_to_find_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grammar = _grammar(tmp_path / "fork.lark", "HEAD", "HEAD.2: /[A-Z]{2}\\d/\n")
    code, _, err = run(capsys, "parse", _log(tmp_path / "f.log", "XB7"), "--grammar", grammar)
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert "no quoted word (or regexp run) of four or more characters" in err


WORDS = ["MyFork", "staging", "buffer", "ready", "Xfork_buf7", "pool", "v2", "DCP"]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    form=st.sampled_from(["regexp", "named", "priority", "quoted"]),
)
def test_a_rule_sees_every_line_it_matches_or_is_refused(
    words: list[str], form: str, tmp_path: Path
) -> None:
    phrase = " ".join(words)
    regexp = phrase.replace("7", "\\d")
    head, terminal = {
        "regexp": (f"/{regexp}/", ""),
        "named": ("HEAD", f"HEAD: /{regexp}/\n"),
        "priority": ("HEAD", f"HEAD.3: /{regexp}/\n"),
        "quoted": (" ".join(f'"{w}"' for w in words), ""),
    }[form]
    grammar = _grammar(tmp_path / f"g{abs(hash((phrase, form)))}.lark", head, terminal)
    message = regexp_example(regexp) if form != "quoted" else phrase
    assert message is not None
    log = _log(tmp_path / "l.log", message)
    try:
        parsed = parse_log(log, extra_grammars=[grammar])
    except ConfigError as refused:
        assert "staging_pool__myfork" in str(refused)  # refused, one reason, at load
        return
    line = log_text().count("\n")  # the fork's line comes before the ready line
    kinds = [e.kind for e in parsed.startup.events if e.line == line]
    reported = [u for u in parsed.startup.unrecognised if u.line == line]
    # parsed by the rule, or (a quoted phrase Lark lexes as words) said in coverage: never lost
    assert kinds == [EventKind.STAGING_POOL] or reported, (head, terminal, message)
