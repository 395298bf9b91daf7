"""The Lark message grammar: strict build, and every catalog line shape -> kind, sizes, values."""

from __future__ import annotations

from typing import Any

import pytest

from memledger.input.linegrammar import LineGrammar, grammar_dir
from memledger.input.transform import canonical_key
from memledger.model.events import EventKind
from memledger.sglang.examples import EXAMPLES
from memledger.units import GIB, MIB

GRAMMAR = LineGrammar()


def test_grammar_builds_in_strict_mode() -> None:
    # strict: no shift/reduce conflicts and no regex terminal collisions. Lark needs the
    # `interegular` package for the collision check and refuses strict mode without it.
    strict = LineGrammar(strict=True)
    assert strict.parse("Memory pool end. avail mem=17.73 GB") is not None


def test_grammars_are_found() -> None:
    directory = grammar_dir()
    assert directory is not None and (directory / "sglang.lark").is_file()


@pytest.mark.parametrize(
    "message, kind, sizes, values", EXAMPLES, ids=[example.message[:48] for example in EXAMPLES]
)
def test_line_shapes(
    message: str, kind: EventKind, sizes: dict[str, str], values: dict[str, Any]
) -> None:
    parsed = GRAMMAR.parse(message)
    assert parsed is not None
    assert parsed.kind is kind
    assert {key: size.text for key, size in parsed.sizes.items()} == sizes
    assert {key: parsed.values.get(key, "<absent>") for key in values} == values
    assert parsed.problems == []


def test_sizes_are_integer_bytes_with_precision() -> None:
    parsed = GRAMMAR.parse("Load weight end. avail mem=47.80 GB, mem usage=-1.86 GB.")
    assert parsed is not None
    assert parsed.sizes["avail"].bytes == round(47.80 * GIB)
    assert parsed.sizes["avail"].half_ulp == GIB // 200
    assert parsed.sizes["usage"].bytes == -round(1.86 * GIB)
    staging = GRAMMAR.parse("FlatAGStagingPool allocated: capacity=627048448, total=1196.0 MiB")
    assert staging is not None
    assert staging.sizes["capacity"].bytes == 627048448 and staging.sizes["capacity"].half_ulp == 0
    assert (
        staging.sizes["total"].bytes == 1196 * MIB and staging.sizes["total"].half_ulp == MIB // 20
    )


def test_hicache_host_gb_is_decimal() -> None:
    parsed = GRAMMAR.parse("Allocating 12.34 GB host memory for hierarchical KV cache.")
    assert parsed is not None and parsed.kind is EventKind.HICACHE_HOST
    assert parsed.sizes["host"].bytes == 12_340_000_000


def test_keys_in_any_order_and_an_undeclared_key_refused() -> None:
    forward = GRAMMAR.parse("Load weight end. type=A, avail mem=1.00 GB, mem usage=2.00 GB.")
    backward = GRAMMAR.parse(
        "Load weight end. mem usage=2.00 GB, newkey=7, avail mem=1.00 GB, type=A, pool=9 GB"
    )
    assert forward is not None and backward is not None
    assert forward.sizes == backward.sizes and backward.values["type"] == "A"
    # keys the kind's LineSpec does not declare never reach the event: the line is malformed
    assert "newkey" not in backward.values and "pool" not in backward.sizes
    assert backward.problems == [
        "size 'pool' not declared for load_end (sglang.lines)",
        "value 'newkey' not declared for load_end (sglang.lines)",
    ]


@pytest.mark.parametrize(
    "message",
    [
        "Decode batch. #running-req: 1, #token: 130, token usage: 0.00, cuda graph: True",
        "Load weight",
        "KV Cache is",
        "Capture cuda graph",
        "Config file not found at /x/y.json. Fallback to triton version 3.3.0",
    ],
)
def test_other_lines_are_not_recognised(message: str) -> None:
    assert GRAMMAR.parse(message) is None


@pytest.mark.parametrize(
    "printed, key",
    [
        ("avail mem", "avail"),
        ("mem usage", "usage"),
        ("#tokens", "tokens"),
        ("Logical #tokens", "tokens"),
        ("This can take up to several minutes avail mem", "avail"),
        ("num_tokens_per_bs", "num_tokens_per_req"),
        ("brand new key", "brand_new_key"),
    ],
)
def test_canonical_keys(printed: str, key: str) -> None:
    assert canonical_key(printed) == key
