"""Real pasted fragments (tests/data/pasted_fragments.toml): every fact a maintainer reads from a
fragment, memledger reads the same. The fragments are short quotes of public GitHub threads, in
the shapes people paste: other ranks around rank 0, docker compose columns, another logger's
timestamps before SGLang's prefix, inline code, a code fence opened mid-line, terminal wraps with
their padding, server_args reprs hard-wrapped and cut, Ascend and ROCm texts, time-only and
untagged prefixes, PP-only tags."""

from __future__ import annotations

import io
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from memledger.input.facts import FACT_KEYS, facts_of
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind

DATA = Path(__file__).parent.parent / "data" / "pasted_fragments.toml"
FRAGMENTS: list[dict[str, Any]] = tomllib.loads(DATA.read_text(encoding="utf-8"))["fragment"]


def _expected(value: Any) -> Any:
    return None if value == "null" else value


@pytest.mark.parametrize(
    "fragment", FRAGMENTS, ids=[f["url"].split("github.com/")[1] for f in FRAGMENTS]
)
def test_the_facts_of_a_pasted_fragment(fragment: dict[str, Any]) -> None:
    text = fragment["text"].lstrip("\n")
    parsed = parse_log(io.BytesIO(text.encode()), label="paste.log", rank=fragment.get("rank"))
    facts = facts_of(parsed)
    wanted = {key: _expected(value) for key, value in fragment["facts"].items()}
    assert {key: facts[key] for key in wanted} == wanted
    if "server_args" in fragment:
        (event,) = [e for e in parsed.startup.events if e.kind is EventKind.SERVER_ARGS]
        params = event.params or {}
        assert {k: params.get(k) for k in fragment["server_args"]} == fragment["server_args"]


def test_the_fragment_table_is_what_the_tests_mean() -> None:
    urls = [f["url"] for f in FRAGMENTS]
    assert len(FRAGMENTS) >= 30 and len(set(urls)) == len(urls)
    for f in FRAGMENTS:
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", f["url"])
        assert f["facts"] and set(f["facts"]) <= set(FACT_KEYS)
        assert f["formats"]
        # a short quote, never a whole log
        assert f["text"].count("\n") <= 16


def test_no_fragment_repeats_a_thread_other_tests_cite() -> None:
    others = "".join(
        p.read_text(encoding="utf-8")
        for p in Path(__file__).parent.parent.rglob("*.py")
        if p.name != Path(__file__).name
    )
    cited = [f["url"] for f in FRAGMENTS if re.search(re.escape(f["url"]) + r"(?!\d)", others)]
    assert cited == []
