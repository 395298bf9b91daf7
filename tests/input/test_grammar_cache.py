"""The grammar-table cache (security review F5): no pickle, a private directory, checked content."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import lark
import pytest

from memledger.input import grammar_cache
from memledger.input.linegrammar import LineGrammar, base_grammar_text, example_mismatches
from tests.security.helpers import write_log

LINE = "Memory pool end. avail mem=17.73 GB"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("MEMLEDGER_NO_GRAMMAR_CACHE", raising=False)
    return tmp_path / "memledger"


def _only_file(directory: Path) -> Path:
    (found,) = list(directory.iterdir())
    return found


def test_tables_are_cached_as_plain_data_and_reused(cache_home: Path) -> None:
    LineGrammar()
    cached = _only_file(cache_home)
    assert oct(cache_home.stat().st_mode & 0o777) == "0o700"
    assert cached.stat().st_mode & 0o077 == 0
    content = cached.read_bytes()
    assert content.startswith(b"memledger-grammar-tables ") and b"\n{" in content
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(content)  # not a pickle at all
    before = cached.stat().st_mtime_ns
    second = LineGrammar()  # read back, not rebuilt: the file is not rewritten
    assert cached.stat().st_mtime_ns == before
    assert example_mismatches(second) == []


def test_a_planted_file_of_another_grammar_is_rebuilt_not_trusted(cache_home: Path) -> None:
    LineGrammar()
    cached = _only_file(cache_home)
    header = cached.read_bytes().partition(b"\n")[0]
    # valid cache content with the right header, but the tables of a grammar that parses nothing
    other = lark.Lark('start: message\nmessage: "x"\n', parser="lalr", lexer="contextual")
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = other.memo_serialize([TerminalDef, Rule])
    body = json.dumps(grammar_cache._encoded({"data": data, "memo": memo}))
    cached.write_bytes(header + b"\n" + body.encode())
    grammar = LineGrammar()
    parsed = grammar.parse(LINE)
    assert parsed is not None and parsed.sizes["avail"].text == "17.73 GB"
    assert cached.read_bytes() != header + b"\n" + body.encode()  # replaced by good tables


@pytest.mark.parametrize("content", [b"garbage", b"[" * 100_000, b""])
def test_damaged_files_are_ignored(cache_home: Path, content: bytes) -> None:
    LineGrammar()
    cached = _only_file(cache_home)
    header = cached.read_bytes().partition(b"\n")[0]
    cached.write_bytes(header + b"\n" + content)
    assert LineGrammar().parse(LINE) is not None


def test_a_symlink_in_place_of_the_cache_file_is_not_followed(
    cache_home: Path, tmp_path: Path
) -> None:
    LineGrammar()
    cached = _only_file(cache_home)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious data")
    cached.unlink()
    cached.symlink_to(victim)
    assert LineGrammar().parse(LINE) is not None
    assert victim.read_text() == "precious data"  # neither read as tables nor overwritten
    assert not cached.is_symlink()  # replaced by a real file (rename replaces the link itself)


def test_a_symlinked_cache_directory_is_not_used(cache_home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache_home.symlink_to(elsewhere)
    assert LineGrammar().parse(LINE) is not None
    assert list(elsewhere.iterdir()) == []


def test_a_directory_open_to_others_is_closed_before_use(cache_home: Path) -> None:
    cache_home.mkdir(mode=0o700)
    os.chmod(cache_home, 0o777)
    LineGrammar()
    assert cache_home.stat().st_mode & 0o777 == 0o700


def test_a_group_writable_cache_file_is_not_read(cache_home: Path) -> None:
    LineGrammar()
    cached = _only_file(cache_home)
    os.chmod(cached, 0o666)
    digest = grammar_cache._digest(base_grammar_text(), lark.__version__)
    fd = grammar_cache._open_private_directory(cache_home)
    assert fd is not None
    try:
        assert grammar_cache._read(fd, cached.name, digest) is None
    finally:
        os.close(fd)


def test_the_cache_can_be_disabled(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLEDGER_NO_GRAMMAR_CACHE", "1")
    assert LineGrammar().parse(LINE) is not None
    assert not cache_home.exists()


# --- A cached grammar table or shape store file that holds a pickle or is a symlink is never ru


class _Planted:
    def __init__(self, proof: Path) -> None:
        self.proof = proof

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"echo PICKLE-RCE-EXECUTED > {self.proof}",))


def _parse_with_cache(cache: Path, log: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("MEMLEDGER_NO_GRAMMAR_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "memledger", "parse", str(log)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_planted_pickle_never_runs_and_a_planted_symlink_is_never_written(
    tmp_path: Path,
) -> None:
    cache, log = tmp_path / "xdg", write_log(tmp_path)
    assert _parse_with_cache(cache, log).returncode == 0
    # the grammar tables and the shape store: the review's payload at each file's own path
    files = sorted((cache / "memledger").iterdir())
    assert any(path.name.startswith("grammar-") for path in files)
    proof = tmp_path / "rce_proof.txt"
    for cached in files:
        with cached.open("wb") as planted:
            planted.write(b"whatever\n")
            pickle.dump(_Planted(proof), planted)
    done = _parse_with_cache(cache, log)
    assert done.returncode == 0 and "ready" in done.stdout
    assert not proof.exists()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious data")
    for cached in files:
        cached.unlink()
        cached.symlink_to(victim)
    assert _parse_with_cache(cache, log).returncode == 0
    assert victim.read_text() == "precious data"
