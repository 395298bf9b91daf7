"""Sizes as integer bytes with the printing precision they were read at."""

from __future__ import annotations

import math
from decimal import Context, Decimal, DecimalException
from typing import Any, TypeVar, overload

from memledger.record import computed_field, record

GIB = 1 << 30
MIB = 1 << 20
KIB = 1 << 10

# What each printed unit means in bytes. SGLang's GPU "GB" is GiB (2^30); its "MB" is MiB.
# HiCache host-memory lines are the exception (decimal GB) and pass unit="GB_decimal".
UNIT_BYTES: dict[str, int] = {
    "GB": GIB,
    "GiB": GIB,
    "MB": MIB,
    "MiB": MIB,
    "KB": KIB,
    "KiB": KIB,
    "B": 1,
    "bytes": 1,
    "GB_decimal": 1_000_000_000,
}


GIB_VIEW_DIGITS = 6
"""Decimals of the `*_gib` views in JSON (a view of integer bytes, never the value itself)."""


@overload
def gib_view(byte_count: float) -> float: ...
@overload
def gib_view(byte_count: None) -> None: ...
@overload
def gib_view(byte_count: float | None) -> float | None: ...
def gib_view(byte_count: float | None) -> float | None:
    """The GiB a JSON document shows for a size in bytes (None stays None)."""
    return None if byte_count is None else round(byte_count / GIB, GIB_VIEW_DIGITS)


@record
class Size:
    """A size as an integer number of bytes, plus how precisely the log printed it."""

    bytes: int
    """The value in bytes (rounded to the nearest byte)."""
    half_ulp: int = 0
    """Half a unit in the last printed digit, in bytes: the ± rounding of the printed number."""
    text: str = ""
    """The number and unit as printed (e.g. `145.20 GB`); empty for derived sizes."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gib(self) -> float:
        """The value in GiB, for display."""
        return self.bytes / GIB


# --------------------------------------------------------------------------------------------
# Bounded conversions: every number read from a log, a saved ledger or a config goes through
# one of these, so `1e999999`, 400-digit integers, nan and inf are a clear "out of range",
# never an OverflowError later in arithmetic.
# --------------------------------------------------------------------------------------------

MAX_MAGNITUDE = 1 << 64
"""Largest magnitude accepted for any number (counts, parameters): uint64 range, because
SGLang prints sys.maxsize for "unlimited" (`max_queued_requests=9223372036854775807`)."""
MAX_BYTES = 1 << 62
"""Largest size in bytes (4 EiB)."""
MAX_DEVICE_BYTES = 16 << 40
"""16 TiB: more memory than any accelerator, or unified host, gives one device (a usable memory
above it is no reading: engine/plausible.py, saved_ledger.check_consistent)."""
MIN_FRACTION = 1e-30
"""Smallest non-zero magnitude of a fractional number (page_size=1e-300 is garbage)."""
_MAX_DIGITS = 40
"""Longer digit strings are refused before conversion (converting them costs time for nothing)."""
_SIZE_CONTEXT = Context(prec=80, Emax=999, Emin=-999, traps=[])


class NumberOutOfRange(ValueError):
    """A number that parses but is not finite or beyond what memledger accepts."""


def bounded_int(text: str) -> int:
    """A decimal integer literal as an int; NumberOutOfRange beyond MAX_MAGNITUDE."""
    digits = text.strip().lstrip("+-").replace("_", "").lstrip("0")
    if len(digits) > _MAX_DIGITS:
        raise NumberOutOfRange(f"integer out of range: {_short(text)}")
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"not an integer: {_short(text)}") from None
    return checked_int(value, text)


def bounded_float(text: str) -> float:
    """A finite decimal number as a float; NumberOutOfRange for nan, inf or beyond the bounds."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {_short(text)}") from None
    return checked_float(value, text)


def int_or_none(text: str) -> int | None:
    """`bounded_int(text)`, or None where it is not an integer or out of range."""
    try:
        return bounded_int(text)
    except ValueError:
        return None


def float_or_none(text: str) -> float | None:
    """`bounded_float(text)`, or None where it is not a number or out of range."""
    try:
        return bounded_float(text)
    except ValueError:
        return None


_D = TypeVar("_D")


def int_or(value: object, default: _D) -> int | _D:
    """`value` when it is an int (a bool is not one here), else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def count_or(value: object, default: _D) -> int | _D:
    """`value` when it is an int above 0 (SGLang's `x or default` for a count), else `default`."""
    counted = int_or(value, 0)
    return counted if counted > 0 else default


def float_or(value: object, default: _D) -> float | _D:
    """`value` as a float when it is a number (an int or a float, not a bool), else `default`."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return default


def checked_int(value: int, shown: object = None) -> int:
    """`value` when |value| <= MAX_MAGNITUDE, else NumberOutOfRange."""
    if value > MAX_MAGNITUDE or value < -MAX_MAGNITUDE:
        raise NumberOutOfRange(f"integer out of range: {_short(value if shown is None else shown)}")
    return value


def checked_float(value: float, shown: object = None) -> float:
    """`value` when finite and within the bounds (zero included), else NumberOutOfRange."""
    magnitude = abs(value)
    if not math.isfinite(value) or magnitude > MAX_MAGNITUDE or 0 < magnitude < MIN_FRACTION:
        raise NumberOutOfRange(f"number out of range: {_short(value if shown is None else shown)}")
    return value


def checked_number(value: Any) -> Any:
    """An already-parsed value (JSON, literal_eval) with every number in it checked.

    bools, strings and None pass; lists and dicts are checked element by element.
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return checked_int(value)
    if isinstance(value, float):
        return checked_float(value)
    if isinstance(value, list | tuple):
        return [checked_number(item) for item in value]
    if isinstance(value, dict):
        return {key: checked_number(item) for key, item in value.items()}
    return value


def digits_key(digits: str) -> tuple[int, str]:
    """A string of decimal digits as a sort key that orders like its number, without int()
    (which refuses 4,300 digits and more): `TP10` sorts after `TP9`, a 5,000-digit tag sorts."""
    significant = digits.lstrip("0")
    return len(significant), significant


def _short(value: object) -> str:
    if isinstance(value, int) and not -(10**24) < value < 10**24:
        return f"an integer of {len(str(abs(value)))} digits"
    text = str(value)
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


_SIZES: dict[tuple[str, str, bool], Size] = {}
_SIZES_CAP = 4096
"""Sizes already parsed (a Size is immutable): a log that prints its memory every second
repeats the same few hundred numbers; cleared when full."""


def parse_size(number: str, unit: str, *, signed: bool = False) -> Size:
    """Turn a printed number and unit into a Size.

    ValueError on garbage; NumberOutOfRange (a ValueError) on inf, nan, a negative size unless
    `signed` (a difference such as `mem usage`), or a size beyond MAX_BYTES.
    """
    key = (number, unit, signed)
    found = _SIZES.get(key)
    if found is not None:
        return found
    size = _parse_size(number, unit, signed)
    if len(_SIZES) >= _SIZES_CAP:
        _SIZES.clear()
    _SIZES[key] = size
    return size


def _parse_size(number: str, unit: str, signed: bool) -> Size:
    if unit not in UNIT_BYTES:
        raise ValueError(f"unknown unit: {unit!r}")
    if len(number) > 2 * _MAX_DIGITS:
        raise NumberOutOfRange(f"size out of range: {_short(number)} {unit}")
    try:
        value = Decimal(number)
    except DecimalException as exc:
        raise ValueError(f"not a number: {number!r}") from exc
    if not value.is_finite():
        raise NumberOutOfRange(f"not a finite number: {number!r}")
    if value.is_signed() and not signed:  # `-0` too: a sign no size has
        raise NumberOutOfRange(f"negative size: {number} {unit}")
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)  # finite decimals have an int exponent
    if exponent < -_MAX_DIGITS or (value and not -_MAX_DIGITS < value.adjusted() < _MAX_DIGITS):
        raise NumberOutOfRange(f"size out of range: {number} {unit}")
    # A private context: exact for every accepted input, and no trap can fire on an exponent.
    context = _SIZE_CONTEXT
    scale = Decimal(UNIT_BYTES[unit])
    ulp = context.multiply(scale, context.power(Decimal(10), exponent))
    half_ulp = int(context.divide(ulp, Decimal(2))) if exponent < 0 else 0
    byte_count = int(context.multiply(value, scale).to_integral_value())
    if abs(byte_count) > MAX_BYTES:
        raise NumberOutOfRange(f"size out of range: {number} {unit}")
    unit_text = "GB" if unit == "GB_decimal" else unit
    return Size(bytes=byte_count, half_ulp=half_ulp, text=f"{number} {unit_text}")


def format_gib(byte_count: int | None, digits: int = 2, *, signed: bool = False) -> str:
    """Bytes as GiB for display: `-` (the one placeholder, memledger.render.rows.ABSENT) for
    unknown, `+`/`-` when signed, never `-0.00`."""
    if byte_count is None:
        return "-"
    value = byte_count / GIB
    if abs(value) < 0.5 * 10**-digits:
        value = 0.0  # a negative amount that rounds to zero prints as zero
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
