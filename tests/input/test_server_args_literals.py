"""server_args values read without ast.literal_eval when they are simple: the same values."""

from __future__ import annotations

import ast

import pytest

from memledger.input import server_args
from memledger.input.server_args import _literal, parse_server_args
from tests.conftest import real_log_paths


def _by_literal_eval(text: str) -> object:
    """The reading before the fast path: ast.literal_eval of every value."""
    text = text.strip()
    if len(text) > server_args.MAX_VALUE_CHARS:
        return text[: server_args.MAX_VALUE_CHARS]
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return server_args._json_value(value, [])


EDGES = [
    "None",
    "True",
    "False",
    "none",
    "0",
    "-0",
    "7",
    "-12",
    "010",
    "00",
    "1_000",
    "0x10",
    "1" * 4301,
    "-" + "9" * 5000,
    "0.85",
    "-0.0",
    "1.",
    ".5",
    "1e5",
    "1e999",
    "1" * 400 + ".5",
    "'abc'",
    '"abc"',
    "''",
    "'a\"b'",
    '"it\'s"',
    "'a\\nb'",
    "'a\\'b'",
    "'a' 'b'",
    "'a\x00b'",
    "'a\rb'",
    "'tab\there'",
    "b'x'",
    "r'x'",
    "f'x'",
    "'é ñ 中'",
    "'unclosed",
    "'",
    "[]",
    "[1, 2]",
    "{}",
    "<Enum.X: 1>",
    "PosixPath('x')",
    "  'padded'  ",
    "inf",
    "nan",
    "-inf",
]


@pytest.mark.parametrize("text", EDGES)
def test_a_simple_value_reads_as_literal_eval_reads_it(text: str) -> None:
    fast = _literal(text, [])
    assert fast == _by_literal_eval(text)
    assert type(fast) is type(_by_literal_eval(text))


def _real_values() -> list[str]:
    values: list[str] = []

    class Collect(server_args._Params):
        def _store(self, name: str, text: str, problems: list[str]) -> None:
            values.append(text)

    for log in real_log_paths():  # the corpus's logs; the test skips when it is absent
        for line in log.read_text(errors="replace").splitlines():
            if "server_args=" in line:
                Collect().read(line[line.index("server_args=") :], [])
    return values


def test_every_real_value_reads_as_literal_eval_reads_it() -> None:
    values = _real_values()
    assert len(values) > 1000  # the corpus's ServerArgs, ~300 values a log
    simple = [v for v in values if server_args._simple_literal(v.strip())[0]]
    assert len(simple) > 0.9 * len(values)  # the fast path takes most of them
    for text in values:
        fast, slow = _literal(text, []), _by_literal_eval(text)
        assert (fast, type(fast)) == (slow, type(slow)), text


def test_a_whole_server_args_line_reads_the_same() -> None:
    line = (
        "server_args=ServerArgs(model_path='org/m', tp_size=2, mem_fraction_static=0.85, "
        "disable_cuda_graph=False, max_running_requests=None, cuda_graph_bs=[1, 2, 4], "
        "json_model_override_args='{}', dtype=\"auto\", n=-3, big=" + "9" * 5000 + ")"
    )
    params = parse_server_args(line)
    assert params["tp_size"] == 2 and params["mem_fraction_static"] == 0.85
    assert params["disable_cuda_graph"] is False and params["max_running_requests"] is None
    assert params["cuda_graph_bs"] == [1, 2, 4] and params["json_model_override_args"] == "{}"
    assert params["dtype"] == "auto" and params["n"] == -3 and params["big"] == "9" * 4096
