"""Sizes as integer bytes with the printing precision they were read at."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, computed_field, model_validator

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


class FrozenModel(BaseModel):
    """Immutable, strict model whose computed (display) fields are accepted back on input.

    JSON output includes computed fields such as `gib`; reading that JSON back (saved ledgers)
    must not fail on them, while any other unknown key still does.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _drop_computed_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls.__pydantic_computed_fields__:
            return {k: v for k, v in data.items() if k not in cls.__pydantic_computed_fields__}
        return data


class Size(FrozenModel):
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


def parse_size(number: str, unit: str) -> Size:
    """Turn a printed number and unit into a Size; raises ValueError on garbage, inf or nan."""
    try:
        value = Decimal(number)
    except InvalidOperation as exc:
        raise ValueError(f"not a number: {number!r}") from exc
    if not value.is_finite():
        raise ValueError(f"not a finite number: {number!r}")
    if unit not in UNIT_BYTES:
        raise ValueError(f"unknown unit: {unit!r}")
    scale = UNIT_BYTES[unit]
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)  # finite decimals have an int exponent
    half_ulp = int(Decimal(scale) * Decimal(10) ** exponent / 2) if exponent < 0 else 0
    byte_count = int((value * scale).to_integral_value())
    if abs(byte_count) > 1 << 62:
        raise ValueError(f"size out of range: {number} {unit}")
    unit_text = "GB" if unit == "GB_decimal" else unit
    return Size(bytes=byte_count, half_ulp=half_ulp, text=f"{number} {unit_text}")


def gib(byte_count: int | None) -> float | None:
    """Bytes to GiB for display (None stays None)."""
    return None if byte_count is None else byte_count / GIB


def format_gib(byte_count: int | None, digits: int = 2, *, signed: bool = False) -> str:
    """Bytes as GiB for display: `?` for unknown, `+`/`-` when signed, never `-0.00`."""
    if byte_count is None:
        return "?"
    value = byte_count / GIB
    if abs(value) < 0.5 * 10**-digits:
        value = 0.0  # a negative amount that rounds to zero prints as zero
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
