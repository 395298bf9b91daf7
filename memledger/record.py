"""Records: memledger's data classes are stdlib data classes; pydantic reads and describes them.

Every model (events, ledger, diagnosis, sizing, diff, check report) is declared with `@record`,
a frozen, slotted, keyword-only `dataclasses.dataclass`. A field's JSON alias, schema extras and
`exclude` (not in the JSON) are `dataclasses.field` metadata (`field(metadata={"alias": "from"})`),
the keys pydantic reads from a data class field. `computed_field` marks a property that the JSON
output includes after the fields (a `*_gib` view); `before_validation` marks a classmethod
`(cls, data) -> data` that runs on a document before pydantic validates it. Copies are
`dataclasses.replace`.

The JSON boundary:
- `to_json` / `to_dict` write a record as pydantic's `TypeAdapter(cls).dump_json` does, byte for
  byte (tests/base/test_record.py compares the two on every sample and real log), without importing
  pydantic: a `ledger` or `parse` run, text or JSON, never loads it.
- `validate`, `validate_json` and `json_schema` are pydantic's `TypeAdapter`, imported on first
  use (reading a saved ledger or a spooled check, `memledger schema`). Before that, `_declare`
  tells pydantic what the markers above mean, once per class: the computed fields (which are
  accepted back on input and dropped, as the output carries them), the before-validation hooks,
  and `extra="forbid"`.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")

_COMPUTED = "__record_computed__"
_BEFORE = "__record_before__"
_RECORDS: list[type[Any]] = []
"""Every record class, in definition order (declared to pydantic on first validation)."""


@dataclass_transform(
    frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field,)
)
def record(cls: type[T]) -> type[T]:
    """`cls` as a frozen, slotted, keyword-only data class, known to the JSON boundary."""
    made = dataclasses.dataclass(frozen=True, slots=True, kw_only=True)(cls)
    _RECORDS.append(made)
    return made


P = TypeVar("P")


def computed_field(prop: P) -> P:
    """Mark a property as part of the output (written after the fields, `readOnly` in schemas)."""
    assert isinstance(prop, property) and prop.fget is not None
    setattr(prop.fget, _COMPUTED, True)
    return prop


def before_validation(method: T) -> T:
    """Mark a classmethod `(cls, data) -> data` to run on a document before it is validated."""
    setattr(method.__func__, _BEFORE, True)  # type: ignore[attr-defined]
    return method


def computed_names(cls: type[Any]) -> tuple[str, ...]:
    """The computed fields of a record class, the base classes' first, in declaration order."""
    known = _COMPUTED_NAMES.get(cls)
    if known is not None:
        return known
    names: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        for name, attribute in vars(klass).items():
            prop = getattr(attribute, "wrapped", attribute)  # pydantic's wrapper, once declared
            if isinstance(prop, property) and getattr(prop.fget, _COMPUTED, False):
                names[name] = None
    found = _COMPUTED_NAMES[cls] = tuple(names)
    return found


_COMPUTED_NAMES: dict[type[Any], tuple[str, ...]] = {}


def field_names(cls: type[Any]) -> tuple[str, ...]:
    """The fields of a record class, in order."""
    return tuple(f.name for f in dataclasses.fields(cls))


def field_values(value: Any) -> dict[str, Any]:
    """A record's fields as a dict (shallow: nested records stay records)."""
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


def _written(cls: type[Any]) -> tuple[tuple[str, str], ...]:
    """(field name, JSON key when written by alias) per field the JSON holds (a field with
    `metadata={"exclude": True}` is left out, as pydantic leaves it out)."""
    known = _WRITTEN.get(cls)
    if known is None:
        fields = [f for f in dataclasses.fields(cls) if not f.metadata.get("exclude")]
        known = _WRITTEN[cls] = tuple((f.name, f.metadata.get("alias", f.name)) for f in fields)
    return known


_WRITTEN: dict[type[Any], tuple[tuple[str, str], ...]] = {}


# --- writing ---------------------------------------------------------------------------------

Exclude = set[str] | dict[str, Any] | None


def to_dict(
    value: Any, *, mode: str = "python", by_alias: bool = False, exclude: Exclude = None
) -> dict[str, Any]:
    """A record as a dict (nested records too), computed fields included; `mode="json"` gives
    JSON values (enum values, lists for tuples, None for inf and nan). `exclude` names fields to
    leave out, or maps a field to what to leave out of it (`{"a": {"b"}}`)."""
    return _dump_record(value, mode == "json", by_alias, exclude)


def to_json(
    value: Any, *, indent: int | None = None, by_alias: bool = False, exclude: Exclude = None
) -> str:
    """The JSON pydantic writes for a record (same bytes); `exclude` as in `to_dict`."""
    out: list[str] = []
    _write(out, _dump_record(value, True, by_alias, exclude), indent, 0)
    return "".join(out)


def _dump_record(value: Any, json_mode: bool, by_alias: bool, exclude: Exclude) -> dict[str, Any]:
    cls = type(value)
    out: dict[str, Any] = {}
    for name, alias in _written(cls):
        key = alias if by_alias else name
        item = getattr(value, name)
        if not exclude or name not in exclude:
            out[key] = _dump_value(item, json_mode, by_alias)
            continue
        nested = exclude[name] if isinstance(exclude, dict) else True
        if isinstance(nested, set | dict) and dataclasses.is_dataclass(item):
            out[key] = _dump_record(item, json_mode, by_alias, nested)
    for name in computed_names(cls):
        if not exclude or name not in exclude:
            out[name] = _dump_value(getattr(value, name), json_mode, by_alias)
    return out


def _dump_value(value: Any, json_mode: bool, by_alias: bool) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most values: as they are
        return value
    if kind is float:
        return value if not json_mode or math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dump_record(value, json_mode, by_alias, None)
    if isinstance(value, dict):
        return {
            (k.value if json_mode and isinstance(k, enum.Enum) else k): _dump_value(
                v, json_mode, by_alias
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_dump_value(v, json_mode, by_alias) for v in value]
    if not json_mode:
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | set | frozenset):
        return [_dump_value(v, json_mode, by_alias) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None  # pydantic's ser_json_inf_nan="null"
    if isinstance(value, datetime.date):  # a datetime too; pydantic writes ISO 8601
        return value.isoformat()
    return value


def _float_text(value: float) -> str:
    """A float as pydantic-core writes it: Python's shortest repr, except that an exponent
    of -5 or above is written out (`0.000015`) and a negative exponent has no leading zero
    (`1e-6`, not `1e-06`)."""
    text = repr(value)
    if "e-" not in text:
        return text
    mantissa, exponent = text.split("e-")
    power = int(exponent)
    if power > 5:
        return f"{mantissa}e-{power}"
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "")
    return f"{sign}0.{'0' * (power - 1)}{digits}"


_encode_string: Callable[[str], str] = json.encoder.encode_basestring


def _write(out: list[str], value: Any, indent: int | None, depth: int) -> None:
    kind = type(value)
    if kind is str:  # the most common values first, by exact type (a bool is no int here)
        out.append(_encode_string(value))
    elif kind is int:
        out.append(int.__repr__(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_string(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float_text(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner, close, colon = _spacing(indent, depth)
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            out.append(inner if i == 0 else "," + inner)
            out.append(_encode_string(str(k)))
            out.append(colon)
            _write(out, v, indent, depth + 1)
        out.append(close + "}")
    elif isinstance(value, list):
        if not value:
            out.append("[]")
            return
        inner, close, _colon = _spacing(indent, depth)
        out.append("[")
        for i, v in enumerate(value):
            out.append(inner if i == 0 else "," + inner)
            _write(out, v, indent, depth + 1)
        out.append(close + "]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _spacing(indent: int | None, depth: int) -> tuple[str, str, str]:
    if indent is None:
        return "", "", ":"
    return "\n" + " " * (indent * (depth + 1)), "\n" + " " * (indent * depth), ": "


# --- reading and describing: pydantic, on first use ------------------------------------------


def validate(cls: type[T], data: Any) -> T:
    """`data` (a dict, or a record) validated as `cls` by pydantic (its rules and errors)."""
    return adapter(cls).validate_python(data)


def validate_json(cls: type[T], text: str | bytes) -> T:
    """JSON text validated as `cls` by pydantic."""
    return adapter(cls).validate_json(text)


def json_schema(cls: type[Any], *, mode: str = "validation") -> dict[str, Any]:
    """pydantic's JSON Schema of `cls` (keys by alias)."""
    assert mode in ("validation", "serialization"), mode
    return adapter(cls).json_schema(by_alias=True, mode=mode)  # type: ignore[arg-type]


def adapter(cls: type[T]) -> TypeAdapter[T]:
    """pydantic's `TypeAdapter` of a record class (built once, after every record class so far
    is declared to pydantic)."""
    built = _ADAPTERS.get(cls)
    if built is None:
        from pydantic import TypeAdapter

        for klass in _RECORDS:
            _declare(klass)
        built = _ADAPTERS[cls] = TypeAdapter(cls)
    return built


_ADAPTERS: dict[type[Any], Any] = {}


_DECLARED: set[type[Any]] = set()


def _declare(cls: type[Any]) -> None:
    """Tell pydantic what the markers of `cls` mean (once): its computed fields, its
    before-validation hooks, a hook that drops the computed fields from a document (the output
    carries them; any other unknown key is refused), and `extra="forbid"`."""
    if cls in _DECLARED:
        return
    from pydantic import ConfigDict, model_validator
    from pydantic import computed_field as pydantic_computed

    _DECLARED.add(cls)
    computed = computed_names(cls)
    for name, attribute in list(vars(cls).items()):
        if isinstance(attribute, property) and getattr(attribute.fget, _COMPUTED, False):
            setattr(cls, name, pydantic_computed(attribute))
        function = getattr(attribute, "__func__", None)
        if function is not None and getattr(function, _BEFORE, False):
            setattr(cls, name, model_validator(mode="before")(attribute))
    if computed:

        def drop_computed(klass: type[Any], data: Any) -> Any:
            if isinstance(data, dict) and not set(computed).isdisjoint(data):
                return {k: v for k, v in data.items() if k not in computed}
            return data

        hook: Any = classmethod(drop_computed)
        setattr(cls, "_drop_computed_fields", model_validator(mode="before")(hook))  # noqa: B010
    cls.__pydantic_config__ = ConfigDict(extra="forbid", populate_by_name=True)
