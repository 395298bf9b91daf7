"""What a line says about how the startup ended: OOM (or SGLang's refusal to size the KV
pool), crash, non-zero exit or ready.

Rank-agnostic outcome phrases, read from every line before the grammar; `parsing` keeps the
first of each per startup.
"""

from __future__ import annotations

import re

from memledger.input.ascii_view import ascii_view, non_ascii_words
from memledger.input.error_texts import read_kv_refusal
from memledger.model.events import EventKind
from memledger.sglang.errors import MASKS_OOM, Outcome, any_case, joined, of_outcome, words_of
from memledger.sglang.failure_rules import KV_REFUSAL_OUTCOME, KV_REFUSAL_REASON
from memledger.sglang.lines import READY_TEXT

OOM_RE = joined(of_outcome(Outcome.OOM))
CRASH_RE = joined(of_outcome(Outcome.CRASH))
(_EXIT,) = of_outcome(Outcome.EXIT)
EXIT_CODE_RE = _EXIT.regex

# A quoted value (`text="how do I fix an OOM?"` in a logged request, a model path) is data the
# server echoes, not what happened to it: outcome phrases are not looked for inside one.
_QUOTED_VALUE_RE = re.compile(r"""(?<=[=(\[{,:])\s*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")

_STATED = tuple(entry for outcome in Outcome for entry in of_outcome(outcome))
OUTCOME_ANY_CASE_WORDS = words_of(tuple(entry for entry in _STATED if any_case(entry)))
OUTCOME_WORDS: tuple[str, ...] = (
    *words_of(tuple(entry for entry in _STATED if not any_case(entry))),
    READY_TEXT,
)
"""A line stating an outcome holds one of these, or one of OUTCOME_ANY_CASE_WORDS in any case
(the words of memledger.sglang.errors' outcome texts; the any-case ones are lower case)."""
_OUTCOME_WORDS_RE = re.compile("|".join(re.escape(word) for word in OUTCOME_WORDS))
_NON_ASCII_OUTCOME_WORDS = non_ascii_words((*OUTCOME_ANY_CASE_WORDS, *OUTCOME_WORDS))


def outcome_kind(text: str) -> tuple[EventKind, str] | None:
    """The outcome a line states (kind and the phrase that says it), or None."""
    view = ascii_view(text, _NON_ASCII_OUTCOME_WORDS)  # memledger.input.ascii_view
    if view is not None:
        lowered = view.lower()
        if not any(word in lowered for word in OUTCOME_ANY_CASE_WORDS):
            if _OUTCOME_WORDS_RE.search(view) is None:
                return None  # the common case, without the regexes below (quotes only remove)
    if "'" in text or '"' in text:
        text = _QUOTED_VALUE_RE.sub(" ''", text)
    # a retraction the server survives, a recovered warning, an on-chip scratch limit
    # (memledger.sglang.errors `masks_oom`) hold the words of an OOM but end nothing
    oom = None if any(entry.find(text) for entry in MASKS_OOM) else OOM_RE.search(text)
    if oom:
        return EventKind.OOM, oom.group(0)
    # before the crash phrases: `RuntimeError: Not enough memory ...` is SGLang's refusal, the
    # outcome diagnose gives it (the same reader makes its kv_refusal event)
    if read_kv_refusal(text) is not None:
        return EventKind(KV_REFUSAL_OUTCOME), KV_REFUSAL_REASON
    crash = CRASH_RE.search(text)
    if crash:
        return EventKind.CRASH, crash.group(0)
    exit_code = EXIT_CODE_RE.search(text)
    if exit_code and int(exit_code.group(1)) != 0:
        return EventKind.CRASH, exit_code.group(0)
    if READY_TEXT in text:
        return EventKind.READY, READY_TEXT
    return None
