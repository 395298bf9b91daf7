"""The grammar's caches give exactly what the grammar gives, on every message of every real log.

`LineGrammar.parse` answers repeated messages and repeated shapes (digits folded) without Lark
(memledger.input.shapecache). These tests run each message a real log or sample sends to the
grammar through one cached grammar (so shapes seen in one log answer lines of the next) and
through the grammar alone, with the printed numbers as logged and with their digits changed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memledger.input import linegrammar
from memledger.input.linegrammar import LineGrammar
from memledger.input.parsing import parse_log
from memledger.input.shapecache import ParseCache, Shape, digit_blind, fold, retext
from memledger.input.transform import LineParse
from tests.conftest import SAMPLES, real_log_paths
from tests.security.helpers import log_text

_DIGIT = re.compile(r"(?<![A-Za-z_])\d")


def _messages(paths: list[Path]) -> list[str]:
    """Every message parse_log sends to the grammar for these logs, in order."""
    sent: list[str] = []
    original = LineGrammar.parse

    def recording(self: LineGrammar, message: str) -> LineParse | None:
        sent.append(message)
        return original(self, message)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LineGrammar, "parse", recording)
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
