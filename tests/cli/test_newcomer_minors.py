"""The second newcomer review's minor findings, each as the user met it: a did-you-mean for
--explain (m6), whatif's one-line answer when it cannot model the log and its hint without
--set (m5), no state-pool 'larger by' beside a partial side (m4), the verdict in the diff JSON
(m8), the fleet view's --full and its 'free' column on a stopped startup (m9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.errors import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from tests.conftest import SAMPLES, run_cli, unwrapped

DP16, DP2 = SAMPLES / "dp16.log", SAMPLES / "dp2.log"


def _cut(tmp_path: Path, lines: int) -> Path:
    """DP2's first `lines` lines: a startup that stopped (weights loaded, no pools at 100)."""
    cut = tmp_path / "cut.log"
    cut.write_text("".join(DP2.read_text().splitlines(keepends=True)[:lines]))
    return cut


def test_explain_suggests_the_row_meant(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["ledger", DP16, "--explain", "kvpool"], capsys)
    assert code == EXIT_USAGE
    assert "no row 'kvpool' in this ledger (did you mean 'kv_pool'?); rows: " in err


def test_whatif_that_cannot_model_the_log_says_why_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # exit 3 (input not understood), the reason on stderr, stdout clean, in every format and
    # with --solve too (it printed the reason, then a table of '-', and exited 0)
    cut = _cut(tmp_path, 45)
    setting = ["--set", "mem_fraction_static=0.8"]
    for extra in (
        setting,
        [*setting, "--format", "json"],
        [*setting, "--format", "markdown"],
        ["--solve", "mem_fraction_static", "--for", "max_total_num_tokens=100000"],
    ):
        code, out, err = run_cli(["whatif", cut, *extra], capsys)
        assert code == EXIT_INPUT, extra
        assert out == "", extra
        assert err == (
            f"memledger: error: {cut}: no prediction: the log has no load-begin avail reading (P)\n"
        ), extra


def test_whatif_without_set_says_how_to_ask(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["whatif", DP16], capsys)
    assert code == EXIT_OK
    first = unwrapped(out).splitlines()[0]
    assert first.endswith(
        "(no --set given: the log's own settings; try --set mem_fraction_static=0.85, or "
        "--solve SETTING --for FIGURE=VALUE)"
    )


def test_a_partial_side_gets_no_state_pool_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["diff", DP16, _cut(tmp_path, 100)], capsys)
    assert code == EXIT_OK
    text = unwrapped(out)
    assert "no state-pool comparison (head stopped before its pools)" in text.splitlines()[0]
    assert "no state-pool comparison: head stopped before SGLang sized its pools" in text
    assert "state pool is larger by" not in text


def test_the_diff_json_carries_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["diff", DP16, DP2, "--format", "json"], capsys)
    assert code == EXIT_OK
    _, text, _ = run_cli(["diff", DP16, DP2], capsys)
    assert json.loads(out)["verdict"] == unwrapped(text).splitlines()[0]


def test_the_fleet_view_refuses_full_and_shows_no_free_memory_for_a_stopped_startup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = _cut(tmp_path, 100)
    code, _, err = run_cli(["ledger", cut, DP16, "--full"], capsys)
    assert code == EXIT_USAGE and err == "memledger: error: --full takes one LOG\n"
    code, out, _ = run_cli(["ledger", cut, DP16, "--format", "json"], capsys)
    stopped, ready = (json.loads(line) for line in out.splitlines())
    assert stopped["stopped_at"] and stopped["runtime_headroom"] is None
    assert ready["runtime_headroom"] == 4 * 2**30


@pytest.mark.parametrize("columns", [80, 100])
def test_explain_fits_the_terminal_and_keeps_where_each_number_came_from(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # m3: the Note line (and the arithmetic, the quoted source lines, the interval's details)
    # ran past 100 columns; every row of both samples now fits, and each source line keeps its
    # `file:line` whole (only the quoted text is cut)
    import memledger

    monkeypatch.setenv("COLUMNS", str(columns))
    # the logs by short names: a path prints whole (to be copied), so a long checkout path
    # would pass any width whatever the wrapping does
    monkeypatch.chdir(SAMPLES)
    for log in (Path(DP16.name), Path(DP2.name)):
        rows = [row.id for row in memledger.ledger(log).rows]
        for row in rows:
            code, out, _ = run_cli(["ledger", log, "--explain", row], capsys)
            assert code == EXIT_OK
            too_long = [line for line in out.splitlines() if len(line) > columns]
            assert not too_long, (row, too_long)
            if "\nSource lines\n" in out:
                sources = out.split("\nSource lines\n", 1)[1].split("\n\n", 1)[0]
                for line in sources.splitlines():
                    # `  path:line: text`, or the text on a line of its own under a long path
                    assert line.startswith((f"  {log}:", "    ")), (row, line)
                    assert not line.startswith("     ")
    code, out, _ = run_cli(["ledger", DP2, "--explain", "req_to_token"], capsys)
    note = unwrapped(out, columns).split("\nNote\n", 1)[1].splitlines()[0]
    assert note.startswith("  ReqToTokenPool") and note.endswith("for the full context length")


def test_long_diff_labels_keep_what_tells_the_sides_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # m3: the labels were cut to 24 characters everywhere: two stems that differ only at
    # their end became the same label in text, and markdown (no width limit) cut them too
    monkeypatch.setenv("COLUMNS", "100")
    stem = "server-2031-02-03-toy-model-run-0412"
    base, head = tmp_path / f"{stem}-dp16.log", tmp_path / f"{stem}-dp2.log"
    base.write_bytes(DP16.read_bytes())
    head.write_bytes(DP2.read_bytes())
    code, out, _ = run_cli(["diff", base, head, "--format", "markdown"], capsys)
    assert code == EXIT_OK
    assert f"| base {stem}-dp16 | head {stem}-dp2 |" in out
    assert f"base **{stem}-dp16**" in out and f"head **{stem}-dp2**" in out
    code, out, _ = run_cli(["diff", base, head], capsys)
    assert code == EXIT_OK
    assert out.startswith("…0412-dp2 vs …0412-dp16: ")
    header = next(line for line in out.splitlines() if line.startswith("figure "))
    assert "base …0412-dp16" in header and "head …0412-dp2" in header
    assert f"  base …0412-dp16: {base} (startup" in unwrapped(out)
    code, out, _ = run_cli(["diff", base, head, "--format", "json"], capsys)
    inputs = json.loads(out)["inputs"]
    assert (inputs["base"]["label"], inputs["head"]["label"]) == (f"{stem}-dp16", f"{stem}-dp2")


def test_distinct_labels_cut_where_the_sides_stay_apart() -> None:
    from memledger.render.diff_common import distinct_labels

    assert distinct_labels("dp16", "dp2") == ("dp16", "dp2")
    # they differ early: the start is kept
    assert distinct_labels("a" * 30, "b" * 30) == ("a" * 23 + "…", "b" * 23 + "…")
    # they differ late: the word before the difference and what follows, cut at the limit
    long = "-very-long-tail-of-the-name"
    assert distinct_labels("x-2031-run-7-tp8-a", "x-2031-run-7-tp8-b" + long)[0] == (
        "x-2031-run-7-tp8-a"  # a label that fits stays whole
    )
    assert distinct_labels(
        f"x-2031-02-03-run-7-tp8-a{long}", f"x-2031-02-03-run-7-tp8-b{long}"
    ) == (
        "…tp8-a-very-long-tail-o…",
        "…tp8-b-very-long-tail-o…",
    )
    assert distinct_labels("q" * 40 + "x", "q" * 40 + "y") == ("…x", "…y")


def test_the_source_column_keeps_its_file_and_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # m3: the --full source column was cut to `:56 (+3 line…`, and markdown's said `:35` with
    # no file name; a cut source keeps its line (`:56 +3`), markdown names the file
    from memledger.render.tables import cut_provenance

    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = run_cli(["ledger", DP2, "--full"], capsys)
    assert code == EXIT_OK
    weights = next(line for line in out.splitlines() if line.startswith("weights "))
    assert weights.endswith("  :56 +3")
    code, out, _ = run_cli(["ledger", DP2, "--format", "markdown"], capsys)
    assert "| weights | weights | 94.97 | ±0.015 | logged | dp2.log:56 (+3 lines) |" in out
    assert "| :" not in out
    assert cut_provenance(":56 (+3 lines)", 14) == ":56 (+3 lines)"
    assert cut_provenance(":56 (+3 lines)", 8) == ":56 +3"
    assert cut_provenance("a-long-log-name.log:124 (+1 lines)", 20) == "a-long…me.log:124 +1"
    assert cut_provenance("a-long-log-name.log:124", 5) == ":124"
    assert cut_provenance("2 x (71565312 B x 4)", 8) == "2 x (71…"
