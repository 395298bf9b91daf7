"""Frozen records: memledger's data classes, without pydantic on the hot path.

Every model (events, ledger, diagnosis, sizing, diff, check report) is a `Record`: a frozen,
keyword-only data class declared as a pydantic model is (`Field`, `computed_field`,
`model_validator(mode="before")`, `model_config`), with the pydantic methods memledger uses
(`model_dump`, `model_dump_json`, `model_copy`, `model_fields`). Building one costs a dict, not a
validation, and importing this module costs nothing: a `ledger` run never imports pydantic.

pydantic stays the JSON contract. `model_validate`, `model_validate_json` and
`model_json_schema` build, once per class, a pydantic model from the same declaration
(`memledger.record_views`) and validate or describe with it; what a validation returns is a
record again. `model_dump_json` writes what pydantic's `model_dump_json` writes, byte for byte
(tests/test_record.py compares the two on every sample and real log).

Construction converts what pydantic's lax mode converted and the outputs depend on: an int given
for a `float` field becomes a float (JSON `1.0`), an integral float for an `int` field an int, a
value for an enum field that enum, a dict for a record field that record, a tuple for a list a
list. Anything else is stored as given (the engine builds records from typed values).
"""

from __future__ import annotations

import copy
import datetime
import enum
import json
import math
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Self, TypeVar

_MISSING: Any = object()


class FieldInfo:
    """One declared field: its default (or default factory), JSON alias, schema extras, and
    whether the dumps leave it out (`exclude`, as pydantic's)."""

    __slots__ = (
        "alias",
        "annotation",
        "default",
        "default_factory",
        "exclude",
        "json_schema_extra",
    )

    def __init__(
        self,
        default: Any = _MISSING,
        *,
        default_factory: Callable[[], Any] | None = None,
        alias: str | None = None,
        json_schema_extra: dict[str, Any] | None = None,
        exclude: bool = False,
    ) -> None:
        self.exclude = exclude
        self.default = default
        self.default_factory = default_factory
        self.alias = alias
        self.json_schema_extra = json_schema_extra
        self.annotation: str = ""
        """The annotation as written (a string under `from __future__ import annotations`)."""

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None


def Field(  # noqa: N802  (pydantic's name: declarations read the same)
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    alias: str | None = None,
    json_schema_extra: dict[str, Any] | None = None,
    exclude: bool = False,
) -> Any:
    """A field's default, default factory, JSON alias or schema extras, and `exclude` (left out
    of every dump and of the serialization schema), as pydantic's `Field`."""
    return FieldInfo(
        default,
        default_factory=default_factory,
        alias=alias,
        json_schema_extra=json_schema_extra,
        exclude=exclude,
    )


def ConfigDict(**settings: Any) -> dict[str, Any]:  # noqa: N802  (pydantic's name)
    """A record's `model_config` (frozen, extra, populate_by_name), read by its pydantic view."""
    return dict(settings)


_COMPUTED = "__record_computed__"
_BEFORE = "__record_before__"


P = TypeVar("P")


def computed_field(prop: P) -> P:
    """Mark a property as part of the output (dumped after the fields, `readOnly` in schemas)."""
    assert isinstance(prop, property) and prop.fget is not None
    setattr(prop.fget, _COMPUTED, True)
    return prop


def model_validator(*, mode: str) -> Callable[[Any], Any]:
    """Mark a classmethod `(cls, data) -> data` to run on the input of every construction and
    validation, before the fields are read (pydantic's `mode="before"`, the only mode used)."""
    assert mode == "before", mode

    def mark(method: Any) -> Any:
        setattr(method.__func__, _BEFORE, True)
        return method

    return mark


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a record (records are immutable: use `model_copy`)."""


class Record:
    """An immutable, keyword-only record declared like a pydantic model (see the module doc)."""

    model_config: ClassVar[dict[str, Any]] = {"frozen": True, "extra": "forbid"}
    model_fields: ClassVar[dict[str, FieldInfo]] = {}
    model_computed_fields: ClassVar[dict[str, property]] = {}
    __record_aliases__: ClassVar[dict[str, str]] = {}
    __record_hooks__: ClassVar[tuple[Any, ...]] = ()
    __record_plan__: ClassVar[tuple[tuple[str, Callable[[Any], Any]], ...] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: dict[str, FieldInfo] = {}
        computed: dict[str, property] = {}
        hooks: list[Any] = []
        for base in reversed(cls.__mro__[1:]):
            if issubclass(base, Record):
                fields.update(base.model_fields)
                computed.update(base.model_computed_fields)
        own = cls.__dict__.get("__annotations__", {})
        for name, annotation in own.items():
            text = str(annotation)
            if text.startswith(("ClassVar", "typing.ClassVar")):
                continue
            declared = cls.__dict__.get(name, _MISSING)
            info = declared if isinstance(declared, FieldInfo) else FieldInfo(declared)
            info.annotation = text
            fields[name] = info
            if declared is not _MISSING:
                delattr(cls, name)  # the instance holds the value; no class-level default shows
        computed.update(
            (name, attribute)
            for name, attribute in cls.__dict__.items()
            if isinstance(attribute, property) and getattr(attribute.fget, _COMPUTED, False)
        )
        for klass in reversed(cls.__mro__):
            for attribute in klass.__dict__.values():
                function = getattr(attribute, "__func__", None)
                if function is not None and getattr(function, _BEFORE, False):
                    hooks.append(attribute.__get__(None, cls))
        cls.model_fields = fields
        cls.model_computed_fields = computed
        cls.__record_aliases__ = {f.alias: n for n, f in fields.items() if f.alias is not None}
        cls.__record_hooks__ = tuple(hooks)
        cls.__record_plan__ = None

    def __init__(self, **data: Any) -> None:
        cls = type(self)
        for hook in cls.__record_hooks__:
            data = hook(data)
        if cls.__record_aliases__:
            data = {cls.__record_aliases__.get(k, k): v for k, v in data.items()}
        values = self.__dict__
        found = 0
        for name, info in cls.model_fields.items():
            if name in data:
                values[name] = data[name]
                found += 1
            elif info.default_factory is not None:
                values[name] = info.default_factory()
            elif info.default is not _MISSING:
                values[name] = info.default
            else:
                raise TypeError(f"{cls.__name__}: missing field {name!r}")
        if found != len(data):
            unknown = ", ".join(sorted(str(k) for k in data.keys() - values.keys()))
            raise TypeError(f"{cls.__name__}: unknown field(s) {unknown}")
        plan = cls.__record_plan__
        if plan is None:
            plan = cls.__record_plan__ = _plan(cls)
        for name, convert in plan:
            values[name] = convert(values[name])

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        """(name, value) per field, as iterating a pydantic model gives (`dict(record)`)."""
        yield from self.__dict__.items()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self.__dict__.items()]
        shown += [f"{k}={getattr(self, k)!r}" for k in type(self).model_computed_fields]
        return f"{type(self).__name__}({', '.join(shown)})"

    # --- pydantic's methods, as memledger uses them -------------------------------------------

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied (not validated, as pydantic's `model_copy`)."""
        new = object.__new__(type(self))
        state = copy.deepcopy(self.__dict__) if deep else dict(self.__dict__)
        if update:
            state.update(update)
        new.__dict__.update(state)
        return new

    def model_dump(
        self,
        *,
        mode: str = "python",
        by_alias: bool = False,
        exclude: set[str] | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The record as a dict (nested records too), computed fields included; `mode="json"`
        gives JSON values (enum values, lists for tuples, None for inf and nan). `exclude` names
        fields to leave out, or maps a field to what to leave out of it (`{"a": {"b"}}`)."""
        return _dump_record(self, mode == "json", by_alias, exclude)

    def model_dump_json(
        self,
        *,
        indent: int | None = None,
        by_alias: bool = False,
        exclude: set[str] | dict[str, Any] | None = None,
    ) -> str:
        """The JSON pydantic's `model_dump_json` writes for this model (same bytes); `exclude`
        as in `model_dump`."""
        out: list[str] = []
        _write(out, _dump_record(self, True, by_alias, exclude), indent, 0)
        return "".join(out)

    @classmethod
    def model_validate(cls, obj: Any) -> Self:
        """`obj` (a dict, or a record) validated by the class's pydantic view, as a record."""
        from memledger.record_views import validate

        return validate(cls, obj)

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Self:
        """JSON text validated by the class's pydantic view, as a record."""
        from memledger.record_views import validate_json

        return validate_json(cls, text)

    @classmethod
    def model_json_schema(
        cls, *, by_alias: bool = True, mode: str = "validation"
    ) -> dict[str, Any]:
        """The JSON Schema of the class (pydantic's, from its view)."""
        from memledger.record_views import json_schema

        return json_schema(cls, by_alias=by_alias, mode=mode)


# --- construction-time conversions (pydantic lax mode, where outputs depend on it) ------------


def _plan(cls: type[Record]) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    hints = typing.get_type_hints(cls)
    plan: list[tuple[str, Callable[[Any], Any]]] = []
    for name in cls.model_fields:
        convert = _converter(hints[name], f"{cls.__name__}.{name}")
        if convert is not None:
            plan.append((name, convert))
    return tuple(plan)


def _without_none(hint: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) == 1:
            return args[0], optional
    return hint, False


def _converter(hint: Any, where: str) -> Callable[[Any], Any] | None:
    inner, optional = _without_none(hint)
    convert = _single(inner, where)
    if convert is None or not optional:
        return convert
    single = convert
    return lambda value: None if value is None else single(value)


def _single(hint: Any, where: str) -> Callable[[Any], Any] | None:
    if hint is float:
        return _to_float
    if hint is int:
        return lambda value: _to_int(value, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return lambda value: value if isinstance(value, hint) else hint(value)
    if isinstance(hint, type) and issubclass(hint, Record):
        return lambda value: hint(**value) if isinstance(value, dict) else value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is list and len(args) == 1:
        item = _single(args[0], where)
        if item is None:
            return lambda value: list(value) if isinstance(value, tuple) else value
        each = item
        return lambda value: [each(v) for v in value]
    if origin is dict and len(args) == 2:
        item = _single(args[1], where)
        if item is None:
            return None
        each = item
        return lambda value: {k: each(v) for k, v in value.items()}
    return None


def _to_float(value: Any) -> Any:
    return float(value) if type(value) is int else value


def _to_int(value: Any, where: str) -> Any:
    if type(value) is float:
        if not value.is_integer():
            raise ValueError(f"{where}: {value!r} is not an integer")
        return int(value)
    return value


# --- dumping --------------------------------------------------------------------------------


def _dump_record(
    record: Record,
    json_mode: bool,
    by_alias: bool,
    exclude: set[str] | dict[str, Any] | None,
) -> dict[str, Any]:
    cls = type(record)
    out: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if info.exclude:
            continue
        key = info.alias if by_alias and info.alias is not None else name
        value = record.__dict__[name]
        if not exclude or name not in exclude:
            out[key] = _dump_value(value, json_mode, by_alias)
            continue
        nested = exclude[name] if isinstance(exclude, dict) else True
        if isinstance(nested, set | dict) and isinstance(value, Record):
            out[key] = _dump_record(value, json_mode, by_alias, nested)
    for name in cls.model_computed_fields:
        if exclude and name in exclude:
            continue
        out[name] = _dump_value(getattr(record, name), json_mode, by_alias)
    return out


def _dump_value(value: Any, json_mode: bool, by_alias: bool) -> Any:
    if isinstance(value, Record):
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
    if value is None:
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
