"""The grammar's caches give exactly what the grammar gives, on every message of every real log.

`LineGrammar.parse` answers repeated messages and repeated shapes (digits folded) without Lark
(memledger.input.shapecache). These tests run each message a real log or sample sends to the
grammar through one cached grammar (so shapes seen in one log answer lines of the next) and
through the grammar alone, with the printed numbers as logged and with their digits changed.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from memledger.input import linegrammar
from memledger.input.linegrammar import NUMBER_TERMINALS, LineGrammar
from memledger.input.parsing import EVENTS_PER_KIND_CAP, parse_log
from memledger.input.shapecache import ParseCache, Shape, digit_blind, fold, retext, steady
from memledger.input.transform import LineParse, transform
from memledger.sglang.examples import EXAMPLES
from tests.conftest import SAMPLES, real_log_paths
from tests.security.helpers import log_text

_DIGIT = re.compile(r"(?<![A-Za-z_])\d")


def _messages(paths: list[Path]) -> list[str]:
    """Every message parse_log sends to the grammar for these logs, in order, from a grammar of
    its own as a process starts: the process's grammar, warmed by whatever ran before, answers
    more lines by outline and sends fewer (the list must not depend on the tests' order)."""
    sent: list[str] = []
    original = LineGrammar.parse

    def recording(self: LineGrammar, message: str) -> LineParse | None:
        sent.append(message)
        return original(self, message)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LineGrammar, "parse", recording)
        own = cache(lambda extra: LineGrammar([Path(p) for p in extra]))
        patch.setattr(linegrammar, "_cached_grammar", own)
        for path in paths:
            parse_log(path)
    return sent


def _cache(grammar: LineGrammar) -> ParseCache[LineParse]:
    assert grammar._cache is not None  # set once the grammar is built
    return grammar._cache


def _shifted(message: str) -> str:
    """The message with every foldable digit changed (same shape, other numbers)."""
    return _DIGIT.sub(lambda m: str((int(m.group(0)) + 7) % 10), message)


@pytest.fixture(scope="module")
def messages() -> list[str]:
    paths = [*real_log_paths(), *sorted(SAMPLES.glob("*.log"))]
    found = _messages(paths)
    assert len(found) > 1000  # the corpus sends ~2,000 messages; an empty list would prove nothing
    return found


def test_cached_parse_equals_the_grammar_on_every_real_message(messages: list[str]) -> None:
    cached = LineGrammar()
    reference = LineGrammar()
    assert _cache(cached).shapes_enabled  # the packaged grammar is digit-blind: the fast path is on
    variants = [m for message in messages for m in (message, _shifted(message), message)]
    mismatches = [m for m in variants if cached.parse(m) != reference.parse_uncached(m)]
    assert mismatches == []
    # the caches were used, not bypassed: far fewer shapes than messages
    assert len(_cache(cached).shapes) < len(set(messages)) / 2


def test_shifted_numbers_reach_the_fields() -> None:
    grammar = LineGrammar()
    first = grammar.parse("Load weight end. avail mem=47.63 GB, mem usage=30.78 GB.")
    second = grammar.parse("Load weight end. avail mem=12.01 GB, mem usage=19.50 GB.")
    assert first is not None and second is not None
    assert second.sizes["avail"].text == "12.01 GB" and second.sizes["usage"].text == "19.50 GB"
    assert first.sizes["avail"].text == "47.63 GB"  # the first result was not changed
    assert len(_cache(grammar).shapes) == 1


def test_fold_keeps_a_digit_right_after_a_letter() -> None:
    assert fold("DSV4 memory calculation: x=12.5 GB, TP13 bf16") == (
        "DSV4 memory calculation: x=00.0 GB, TP10 bf10"
    )


@pytest.mark.parametrize(
    ("literals", "regexes", "blind"),
    [
        (["DSV4", "Init", "Post-capture"], [r"[+-]?\d+(?:\.\d+)?", r"\d{2}:\d{2}"], True),
        (["v0.5"], [], False),  # `v1.5` would fold onto the keyword `v0.5`
        (["Init"], [r"v[0-4]"], False),  # a regex that tells digits apart
    ],
)
def test_digit_blind(literals: list[str], regexes: list[str], blind: bool) -> None:
    assert digit_blind(literals, regexes) is blind


def test_extension_telling_digits_apart_gets_the_exact_cache_only(tmp_path: Path) -> None:
    extra = tmp_path / "fork.lark"
    extra.write_text('%extend message: lora__v05\nlora__v05: "v0.5" "ready" fields?\n')
    grammar = linegrammar.LineGrammar([extra])
    assert not _cache(grammar).shapes_enabled
    assert grammar.parse("Memory pool end. avail mem=1.00 GB") is not None


# --- Lines that differ only in their digits reach Lark once per shape.


def test_repeated_memory_lines_reach_lark_once_per_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the review's rep.log: 100k `Memory pool end` lines that differ only in their digits
    # (shortened to 5,000): Lark parses the shape once, the rest come from the shape cache
    calls: list[str] = []
    original = LineGrammar._tree

    def counted(self: LineGrammar, message: str) -> Any:
        calls.append(message)
        return original(self, message)

    monkeypatch.setattr(LineGrammar, "_tree", counted)
    log = tmp_path / "rep.log"
    extra = "".join(
        f"[2025-02-04 05:29:40 TP0] Memory pool end. avail mem=2.{i % 100:02d} GB\n"
        for i in range(5000)
    )
    log.write_text(log_text() + extra, encoding="utf-8")
    parsed = parse_log(log)
    kept = [e for e in parsed.startup.events if e.kind == "memory_pool_end"]
    assert len(kept) > 100  # the lines were read (up to the per-kind cap)
    # once per shape at most (none when an earlier run's shape store knows it), not 5,000
    assert len([m for m in calls if m.startswith("Memory pool end.")]) <= 3


def test_a_known_shape_rewrites_only_its_changed_numbers_in_place() -> None:
    grammar = LineGrammar()
    first = "Capturing batches (bs=24 avail_mem=11.91 GB)"
    second = "Capturing batches (bs=16 avail_mem=11.91 GB)"  # one number differs
    tree = grammar._tree(first)
    as_first, as_second = retext(tree, first), retext(tree, second)  # fresh trees
    shape = Shape(tree)
    assert sorted(str(children[i]) for children, i in shape.slots) == ["11.91", "24"]
    kept = {str(t): t for t in tree.scan_values(lambda _: True)}
    again = shape.retext(second)
    assert again is tree  # no new nodes: the digit tokens are written into the tree
    assert again == as_second  # what re-reading every token gives
    tokens = {str(t): t for t in again.scan_values(lambda _: True)}
    assert tokens["11.91"] is kept["11.91"]  # the unchanged number's token is kept
    assert tokens["16"] is not kept.get("16") and "24" not in tokens
    assert all(tokens[text] is token for text, token in kept.items() if text not in "24")
    assert shape.retext(first) == as_first  # and back
    parsed = grammar.parse(second)
    assert parsed is not None and parsed.sizes["avail"].text == "11.91 GB"
    assert grammar.parse(first) == grammar.parse_uncached(first)


# --- Outlines: a steady shape says what its lines are without typing them (past the kind cap).


def test_an_outline_has_the_kind_size_keys_and_no_problems_of_every_real_message(
    messages: list[str],
) -> None:
    grammar = LineGrammar()
    outlined: set[str] = set()
    for message in messages:
        for variant in (message, _shifted(message)):
            outline = grammar.outline(variant)  # asked before the message itself is parsed
            if outline is not None:
                outlined.add(message)
                full = grammar.parse_uncached(variant)
                assert full is not None, variant
                assert (full.kind, sorted(full.sizes), full.problems) == (
                    outline.kind,
                    sorted(outline.sizes),
                    [],
                ), variant
            grammar.parse(variant)
    # outlines were offered, not just never wrong: for most distinct messages (a repeat is the
    # exact cache's, never outlined, and how many repeats come is no measure of the outlines)
    assert len(outlined) > len(set(messages)) / 2


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # 10 digits of GB: 10^9 GB is a size, 9 * 10^9 GB is past MAX_BYTES
        ("Memory pool end. avail mem=1000000000 GB", "Memory pool end. avail mem=9000000000 GB"),
        # an exponent: 1e10 B is a size, 1e19 B is not
        ("Memory pool end. avail mem=1e10 B", "Memory pool end. avail mem=1e19 B"),
        # a key holding a foldable digit: c128 is declared, c199 is not
        (
            "DSV4 pool sizes: full=1, swa=2, c4=3, c128=4, c4_state=5, c128_state=6",
            "DSV4 pool sizes: full=1, swa=2, c4=3, c199=4, c4_state=5, c128_state=6",
        ),
    ],
)
def test_a_shape_whose_digits_can_change_its_problems_gets_no_outline(
    first: str, second: str
) -> None:
    grammar = LineGrammar()
    assert fold(first) == fold(second)  # one shape
    parsed_first, parsed_second = grammar.parse(first), grammar.parse_uncached(second)
    assert parsed_first is not None and parsed_second is not None
    assert parsed_first.problems == [] and parsed_second.problems != []  # why it must not
    assert grammar.outline(second) is None and grammar.outline(first) is None
    # a steady shape of the same line does get one
    grammar.parse("Memory pool end. avail mem=12.50 GB")
    assert grammar.outline("Memory pool end. avail mem=99.99 GB") is not None


def test_steady_tokens() -> None:
    tree = LineGrammar()._tree("Load weight end. avail mem=47.63 GB, mem usage=-0.00 GB.")
    tokens = {str(t): t for t in tree.scan_values(lambda _: True)}
    assert steady(tokens["47.63"], NUMBER_TERMINALS)
    assert not steady(tokens["-0.00"], NUMBER_TERMINALS)  # -0.00 and -1.00 fold alike
    assert not steady(tokens["47.63"], frozenset())  # a digit in a word read as text
    assert not _cache(LineGrammar()).outline("Memory pool end. avail mem=1.00 GB")  # unparsed


def test_a_problem_or_a_startup_marker_outlines_nothing() -> None:
    grammar = LineGrammar()
    # K without V: a problem the next line of this shape has too, but its text is the line's
    kv = "KV Cache is allocated. #tokens: 1000, K size: 1.00 GB"
    init = "Init torch distributed begin."
    for message in (kv, init):
        assert grammar.parse(message) is not None
        assert grammar.outline(message) is None


_PAST_CAP = 600


def _past_cap_log(tmp_path: Path) -> Path:
    """A TP2 startup, then more than EVENTS_PER_KIND_CAP lines of several kinds on both ranks:
    capture progress (SGLang's and vLLM's), KV lines, a K-without-V line, out-of-range numbers,
    a shape with a sign, a 10-digit size, target and draft capture ends with inits after them
    (whose role the parser reads before the cap)."""
    lines = []
    for i in range(EVENTS_PER_KIND_CAP + _PAST_CAP):
        stamp = f"2026-11-06 {i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
        for tag in ("TP0", "TP1"):
            lines.append(
                f"[{stamp} {tag}] Capturing batches (bs={1 + i % 512} avail_mem="
                f"{30 + i % 997 / 100:.2f} GB): {i % 100}%|###| {i % 100}/100 [00:01<00:00]"
            )
            lines.append(
                f"[{stamp} {tag}] KV Cache is allocated. #tokens: {300000 + i}, "
                f"K size: {18 + i % 89 / 100:.2f} GB, V size: {18 + i % 89 / 100:.2f} GB"
            )
        head = f"[{stamp} TP0]"
        if i % 7 == 0:
            lines.append(f"{head} KV Cache is allocated. #tokens: {i}, K size: 1.{i % 10} GB")
        if i % 11 == 0:
            lines.append(f"{head} Memory pool end. avail mem={i % 9}000000000 GB")
            lines.append(f"{head} Load weight end. avail mem=1.00 GB, mem usage=-{i % 3}.00 GB.")
        if i % 13 == 0:
            lines.append(f"{head} Capturing CUDA graphs (decode, FULL): {i % 100}%|#|")
        if i % 17 == 0:  # the draft worker's window: a target's capture end, then an init
            role = "draft extend" if i % 2 else "target decode"
            lines.append(
                f"{head} Capture {role} CUDA graph end. bs=[1, 2], elapsed=1.{i % 10}0 s, "
                f"mem usage=0.{i % 10}1 GB, avail mem=1{i % 10}.00 GB."
            )
            lines.append(f"{head} Init torch distributed begin.")
    path = tmp_path / "past-cap.log"
    path.write_text(log_text() + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_lines_past_the_cap_are_counted_as_before_without_being_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _past_cap_log(tmp_path)
    typed: list[str] = []

    examples = {example.message for example in EXAMPLES}

    def counted(kind: Any, variant: str, node: Any, message: str, **kw: Any) -> LineParse:
        if message not in examples:  # a grammar built anew checks them: not the log's lines
            typed.append(message)
        return transform(kind, variant, node, message, **kw)

    monkeypatch.setattr(linegrammar, "transform", counted)
    assert _parsed(monkeypatch, log, "TP1", True) == _parsed(monkeypatch, log, "TP1", False)
    typed.clear()
    fast = _parsed(monkeypatch, log, None, True)
    fast_typed = len(typed)
    typed.clear()
    slow = _parsed(monkeypatch, log, None, False)
    assert fast == slow  # every count, kept event, coverage line and note alike
    kv = [e for e in fast.startup.events if e.kind == "kv_allocated"]
    assert len(kv) == EVENTS_PER_KIND_CAP  # kept up to the cap, the rest counted:
    assert fast.startup.unrecognised_count > 2 * _PAST_CAP  # past it, of each kind; malformed
    # the capture and KV lines past the cap were not typed (TP1 prints TP0's very messages)
    assert len(typed) - fast_typed >= 2 * _PAST_CAP


def _parsed(monkeypatch: pytest.MonkeyPatch, log: Path, rank: str | None, outlines: bool) -> Any:
    """parse_log with a grammar of its own (caches empty: what is typed does not depend on the
    tests before), with or without outlines."""
    linegrammar._cached_grammar.cache_clear()
    with monkeypatch.context() as patch:
        if not outlines:
            patch.setattr(LineGrammar, "outline", lambda self, message: None)
        return parse_log(log, rank=rank)
