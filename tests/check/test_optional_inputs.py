"""A figure that depends on an optional input says so (review M1): samples/dp16.log and dp2.log
run DeepEP low-latency; without --model-config its buffer (2.67 GiB) stays inside the first
CUDA-graph bucket, so `cuda_graph` reads 2.67 GiB larger than with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.checking.optional_inputs import input_dependency, model_inputs
from memledger.cli import main
from memledger.errors import EXIT_BUDGET_FAILED, EXIT_OK
from tests.conftest import SAMPLES, ledger_for, run_cli, unwrapped

DP16, DP2 = SAMPLES / "dp16.log", SAMPLES / "dp2.log"
CONFIG = SAMPLES / "k3-config.json"
BUFFER = "deepep_ll_buffer"


def test_the_figure_names_the_input_it_depends_on_only_without_it() -> None:
    without, with_config = ledger_for(DP16), ledger_for(DP16, model_config=CONFIG)
    assert model_inputs(without).unsized == {BUFFER} and not model_inputs(without).split
    assert model_inputs(with_config).split == {BUFFER} and not model_inputs(with_config).unsized
    said = input_dependency(without, "cuda_graph")
    assert said is not None and "--model-config" in said and BUFFER in said
    assert input_dependency(without, "cuda_graph_largest_bucket") == said  # the row holding it
    assert input_dependency(with_config, "cuda_graph") is None
    assert input_dependency(without, "kv_pool") is None  # not every figure depends on it
    # the two figures differ by exactly the buffer the config sizes
    buffer = with_config[BUFFER].bytes
    larger, smaller = without.summary.cuda_graph, with_config.summary.cuda_graph
    assert buffer is not None and larger is not None and smaller is not None
    assert larger - smaller == pytest.approx(buffer, abs=2)


def _budget(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "budget.toml"
    path.write_text("version = 1\n" + text)
    return path


def test_check_says_it_in_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    budget = _budget(tmp_path, '[[budget]]\nitem = "cuda_graph"\nmax = "10 GiB"\n')
    code, out, _ = run_cli(["check", DP2, "--budget", budget], capsys)
    assert code == EXIT_BUDGET_FAILED
    line = unwrapped(out).splitlines()[1]
    assert line.startswith("FAIL cuda_graph [") and "13.96 GiB > max 10.00 GiB" in line
    assert line.endswith(
        f"depends on --model-config: without it this figure includes {BUFFER} "
        "(not split out of cuda_graph_largest_bucket), so it is larger than with it"
    )
    code, out, _ = run_cli(["check", DP2, "--budget", budget, "--format", "json"], capsys)
    [check] = json.loads(out)["checks"]
    assert "--model-config" in check["depends_on"]
    # with the config the figure is 2.67 GiB smaller and says nothing of it
    code, out, _ = run_cli(
        ["check", DP2, "--budget", budget, "--model-config", CONFIG, "--format", "json"], capsys
    )
    [check] = json.loads(out)["checks"]
    assert check["depends_on"] is None and check["actual_gib"] == pytest.approx(11.29, abs=0.01)


def test_a_pass_says_it_under_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    budget = _budget(tmp_path, '[[budget]]\nitem = "cuda_graph"\nmax = "20 GiB"\n')
    code, out, _ = run_cli(["check", DP16, "--budget", budget], capsys)
    assert code == EXIT_OK
    assert any(
        line.startswith("  input cuda_graph [") and "--model-config" in line
        for line in unwrapped(out).splitlines()
    )


def test_check_warns_when_a_budget_compares_figures_computed_with_different_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base.json"
    assert (
        main(
            [
                "ledger",
                str(DP16),
                "--model-config",
                str(CONFIG),
                "-o",
                str(base),
                "--format",
                "json",
            ]
        )
        == EXIT_OK
    )
    capsys.readouterr()
    budget = _budget(tmp_path, '[[budget]]\nitem = "cuda_graph"\nmax_increase = "20 GiB"\n')
    # head without the config against a baseline made with it: the increase includes the buffer
    code, out, _ = run_cli(["check", DP2, "--budget", budget, "--baseline", base], capsys)
    assert code == EXIT_OK
    warning = unwrapped(out).splitlines()[1]
    assert warning == (
        "warning: budget for 'cuda_graph' (line 2) compares figures computed with different "
        f"inputs: {BUFFER} is split out where --model-config was given and inside the figure "
        "where it was not; pass --model-config for every log and the baseline"
    )
    # the same inputs on both sides (the baseline's log, built with the same flag): no warning
    code, out, _ = run_cli(
        ["check", DP2, "--budget", budget, "--baseline", DP16, "--model-config", CONFIG], capsys
    )
    assert code == EXIT_OK and "warning:" not in out
    # a fleet of saved ledgers made both ways, checked in one run: the same warning, as JSON too
    head = tmp_path / "head.json"
    assert main(["ledger", str(DP2), "-o", str(head), "--format", "json"]) == EXIT_OK
    capsys.readouterr()
    budget = _budget(tmp_path, '[[budget]]\nitem = "cuda_graph"\nmax = "20 GiB"\n')
    code, out, _ = run_cli(["check", base, head, "--budget", budget, "--format", "json"], capsys)
    assert code == EXIT_OK
    [warning] = json.loads(out)["warnings"]
    assert warning.startswith("budget for 'cuda_graph' (line 2) compares figures computed with")
    # a budget on a figure the buffer is not in: no warning
    budget = _budget(tmp_path, '[[budget]]\nitem = "kv_pool"\nmax = "200 GiB"\n')
    code, out, _ = run_cli(["check", base, head, "--budget", budget, "--format", "json"], capsys)
    assert json.loads(out)["warnings"] == []


def test_the_ledger_says_where_the_unsized_buffer_is() -> None:
    notes = ledger_for(DP16).notes
    assert (
        "the DeepEP buffer is inside cuda_graph_largest_bucket: cuda_graph reads larger by its "
        "size than with --model-config, which splits it out"
    ) in notes
    assert not any(
        "DeepEP buffer is inside" in n for n in ledger_for(DP16, model_config=CONFIG).notes
    )
