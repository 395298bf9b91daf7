"""Sizes: SGLang's printed numbers to integer bytes with their precision, and back for display."""

from __future__ import annotations

import pytest

from memledger.record import to_json, validate_json
from memledger.units import GIB, MIB, Size, count_or, float_or, format_gib, int_or, parse_size


def test_sglang_gb_is_gib_and_keeps_its_printing_precision() -> None:
    size = parse_size("145.20", "GB")
    assert size.bytes == round(145.20 * GIB)
    assert size.half_ulp == GIB // 200  # ±0.005 GiB: half of the last printed digit
    assert size.text == "145.20 GB"


def test_units_and_precision_follow_what_was_printed() -> None:
    assert parse_size("1196.0", "MiB") == Size(
        bytes=1196 * MIB, half_ulp=MIB // 20, text="1196.0 MiB"
    )
    assert parse_size("28.01", "MB").bytes == round(28.01 * MIB)  # SGLang's MB is MiB
    raw = parse_size("627048448", "B")
    assert (raw.bytes, raw.half_ulp) == (627048448, 0)  # an integer byte count is exact
    assert parse_size("2.5", "GB_decimal").bytes == 2_500_000_000  # HiCache host lines: 1e9
    # mem usage (a difference) can be negative; the caller says which sizes are signed
    assert parse_size("-1.86", "GB", signed=True).bytes == -round(1.86 * GIB)


@pytest.mark.parametrize(
    ("number", "unit"),
    [("nan", "GB"), ("1e309", "GB"), ("inf", "GB"), ("1.2.3", "GB"), ("1", "PB")],
)
def test_garbage_is_rejected_not_guessed(number: str, unit: str) -> None:
    with pytest.raises(ValueError):
        parse_size(number, unit)


def test_size_json_round_trips_with_its_display_field() -> None:
    size = parse_size("7.19", "GB")
    assert validate_json(Size, to_json(size)) == size
    assert '"gib":' in to_json(size)


def test_format_gib() -> None:
    assert format_gib(None) == "-"  # the one placeholder (issue 13 m1)
    assert format_gib(GIB) == "1.00"
    assert format_gib(GIB, 3) == "1.000"
    assert format_gib(-(GIB // 1000)) == "0.00"  # rounds to zero: never "-0.00"
    assert format_gib(-(GIB // 1000), signed=True) == "+0.00"
    assert format_gib(GIB // 4, signed=True) == "+0.25"
    assert format_gib(-GIB // 4, signed=True) == "-0.25"


def test_a_setting_read_as_a_number_is_never_a_bool() -> None:
    # server_args hold True/False beside counts; True is an int to Python, never a count here
    assert [int_or(v, None) for v in (4, 0, -1, True, 2.0, "4", None)] == [4, 0, -1] + [None] * 4
    assert [count_or(v, 1) for v in (4, 0, -1, True, 2.0, None)] == [4, 1, 1, 1, 1, 1]
    assert [float_or(v, 0.9) for v in (1, 0.5, False, "0.5", None)] == [1.0, 0.5, 0.9, 0.9, 0.9]
    assert isinstance(float_or(1, None), float)
