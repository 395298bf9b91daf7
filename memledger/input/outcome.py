"""What a line says about how the startup ended: OOM (or SGLang's refusal to size the KV
pool), crash, non-zero exit or ready.

Rank-agnostic outcome phrases, read from every line before the grammar; `parsing` keeps the
first of each per startup.
"""

from __future__ import annotations

import re

from memledger.input.error_texts import read_kv_refusal
from memledger.model.events import EventKind
from memledger.sglang.failure_rules import KV_REFUSAL_OUTCOME, KV_REFUSAL_REASON

OOM_RE = re.compile(r"(?i:out of memory)|OutOfMemoryError|\bOOM\b")
CRASH_RE = re.compile(
    r"Traceback \(most recent call last\)"
    r"|Scheduler hit an exception"
    r"|^Exception in "
    r"|Received sigquit from a child process"
    r"|scheduler is dead"
    r"|Initialization failed"
    r"|^(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception)(?::|$)"
    r"|^Killed$"
)
EXIT_CODE_RE = re.compile(r"Exit code:\s*(-?\d+)")
READY_TEXT = "The server is fired up and ready to roll"
RETRACTION_TEXT = "Decode out of memory happened"
"""SGLang retracting requests when the KV pool fills while serving (v0.4.6
managers/scheduler.py:1499, an INFO line): the server goes on, so it is no OOM outcome."""

# A quoted value (`text="how do I fix an OOM?"` in a logged request, a model path) is data the
# server echoes, not what happened to it: outcome phrases are not looked for inside one.
_QUOTED_VALUE_RE = re.compile(r"""(?<=[=(\[{,:])\s*(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')""")


_CRASH_WORDS = ("Error", "Exception", "Traceback", "Scheduler hit", "sigquit", "scheduler is dead")
"""Every CRASH_RE branch holds one of these (or is `Initialization failed` / `Killed`)."""
_REFUSAL_WORDS = ("enough memory", "profiled value", "Loaded weights leave")
"""What every text `read_kv_refusal` reads holds (a cheap test first)."""
OUTCOME_WORDS: tuple[str, ...] = (
    "OOM",
    "OutOfMemory",
    "Exit code",
    READY_TEXT,
    "Initialization failed",
    "Killed",
    *_CRASH_WORDS,
    *_REFUSAL_WORDS,
)
"""An ASCII line stating an outcome holds one of these, or `out of memory` in any case."""
_OUTCOME_WORDS_RE = re.compile("|".join(re.escape(word) for word in OUTCOME_WORDS))


def outcome_kind(text: str) -> tuple[EventKind, str] | None:
    """The outcome a line states (kind and the phrase that says it), or None."""
    if (
        text.isascii()
        and "out of memory" not in text.lower()
        and _OUTCOME_WORDS_RE.search(text) is None
    ):
        return None  # the common case, without the regexes below (quoted values only remove)
    if "'" in text or '"' in text:
        text = _QUOTED_VALUE_RE.sub(" ''", text)
    oom = OOM_RE.search(text) if RETRACTION_TEXT not in text else None
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
