"""`memledger schema NAME`: a JSON Schema (2020-12, a versioned $id) for every versioned JSON
output, which that output validates against, and which lets later versions add fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from memledger.render.schema import SchemaName
from tests.conftest import SAMPLES, run_cli

DP16 = str(SAMPLES / "dp16.log")
DP2 = str(SAMPLES / "dp2.log")
CONFIG = str(SAMPLES / "k3-config.json")
BUDGET = str(SAMPLES / "budget.toml")
COMMANDS = {
    SchemaName.LEDGER: ["ledger", DP2, "--model-config", CONFIG],
    SchemaName.PARSE: ["parse", DP2],
    SchemaName.DIFF: ["diff", DP16, DP2, "--model-config", CONFIG],
    SchemaName.DIAGNOSE: ["diagnose", "{oom}"],
    SchemaName.WHATIF: ["whatif", DP16, "--set", "mem_fraction_static=0.85"],
    SchemaName.CHECK: ["check", DP2, "--budget", BUDGET, "--baseline", DP16],
    SchemaName.AGAINST_RELEASE: ["diff", DP16, "--against-release", "0.5.2"],
}


# pasted error text (diagnose reads any rank's): a diagnosis with findings and suggestions
OOM_TEXT = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 812.00 MiB is free.\n"
)


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = run_cli([*argv, "--format", "json"], capsys)
    assert code in {0, 1}, err  # check: dp2 breaches the sample budget (exit 1)
    return json.loads(out)


def _schema(name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run_cli(["schema", name], capsys)
    assert code == 0
    schema: dict[str, Any] = json.loads(out)
    return schema


def _walk(node: Any) -> list[Any]:
    found = [node]
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
    for child in children:
        found.extend(_walk(child))
    return found


@pytest.mark.parametrize("name", list(COMMANDS), ids=lambda n: n.value)
def test_each_json_output_validates_against_its_schema(
    name: SchemaName, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    schema = _schema(name.value, capsys)
    Draft202012Validator.check_schema(schema)
    oom = tmp_path / "oom.txt"
    oom.write_text(OOM_TEXT)
    document = _json([arg.format(oom=oom) for arg in COMMANDS[name]], capsys)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert isinstance(document["schema_version"], int)  # every JSON output is versioned
    version = f":v{document['schema_version']}"
    assert schema["$id"] == f"urn:memledger:schema:{name.value}{version}"
    errors = list(Draft202012Validator(schema).iter_errors(document))
    assert errors == [], [e.message for e in errors[:3]]
    # a later version's added field (here and in a nested object) must not fail a consumer
    document["added_later"] = 1
    nested = next(node for node in _walk(document)[1:] if isinstance(node, dict))
    nested["added_later"] = 1
    assert list(Draft202012Validator(schema).iter_errors(document)) == []
    # and the schema still checks what is there: a wrong type is caught
    document["schema_version"] = "one"
    assert list(Draft202012Validator(schema).iter_errors(document)) != []


def test_no_object_in_a_schema_forbids_added_fields(capsys: pytest.CaptureFixture[str]) -> None:
    for name in SchemaName:
        closed = [
            node
            for node in _walk(_schema(name.value, capsys))
            if isinstance(node, dict) and node.get("additionalProperties") is False
        ]
        assert closed == [], name
