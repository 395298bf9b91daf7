"""JSON Schemas of memledger's JSON outputs (what `memledger schema` prints)."""

from __future__ import annotations

import json
from dataclasses import fields
from enum import StrEnum
from typing import Any

from memledger.compare.upgrade_models import AgainstRelease
from memledger.diagnosis.model import Diagnosis
from memledger.model.check import CheckReport
from memledger.model.ledger import Ledger
from memledger.model.parse import ParseDocument
from memledger.record import json_schema
from memledger.render.diff_json import DiffDocument
from memledger.render.formats import choose
from memledger.sizing.whatif import WhatIf


class SchemaName(StrEnum):
    """The documents memledger writes as JSON."""

    LEDGER = "ledger"
    """`memledger ledger --format json`."""
    PARSE = "parse"
    """`memledger parse --format json`."""
    DIFF = "diff"
    """`memledger diff --format json`."""
    DIAGNOSE = "diagnose"
    """`memledger diagnose --format json`."""
    WHATIF = "whatif"
    """`memledger whatif --format json`."""
    CHECK = "check"
    """`memledger check --format json`."""
    AGAINST_RELEASE = "against-release"
    """`memledger diff LOG --against-release X --format json`."""


def schema_model(name: SchemaName) -> type[Any]:
    """The model behind a JSON output (its schema is its pydantic view's)."""
    match name:
        case SchemaName.LEDGER:
            return Ledger
        case SchemaName.PARSE:
            return ParseDocument
        case SchemaName.DIFF:
            return DiffDocument
        case SchemaName.DIAGNOSE:
            return Diagnosis
        case SchemaName.WHATIF:
            return WhatIf
        case SchemaName.CHECK:
            return CheckReport
        case SchemaName.AGAINST_RELEASE:
            return AgainstRelease


JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The dialect pydantic writes (`$defs`, `prefixItems`)."""


def output_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one JSON output (the serialisation view: what the output contains),
    named by `$schema` and a versioned `$id`, and open to the fields later versions add.

    The models forbid unknown fields when memledger reads a document back (a saved ledger is
    validated strictly); a consumer of the output must not: `schema_version` promises that fields
    may be added and none removed, so `additionalProperties: false` is left out here.
    """
    chosen = choose(SchemaName, name, "schema")
    model = schema_model(chosen)
    schema = _open(json_schema(model, mode="serialization"))
    versioned = {f.name: f for f in fields(model)}.get("schema_version")
    version = "" if versioned is None else f":v{versioned.default}"
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "$id": f"urn:memledger:schema:{chosen.value}{version}",
        **schema,
    }


def _open(node: Any) -> Any:
    """The schema without `additionalProperties: false`, at every depth."""
    if isinstance(node, dict):
        return {
            key: _open(value)
            for key, value in node.items()
            if not (key == "additionalProperties" and value is False)
        }
    if isinstance(node, list):
        return [_open(item) for item in node]
    return node


def render_schema(name: str) -> str:
    """`output_schema` as indented JSON."""
    return json.dumps(output_schema(name), indent=2) + "\n"
