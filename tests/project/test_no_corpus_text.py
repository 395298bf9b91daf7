"""No real log text in the project's tests: a test writes synthetic lines in the family's shape
(other numbers, names and paths), never a line copied from the corpus. This reads every test
file (Python string constants through ast, data files line by line) and fails on any line of
40 or more characters that is a corpus line, or holds one whole. It needs the corpus to compare
with: without it the test skips, as every corpus test does."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT, REAL_LOGS_VLLM, real_log_paths

TESTS = PROJECT_ROOT / "tests"
MIN_CHARS = 40
DATA_SUFFIXES = {".toml", ".json", ".jsonl", ".txt", ".log", ".md", ".csv"}


def _corpus_lines() -> dict[str, str]:
    """Each stripped corpus line of MIN_CHARS or more, with the log it is from."""
    logs = [*real_log_paths(), *(sorted(REAL_LOGS_VLLM.glob("*.log")))]
    found: dict[str, str] = {}
    for log in logs:
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            text = line.strip()
            if len(text) >= MIN_CHARS:
                found.setdefault(text, log.name)
    return found


def _test_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of every string a test file holds."""
    source = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".py":
        yield from enumerate(source.splitlines(), 1)
        return
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for line in node.value.splitlines():
                yield node.lineno, line


@pytest.mark.real_logs
def test_no_test_file_holds_a_line_of_the_corpus() -> None:
    corpus = _corpus_lines()
    by_start: dict[str, list[str]] = {}
    for line in corpus:
        by_start.setdefault(line[:MIN_CHARS], []).append(line)
    copied = []
    files = [p for p in sorted(TESTS.rglob("*")) if p.suffix in DATA_SUFFIXES | {".py"}]
    for path in files:
        for number, line in _test_texts(path):
            text = line.strip()
            if len(text) < MIN_CHARS:
                continue
            hits = [text] if text in corpus else []
            hits += [
                whole
                for start in range(len(text) - MIN_CHARS + 1)
                for whole in by_start.get(text[start : start + MIN_CHARS], ())
                if whole in text and whole != text
            ]
            if hits:
                where = path.relative_to(PROJECT_ROOT)
                copied.append(f"{where}:{number}: a line of {corpus[hits[0]]}")
    assert not copied, "\n".join(copied)
