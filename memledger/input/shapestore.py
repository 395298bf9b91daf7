"""The shape cache kept between runs, so that a run whose line shapes are all known skips Lark.

Importing lark, loading its tables and checking them costs ~60 ms of a ~0.3 s `memledger ledger`
on a small log, for a handful of lines whose shapes (digits folded, memledger.input.shapecache)
the previous run already parsed. This store keeps, per shape, the parse tree the grammar gave, in
the same private per-user directory as the grammar tables (memledger.input.grammar_cache). A run
that finds every shape it meets here never imports lark; a new shape builds the grammar then, as
before, and is added.

What is stored says nothing of the log: a shape is kept as a 128-bit digest, a tree as rule names,
terminal types and (start, end) positions, never text. A message of a known shape gets its tree
with every token's text read from its own characters at those positions, which is exactly what
the in-process shape cache does (`shapecache.retext`), so the result is the grammar's: the shape
argument holds across processes as within one. The file is named by the grammar text, lark's
version (read from lark's `__init__.py` without importing it) and a digest of the memledger code
that makes and reads trees (CODE_FILES): another grammar, lark or memledger is another file. Each
entry carries a keyed digest binding it to its shape and file; the key is this user's, kept in the
private state directory (`~/.local/state/memledger`, grammar_cache.store_key), not in the cache,
so the entries of a cache restored from elsewhere (a CI cache of another branch) are all misses.
And each tree is checked against the grammar's text before use (memledger.input.shapecheck).
A damaged, foreign or doubtful entry is a miss (Lark decides, and the entry is rewritten), never
an error. tests/input/test_shape_store.py
compares the stored path with the grammar on every real log; tests/security/test_shapes.py tampers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from memledger.input import grammar_cache, shapecheck

FORMAT = "memledger-shapes 3"
CODE_FILES = ("shapestore.py", "shapecheck.py", "shapecache.py", "linegrammar.py")
"""The memledger modules (of memledger/input) whose code decides what a stored tree means: the
folding, the tree encoding and checks, and how the grammar is built; they name the store."""
MAX_ENTRIES = 2048
"""Shapes kept (the most recently added); a startup log has 20-200, the real corpus ~1,000.
Each entry is a JSON string, parsed only when its shape is met (2,048 load in a few ms)."""
SAVE_EVERY = 2.0
"""Seconds between two writes of the store by one process (the first write is at once)."""
MAX_TREE_NODES = 512
"""An entry with more nodes than this is not stored (a parse of a long, odd line)."""
_VERSION_RE = re.compile(
    rb"""^__version__(?:\s*:\s*str)?\s*=\s*["']([^"']{1,40})["']""", re.MULTILINE
)


class StoredToken(str):
    """A token rebuilt from the store: its text, terminal type and positions (as Lark's Token)."""

    __slots__ = ("type", "start_pos", "end_pos")
    type: str
    start_pos: int
    end_pos: int

    def __new__(cls, text: str, type_: str, start: int, end: int) -> StoredToken:
        token = super().__new__(cls, text)
        token.type, token.start_pos, token.end_pos = type_, start, end
        return token

    def update(self, value: str) -> StoredToken:
        """This token with another text (`shapecache.retext`, as Lark's `Token.update`)."""
        return StoredToken(value, self.type, self.start_pos, self.end_pos)


class StoredTree:
    """A tree rebuilt from the store: what memledger.input.transform reads of Lark's `Tree`."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list[Any]) -> None:
        self.data = data
        self.children = children

    def scan_values(self, pred: Any) -> Iterator[Any]:
        """The tokens under this tree, depth first, that satisfy `pred` (as Lark's)."""
        for child in self.children:
            if isinstance(child, StoredTree):
                yield from child.scan_values(pred)
            elif pred(child):
                yield child


def lark_version() -> str | None:
    """The installed lark's `__version__`, read from its source (importing lark costs ~25 ms)."""
    try:
        spec = importlib.util.find_spec("lark")
        origin = None if spec is None else spec.origin
        if origin is None:
            return None
        with open(origin, "rb") as source:
            found = _VERSION_RE.search(source.read(1 << 16))
    except (OSError, ImportError, ValueError):
        return None
    return None if found is None else found.group(1).decode("ascii", "replace")


def code_digest() -> str | None:
    """A digest of CODE_FILES as installed (None when they cannot be read: no store)."""
    digest = hashlib.blake2b(digest_size=16)
    try:
        for name in CODE_FILES:
            with open(os.path.join(os.path.dirname(__file__), name), "rb") as source:
                digest.update(name.encode() + b"\0" + source.read() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


def shape_key(shape: str) -> str:
    """How a shape is named in the store: a digest (the store holds no text of any log)."""
    return hashlib.blake2b(shape.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def encode(node: Any, budget: list[int]) -> Any:
    """A Lark tree as plain data: [rule, [children]] and [type, start, end] for a token."""
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("tree too large to store")
    children = getattr(node, "children", None)
    if children is None:
        start, end = node.start_pos, node.end_pos
        if not isinstance(start, int) or not isinstance(end, int):
            raise ValueError("token without positions")
        return [str(node.type), start, end]
    return [str(node.data), [encode(child, budget) for child in children]]


def decode(data: Any, message: str) -> Any:
    """The tree of `message` from stored data; ValueError when the data does not fit it."""
    if not isinstance(data, list):
        raise ValueError("not a tree")
    if len(data) == 3:
        type_, start, end = data
        if not (
            isinstance(type_, str)
            and type(start) is int
            and type(end) is int
            and 0 <= start <= end <= len(message)
        ):
            raise ValueError("token does not fit the message")
        return StoredToken(message[start:end], type_, start, end)
    if len(data) == 2 and isinstance(data[0], str) and isinstance(data[1], list):
        return StoredTree(data[0], [decode(child, message) for child in data[1]])
    raise ValueError("not a tree")


_ABSENT: Any = object()


class ShapeStore:
    """The stored trees of one grammar (None for a shape that did not parse)."""

    def __init__(
        self,
        grammar_text: str,
        version: str,
        entries: dict[str, Any],
        vocabulary: shapecheck.Vocabulary,
        key: bytes,
    ) -> None:
        self._grammar_text = grammar_text
        self._version = version
        self._entries = entries
        self._vocabulary = vocabulary
        self._key = key
        self._added = 0
        self._saved_at: float | None = None

    @classmethod
    def open(cls, grammar_text: str) -> ShapeStore | None:
        """The store of this grammar (empty when there is no file yet); None when unusable."""
        if grammar_cache.cache_directory() is None:
            return None
        lark, code = lark_version(), code_digest()
        vocabulary = shapecheck.vocabulary(grammar_text)
        key = None if lark is None or code is None else grammar_cache.store_key()
        if lark is None or code is None or vocabulary is None or key is None:
            return None
        version = f"{lark} {code}"
        found = grammar_cache.load_data(FORMAT, "shapes", grammar_text, version)
        entries = found.get("shapes") if isinstance(found, dict) else None
        kept = entries if isinstance(entries, dict) else {}
        return cls(grammar_text, version, kept, vocabulary, key)

    def _binding(self, key: str, text: str | None) -> str:
        """What ties an entry to its shape, to this store and to this user's key: a moved, stale
        or planted entry fails, and so does every entry of a cache restored from elsewhere."""
        material = f"{FORMAT}\0{self._version}\0{key}\0{text}".encode("utf-8", "surrogatepass")
        return hashlib.blake2b(material, key=self._key, digest_size=16).hexdigest()

    def __len__(self) -> int:
        return len(self._entries)

    def tree(self, shape: str, message: str) -> Any:
        """The tree of `message` (None: its shape does not parse), or `_ABSENT` when unknown."""
        key = shape_key(shape)
        entry = self._entries.get(key, _ABSENT)
        if not (isinstance(entry, list) and len(entry) == 2):
            return _ABSENT  # unknown, or not of this format: the grammar decides
        binding, text = entry
        if not isinstance(text, str | None) or binding != self._binding(key, text):
            return _ABSENT
        if text is None:  # "does not parse": believed only where no line rule could match
            return _ABSENT if shapecheck.could_parse(message, self._vocabulary) else None
        try:
            data = json.loads(text)  # each tree is read only when met
            shapecheck.check_tree(data, message, self._vocabulary)
            return decode(data, message)
        except (ValueError, TypeError, RecursionError):
            return _ABSENT  # damaged, foreign or doubtful: the grammar decides

    def add(self, shape: str, tree: Any) -> None:
        """Remember what the grammar gave for this shape (a tree, or None)."""
        try:
            data = None if tree is None else encode(tree, [MAX_TREE_NODES])
        except (ValueError, AttributeError, RecursionError):
            return
        text = None if data is None else json.dumps(data, separators=(",", ":"))
        key = shape_key(shape)
        self._entries.pop(key, None)  # re-added last: kept longest
        self._entries[key] = [self._binding(key, text), text]
        self._added += 1

    def save(self, *, force: bool = False) -> None:
        """Write the store back when this run added shapes (silently nothing when it cannot);
        at most every SAVE_EVERY seconds unless `force`: a fleet's worker parses log after log."""
        now = time.monotonic()
        recent = self._saved_at is not None and now - self._saved_at < SAVE_EVERY
        if not self._added or (recent and not force):
            return
        self._added = 0
        self._saved_at = now
        # merge with what other runs wrote meanwhile (a fleet's workers share the file)
        found = grammar_cache.load_data(FORMAT, "shapes", self._grammar_text, self._version)
        theirs = found.get("shapes") if isinstance(found, dict) else None
        merged = dict(theirs) if isinstance(theirs, dict) else {}
        for key in self._entries:
            merged.pop(key, None)
        merged.update(self._entries)
        kept = dict(list(merged.items())[-MAX_ENTRIES:])
        self._entries = kept
        grammar_cache.store_data(
            FORMAT, "shapes", self._grammar_text, self._version, {"shapes": kept}
        )


ABSENT = _ABSENT
"""What `ShapeStore.tree` returns for a shape the store does not know."""
