"""memledger.record: records are stdlib data classes; the JSON memledger writes for one is the
JSON pydantic's TypeAdapter writes for it (every sample and real log, every JSON document), and a
command that validates nothing never imports pydantic."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import warnings
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError
from pydantic_core import to_json as pydantic_core_json

from memledger.api import check, diagnose, diff, ledger, load, whatif
from memledger.diagnosis.model import Diagnosis
from memledger.input.facts import parse_document
from memledger.model.check import CheckReport
from memledger.model.events import RankInfo
from memledger.model.ledger import Interval, Ledger
from memledger.model.parse import ParseDocument
from memledger.record import adapter, computed_names, to_dict, to_json, validate, validate_json
from memledger.render.diff_json import diff_document
from memledger.render.schema import output_schema
from memledger.units import Size
from tests.conftest import REAL_LOGS_VLLM, SAMPLES, real_log_paths, vllm_manifest

LOGS = [SAMPLES / "dp2.log", SAMPLES / "dp16.log", *real_log_paths()]
VLLM_LOGS = [REAL_LOGS_VLLM / entry["file"] for entry in vllm_manifest()]
BUDGET = SAMPLES / "budget.toml"


def _pydantic_json(value: Any, *, by_alias: bool = False) -> str:
    """What pydantic's TypeAdapter writes for this record; a value of another type than its
    field declares (an int in a float field) is a warning, here an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dumped = adapter(type(value)).dump_json(value, indent=2, by_alias=by_alias)
    return dumped.decode()


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem[:40])
def test_json_is_pydantics_byte_for_byte(log: Path) -> None:
    built = ledger(log)
    mine = to_json(built, indent=2, by_alias=True)
    assert mine == _pydantic_json(built, by_alias=True)
    document = parse_document(load(log))
    assert to_json(document, indent=2) == _pydantic_json(document)
    report = check(log, BUDGET, today=date(2026, 12, 1))
    assert to_json(report, indent=2) == _pydantic_json(report)
    found = diagnose(log)
    assert to_json(found, indent=2) == _pydantic_json(found)
    # and what was written validates against the published schema, and reads back equal
    Draft202012Validator(output_schema("ledger")).validate(json.loads(mine))
    assert validate_json(Ledger, mine) == built


@pytest.mark.parametrize("log", VLLM_LOGS, ids=lambda p: p.stem[:40])
def test_a_vllm_logs_json_is_pydantics_byte_for_byte(log: Path) -> None:
    built = ledger(log)
    assert to_json(built, indent=2, by_alias=True) == _pydantic_json(built, by_alias=True)
    found = diagnose(log)
    assert to_json(found, indent=2) == _pydantic_json(found)


def test_diff_and_whatif_json_are_pydantics() -> None:
    document = diff_document(diff(SAMPLES / "dp16.log", SAMPLES / "dp2.log"))
    assert to_json(document, indent=2) == _pydantic_json(document)
    answer = whatif(SAMPLES / "dp16.log", mem_fraction_static=0.85)
    assert to_json(answer, indent=2) == _pydantic_json(answer)


def test_floats_are_written_as_pydantic_writes_them() -> None:
    for value in (1e-7, 1e-6, 1.5e-5, 1.23456e-5, 1e-4, 0.1, 1.0, -2.5e-6, 1e16, 1.5e300, -0.0):
        info = RankInfo(rank="TP0", n_events=1, key_values={"x": value})
        assert to_json(info) == pydantic_core_json(to_dict(info, mode="json")).decode()
        assert to_json(info) == _pydantic_json(info).replace("\n", "").replace(" ", "")
    inf = RankInfo(rank="TP0", n_events=1, key_values={"x": float("inf")})
    assert to_json(inf) == adapter(RankInfo).dump_json(inf).decode()


def test_aliases_and_computed_fields() -> None:
    interval = Interval(from_id="a", to_id="b", drop_bytes=1, logged_bytes=1, named_bytes=0)
    assert to_dict(interval, by_alias=True)["from"] == "a"
    assert "from_id" in to_dict(interval)
    assert validate(Interval, {**to_dict(interval, by_alias=True)}) == interval
    size = Size(bytes=1 << 30)
    assert to_dict(size) == {"bytes": 1 << 30, "half_ulp": 0, "text": "", "gib": 1.0}
    assert computed_names(Size) == ("gib",)


def test_records_are_frozen_keyword_only_and_slotted() -> None:
    size = Size(bytes=5, text="5 B")
    with pytest.raises(dataclasses.FrozenInstanceError):
        size.bytes = 6  # type: ignore[misc]
    with pytest.raises(TypeError):
        Size(5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="byte"):
        Size(bytes=5, byte=6)  # type: ignore[call-arg]
    assert not hasattr(size, "__dict__")
    assert dataclasses.replace(size, bytes=6).bytes == 6
    assert size.bytes == 5
    assert {size: 1}[Size(bytes=5, text="5 B")] == 1


def test_validation_is_pydantics_and_gives_records() -> None:
    saved = to_dict(ledger(SAMPLES / "dp2.log"), mode="json", by_alias=True)
    again = validate(Ledger, saved)
    assert type(again) is Ledger and type(again.rows[0]).__name__ == "Row"
    assert again.summary.usable is not None and type(again.checkpoints[0].avail_bytes) is int
    with pytest.raises(ValidationError, match="surprise"):
        validate(Ledger, {**saved, "surprise": 1})
    with pytest.raises(ValidationError, match="bytes"):
        validate(Size, {"bytes": "many"})
    without_groups = {k: v for k, v in saved.items() if k != "groups"}
    assert validate(Ledger, without_groups).groups == again.groups  # computed from the rows
    for model in (Ledger, ParseDocument, Diagnosis, CheckReport):
        assert dataclasses.is_dataclass(model)


def _modules_after(argv: list[str], families: tuple[str, ...]) -> list[str]:
    """The modules of these packages a fresh `memledger ARGV` process imported."""
    code = (
        "import json, os, sys\n"
        "from memledger.cli import main\n"
        "sys.stdout = open(os.devnull, 'w')\n"
        f"main({argv!r})\n"
        f"names = sorted(m for m in sys.modules if m.split('.')[0] in {families!r})\n"
        "sys.stderr.write(json.dumps(names))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    found: list[str] = json.loads(result.stderr.strip().splitlines()[-1])
    return found


@pytest.mark.parametrize(
    "argv",
    [
        ["ledger", str(SAMPLES / "dp2.log")],
        ["parse", str(SAMPLES / "dp2.log")],
        ["diff", str(SAMPLES / "dp16.log"), str(SAMPLES / "dp2.log")],
        ["check", str(SAMPLES / "dp2.log"), "--budget", str(BUDGET)],
    ],
    ids=lambda argv: argv[0],
)
def test_a_text_command_never_imports_pydantic(argv: list[str]) -> None:
    assert _modules_after(argv, ("pydantic", "pydantic_core")) == []


@pytest.mark.parametrize("command", ["ledger", "parse", "diagnose"])
def test_a_json_command_imports_neither_pydantic_nor_tabulate(command: str) -> None:
    argv = [command, str(SAMPLES / "dp2.log"), "--format", "json"]
    assert _modules_after(argv, ("pydantic", "pydantic_core", "tabulate")) == []
