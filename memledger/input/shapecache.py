"""Caches in front of the Lark message grammar, so that repeated line shapes skip the parser.

A server that logs memory every second prints the same few shapes with new numbers; a multi-rank
log prints each line once per rank; a fleet's pods print the same lines. Lark's pure-Python LALR
parse costs 100-300 µs a message, so `LineGrammar.parse` asks two caches first:

* exact: message -> result (a dict, cleared when full);
* shape: the message with its digits folded to 0 -> the parse tree of the first message of that
  shape, or None when it did not parse. A message of a known shape gets that tree with every
  token's text re-read from its own characters (only the tokens holding digits can differ: they
  are rewritten in place, `Shape.retext`), then the same tree -> fields step as a parse.

Why the shape cache gives what Lark would give: folding maps each digit to `0` in place (same
length), so every terminal matches the folded message exactly where it matches the original, as
long as no terminal tells one digit from another. `digit_blind` checks that for the grammar at
hand (no digit in a string terminal where the fold would change it, no digit in a regex other
than a repeat count); a grammar that fails the check gets the exact cache only. A digit right
after an ASCII letter or `_` is never folded (`DSV4`, `TP10`, `bf16` keep their text), so
keywords with digits stay keywords. tests/input/test_shape_cache.py compares both caches with the
grammar on every message of every real log.

A shape can also answer, without any typing, what a message of it is (`ParseCache.outline`):
when each of its digit tokens is a plain short number (`steady`), every message of the shape is
typed alike but for the numbers' values: the same kind, the same size keys, no problems when the
first had none. The parser uses that to count a line past its kind's cap without typing it.
tests/input/test_shape_cache.py checks it on every real message with its digits changed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from memledger.input.shapestore import ABSENT, ShapeStore

_FOLD_RE = re.compile(r"(?<![A-Za-z_])\d")
_STEADY_NUMBER = re.compile(r"\d{1,9}(?:\.\d{1,20})?")
"""A number token no digit change can put out of range (memledger.units): no sign (`-0` and `-1`
fold alike, only one is a negative size), no exponent (`1e10` and `1e30` fold alike), at most 9
digits before the point (10^9 GB is under MAX_BYTES, so is any count under MAX_MAGNITUDE) and
20 after it (a non-zero fraction stays above MIN_FRACTION, its exponent above -40)."""
_REPEAT_RE = re.compile(r"\{\d+(?:,\d*)?\}")
EXACT_ENTRIES = 4096
SHAPE_ENTRIES = 1024

Result = TypeVar("Result")
_MISSING: Any = object()


_ALL_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
_CLASSES = bytes.maketrans(_LETTERS + b"0123456789", b"a" * len(_LETTERS) + b"0" * 10)
"""Letters and `_` to `a`, digits to `0`, every other byte kept (none of them is `a` or `0`)."""


def fold(message: str) -> str:
    """The message's shape: each digit not right after a letter or `_` becomes `0`."""
    if message.isascii():
        raw = message.encode("ascii")
        if b"a0" not in raw.translate(_CLASSES):  # no digit right after a letter or `_`
            return raw.translate(_ALL_DIGITS).decode("ascii")
    return _FOLD_RE.sub("0", message)


def digit_blind(literals: Iterable[str], regexes: Iterable[str]) -> bool:
    """Whether no terminal can tell a folded digit from another: the shape cache is then exact."""
    if any(_FOLD_RE.search(text) for text in literals):
        return False  # a keyword such as `v0.5`: folding could turn another word into it
    return not any(re.search(r"\d", _REPEAT_RE.sub("", source)) for source in regexes)


def retext(node: Any, message: str) -> Any:
    """A copy of a Lark tree whose tokens read their text from `message` at their positions."""
    children = getattr(node, "children", None)
    if children is None:  # a Token (a str subclass carrying its positions)
        return node.update(value=message[node.start_pos : node.end_pos])
    return type(node)(node.data, [retext(child, message) for child in children])


Path = tuple[int, ...]


def digit_tokens(node: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """The tokens of a tree that hold a digit, each with its path (child indexes from the root):
    the only ones another message of the same shape can change (folding changes digits)."""
    children = getattr(node, "children", None)
    if children is None:
        return [(path, node)] if any(c.isdigit() for c in node) else []
    found: list[tuple[Path, Any]] = []
    for index, child in enumerate(children):
        found += digit_tokens(child, (*path, index))
    return found


def steady(token: Any, numbers: frozenset[str]) -> bool:
    """Whether this digit token reads alike in every message of its shape: a number terminal
    (`numbers`) of `_STEADY_NUMBER`'s form, or a token with no digit folding can change (a
    token alone folds at least the digits it folds in its message: none before its start)."""
    if token.type in numbers:
        return _STEADY_NUMBER.fullmatch(token) is not None
    return _FOLD_RE.search(token) is None


class Shape:
    """A cached shape's tree and where its digit tokens sit (`digit_tokens`).

    The tree is the one of the last message of this shape: `retext` writes a message's digit
    tokens into their parents' children lists, in place, and returns the tree. Every other
    token and node is the same for all messages of the shape (folding changes digits only, so
    every token starts and ends at the same place). The caller reads the tree before the next
    `retext` and keeps nothing of it (memledger.input.transform copies texts out), and the shape
    store keeps no text (memledger.input.shapestore), so what the tree held before does not
    matter. Rebuilding the nodes above each token instead cost about ten new nodes a line.
    """

    __slots__ = ("tree", "slots", "steady", "outline")

    def __init__(self, tree: Any, numbers: frozenset[str] = frozenset()) -> None:
        self.tree = tree
        found = digit_tokens(tree)
        self.slots: list[tuple[list[Any], int]] = [
            (_node_at(tree, path[:-1]).children, path[-1]) for path, _ in found
        ]
        self.steady = all(steady(token, numbers) for _, token in found)
        """Every digit token is `steady`: the messages of this shape differ in numbers' values
        only (ParseCache.outline)."""
        self.outline: Any = None
        """The first result of a steady shape when `ParseCache.settled` holds for it."""

    def retext(self, message: str) -> Any:
        """The shape's tree with each digit token's text read from `message` at its place
        (`retext(self.tree, message)`, without new nodes)."""
        for children, index in self.slots:
            token = children[index]
            text = message[token.start_pos : token.end_pos]
            if text != token:
                children[index] = token.update(value=text)
        return self.tree


def _node_at(node: Any, path: Path) -> Any:
    for index in path:
        node = node.children[index]
    return node


class Transient(Exception):
    """Raised by a `parse_tree` whose failure says nothing of the shape (recursion too deep in
    this process): the message counts as not parsed, and nothing is cached or stored."""


class ParseCache(Generic[Result]):
    """The exact and shape caches of one grammar; `store` keeps the shapes between runs
    (memledger.input.shapestore), so `parse_tree` (Lark) runs only for a shape new to both."""

    def __init__(
        self,
        shapes: bool,
        store: ShapeStore | None = None,
        *,
        numbers: frozenset[str] = frozenset(),
        settled: Callable[[Result], bool] | None = None,
    ) -> None:
        self.shapes_enabled = shapes
        self.exact: dict[str, Result | None] = {}
        self.shapes: dict[str, Shape | None] = {}
        self.store = store if shapes else None
        self.numbers = numbers
        """The terminals whose text is read as a number (`steady`)."""
        self.settled = settled
        """Which results may outline their shape (None: none); see `outline`."""
        self._folded: tuple[str, str] = ("", "")
        """The last message `outline` folded, and its shape: `parse` of that very message (the
        parser's next call when the line is kept) does not fold it again."""

    def outline(self, message: str) -> Result | None:
        """The first result of `message`'s shape, if the shape was parsed, is steady and its
        result `settled`; else None. Every message of a steady shape is typed alike but for its
        numbers' values (`_STEADY_NUMBER`, `steady`): same kind, same keys, same problems (a
        settled result has none). Not its values: parse the message for them. None too for a
        message in the exact cache (its parse costs a lookup)."""
        if not self.shapes_enabled or self.settled is None or message in self.exact:
            return None  # a message seen before: `parse` has its result at once, no fold needed
        shape = fold(message)
        self._folded = (message, shape)
        known = self.shapes.get(shape)
        return None if known is None else known.outline

    def parse(
        self,
        message: str,
        parse_tree: Callable[[str], Any],
        from_tree: Callable[[Any, str], Result | None],
    ) -> Result | None:
        """The result for `message`: cached, or from a cached tree, or from `parse_tree`.

        `parse_tree` returns the Lark tree or None (no parse); `from_tree` turns a tree into the
        result. Results are shared between equal messages: callers must not mutate them.
        """
        result = self.exact.get(message, _MISSING)
        if result is not _MISSING:
            return result
        try:
            return self._parse(message, parse_tree, from_tree)
        except Transient:
            return None

    def _parse(
        self,
        message: str,
        parse_tree: Callable[[str], Any],
        from_tree: Callable[[Any, str], Result | None],
    ) -> Result | None:
        if self.shapes_enabled:
            last, folded = self._folded
            shape = folded if last is message else fold(message)
            known = self.shapes.get(shape, _MISSING)
            if known is _MISSING:
                tree = ABSENT if self.store is None else self.store.tree(shape, message)
                if tree is ABSENT:
                    tree = parse_tree(message)
                    if self.store is not None:
                        self.store.add(shape, tree)
                if len(self.shapes) >= SHAPE_ENTRIES:
                    self.shapes.clear()
                new = self.shapes[shape] = None if tree is None else Shape(tree, self.numbers)
                result = None if tree is None else from_tree(tree, message)
                if new is not None and new.steady and result is not None and self.settled:
                    new.outline = result if self.settled(result) else None
                return self._remember(message, result)
            # the cached tree holds another message's text
            tree = None if known is None else known.retext(message)
        else:
            tree = parse_tree(message)
        result = None if tree is None else from_tree(tree, message)
        return self._remember(message, result)

    def _remember(self, message: str, result: Result | None) -> Result | None:
        if len(self.exact) >= EXACT_ENTRIES:
            self.exact.clear()
        self.exact[message] = result
        return result
