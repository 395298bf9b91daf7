"""The error-text table (memledger.sglang.errors): every entry against its own example line, and
its words against its regex (the prefilter, quiet and cheap-test word lists derive from them)."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from memledger.input import error_texts
from memledger.input.outcome import OOM_RE, outcome_kind
from memledger.input.quiet import READER_WORDS
from memledger.input.reported import read_reported
from memledger.model.events import EventKind, Value
from memledger.sglang import lines
from memledger.sglang.errors import (
    ANY_CASE_WORDS,
    BY_NAME,
    ERRORS,
    ErrorText,
    Outcome,
    Regex,
    any_case,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_parse


def _reported(text: str) -> dict[str, Value]:
    """What a reporter typed: every setting and mention of the line, merged; a traceback frame's
    mentions (rows read in frames, `where` frame) as the reader reads them under a traceback."""
    if text.lstrip().startswith("File "):
        reader = error_texts.ErrorTextReader()
        events = [*reader.feed(1, "Traceback (most recent call last):", "", False)]
        events += reader.feed(2, text, "", False)
        mentions = [e.values for e in events if e.kind is EventKind.REPORTED]
        return {"where": "frame", **{k: v for found in mentions for k, v in found.items()}}
    return {key: value for found in read_reported(text) for key, value in found.items()}


_READERS: dict[EventKind, Callable[[str], Any]] = {
    EventKind.OOM_MESSAGE: lambda text: error_texts.read_oom_message(text),
    EventKind.KV_REFUSAL: error_texts.read_kv_refusal,
    EventKind.POOL_EXHAUSTED: error_texts.read_pool_exhausted,
    EventKind.PROCESS_EXIT: error_texts.read_process_exit,
    EventKind.SETTING_ADJUSTED: error_texts.read_adjustment,
    EventKind.REPORTED: _reported,
}


def _covered(items: Any, held: Any, run: str = "") -> bool:
    """Whether every match of the parsed regex `items` holds a word (`held(literal run)`); `run`
    is the literal before them (sre_parse moves a common prefix out of an alternation)."""
    for op, arg in items:
        if str(op) == "LITERAL":
            run += chr(arg)
            continue
        if str(op) == "BRANCH":
            if all(_covered(branch, held, run) for branch in arg[1]):
                return True
        elif held(run):
            return True
        run = ""
        if str(op) == "SUBPATTERN" and _covered(arg[-1], held):
            return True
        if str(op) in ("MAX_REPEAT", "MIN_REPEAT") and arg[0] >= 1 and _covered(arg[2], held):
            return True
    return bool(held(run))


def _words_fit(entry: ErrorText) -> None:
    """Each word is the regex's own literal text, and every branch of the regex holds one."""
    fold = str.lower if any_case(entry) else str
    words = [fold(word) for word in entry.words]
    literal = fold(re.sub(r"\\(.)", r"\1", entry.regex.pattern))
    for word in words:
        assert word in literal, word
    for word in entry.wrap_words:
        assert word in entry.example, word
    parsed = sre_parse.parse(entry.regex.pattern, entry.regex.flags)
    assert _covered(parsed, lambda run: any(word in fold(run) for word in words)), entry.name


@pytest.mark.parametrize("entry", ERRORS, ids=[entry.name for entry in ERRORS])
def test_every_error_text_reads_its_example(entry: ErrorText) -> None:
    assert BY_NAME[entry.name] is entry
    assert entry.source and entry.example and entry.family
    assert entry.kind or entry.outcome or entry.masks_oom, (
        "an entry feeds a reader, states an outcome or masks an OOM phrase"
    )
    _words_fit(entry)
    match = entry.find(entry.example)
    assert match is not None, entry.example
    for _, group, _ in entry.captures:
        assert group in entry.regex.groupindex
    if entry.masks_oom:
        # its example holds an out-of-memory phrase, and states no OOM end for it
        assert OOM_RE.search(entry.example) is not None, entry.example
        stated_kind = outcome_kind(entry.example)
        assert stated_kind is None or stated_kind[0] is not EventKind.OOM, entry.example
    if not (entry.kind or entry.outcome):
        return  # a mask only: read on lines the OOM words already let through
    # each word is a prefilter word (or matched in any case by the scanner) and makes the line
    # doubtful for the quiet-line test
    for word in entry.words:
        if any_case(entry):
            assert word.lower() in ANY_CASE_WORDS
        else:
            assert word in lines.PREFILTER_WORDS
        assert word.lower() in (w.lower() for w in READER_WORDS)
    if entry.kind in _READERS:
        read = _READERS[EventKind(entry.kind)](entry.example)
        assert read is not None, entry.example
        values = read[1] if isinstance(read, tuple) else read
        if entry.kind == EventKind.REPORTED and values.get("where") != "frame":
            # a line may name more than one thing (SGLang's mamba cap names the mamba pool too):
            # the entry's own mention is one of those read off its example
            said = [found.get("mention") for found in read_reported(entry.example)]
            assert entry.values.get("mention") in [*said, None], said
            values = {**values, **{k: v for k, v in entry.values.items() if k == "mention"}}
        assert entry.values.items() <= values.items()
        for key, _, number in entry.captures:
            assert key not in values or isinstance(values[key], number)
    elif entry.kind:
        assert entry.kind == EventKind.TRACEBACK
        reader = error_texts.ErrorTextReader()
        events = [*reader.feed(1, entry.example, "TP0", True), *reader.finish()]
        assert entry.name == "req_to_token_code" or [e.kind for e in events] == [entry.kind]
    stated = outcome_kind(entry.example)
    if entry.outcome is None:
        return
    assert stated is not None, entry.example
    crash = entry.outcome in (Outcome.CRASH, Outcome.EXIT)
    kind, phrase = stated
    assert kind is (EventKind.CRASH if crash or entry.masks_oom else EventKind.OOM)
    if entry.outcome in (Outcome.OOM, Outcome.CRASH):
        assert phrase == match.group(0)


def test_a_word_missing_from_a_branch_is_caught() -> None:
    entry = ErrorText(
        "x", Regex(r"Decode out of memory|Prefill is full"), ("of memory",),
        BY_NAME["killed"].family, "s", "Decode out of memory",
    )  # fmt: skip
    with pytest.raises(AssertionError):
        _words_fit(entry)


def test_the_refusal_words_are_written_once() -> None:
    refusals = [entry for entry in ERRORS if entry.outcome is Outcome.REFUSAL]
    assert refusals and all(entry.kind == EventKind.KV_REFUSAL for entry in refusals)
    for entry in refusals:
        assert error_texts.read_kv_refusal(entry.example) is not None
        assert outcome_kind(entry.example) is not None
        assert set(entry.words) <= set(lines.SPECS["kv_refusal"].words)


def test_a_row_s_regex_is_compiled_when_first_used_and_reads_as_compiled() -> None:
    # a fresh process: importing the table compiles none of its rows
    code = (
        "import memledger.input.parsing, memledger.sglang.errors as e; "
        "print(sum(r.regex._compiled is not None for r in e.ERRORS))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"
    given = ErrorText("x", re.compile("a b", re.I), ("a b",), BY_NAME["killed"].family, "s", "A B")
    assert isinstance(given.regex, Regex) and given.find("A B") is not None  # taken as one
    for entry in ERRORS:
        assert isinstance(entry.regex, Regex), entry.name
        compiled = re.compile(entry.regex.pattern, entry.regex.flags)
        assert entry.regex.groupindex == compiled.groupindex, entry.name
        found, expected = entry.regex.search(entry.example), compiled.search(entry.example)
        assert (found and found.span()) == (expected and expected.span()), entry.name
