"""JSON Schemas of memledger's JSON outputs (what `memledger schema` prints)."""

from __future__ import annotations

import importlib
import json
from enum import StrEnum

from pydantic import BaseModel

from memledger.errors import ConfigError
from memledger.events import ParsedLog
from memledger.ledger import Ledger


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
            return ParsedLog
        case SchemaName.DIFF:
            # Imported by name: the diff model lives with the diff engine, which may be absent.
            try:
                model = importlib.import_module("memledger.diffing").LedgerDiff
            except (ImportError, AttributeError):
                raise ConfigError("the diff schema is not available in this build") from None
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ConfigError("memledger.diffing.LedgerDiff is not a pydantic model")
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
