"""memledger.record: the data classes without pydantic on the hot path, pydantic for the JSON
contract. The JSON a record writes is the JSON pydantic writes for the same model (every sample
and real log, every JSON document), and a text command never imports pydantic."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError

from memledger.api import check, diagnose, diff, ledger, load, whatif
from memledger.diagnosis.model import Diagnosis
from memledger.input.facts import parse_document
from memledger.model.check import CheckReport
from memledger.model.events import Event, EventKind, RankInfo
from memledger.model.ledger import Interval, Ledger
from memledger.model.parse import ParseDocument
from memledger.record import FrozenInstanceError, Record
from memledger.record_views import view
from memledger.render.diff_json import diff_document
from memledger.render.schema import output_schema
from memledger.units import Size
from tests.conftest import SAMPLES, real_log_paths

LOGS = [SAMPLES / "dp2.log", SAMPLES / "dp16.log", *real_log_paths()]
BUDGET = SAMPLES / "budget.toml"


def _pydantic_json(record: Record, *, by_alias: bool = False) -> str:
    """What pydantic writes for this record: its view validated from it, then dumped."""
    model: BaseModel = view(type(record)).model_validate(record)
    return model.model_dump_json(indent=2, by_alias=by_alias)


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem[:40])
def test_json_is_pydantics_byte_for_byte(log: Path) -> None:
    built = ledger(log)
    mine = built.model_dump_json(indent=2, by_alias=True)
    assert mine == _pydantic_json(built, by_alias=True)
    document = parse_document(load(log))
    assert document.model_dump_json(indent=2) == _pydantic_json(document)
    report = check(log, BUDGET, today=date(2026, 12, 1))
    assert report.model_dump_json(indent=2) == _pydantic_json(report)
    found = diagnose(log)
    assert found.model_dump_json(indent=2) == _pydantic_json(found)
    # and what was written validates against the published schema, and reads back equal
    Draft202012Validator(output_schema("ledger")).validate(json.loads(mine))
    assert Ledger.model_validate_json(mine) == built


def test_diff_and_whatif_json_are_pydantics() -> None:
    document = diff_document(diff(SAMPLES / "dp16.log", SAMPLES / "dp2.log"))
    assert document.model_dump_json(indent=2) == _pydantic_json(document)
    answer = whatif(SAMPLES / "dp16.log", mem_fraction_static=0.85)
    assert answer.model_dump_json(indent=2) == _pydantic_json(answer)


def test_floats_are_written_as_pydantic_writes_them() -> None:
    from pydantic_core import to_json

    for value in (1e-7, 1e-6, 1.5e-5, 1.23456e-5, 1e-4, 0.1, 1.0, -2.5e-6, 1e16, 1.5e300, -0.0):
        size = RankInfo(rank="TP0", n_events=1, key_values={"x": value})
        assert size.model_dump_json() == to_json(view(RankInfo).model_validate(size)).decode()
    inf = RankInfo(rank="TP0", n_events=1, key_values={"x": float("inf")})
    assert inf.model_dump_json() == view(RankInfo).model_validate(inf).model_dump_json()


def test_construction_converts_as_pydantic_did() -> None:
    event = Event(kind="oom", line=3.0, rank="TP0", sizes={"a": {"bytes": 1, "gib": 9.0}})
    assert event.kind is EventKind.OOM
    assert type(event.line) is int
    assert event.sizes["a"] == Size(bytes=1)
    with pytest.raises(ValueError, match="not an integer"):
        Event(kind=EventKind.OOM, line=2.5, rank="")
    interval = Interval(**{"from": "a", "to": "b"}, drop_bytes=1, logged_bytes=1, named_bytes=0)
    assert interval == Interval(from_id="a", to_id="b", drop_bytes=1, logged_bytes=1, named_bytes=0)
    assert interval.model_dump(by_alias=True)["from"] == "a"


def test_records_are_frozen_and_strict() -> None:
    size = Size(bytes=5, text="5 B")
    with pytest.raises(FrozenInstanceError):
        size.bytes = 6
    with pytest.raises(TypeError, match="unknown field"):
        Size(bytes=5, byte=6)
    with pytest.raises(TypeError, match="missing field 'bytes'"):
        Size(text="x")
    assert size.model_copy(update={"bytes": 6}).bytes == 6
    assert size.bytes == 5
    assert {size: 1}[Size(bytes=5, text="5 B")] == 1


def test_validation_is_pydantics_and_gives_records() -> None:
    saved = ledger(SAMPLES / "dp2.log").model_dump(mode="json", by_alias=True)
    again = Ledger.model_validate(saved)
    assert type(again) is Ledger and type(again.rows[0]).__name__ == "Row"
    assert isinstance(again.rows[0], Record)
    with pytest.raises(ValidationError):
        Ledger.model_validate({**saved, "surprise": 1})
    with pytest.raises(ValidationError):
        Size.model_validate({"bytes": "many"})
    for model in (Ledger, ParseDocument, Diagnosis, CheckReport):
        assert not issubclass(model, BaseModel)


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
    assert _modules_after(argv, ("pydantic",)) == []


@pytest.mark.parametrize("command", ["ledger", "parse", "diagnose"])
def test_a_json_command_imports_neither_pydantic_nor_tabulate(command: str) -> None:
    argv = [command, str(SAMPLES / "dp2.log"), "--format", "json"]
    assert _modules_after(argv, ("pydantic", "tabulate")) == []
