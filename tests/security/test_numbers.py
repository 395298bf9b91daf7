"""Security review, class 3 (numbers) and class 4/5 bounds: F3, F4, F6, F15, F16, F17, F18, F24.

Every number read from a log, a config or a formula goes through memledger.units' bounded
conversions: an out-of-range value is a clear error or a value marked out of range, never a
traceback and never a silent pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memledger.checking.budget import parse_budget, parse_budget_size
from memledger.config_files import MAX_CONFIG_DEPTH, nesting_depth, parse_nested
from memledger.errors import EXIT_USAGE, ConfigError
from memledger.formulas import ExpressionError, evaluate, parse_formulas
from memledger.input.server_args import _split_top_level, parse_server_args
from memledger.model.model_config import load_model_config
from memledger.units import (
    MAX_MAGNITUDE,
    NumberOutOfRange,
    bounded_float,
    bounded_int,
    checked_number,
    parse_size,
)
from tests.security.helpers import HUGE, run, write_log

# --------------------------------------------------------------------------------------------
# The one bounded conversion helper
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    ["1e999999", "1e309", "nan", "inf", "-inf", "99999999999999999999", "1e-300", HUGE, "0e-9999"],
)
def test_F03_sizes_out_of_range_raise_number_out_of_range(number: str) -> None:
    with pytest.raises(NumberOutOfRange):
        parse_size(number, "GB")


def test_F24_negative_sizes_are_out_of_range_unless_the_size_is_a_difference() -> None:
    with pytest.raises(NumberOutOfRange, match="negative size"):
        parse_size("-5.00", "GB")
    assert parse_size("-0.02", "GB", signed=True).bytes < 0
    # a sign is a difference's: `avail mem=-0` is no reading a GPU gives (issue: F24 re-check)
    with pytest.raises(NumberOutOfRange, match="negative size"):
        parse_size("-0.00", "GB")
    assert parse_size("-0.00", "GB", signed=True).bytes == 0  # `mem usage=-0.00 GB` is printed


@pytest.mark.parametrize("text", [HUGE, "-" + HUGE, str(MAX_MAGNITUDE + 1), "9" * 5000])
def test_F04_integers_beyond_the_bound_are_refused_before_conversion(text: str) -> None:
    with pytest.raises(NumberOutOfRange):
        bounded_int(text)
    assert bounded_int(str(MAX_MAGNITUDE)) == MAX_MAGNITUDE


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(min_value=-(2**400)))
def test_F04_checked_number_accepts_exactly_the_bounded_finite_numbers(value: float) -> None:
    inside = abs(value) <= MAX_MAGNITUDE and (
        isinstance(value, int) or value == 0 or 1e-30 <= abs(value)
    )
    try:
        assert checked_number(value) == value
        assert inside
    except NumberOutOfRange:
        assert not inside


def test_F04_bounded_float_refuses_nan_and_inf_text() -> None:
    for text in ("nan", "inf", "1e400", "-1e400", "1e-300"):
        with pytest.raises(NumberOutOfRange):
            bounded_float(text)
    assert bounded_float("0.88") == 0.88


# --------------------------------------------------------------------------------------------
# Log numbers end to end: the review's reproductions exit 0 with the value marked
# --------------------------------------------------------------------------------------------


def test_F03_avail_1e999999_is_a_malformed_value_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path, avail="1e999999")
    code, out, _ = run(capsys, "ledger", log)
    assert code == 0 and "balances" in out
    code, out, _ = run(capsys, "parse", log, "--format", "json")
    assert code == 0
    [problem] = json.loads(out)["coverage"]["listed"]
    assert problem["line"] == 4 and "out of range) avail='1e999999 GB'" in problem["reason"]


@pytest.mark.parametrize(
    ("field", "command"),
    [("tokens", "diff"), ("dp", "diff"), ("mfs", "ledger"), ("tokens", "check")],
)
def test_F04_huge_integers_in_a_log_never_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, command: str
) -> None:
    base = write_log(tmp_path)
    hostile = write_log(tmp_path, "big.log", **{field: HUGE})
    budget = tmp_path / "budget.toml"
    budget.write_text(
        'version = 1\n[[budget]]\nitem = "cuda_graph"\nmax = "10 GiB"\nmax_increase_pct = 10\n'
    )
    args: dict[str, list[str | Path]] = {
        "diff": ["diff", base, hostile],
        "ledger": ["ledger", hostile],
        "check": ["check", hostile, "--budget", budget, "--baseline", base],
    }
    code, out, _ = run(capsys, *args[command])
    assert code == 0, out
    assert HUGE not in out  # the absurd count is not reported as data
    code, out, _ = run(capsys, "parse", hostile, "--format", "json")
    assert "out of range" in json.dumps(json.loads(out)["coverage"])


def test_F04_server_args_numbers_out_of_range_are_kept_as_text_and_reported() -> None:
    problems: list[str] = []
    params = parse_server_args(
        f"server_args=ServerArgs(tp_size=2, dp_size={HUGE}, mfs=1e999, ok=[1, {HUGE}])", problems
    )
    assert params["tp_size"] == 2
    assert isinstance(params["dp_size"], str) and HUGE not in params["dp_size"]
    assert params["mfs"] == "inf"
    assert [p.split(":")[0] for p in problems] == ["dp_size", "mfs", "ok"]


def test_F24_page_size_1e_minus_300_is_no_astronomic_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path, page="1e-300")
    code, out, _ = run(capsys, "ledger", log, "--format", "json")
    assert code == 0
    ledger = json.loads(out)
    sizes = [row["bytes"] for row in ledger["rows"] if row["bytes"] is not None]
    assert max(abs(size) for size in sizes) < 64 << 30
    free_pages = next(row for row in ledger["rows"] if row["id"] == "kv_free_pages")
    assert free_pages["kind"] == "unknown"


def test_F24_negative_avail_is_malformed_not_a_negative_usable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = write_log(tmp_path, avail="-5.00")
    code, out, _ = run(capsys, "ledger", log, "--format", "json")
    assert code == 0
    assert json.loads(out)["usable_bytes"] > 0
    _, out, _ = run(capsys, "parse", log, "--format", "json")
    [problem] = json.loads(out)["coverage"]["listed"]
    assert "out of range) avail='-5.00 GB'" in problem["reason"]


# --------------------------------------------------------------------------------------------
# F6: server_args in linear time
# --------------------------------------------------------------------------------------------


class _CountingStr(str):
    """A str that counts the characters every slice or index of it copies."""

    copied = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        piece = str.__getitem__(self, key)
        _CountingStr.copied += len(piece)
        return piece


def _reference_split(body: str) -> list[str]:
    """The pre-fix implementation (quadratic in `<`), kept as the oracle for the new one."""
    opens = {"(": ")", "[": "]", "{": "}", "<": ">"}
    items: list[str] = []
    stack: list[str] = []
    quote, start, index = "", 0, 0
    while index < len(body):
        char = body[index]
        if quote:
            if char == "\\":
                index += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in opens:
            before = body[:index].rstrip()
            if char != "<" or not before or before[-1] in "=:,([{":
                stack.append(opens[char])
        elif stack and char == stack[-1]:
            stack.pop()
        elif char in ")]}" and not stack:
            items.append(body[start:index])
            return [i for i in items if i.strip()]
        elif char == "," and not stack:
            items.append(body[start:index])
            start = index + 1
        index += 1
    if not quote and not stack:
        items.append(body[start:])
    return [i for i in items if i.strip()]


def test_F06_server_args_split_copies_linear_characters_for_a_line_of_lt() -> None:
    for count in (2_000, 16_000):
        body = _CountingStr("tp_size=1, x=" + "<" * count + ", y=2)")
        _CountingStr.copied = 0
        _split_top_level(body)
        # one pass: each character is indexed once and copied into at most one item
        assert _CountingStr.copied <= 3 * len(body)


@given(st.text(alphabet="ab=:,<>()[]{}'\"\\ \t", max_size=60))
def test_F06_linear_split_equals_the_reference_split(body: str) -> None:
    assert _split_top_level(body) == _reference_split(body)


def test_F06_a_2_mb_server_args_line_parses_and_keeps_its_other_parameters() -> None:
    message = "server_args=ServerArgs(tp_size=4, x=" + "<" * 2_000_000 + ">, dp_size=2)"
    params = parse_server_args(message)
    assert params["tp_size"] == 4 and params["dp_size"] == 2


# --------------------------------------------------------------------------------------------
# F15: budget limits must be finite; F16: nesting depth of config files
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        'item = "slots"\nmax = nan',
        'item = "kv_tokens_per_instance"\nmin = nan',
        'item = "mem_fraction_static"\nmax = inf',
        'item = "slots"\nmin = 1000\nmax = nan',
        'item = "cuda_graph"\nmax_increase_pct = nan',
        'item = "slots"\nmax = 1e400',
    ],
)
def test_F15_non_finite_budget_limits_are_config_errors(entry: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_budget(f"version = 1\n[[budget]]\n{entry}\n", path="b.toml")
    assert caught.value.exit_code == EXIT_USAGE
    assert caught.value.line is not None and caught.value.line >= 3
    assert "finite" in caught.value.message


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_F15_non_finite_tighten_headroom_is_a_config_error(value: str) -> None:
    text = (
        f"version = 1\n[defaults]\ntighten_headroom_pct = {value}\n"
        '[[budget]]\nitem = "slots"\nmax = 4\n'
    )
    with pytest.raises(ConfigError, match="finite"):
        parse_budget(text, path="b.toml")


def test_F15_version_1_0_and_astronomic_sizes_are_refused() -> None:
    with pytest.raises(ConfigError, match="version"):
        parse_budget('version = 1.0\n[[budget]]\nitem = "slots"\nmax = 4\n', path="b.toml")
    with pytest.raises(ValueError, match="out of range"):
        parse_budget_size("9" * 400 + " GiB")


def _deep_toml() -> str:
    return "x = " + "[" * 5000 + "]" * 5000 + "\n"


def test_F16_deep_toml_budget_formulas_and_json_model_config_are_config_errors(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match="nested more than"):
        parse_budget(_deep_toml(), path="b.toml")
    with pytest.raises(ConfigError, match="nested more than"):
        parse_formulas(_deep_toml(), "f.toml")
    deep_json = tmp_path / "config.json"
    deep_json.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ConfigError, match="nested more than") as caught:
        load_model_config(deep_json)
    assert caught.value.exit_code == EXIT_USAGE


def test_F16_depth_just_beyond_the_parser_limit_of_later_code_is_refused_too() -> None:
    shallow = "[" * MAX_CONFIG_DEPTH + "]" * MAX_CONFIG_DEPTH
    deep = "[" * (MAX_CONFIG_DEPTH + 1) + "]" * (MAX_CONFIG_DEPTH + 1)
    assert nesting_depth(parse_nested(json.loads, shallow, "x")) == MAX_CONFIG_DEPTH
    with pytest.raises(ConfigError):
        parse_nested(json.loads, deep, "x")


def test_F16_auto_discovered_deep_pyproject_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = write_log(tmp_path)
    project = tmp_path / "pr"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.memledger]\n" + _deep_toml())
    monkeypatch.chdir(project)
    code, _, err = run(capsys, "check", log)
    assert code == EXIT_USAGE
    assert err.count("\n") == 1 and "pyproject.toml" in err and "nested" in err


def test_F16_formulas_from_the_environment_variable_are_bounded_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text(_deep_toml())
    monkeypatch.setenv("MEMLEDGER_FORMULAS", str(deep))
    code, _, err = run(capsys, "ledger", write_log(tmp_path))
    assert code == EXIT_USAGE and "nested more than" in err


# --------------------------------------------------------------------------------------------
# F17/F18: the formula evaluator is bounded
# --------------------------------------------------------------------------------------------


def _formula(expression: str, text: str = "t") -> str:
    escaped = expression.replace('"', '\\"')
    return (
        f'[[formula]]\nid = "probe"\nlabel = "p"\ninterval = "memory_pool_end"\n'
        f'expression = "{escaped}"\ntext = "{text}"\nwhy = "w"\n'
    )


@pytest.mark.parametrize(
    "expression",
    [
        "1e400",
        "-1e400",
        "1e20 ** 16",
        f"{HUGE} / 1",
        f"{HUGE} + 0.5",
        "1" * 1991,
        "round(1, -100000000)",
        "round(1, -10**12)",
        "2 ** 64 ** 64",
        "float('1e400')",
    ],
)
def test_F17_F18_constant_expressions_out_of_range_fail_at_load_with_the_line(
    expression: str,
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_formulas(_formula(expression), "f.toml")
    assert caught.value.line == 5  # the `expression = ...` line
    assert len(caught.value.message) < 300  # a 1991-digit literal is not echoed whole


def test_F18_round_digits_in_an_evidence_template_are_bounded() -> None:
    with pytest.raises(ConfigError, match="within") as caught:
        parse_formulas(_formula("1", text="{round(1, -10**8)}"), "f.toml")
    assert caught.value.line == 6


@pytest.mark.parametrize(
    ("expression", "variables"),
    [
        ("args.x ** 16", {"args.x": 1e20}),
        ("args.x / 1", {"args.x": 10**100}),
        ("round(1, args.n)", {"args.n": -(10**8)}),
        ("args.x * args.x * args.x * args.x", {"args.x": 2**60}),
    ],
)
def test_F17_F18_runtime_overflow_is_an_expression_error(
    expression: str, variables: dict[str, float]
) -> None:
    with pytest.raises(ExpressionError):
        evaluate(expression, variables)


def test_F17_runtime_overflow_becomes_an_unknown_row_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    formulas = tmp_path / "f.toml"
    formulas.write_text(_formula("args.max_running_requests * 1e300 * 1e300"))
    code, out, _ = run(capsys, "ledger", write_log(tmp_path), "--formulas", formulas)
    assert code == 0
    assert "probe unknown: formula failed: result is not finite" in out
