"""JSON Schemas of memledger's JSON outputs (what `memledger schema` prints)."""

from __future__ import annotations

import importlib
import json
from enum import StrEnum

from pydantic import BaseModel

from memledger.errors import ConfigError
from memledger.ledger_model import Ledger


class SchemaName(StrEnum):
    """The documents memledger writes as JSON."""

    LEDGER = "ledger"
    """`memledger ledger --format json`."""
    PARSE = "parse"
    """`memledger parse --format json`."""
    DIFF = "diff"
    """`memledger diff --format json`."""


def schema_model(name: SchemaName) -> type[BaseModel]:
    """The pydantic model behind a JSON output."""
    match name:
        case SchemaName.LEDGER:
            return Ledger
        case SchemaName.PARSE:
            return _model("memledger.parse_report", "ParseDocument")
        case SchemaName.DIFF:
            return _model("memledger.diffing", "LedgerDiff")


def _model(module: str, name: str) -> type[BaseModel]:
    # Imported by name: these models live with their commands, outside the renderer layer.
    try:
        model = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise ConfigError(f"{module}.{name} is not available in this build") from None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ConfigError(f"{module}.{name} is not a pydantic model")
    return model


def render_schema(name: str) -> str:
    """The JSON Schema (serialisation view: what the output contains) as indented JSON."""
    try:
        chosen = SchemaName(name)
    except ValueError:
        choices = ", ".join(item.value for item in SchemaName)
        raise ConfigError(f"unknown schema {name!r}; choose one of {choices}") from None
    schema = schema_model(chosen).model_json_schema(by_alias=True, mode="serialization")
    return json.dumps(schema, indent=2) + "\n"
