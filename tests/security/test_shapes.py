"""A shape store from elsewhere cannot change an event (memledger.input.shapestore/shapecheck).

The store sits in a private per-user directory, but a cache restored from another branch (a CI
cache), an older memledger or a planted file can hold anything. Most cases below write entries as
an attacker who knows the code AND this user's key would (valid bindings, valid JSON), so that
the content checks alone must refuse them; then a fresh process-wide grammar parses the message:
the result must be the grammar's own, with no traceback. The last cases take the key away.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memledger.input import grammar_cache, linegrammar, shapecheck, shapestore
from memledger.input.linegrammar import LineGrammar
from memledger.input.shapecache import fold
from memledger.input.transform import LineParse

LOAD_END = "Load weight end. avail mem=47.63 GB, mem usage=30.78 GB."
# What the grammar gives for LOAD_END (positions: avail mem 17-26, 47.63 27-32, GB 33-35, ...).
GENUINE: Any = [
    "start",
    [["load_end", [["fields", [
        ["item", [["WORDS", 17, 26], ["value", [["number", [["NUMBER", 27, 32], ["unit", [["UNIT", 33, 35]]]]]]]]],  # noqa: E501
        ["item", [["WORDS", 37, 46], ["value", [["number", [["NUMBER", 47, 52], ["unit", [["UNIT", 53, 55]]]]]]]]],  # noqa: E501
    ]]]]],
]  # fmt: skip


def _relabel(tree: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(tree).replace(f'"{old}"', f'"{new}"'))


def _nested(node: Any, depth: int) -> Any:
    for _ in range(depth):
        node = ["fields", [node]]
    return node


# Splits `avail mem=47.63 GB` into a key without value and a loose size: names, order, terminals
# and the words between (`=` is a word of the grammar) all hold, yet the event would lose its
# `avail`. Lark never leaves an item's `= value` untaken where the text goes on with `=`.
REGROUPED: Any = json.loads(
    json.dumps(GENUINE).replace(
        '["item", [["WORDS", 17, 26], ["value", [["number", [["NUMBER", 27, 32], '
        '["unit", [["UNIT", 33, 35]]]]]]]]]',
        '["item", [["WORDS", 17, 26]]], ["loose", [["number", [["NUMBER", 27, 32], '
        '["unit", [["UNIT", 33, 35]]]]]]]',
    )
)
# Splits the key `avail mem` into a word of free text and the key `mem`: each token's text is
# one its terminal matches, but Lark's lexer reads WORDS as far as its regex goes.
SPLIT_KEY: Any = json.loads(
    json.dumps(GENUINE).replace(
        '["item", [["WORDS", 17, 26], ["value"',
        '["item", [["WORDS", 17, 22]]], ["item", [["WORDS", 23, 26], ["value"',
    )
)


# Bracketed lists (the forgery only the key stopped before): `bs=[1, 2, 4, 8]` of a capture end.
# Every name, token, order and gap word holds (`[`, `,` and `]` are words of the grammar), yet
# the event's `bs` would be 1, [1, 2] or [1]: the content checks must place the brackets.
CAPTURE_END = (
    "Capture cuda graph end. bs=[1, 2, 4, 8], elapsed=6.80 s, mem usage=0.50 GB, avail mem=2.10 GB."
)
_NUMBERS = [["number", [["NUMBER", a, a + 1]]] for a in (28, 31, 34, 37)]
_BS = ["WORDS", 24, 26]
_CAPTURE_REST: Any = [
    ["item", [["WORDS", 41, 48], ["value", [["number", [["NUMBER", 49, 53], ["unit", [["UNIT", 54, 55]]]]]]]]],  # noqa: E501
    ["item", [["WORDS", 57, 66], ["value", [["number", [["NUMBER", 67, 71], ["unit", [["UNIT", 72, 74]]]]]]]]],  # noqa: E501
    ["item", [["WORDS", 76, 85], ["value", [["number", [["NUMBER", 86, 90], ["unit", [["UNIT", 91, 93]]]]]]]]],  # noqa: E501
]  # fmt: skip


def _capture_end(*fields: Any) -> Any:
    graph_words = ["graph_words", [["WORD", 8, 12], ["WORD", 13, 18]]]
    return ["start", [["capture_end", [graph_words, ["fields", [*fields, *_CAPTURE_REST]]]]]]


CAPTURE_GENUINE = _capture_end(["item", [_BS, ["value", [["list", _NUMBERS]]]]])
LIST_FORGED: dict[str, Any] = {
    "list numbers read as loose ones": _capture_end(
        ["item", [_BS, ["value", [_NUMBERS[0]]]]], *[["loose", [n]] for n in _NUMBERS[1:]]
    ),
    "a list closed early": _capture_end(
        ["item", [_BS, ["value", [["list", _NUMBERS[:2]]]]]],
        *[["loose", [n]] for n in _NUMBERS[2:]],
    ),
    "a one-number list": _capture_end(
        ["item", [_BS, ["value", [["list", _NUMBERS[:1]]]]]],
        *[["loose", [n]] for n in _NUMBERS[1:]],
    ),
    "a list opened late": _capture_end(
        ["item", [_BS, ["value", [_NUMBERS[0]]]]], ["loose", [["list", _NUMBERS[1:]]]]
    ),
}
# A paren the tree does not hold: `Capturing batches (bs=8 ...)` with its fields loose
PROGRESS = "Capturing batches (bs=8 avail_mem=2.51 GB)"
_PROGRESS_FIELDS: Any = ["fields", [
    ["item", [["WORDS", 19, 21], ["value", [["number", [["NUMBER", 22, 23]]]]]]],
    ["item", [["WORDS", 24, 33], ["value", [["number", [["NUMBER", 34, 38], ["unit", [["UNIT", 39, 41]]]]]]]]],  # noqa: E501
]]  # fmt: skip
PROGRESS_GENUINE: Any = ["start", [["capture_progress", [["WORD", 10, 17], ["paren", [_PROGRESS_FIELDS]]]]]]  # noqa: E501  # fmt: skip
PROGRESS_UNWRAPPED: Any = ["start", [["capture_progress", [["WORD", 10, 17], _PROGRESS_FIELDS]]]]
# The line rule's own brackets (`... (MiB): [124546]`) are its words, not nodes'
FALLBACK = (
    "Failed to get GPU memory capacity from nvidia-smi. Falling back to torch.cuda.mem_get_info()"
    ". Reported total GPU memory per device (MiB): [124546], avail mem=3.00 GB"
)
_FALLBACK_TAIL: Any = ["fields", [["item", [["WORDS", 148, 157], ["value", [["number", [["NUMBER", 158, 162], ["unit", [["UNIT", 163, 165]]]]]]]]]]]  # noqa: E501  # fmt: skip


def _fallback(listed: Any) -> Any:
    head = [["WORD", 39, 49], ["WORD", 67, 90], ["UNIT", 132, 135]]
    return ["start", [["gpu_capacity_fallback", [*head, listed, _FALLBACK_TAIL]]]]


FALLBACK_GENUINE = _fallback(["list", [["number", [["NUMBER", 139, 145]]]]])
FALLBACK_FORGED = _fallback(["number", [["NUMBER", 139, 145]]])  # the list's brackets as words

FORGED: dict[str, Any] = {
    "another line rule": _relabel(GENUINE, "load_end", "load_begin"),
    "a rule the grammar lacks": _relabel(GENUINE, "load_end", "oom_message"),
    "another terminal": _relabel(GENUINE, "UNIT", "WORD"),
    "a terminal the grammar lacks": _relabel(GENUINE, "NUMBER", "FLOAT"),
    "a token cut short": json.loads(json.dumps(GENUINE).replace("27, 32", "27, 29")),
    "tokens out of order": json.loads(
        json.dumps(GENUINE).replace("27, 32", "47, 52").replace("47, 52]", "27, 32]", 1)
    ),
    "a token past the end": json.loads(json.dumps(GENUINE).replace("53, 55", "53, 9999")),
    "a dropped token": json.loads(
        json.dumps(GENUINE).replace(', ["unit", [["UNIT", 33, 35]]]', "")
    ),
    "no tree": "junk",
    "a deep nest": ["start", [_nested(["load_end", []], 300)]],
    "a huge tree": ["start", [["load_end", [["WORDS", 0, 4]] * 10_000]]],
    "fields regrouped": REGROUPED,
    "a key split in two": SPLIT_KEY,
}


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the store key
    monkeypatch.delenv("MEMLEDGER_NO_GRAMMAR_CACHE", raising=False)
    linegrammar._cached_grammar.cache_clear()
    yield tmp_path / "memledger"
    linegrammar._cached_grammar.cache_clear()


def _grammars_own(message: str) -> LineParse | None:
    return LineGrammar(stored=False).parse_uncached(message)


def _plant(message: str, forged: Any, *, as_shape: str | None = None) -> None:
    """Write one entry for `message`'s shape (or `as_shape`'s) with a binding that holds."""
    store = shapestore.ShapeStore.open(linegrammar.base_grammar_text())
    assert store is not None
    key = shapestore.shape_key(fold(as_shape or message))
    text = forged if forged is None or isinstance(forged, str) else json.dumps(forged)
    store._entries = {key: [store._binding(key, text), text]}
    store._added = 1
    store.save(force=True)
    linegrammar._cached_grammar.cache_clear()


def _stored_parse(message: str) -> LineParse | None:
    """What a fresh process gets for `message` (the store read first, lark when in doubt)."""
    return LineGrammar().parse(message)


def test_the_genuine_entry_is_used_without_lark(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the forged cases below fail because they are forged, not because no entry is ever used
    expected = _grammars_own(LOAD_END)
    _plant(LOAD_END, GENUINE)
    monkeypatch.setattr(LineGrammar, "_build", lambda self, store=None: pytest.fail("lark ran"))
    assert _stored_parse(LOAD_END) == expected


@pytest.mark.parametrize("forged", [REGROUPED, SPLIT_KEY], ids=["regrouped", "split key"])
def test_the_content_checks_refuse_a_tree_lark_would_not_give(forged: Any) -> None:
    vocab = shapecheck.vocabulary(linegrammar.base_grammar_text())
    assert vocab is not None
    shapecheck.check_tree(GENUINE, LOAD_END, vocab)
    with pytest.raises(ValueError):
        shapecheck.check_tree(forged, LOAD_END, vocab)


def test_the_bracket_checks_accept_the_grammars_own_trees() -> None:
    # the forgeries below fail for their brackets, not because these trees are beyond the checks
    vocab = shapecheck.vocabulary(linegrammar.base_grammar_text())
    assert vocab is not None
    grammar = LineGrammar(stored=False)
    for message, genuine in (
        (CAPTURE_END, CAPTURE_GENUINE),
        (PROGRESS, PROGRESS_GENUINE),
        (FALLBACK, FALLBACK_GENUINE),
    ):
        assert shapestore.encode(grammar._tree(message), [512]) == genuine
        shapecheck.check_tree(genuine, message, vocab)


@pytest.mark.parametrize(
    ("message", "forged"),
    [
        *((CAPTURE_END, tree) for tree in LIST_FORGED.values()),
        (PROGRESS, PROGRESS_UNWRAPPED),
        (FALLBACK, FALLBACK_FORGED),
    ],
    ids=[*LIST_FORGED, "a paren unwrapped", "a list's brackets as the line's words"],
)
def test_the_content_checks_refuse_brackets_the_tree_does_not_hold(
    message: str, forged: Any
) -> None:
    vocab = shapecheck.vocabulary(linegrammar.base_grammar_text())
    assert vocab is not None
    with pytest.raises(ValueError, match="bracket|node opening"):
        shapecheck.check_tree(forged, message, vocab)


@pytest.mark.parametrize("case", list(LIST_FORGED))
def test_a_regrouped_list_cannot_change_the_event_even_with_the_key(
    private_cache: Path, case: str
) -> None:
    expected = _grammars_own(CAPTURE_END)
    assert expected is not None and expected.values["bs"] == [1, 2, 4, 8]
    _plant(CAPTURE_END, LIST_FORGED[case])  # bound with this user's key: only content stops it
    assert _stored_parse(CAPTURE_END) == expected


@pytest.mark.parametrize("case", list(FORGED))
def test_a_forged_tree_cannot_change_the_event(private_cache: Path, case: str) -> None:
    expected = _grammars_own(LOAD_END)
    assert expected is not None and expected.sizes["avail"].text == "47.63 GB"
    _plant(LOAD_END, FORGED[case])
    assert _stored_parse(LOAD_END) == expected


def test_a_stored_no_parse_cannot_hide_a_known_line(private_cache: Path) -> None:
    expected = _grammars_own(LOAD_END)
    _plant(LOAD_END, None)  # "this shape does not parse": the line would vanish from the ledger
    assert _stored_parse(LOAD_END) == expected is not None


def test_a_stored_no_parse_still_spares_lark_for_a_line_no_rule_starts(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = "Decode batch. #running-req: 1, #token: 2048, token usage: 0.01, gen throughput: 3.2"
    assert _grammars_own(message) is None
    _plant(message, None)
    monkeypatch.setattr(LineGrammar, "_build", lambda self, store=None: pytest.fail("lark ran"))
    assert _stored_parse(message) is None


def test_an_entry_moved_from_another_shape_is_refused(private_cache: Path) -> None:
    other = "Memory pool end. avail mem=9.83 GB"
    other_tree = shapestore.encode(LineGrammar(stored=False)._tree(other), [512])
    # the entry of `other`, bound to `other`'s key, filed under LOAD_END's shape
    store = shapestore.ShapeStore.open(linegrammar.base_grammar_text())
    assert store is not None
    own, foreign = shapestore.shape_key(fold(LOAD_END)), shapestore.shape_key(fold(other))
    text = json.dumps(other_tree)
    store._entries = {own: [store._binding(foreign, text), text]}
    store._added = 1
    store.save(force=True)
    linegrammar._cached_grammar.cache_clear()
    assert _stored_parse(LOAD_END) == _grammars_own(LOAD_END)


def test_another_memledgers_store_is_another_file(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(shapestore, "code_digest", lambda: "0" * 32)  # another build of memledger
        _plant(LOAD_END, _relabel(GENUINE, "load_end", "load_begin"))
    assert len(list(private_cache.glob("shapes-*.json"))) == 1
    store = shapestore.ShapeStore.open(linegrammar.base_grammar_text())
    assert store is not None and len(store) == 0  # this code does not read that file
    assert _stored_parse(LOAD_END) == _grammars_own(LOAD_END)


def test_an_entry_of_the_old_layout_is_reparsed(private_cache: Path) -> None:
    # format 2 stored the tree's JSON text bare, without a binding
    store = shapestore.ShapeStore.open(linegrammar.base_grammar_text())
    assert store is not None
    key = shapestore.shape_key(fold(LOAD_END))
    grammar_cache.store_data(
        shapestore.FORMAT,
        "shapes",
        linegrammar.base_grammar_text(),
        store._version,
        {"shapes": {key: json.dumps(_relabel(GENUINE, "load_end", "load_begin"))}},
    )
    linegrammar._cached_grammar.cache_clear()
    assert _stored_parse(LOAD_END) == _grammars_own(LOAD_END)


def test_a_planted_store_costs_no_traceback(
    private_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memledger.cli import main

    log = tmp_path / "server.log"
    log.write_text(
        "[2025-02-04 05:21:40 TP0] Load weight begin. avail mem=78.50 GB\n"
        f"[2025-02-04 05:29:17 TP0] {LOAD_END}\n"
    )
    assert main(["parse", str(log), "--format", "json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    for case, forged in FORGED.items():
        _plant(LOAD_END, forged)
        assert main(["parse", str(log), "--format", "json"]) == 0, case
        out, err = capsys.readouterr()
        assert json.loads(out)["events"] == expected["events"], case
        assert "Traceback" not in err


def test_a_cache_restored_without_its_key_cannot_change_an_event(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the content checks cannot refuse (a tree that passes them all, GENUINE here) is kept
    # out by the key: written where the branch's CI ran, with that runner's key, every entry
    # is a miss elsewhere.
    expected = _grammars_own(LOAD_END)
    _plant(LOAD_END, GENUINE)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-runner"))
    linegrammar._cached_grammar.cache_clear()
    built: list[LineGrammar] = []
    build = LineGrammar._build

    def recording(self: LineGrammar, store: shapestore.ShapeStore | None = None) -> None:
        built.append(self)
        build(self, store)

    monkeypatch.setattr(LineGrammar, "_build", recording)
    assert _stored_parse(LOAD_END) == expected
    assert built  # the entry was a miss: the grammar parsed the line


def test_the_key_is_private_stable_and_its_absence_only_costs_time(
    private_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = grammar_cache.store_key()
    assert first is not None and len(first) == 32 and grammar_cache.store_key() == first
    [key_file] = (tmp_path / "state" / "memledger").iterdir()
    assert key_file.stat().st_mode & 0o077 == 0 and key_file.parent.stat().st_mode & 0o077 == 0
    key_file.write_text('memledger-store-key 1 key\n{"key": "not hex"}')
    second = grammar_cache.store_key()  # a damaged key is replaced (old entries: misses)
    assert second is not None and second != first and grammar_cache.store_key() == second
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the state directory would be")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocked))
    assert grammar_cache.store_key() is None
    assert shapestore.ShapeStore.open(linegrammar.base_grammar_text()) is None
    linegrammar._cached_grammar.cache_clear()
    assert _stored_parse(LOAD_END) == _grammars_own(LOAD_END)  # no key: no store, same events
