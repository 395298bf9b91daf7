"""`memledger whatif --solve mem_fraction_static --for max_total_num_tokens=N` and its API."""

from __future__ import annotations

import json

import pytest

import memledger
from memledger.errors import EXIT_OK, EXIT_USAGE
from memledger.sizing import sizing_inputs, whatif
from memledger.sizing.solve import solve
from tests.conftest import SAMPLES, real_log_paths, run_cli

DP16 = SAMPLES / "dp16.log"


def _tokens(read: memledger.sizing.SizingInputs, mfs: float) -> int:
    row = whatif(read, {"mem_fraction_static": mfs}).row("KV tokens per rank")
    assert row is not None and row.predicted is not None
    return int(row.predicted)


def test_lowest_fraction_reaches_the_target_and_one_step_less_does_not() -> None:
    read = sizing_inputs(memledger.load(DP16))
    target = 3_192_320 + 100_000  # the logged KV tokens per rank + 100k
    answer = solve(read, {}, "mem_fraction_static", "max_total_num_tokens", target)
    solved = answer.solved
    assert solved is not None and solved.value is not None
    assert _tokens(read, solved.value) >= target > _tokens(read, round(solved.value - 0.001, 3))
    assert answer.new.mem_fraction_static == solved.value  # the rows are the what-if at it
    row = answer.row("KV tokens per rank")
    assert row is not None and row.predicted == solved.reached


@pytest.mark.parametrize("fragment", ["single/012", "single/022", "complex/009"])
def test_the_logged_tokens_need_the_logged_fraction(fragment: str) -> None:
    """Solving for the log's own token count lands on its own mem_fraction_static (the first
    0.001 step at or above it reproduces the log, identity of whatif)."""
    path = next(p for p in real_log_paths() if fragment in p.as_posix())
    read = sizing_inputs(memledger.load(path))
    given = read.knobs["mem_fraction_static"]
    assert isinstance(given, float) and read.logged_tokens is not None
    answer = solve(read, {}, "mem_fraction_static", "max_total_num_tokens", read.logged_tokens)
    assert answer.solved is not None and answer.solved.value is not None
    assert given - 1e-9 <= answer.solved.value < given + 0.001


def test_unreachable_target_says_so() -> None:
    read = sizing_inputs(memledger.load(DP16))
    answer = solve(read, {}, "mem_fraction_static", "max_total_num_tokens", 10**12)
    assert answer.solved is not None and answer.solved.value is None
    assert answer.solved.note.startswith("no mem_fraction_static below 1 gives")
    assert answer.solved.reached is not None and answer.solved.reached < 10**12


def test_cli_text_json_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["whatif", str(DP16), "--solve", "mem_fraction_static"]
    code, out, err = run_cli([*argv, "--for", "max_total_num_tokens=3292320"], capsys)
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines()[0].startswith(
        "lowest mem_fraction_static for max_total_num_tokens >= 3,292,320: 0."
    )
    code, out, _ = run_cli(
        [*argv, "--for", "max_total_num_tokens=3292320", "--format", "json"], capsys
    )
    document = json.loads(out)
    assert document["solved"]["target"] == 3_292_320
    assert document["new"]["mem_fraction_static"] == document["solved"]["value"]
    for extra, message in [
        ([], "--solve SETTING and --for FIGURE=N go together"),
        (["--for", "kv=5"], "--for needs max_total_num_tokens=N"),
        (["--for", "max_total_num_tokens=lots"], "needs a whole number"),
        (
            ["--for", "max_total_num_tokens=5", "--set", "mem_fraction_static=0.8"],
            "is what --solve finds",
        ),
    ]:
        code, out, err = run_cli([*argv, *extra], capsys)
        assert code == EXIT_USAGE and message in err, err
        assert len(err.strip().splitlines()) == 1
    code, _, err = run_cli(
        ["whatif", str(DP16), "--solve", "page_size", "--for", "max_total_num_tokens=5"], capsys
    )
    assert code == EXIT_USAGE and "only mem_fraction_static can be solved for" in err


def test_api_solve() -> None:
    answer = memledger.whatif(
        DP16, solve="mem_fraction_static", target={"max_total_num_tokens": 3_292_320}
    )
    assert answer.solved is not None and answer.solved.value is not None
    row = answer.row("KV tokens per rank")
    assert row is not None and row.predicted is not None and row.predicted >= 3_292_320
