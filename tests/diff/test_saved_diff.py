"""A saved diff renders again (review newcomer-2 m8, infracost's `output --format`):
`memledger diff d.json --format F` reads the JSON `diff --format json` wrote, as untrusted input
(bounded, validated by pydantic, every Δ checked against its sides), one line and exit 3 when it
is not valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from tests.conftest import SAMPLES, run_cli

BASE, HEAD, CONFIG = SAMPLES / "dp16.log", SAMPLES / "dp2.log", SAMPLES / "k3-config.json"
PAIR: list[str | Path] = [BASE, HEAD, "--model-config", CONFIG]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saved") / "d.json"
    from memledger.cli import main

    assert main(["diff", *map(str, PAIR), "--format", "json", "-o", str(path)]) == EXIT_OK
    return path


@pytest.mark.parametrize("fmt", ["text", "json", "csv"])
def test_a_saved_diff_renders_as_the_logs_diff_did(
    saved: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, from_logs, _ = run_cli(["diff", *PAIR, "--format", fmt, "--full"], capsys)
    assert code == EXIT_OK
    code, again, err = run_cli(["diff", saved, "--format", fmt, "--full"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert again == from_logs


def test_markdown_again_lacks_only_the_timeline_the_ledgers_draw(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import memledger
    from memledger.render.diff_markdown import render_diff_markdown

    code, again, _ = run_cli(["diff", saved, "--format", "markdown"], capsys)
    assert code == EXIT_OK
    diff = memledger.diff(BASE, HEAD, model_config=CONFIG)
    assert again == render_diff_markdown(diff)  # without the two ledgers: no timeline
    assert "Free GiB at each checkpoint" not in again
    assert again.splitlines()[1].startswith("**memledger diff** · dp2 vs dp16: ")


def test_labels_rename_the_sides_and_what_a_diff_is_made_of_is_refused(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["diff", saved, "--base-label", "old", "--head-label", "new"], capsys)
    assert code == EXIT_OK and out.startswith("new vs old: ")
    for option in (["--rank", "TP1"], ["--head-startup", "0"], ["--gpu-memory-mib", "81559"]):
        code, out, err = run_cli(["diff", saved, *option], capsys)
        assert code == EXIT_USAGE and out == ""
        assert err == (
            f"memledger: error: {option[0]}: a saved diff is rendered as it was made; diff the "
            "logs again to change what it compares\n"
        )
    # a saved diff is no side of another diff, nor a ledger
    argvs: list[list[str | Path]] = [["diff", saved, HEAD], ["ledger", saved], ["parse", saved]]
    for argv in argvs:
        code, out, err = run_cli(argv, capsys)
        assert code == EXIT_INPUT and out == ""
        assert err == (
            f"memledger: error: {saved}: a saved diff, not a log or a ledger "
            "(`memledger diff FILE --format F` renders it again)\n"
        )


def _edited(saved: Path, tmp_path: Path, edit: Any) -> Path:
    document = json.loads(saved.read_text())
    edit(document)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document))
    return path


def _set(*path: Any, value: Any) -> Any:
    def edit(document: Any) -> None:
        for key in path[:-1]:
            document = document[key]
        document[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("schema_version", value=7), "saved diff has schema_version 7; this memledger reads"),
        (
            _set("inputs", "base", "label", value="dp\x1b[2J16"),
            "not a valid saved diff: inputs.base.label holds control character U+001B",
        ),
        (
            _set("rows", 0, "base_bytes", value="many"),
            "not a valid saved diff: rows.0.base_bytes: Input should be a valid integer",
        ),
        (_set("forged", value=1), "not a valid saved diff: forged: Extra inputs are not permitted"),
        (
            _set("inputs", "base", "label", value="x" * 20_000),
            "not a valid saved diff: inputs.base.label holds a string of 20,000 characters",
        ),
    ],
)
def test_a_bad_saved_diff_is_one_line_and_exit_3(
    saved: Path, tmp_path: Path, edit: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _edited(saved, tmp_path, edit)
    code, out, err = run_cli(["diff", path, "--format", "markdown"], capsys)
    assert code == EXIT_INPUT and out == ""
    assert err.startswith(f"memledger: error: {path}: {message}") and err.count("\n") == 1


def test_a_delta_its_sides_do_not_give_is_refused(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def forge(document: Any) -> None:
        row = next(r for r in document["rows"] if r["id"] == "kv_pool")
        row["delta_bytes"] += 1

    path = _edited(saved, tmp_path, forge)
    code, out, err = run_cli(["diff", path], capsys)
    assert code == EXIT_INPUT and out == ""
    assert err.startswith(f"memledger: error: {path}: saved diff is inconsistent: 'kv_pool' has Δ ")
