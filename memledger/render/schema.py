"""JSON Schemas of memledger's JSON outputs (what `memledger schema` prints)."""

from __future__ import annotations

import json
from enum import StrEnum

from pydantic import BaseModel

from memledger.diagnosis.model import Diagnosis
from memledger.ledger_model import Ledger
from memledger.parse_document import ParseDocument
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


def schema_model(name: SchemaName) -> type[BaseModel]:
    """The pydantic model behind a JSON output."""
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


def render_schema(name: str) -> str:
    """The JSON Schema (serialisation view: what the output contains) as indented JSON."""
    model = schema_model(choose(SchemaName, name, "schema"))
    schema = model.model_json_schema(by_alias=True, mode="serialization")
    return json.dumps(schema, indent=2) + "\n"
