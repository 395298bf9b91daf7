"""The event keys as data: each LineSpec declares its `sizes` and `values` keys (and types), the
transformer refuses any other key, and every key the code reads by string is a declared one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memledger.input.linegrammar import load_grammar
from memledger.model.events import EventKind
from memledger.sglang.errors import ERRORS
from memledger.sglang.examples import EXAMPLES, Example
from memledger.sglang.lines import ENV_VAR_NAMES, ERROR_KEYS, LINES, SPECS, ValueType

PACKAGE = Path(__file__).resolve().parents[2] / "memledger"
READS = re.compile(
    r"""\.(?:values\[|values\.get\(|sizes\[|sizes\.get\(|value\(|size\()\s*["'](\w+)["']"""
)
"""`.values["k"]`, `.values.get("k")`, `.sizes["k"]`, `.sizes.get("k")`, `.value("k")`,
`.size("k")`: how the code reads an event's payload by key."""

GRAMMAR = load_grammar()
DECLARED = {key for spec in LINES for key in (*spec.sizes, *spec.values)}


def _fits(value: object, declared: ValueType) -> bool:
    """The value has the declared type (an int where a float is declared: printed without a
    decimal point)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return isinstance(value, declared) or isinstance(1.0, declared)
    return isinstance(value, declared)


def test_every_key_the_code_reads_is_declared() -> None:
    read: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for match in READS.finditer(path.read_text()):
            read.setdefault(match.group(1), []).append(path.name)
    assert len(read) > 50  # the pattern finds the reads (it found 66 when written)
    undeclared = {key: files for key, files in read.items() if key not in DECLARED}
    assert undeclared == {}


def test_every_kind_has_a_spec_and_declares_its_keys_once() -> None:
    assert {spec.kind for spec in LINES} == {kind.value for kind in EventKind}
    for spec in LINES:
        assert len(set(spec.sizes)) == len(spec.sizes), spec.kind
        assert not set(spec.sizes) & {"", " "}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.message[:40] for e in EXAMPLES])
def test_each_example_parses_to_declared_keys_of_declared_types(example: Example) -> None:
    message = example.message
    parsed = GRAMMAR.parse(message)
    assert parsed is not None, message
    spec = SPECS[parsed.kind]
    assert set(parsed.sizes) <= set(spec.sizes), message
    for key, value in parsed.values.items():
        assert key in spec.values and _fits(value, spec.values[key]), (key, value)


def test_error_texts_carry_declared_keys() -> None:
    for entry in ERRORS:
        if not entry.kind:
            continue
        sizes, values = ERROR_KEYS[entry.kind]
        keys = {*entry.values, *(key for key, _, _ in entry.captures)}
        keys |= {key for key, _ in entry.glued}
        assert keys <= values.keys(), entry.name
        assert SPECS[entry.kind].sizes == sizes


def test_the_env_line_declares_the_variables_it_is_read_for() -> None:
    assert set(SPECS["env_var"].values) == ENV_VAR_NAMES
