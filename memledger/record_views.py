"""pydantic views of records: the JSON contract (validation of saved JSON, JSON Schemas).

A record's view is a pydantic model built from the record's own declaration (fields, defaults,
aliases, schema extras, computed fields, before-validators, docstring, module and name), so its
schema and its validation are those of the pydantic model the record used to be. Views are
built on first use (one per class, cached) and only here: the hot path never imports pydantic.
Views accept records as input (`from_attributes`) and validation results are turned back into
records.
"""

from __future__ import annotations

import typing
from functools import reduce
from operator import or_
from types import FunctionType, UnionType
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from memledger.record import _BEFORE, Record

R = TypeVar("R", bound=Record)

_BEHAVIOUR = (FunctionType, property, classmethod, staticmethod)
_VIEWS: dict[type[Record], type[BaseModel]] = {}
_RECORDS: dict[type[BaseModel], type[Record]] = {}


def view(cls: type[Record]) -> type[BaseModel]:
    """The pydantic model of a record class (built once)."""
    built = _VIEWS.get(cls)
    if built is not None:
        return built
    hints = typing.get_type_hints(cls, include_extras=True)
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "__annotations__": annotations,
        "model_config": ConfigDict(from_attributes=True, **cls.model_config),  # type: ignore[typeddict-item]
    }
    for name, info in cls.model_fields.items():
        annotations[name] = _view_type(hints[name])
        options: dict[str, Any] = {}
        if info.default_factory is not None:
            options["default_factory"] = info.default_factory
        elif not info.is_required():
            options["default"] = info.default
        if info.alias is not None:
            options["alias"] = info.alias
        if info.json_schema_extra is not None:
            options["json_schema_extra"] = info.json_schema_extra
        if info.exclude:
            options["exclude"] = True
        if options:
            namespace[name] = Field(**options)
    for name, prop in cls.model_computed_fields.items():
        namespace[name] = computed_field(prop)
    for klass in reversed(cls.__mro__[: cls.__mro__.index(Record)]):
        for attribute_name, attribute in klass.__dict__.items():
            function = getattr(attribute, "__func__", None)
            if function is not None and getattr(function, _BEFORE, False):
                hook: Any = classmethod(function)
                namespace[attribute_name] = model_validator(mode="before")(hook)
            elif (
                not attribute_name.startswith("__")
                and attribute_name not in namespace
                and isinstance(attribute, _BEHAVIOUR)
            ):
                namespace[attribute_name] = attribute  # methods and plain properties, so that
                # a view serialises (computed fields call them) as the record does
    metaclass: Any = type(BaseModel)
    model: type[BaseModel] = metaclass(cls.__name__, (BaseModel,), namespace)
    _VIEWS[cls] = model
    _RECORDS[model] = cls
    return model


def _view_type(hint: Any) -> Any:
    """`hint` with every record class in it replaced by its view."""
    if isinstance(hint, type) and issubclass(hint, Record):
        return view(hint)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is None or not args:
        return hint
    if origin is typing.Literal:
        return hint
    if origin is typing.Annotated:
        return typing.Annotated[_view_type(args[0]), *hint.__metadata__]
    mapped = tuple(_view_type(a) for a in args)
    if origin is UnionType:
        return reduce(or_, mapped)
    if origin is typing.Union:
        return typing.Union[mapped]  # noqa: UP007  (the form the hint had)
    return origin[mapped if len(mapped) > 1 else mapped[0]]


def to_record(value: Any) -> Any:
    """A validated view instance (and everything in it) as records."""
    if isinstance(value, BaseModel):
        cls = _RECORDS[type(value)]
        record = object.__new__(cls)
        state = record.__dict__
        for name in cls.model_fields:
            state[name] = to_record(getattr(value, name))
        return record
    if isinstance(value, list):
        return [to_record(v) for v in value]
    if isinstance(value, dict):
        return {k: to_record(v) for k, v in value.items()}
    return value


def validate(cls: type[R], obj: Any) -> R:
    """`obj` validated as `cls` (pydantic's rules and errors), returned as a record."""
    record = to_record(view(cls).model_validate(obj))
    assert isinstance(record, cls)
    return record


def validate_json(cls: type[R], text: str | bytes) -> R:
    """JSON text validated as `cls`, returned as a record."""
    record = to_record(view(cls).model_validate_json(text))
    assert isinstance(record, cls)
    return record


def json_schema(cls: type[Record], *, by_alias: bool, mode: str) -> dict[str, Any]:
    """pydantic's JSON Schema of `cls`."""
    assert mode in ("validation", "serialization"), mode
    return view(cls).model_json_schema(by_alias=by_alias, mode=mode)  # type: ignore[arg-type]
