"""The fast path of start-up: shapes stored by one run give the next run the grammar's events.

memledger.input.shapestore keeps each line shape's parse tree between runs, so a run whose
shapes are all known never imports lark. These tests parse every real log and sample three ways:
by the grammar alone (no cache of any kind), by a run that fills the store, and by a fresh
grammar that reads the store with Lark forbidden; all three must give identical events.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memledger.input.parsing as parsing
from memledger.input import linegrammar, shapestore
from memledger.input.linegrammar import LineGrammar
from memledger.input.shapecache import fold
from memledger.input.transform import LineParse
from memledger.record import to_dict
from tests.conftest import SAMPLES, real_log_paths

_DIGIT = re.compile(r"(?<![A-Za-z_])\d")


@pytest.fixture
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache directory of this test's own; the process-wide grammar is rebuilt."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the store key
    monkeypatch.delenv("MEMLEDGER_NO_GRAMMAR_CACHE", raising=False)
    linegrammar._cached_grammar.cache_clear()
    yield tmp_path / "memledger"
    linegrammar._cached_grammar.cache_clear()


def _corpus() -> list[Path]:
    return [*real_log_paths(), *sorted(SAMPLES.glob("*.log"))]


def _parsed(paths: list[Path], grammar: LineGrammar, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    with monkeypatch.context() as patch:
        patch.setattr(parsing, "load_grammar", lambda _extra=(): grammar)
        return [to_dict(parsing.parse_log(path), mode="json") for path in paths]


def _grammar_alone() -> LineGrammar:
    grammar = LineGrammar(stored=False)
    grammar._cache = None  # every message through Lark: the reference
    return grammar


def _no_lark(self: LineGrammar, store: object = None) -> None:
    raise AssertionError("a stored shape was parsed again (lark was needed)")


def test_stored_shapes_give_the_grammars_events_on_every_real_log(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _corpus()
    assert len(paths) > 20  # the real logs are there: an empty corpus would prove nothing
    reference = _parsed(paths, _grammar_alone(), monkeypatch)
    filling = LineGrammar()  # no store yet: builds the grammar, fills the store
    assert filling._lark is not None
    assert _parsed(paths, filling, monkeypatch) == reference
    filling.save_shapes(force=True)  # parse_log saves at most every 2 s
    [stored] = private_cache.glob("shapes-*.json")
    assert stored.stat().st_mode & 0o077 == 0  # private, like the grammar tables
    monkeypatch.setattr(LineGrammar, "_build", _no_lark)
    fresh = LineGrammar()  # what the next process gets: the store, no Lark
    assert fresh._lark is None
    assert _parsed(paths, fresh, monkeypatch) == reference


def test_stored_shapes_hold_for_other_numbers_and_no_text(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    original = LineGrammar.parse

    def recording(self: LineGrammar, message: str) -> LineParse | None:
        sent.append(message)
        return original(self, message)

    with monkeypatch.context() as patch:
        patch.setattr(LineGrammar, "parse", recording)
        for path in _corpus():
            parsing.parse_log(path)  # fills the store
    linegrammar.load_grammar().save_shapes(force=True)
    reference = _grammar_alone()
    monkeypatch.setattr(LineGrammar, "_build", _no_lark)
    fresh = LineGrammar()
    shifted = [_DIGIT.sub(lambda m: str((int(m.group(0)) + 7) % 10), m) for m in sent]
    mismatches = [m for m in shifted if fresh.parse(m) != reference.parse(m)]
    assert mismatches == []
    text = next(private_cache.glob("shapes-*.json")).read_text()
    for word in ("avail mem", "Load weight", "KV Cache", "Capture"):
        assert word not in text  # digests and positions only: nothing of any log


def test_a_damaged_entry_is_parsed_by_the_grammar(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = "Load weight end. avail mem=47.63 GB, mem usage=30.78 GB."
    expected = _grammar_alone().parse(message)
    assert expected is not None
    store = shapestore.ShapeStore.open(linegrammar.base_grammar_text())
    assert store is not None
    key = shapestore.shape_key(fold(message))
    # a token beyond the message's end, and data that is no tree
    for forged in (["start", [["load_end", [["NUMBER", 0, 9999]]]]], "junk"):
        store._entries = {key: forged if isinstance(forged, str) else json.dumps(forged)}
        store._added = 1
        store.save(force=True)
        linegrammar._cached_grammar.cache_clear()
        assert LineGrammar().parse(message) == expected


def test_a_warm_run_never_imports_lark(private_cache: Path) -> None:
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(private_cache.parent),
        "XDG_STATE_HOME": str(private_cache.parent / "state"),
    }
    env.pop("MEMLEDGER_NO_GRAMMAR_CACHE", None)
    script = (
        "import sys\n"
        "from memledger.cli import main\n"
        "code = main(['ledger', sys.argv[1], '--format', 'json'])\n"
        "print('lark' in sys.modules, code, file=sys.stderr)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, str(SAMPLES / "dp2.log")],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        for _ in range(2)
    ]
    assert [run.stderr.split() for run in runs] == [["True", "0"], ["False", "0"]]
    assert runs[0].stdout == runs[1].stdout


def test_a_recursion_error_is_not_remembered(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = "Memory pool end. avail mem=9.83 GB"
    grammar = LineGrammar()
    assert grammar._lark is not None

    def too_deep(_text: str) -> None:
        raise RecursionError

    with monkeypatch.context() as patch:
        patch.setattr(grammar._lark, "parse", too_deep)
        assert grammar.parse(message) is None  # not parsed, as before the store
    grammar.save_shapes(force=True)
    assert grammar.parse(message) is not None  # neither cached nor stored as "no parse"
    linegrammar._cached_grammar.cache_clear()
    assert LineGrammar().parse(message) == grammar.parse(message)
