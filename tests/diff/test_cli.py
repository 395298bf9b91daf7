"""`memledger diff` end to end on saved ledgers: formats, options, exit codes, one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from memledger.record import to_json
from tests.conftest import run_cli
from tests.diff.helpers import article_pair, check_markdown


def one_line_error(err: str, *fragments: str) -> None:
    """stderr is one `memledger: error: ...` line with every fragment, and no traceback."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("memledger: error: ")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.fixture
def saved_pair(tmp_path: Path) -> tuple[Path, Path]:
    dp16, dp2 = article_pair()
    base, head = tmp_path / "dp16.json", tmp_path / "dp2.json"
    base.write_text(to_json(dp16, indent=2))
    head.write_text(to_json(dp2, indent=2))
    return base, head


def test_help_defines_delta_pct(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["diff", "--help"], capsys)
    assert code == EXIT_OK
    assert "Δ% = (head - base) / base" in out
    for option in ("--base-rank", "--head-startup", "--head-model-config", "--max-chars"):
        assert option in out


def test_text_diff_of_two_saved_ledgers(
    saved_pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = saved_pair
    code, out, err = run_cli(["diff", str(base), str(head)], capsys)
    assert code == EXIT_OK and err == ""
    # The saved ledgers keep the paths of the logs they were built from.
    assert "base dp16: samples/dp16.log (startup #0 of 1, rank TP0, ready)" in out
    assert "base (dp16)'s state pool is larger by 10.46 GiB" in out


def test_markdown_to_file_with_marker_and_cap(
    saved_pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = saved_pair
    target = tmp_path / "comment.md"
    argv = ["diff", str(base), str(head), "--format", "markdown", "--marker", "mem:decode"]
    code, out, err = run_cli([*argv, "--max-chars", "5000", "-o", str(target)], capsys)
    assert code == EXIT_OK and out == "" and err == ""
    text = target.read_text()
    assert len(text) <= 5000
    check_markdown(text, marker="<!-- mem:decode -->")


def test_json_and_csv_formats(
    saved_pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = saved_pair
    code, out, _ = run_cli(
        ["diff", str(base), str(head), "--format", "json", "--sort", "id"], capsys
    )
    assert code == EXIT_OK
    document = json.loads(out)
    assert [r["id"] for r in document["rows"]] == sorted(r["id"] for r in document["rows"])
    code, out, _ = run_cli(["diff", str(base), str(head), "--format", "csv"], capsys)
    assert code == EXIT_OK
    records = list(csv.DictReader(io.StringIO(out)))
    assert records and records[0]["section"] == "row"


def test_labels_and_show_unchanged(
    saved_pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = saved_pair
    argv = ["diff", str(base), str(base), "--base-label", "main", "--head-label", "pr"]
    code, out, _ = run_cli([*argv, "--show-unchanged"], capsys)
    assert code == EXIT_OK
    assert "pr vs main: state pool and fixed overhead + headroom unchanged" in out
    assert "weights_resident" in out  # unchanged rows listed
    code, out, _ = run_cli([*argv, "--full"], capsys)
    assert "unchanged rows hidden (--show-unchanged)" in out
    code, out, _ = run_cli(argv, capsys)  # the short view: no row table, no mover
    assert "Largest movers: none (every row unchanged" in out
    assert "weights_resident" not in out and "Rows (sorted" not in out


def test_shared_log_options_skip_saved_ledgers_but_per_side_ones_are_refused(
    saved_pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = saved_pair
    code, _, err = run_cli(["diff", str(base), str(head), "--rank", "TP1"], capsys)
    assert code == EXIT_OK and err == ""
    code, out, err = run_cli(["diff", str(base), str(head), "--head-rank", "TP1"], capsys)
    assert code == EXIT_USAGE and out == ""
    one_line_error(err, str(head), "--rank", "saved ledger")


def test_missing_input_is_one_line_exit_3(
    saved_pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = saved_pair
    missing = tmp_path / "nope.log"
    code, out, err = run_cli(["diff", str(base), str(missing)], capsys)
    assert code == EXIT_INPUT and out == ""
    one_line_error(err, f"{missing}: no such file")


def test_json_that_is_not_a_ledger_is_exit_3(
    saved_pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = saved_pair
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    code, _, err = run_cli(["diff", str(base), str(other)], capsys)
    assert code == EXIT_INPUT
    one_line_error(err, str(other), "not a saved ledger")


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--format", "yaml"], "yaml"),
        (["--sort", "size"], "size"),
        (["--max-chars", "10"], "10"),
    ],
)
def test_bad_options_are_usage_errors(
    saved_pair: tuple[Path, Path],
    extra: list[str],
    fragment: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, head = saved_pair
    code, out, err = run_cli(["diff", str(base), str(head), *extra], capsys)
    assert code == EXIT_USAGE and out == ""
    assert fragment in err and "Traceback" not in err


def test_bad_marker_is_a_usage_error(
    saved_pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = saved_pair
    argv = ["diff", str(base), str(head), "--format", "markdown", "--marker", "a--b"]
    code, _, err = run_cli(argv, capsys)
    assert code == EXIT_USAGE
    one_line_error(err, "marker")


def test_stdin_for_both_sides_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["diff", "-", "-"], capsys)
    assert code == EXIT_USAGE and out == ""
    assert "only one of BASE and HEAD" in err
