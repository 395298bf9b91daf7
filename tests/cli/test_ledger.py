"""`memledger ledger` and `memledger schema` end to end: exit codes, one-line errors, real logs."""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memledger.app.fleet import LOG_RULE
from memledger.app.load import load_ledger
from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.model.ledger import Ledger
from memledger.record import json_schema, to_json, validate_json
from memledger.render import render_ledger
from tests.conftest import PROJECT_ROOT, SAMPLES, real_log_paths, run_cli
from tests.render.helpers import markdown_tables, small_ledger


def assert_one_line_error(err: str, *fragments: str) -> None:
    """stderr is exactly one `memledger: error: ...` line containing every fragment."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("memledger: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def saved_ledger(tmp_path: Path) -> Path:
    path = tmp_path / "saved.json"
    path.write_text(render_ledger(small_ledger(), "json"))
    return path


def _write_json(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(document))
    return path


# --- bad inputs: one line, documented exit code ----------------------------------------------


def test_missing_file_is_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.log"
    code, out, err = run_cli(["ledger", str(missing)], capsys)
    assert code == EXIT_INPUT and out == ""
    assert_one_line_error(err, f"{missing}: no such file")


def test_directory_without_logs_is_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a folder is the fleet view (issue 13, tests/cli/test_fleet.py); one without logs: exit 3
    code, _, err = run_cli(["ledger", str(tmp_path)], capsys)
    assert code == EXIT_INPUT
    assert_one_line_error(err, str(tmp_path), f"a folder without logs ({LOG_RULE})")


def test_bad_format_is_usage_error(saved_ledger: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["ledger", str(saved_ledger), "--format", "yaml"], capsys)
    assert code == EXIT_USAGE and out == ""
    assert "'yaml' is not one of 'text', 'markdown', 'json', 'csv'" in err
    assert "Traceback" not in err


def test_unknown_explain_row_lists_valid_ids(
    saved_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["ledger", str(saved_ledger), "--explain", "nope"], capsys)
    assert code == EXIT_USAGE and out == ""
    assert_one_line_error(err, "no row 'nope'", "req_to_token", "kv_pool", "draft_slot_map")


def test_log_options_on_a_saved_ledger_are_refused(
    saved_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["ledger", str(saved_ledger), "--rank", "TP1", "--startup", "0"], capsys)
    assert code == EXIT_USAGE
    assert_one_line_error(err, "--rank, --startup cannot apply to a saved ledger")


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ({"schema_version": 99, "rows": []}, "schema_version 99; this memledger reads version 2"),
        ({"schema_version": 1, "rows": []}, "not a valid saved ledger: source: Field required"),
        ({"events": []}, "JSON, but not a saved ledger"),
    ],
)
def test_bad_saved_ledgers_are_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: Any, fragment: str
) -> None:
    path = _write_json(tmp_path, document)
    code, _, err = run_cli(["ledger", str(path)], capsys)
    assert code == EXIT_INPUT
    assert_one_line_error(err, str(path), fragment)


def test_unwritable_output_is_usage_error(
    saved_ledger: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no-such-dir" / "out.txt"
    code, _, err = run_cli(["ledger", str(saved_ledger), "-o", str(target)], capsys)
    assert code == EXIT_USAGE
    assert_one_line_error(err, str(target), "cannot write output")


# --- saved ledgers: the same report as the ledger they hold ----------------------------------


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "csv"])
def test_saved_ledger_renders_like_the_original(
    saved_ledger: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    code, out, err = run_cli(["ledger", str(saved_ledger), "--format", fmt], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out == render_ledger(small_ledger(), fmt)


def test_output_file_and_stdin(
    saved_ledger: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "out.csv"
    code, out, _ = run_cli(
        ["ledger", str(saved_ledger), "--format", "csv", "-o", str(target)], capsys
    )
    assert (code, out) == (EXIT_OK, "")
    assert len(list(csv.DictReader(target.open()))) == len(small_ledger().rows)

    stdin = io.TextIOWrapper(io.BytesIO(saved_ledger.read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run_cli(["ledger", "-", "--explain", "req_to_token"], capsys)
    assert code == EXIT_OK
    assert "209 rows x 1048580 cols x 4 B = 876,612,880 B" in out


def test_load_ledger_reads_saved_json_with_leading_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_text("\n  " + to_json(small_ledger(), by_alias=True))
    assert load_ledger(path) == small_ledger()
    assert load_ledger(io.BytesIO(path.read_bytes())) == small_ledger()


# --- schema ----------------------------------------------------------------------------------


def test_schema_command_prints_the_schema_of_each_json_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memledger.model.parse import ParseDocument
    from memledger.render.diff_json import DiffDocument

    # the model's serialisation schema, named ($schema, $id) and open to added fields
    # (tests/render/test_schemas.py validates each output against it)
    code, out, _ = run_cli(["schema"], capsys)
    assert code == EXIT_OK
    for name, model in (("ledger", Ledger), ("parse", ParseDocument), ("diff", DiffDocument)):
        code, named, _ = run_cli(["schema", name], capsys)
        assert code == EXIT_OK
        printed = json.loads(named)
        expected = json_schema(model, mode="serialization")
        assert printed["properties"] == expected["properties"]
        assert printed["required"] == expected["required"]
        assert set(printed["$defs"]) == set(expected["$defs"])
        assert printed["$id"].startswith(f"urn:memledger:schema:{name}:v")
        if name == "ledger":
            assert json.loads(out) == printed  # the default
    code, _, err = run_cli(["schema", "budget"], capsys)
    assert code == EXIT_USAGE and "'budget' is not one of" in err


def test_parse_schema_describes_what_parse_json_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = next(path for path in real_log_paths() if "001-docker" in path.name)
    code, out, _ = run_cli(["parse", str(log), "--format", "json"], capsys)
    assert code == EXIT_OK
    document = json.loads(out)
    code, out, _ = run_cli(["schema", "parse"], capsys)
    properties = json.loads(out)["properties"]
    assert set(document) == set(properties)


# --- layering --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("memledger.engine", ("click", "lark", "tabulate")),
        ("memledger.render", ("click", "lark")),
        ("memledger.render.schema", ("click", "lark")),
    ],
)
def test_engine_and_renderers_import_neither_click_nor_lark(
    module: str, forbidden: tuple[str, ...]
) -> None:
    # A fresh interpreter per module, so one module's imports cannot hide another's.
    probe = (
        f"import sys, {module}\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {forbidden!r}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


COMMAND_MODULES = ["parse", "ledger", "diff", "check", "schema"]
# A command module declares options and calls its flow module (memledger.app.<command>); its
# choices come from the render registries, its epilog from the exit-code table.
ALLOWED_IMPORTS = {"__future__", "pathlib", "datetime", "click", "memledger.app.options"}
ALLOWED_IMPORTS |= {"memledger.app.emit"} | {f"memledger.app.{name}" for name in COMMAND_MODULES}
ALLOWED_IMPORTS |= {"memledger.render", "memledger.render.parse", "memledger.render.check"}
ALLOWED_IMPORTS |= {"memledger.render.diff_formats", "memledger.render.diff_markdown"}
ALLOWED_IMPORTS |= {"memledger.render.schema", "memledger.errors"}
# The shared option declarations; the test below holds that module to click, the stdlib and
# the LoadOptions its load options stand for.
ALLOWED_IMPORTS |= {"memledger.commands.options"}
OPTIONS_MODULE_IMPORTS = {"__future__", "collections.abc", "pathlib", "typing", "click"}
OPTIONS_MODULE_IMPORTS |= {"functools", "memledger.app.options"}


def _imports(path: Path) -> set[str | None]:
    tree = ast.parse(path.read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    return imported | {
        alias.name for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names
    }


def test_shared_options_module_only_declares_click_options() -> None:
    path = PROJECT_ROOT / "memledger" / "commands" / "options.py"
    assert _imports(path) <= OPTIONS_MODULE_IMPORTS
    tree = ast.parse(path.read_text())
    assert not any(isinstance(n, ast.If | ast.For | ast.While | ast.Try) for n in ast.walk(tree))


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_commands_only_parse_options_and_call_one_function(name: str) -> None:
    path = PROJECT_ROOT / "memledger" / "commands" / f"{name}.py"
    tree = ast.parse(path.read_text())
    assert _imports(path) <= ALLOWED_IMPORTS
    commands = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert len(commands) == 1
    body = [
        stmt
        for stmt in commands[0].body
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
    ]
    # One statement: `return emit(run_<command>(<Command>Options(...)), output)`.
    assert len(body) == 1
    assert isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call)
    assert getattr(body[0].value.func, "id", None) == "emit"
    (run,) = body[0].value.args[:1]
    assert isinstance(run, ast.Call) and getattr(run.func, "id", "").startswith("run_")
    assert not any(isinstance(n, ast.If | ast.For | ast.While | ast.Try) for n in ast.walk(tree))


# --- real logs and samples (need the parser and engine) --------------------------------------


@pytest.mark.parametrize("log", real_log_paths(), ids=lambda path: path.name)
def test_every_real_log_gives_a_ledger_or_one_documented_error(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["ledger", str(log)], capsys)
    assert "Traceback" not in err
    if code == EXIT_OK:
        assert err == ""
        assert "\noutcome: " in out
    else:
        assert code == EXIT_INPUT
        assert_one_line_error(err, str(log))


def test_unknown_rank_is_input_error(capsys: pytest.CaptureFixture[str]) -> None:
    log = real_log_paths()[0]
    code, _, err = run_cli(["ledger", str(log), "--rank", "TP99"], capsys)
    assert code == EXIT_INPUT
    assert_one_line_error(err, "TP99")


def test_json_of_a_real_log_round_trips_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = next(path for path in real_log_paths() if "001-docker" in path.name)
    saved = tmp_path / "base.json"
    assert run_cli(["ledger", str(log), "--format", "json", "-o", str(saved)], capsys)[0] == EXIT_OK
    assert load_ledger(saved) == load_ledger(log)
    assert run_cli(["ledger", str(saved)], capsys)[1] == run_cli(["ledger", str(log)], capsys)[1]


def test_explain_req_to_token_on_the_dp2_sample(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["ledger", str(SAMPLES / "dp2.log"), "--explain", "req_to_token"], capsys
    )
    assert code == EXIT_OK
    # 192 running requests + 16 decode extra slots + 1 padding slot = 209 rows of 4-byte entries.
    arithmetic = out.split("Arithmetic\n", 1)[1].splitlines()[0]
    assert arithmetic.strip().startswith("209 ")
    assert " x 4 B = " in arithmetic


@pytest.mark.parametrize("log", real_log_paths(), ids=lambda path: path.name)
def test_every_real_log_renders_in_every_format_and_explains_every_row(log: Path) -> None:
    ledger = load_ledger(log)
    assert validate_json(Ledger, render_ledger(ledger, "json")) == ledger
    records = list(csv.DictReader(io.StringIO(render_ledger(ledger, "csv"))))
    assert [record["id"] for record in records] == [row.id for row in ledger.rows]
    markdown = render_ledger(ledger, "markdown")
    assert f"- **outcome**: {ledger.outcome}" in markdown
    tables = markdown_tables(markdown)
    assert len(tables) >= 2  # rows and summary at least
    for table in tables:
        assert len({len(row) for row in table}) == 1, "ragged markdown table"
    for row in ledger.rows:
        explanation = render_ledger(ledger, "text", explain=row.id)
        assert explanation.startswith(f"{row.id}: ")
        if row.kind.value == "residual" and row.interval:
            assert "= unexplained" in explanation


def test_rank_option_selects_another_rank(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["ledger", str(SAMPLES / "dp16.log"), "--rank", "DP3 TP3 EP3"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert re.search(r"^rank: +DP3 TP3 EP3$", out, re.MULTILINE)


def test_a_log_that_starts_with_a_brace_is_still_parsed_as_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "brace.log"
    path.write_text('{"not": "closed"\nplain text\n')
    code, _, err = run_cli(["ledger", str(path)], capsys)
    assert code == EXIT_INPUT
    assert_one_line_error(err, str(path), "no SGLang log lines")
