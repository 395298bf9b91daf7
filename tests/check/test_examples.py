"""The CI recipe and example budgets: the workflow's shape, and its memledger commands offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from memledger.budget import load_budget
from memledger.cli import cli, main
from memledger.errors import EXIT_BUDGET_FAILED, EXIT_OK
from tests.check_workflow_helpers import (
    PROJECT_ROOT,
    mapping,
    memledger_commands,
    run_blocks,
    top_level_keys,
    workflow_text,
)
from tests.conftest import SAMPLES

EXAMPLE_BUDGET = PROJECT_ROOT / "examples" / "memledger.toml"
DP16 = SAMPLES / "dp16.log"
DP2 = SAMPLES / "dp2.log"
BUDGET = SAMPLES / "budget.toml"


def test_workflow_is_plain_block_yaml() -> None:
    text = workflow_text()
    assert "\t" not in text
    assert top_level_keys(text) == ["name", "on", "permissions", "env", "jobs"]
    for number, line in enumerate(text.splitlines(), 1):
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, f"line {number}: odd indentation"
        assert line.count("${{") == line.count("}}"), f"line {number}: unbalanced expression"
    # Every step is a list item starting with `uses:` or `name:`.
    steps = re.findall(r"^      - (\w+):", text, flags=re.MULTILINE)
    assert steps and set(steps) <= {"uses", "name"}


def test_workflow_permissions_and_triggers() -> None:
    text = workflow_text()
    assert mapping(text, "permissions") == {
        "contents": "read",
        "actions": "read",
        "pull-requests": "write",
    }
    assert "  push:\n    branches: [main]\n  pull_request:\n" in text
    # The baseline is the PR's base commit, not main's current head.
    assert "github.event.pull_request.base.sha" in text


def test_workflow_memledger_commands_are_valid_command_lines() -> None:
    text = workflow_text()
    env = mapping(text, "env")
    commands = memledger_commands(text, env)
    assert [argv[0] for argv in commands] == ["ledger", "check", "check", "diff"]
    for argv in commands:
        # Parsing (not running) rejects unknown options and bad choices.
        with click.Context(cli) as parent:
            command = cli.get_command(parent, argv[0])
            assert command is not None, argv[0]
            command.make_context(argv[0], argv[1:], parent=parent)


def test_workflow_fails_the_job_with_the_check_exit_code() -> None:
    blocks = run_blocks(workflow_text())
    check = next(block for block in blocks if "--format github" in block)
    assert 'echo "exit_code=$?" >> "$GITHUB_OUTPUT"' in check
    assert blocks[-1] == 'exit "${{ steps.check.outputs.exit_code }}"'


def test_workflow_comment_is_found_by_the_diff_marker() -> None:
    text = workflow_text()
    env = mapping(text, "env")
    post = next(block for block in run_blocks(text) if "gh api" in block)
    assert 'marker="<!-- $COMMENT_MARKER -->"' in post
    assert "--method PATCH" in post and "--method POST" in post
    diff = next(argv for argv in memledger_commands(text, env) if argv[0] == "diff")
    assert diff[diff.index("--marker") + 1] == env["COMMENT_MARKER"]


def test_example_budget_loads() -> None:
    budget = load_budget(EXAMPLE_BUDGET)
    assert [entry.item for entry in budget.entries] == [
        "kv_tokens_per_instance",
        "runtime_headroom",
        "cuda_graph",
        "weight_staging",
        "fixed_overhead",
        "req_to_token",
    ]
    assert all(entry.message for entry in budget.entries)  # the [defaults] message fills in


@pytest.fixture
def workflow_env(tmp_path: Path) -> dict[str, str]:
    """The workflow's env block, with its files placed under tmp_path."""
    env = mapping(workflow_text(), "env")
    for key in ("HEAD_LEDGER", "BASELINE", "CHECK_MD", "DIFF_MD", "COMMENT_MD"):
        env[key] = str(tmp_path / env[key])
    return env


# --- the CI recipe, run offline on the samples ------------------------------------------------


def test_workflow_commands_on_the_samples(
    tmp_path: Path,
    workflow_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # main's run left DP16's ledger as the baseline; the PR's server log is DP2.
    env = {**workflow_env, "SERVER_LOG": str(DP2), "BUDGET": str(BUDGET)}
    baseline = Path(env["BASELINE"])
    baseline.parent.mkdir(parents=True)
    assert main(["ledger", str(DP16), "--format", "json", "-o", str(baseline)]) == EXIT_OK
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    codes = [main(argv) for argv in memledger_commands(workflow_text(), env)]
    out = capsys.readouterr().out
    # ledger, check --format github (fails: DP2 breaks the budget), check markdown, diff.
    assert codes == [EXIT_OK, EXIT_BUDGET_FAILED, EXIT_BUDGET_FAILED, EXIT_OK]
    assert json.loads(Path(env["HEAD_LEDGER"]).read_text())["source"]["path"] == str(DP2)
    assert "::error file=" in out and "kv_tokens_per_instance" in out
    assert summary.read_text().startswith("<!-- memledger-check -->\n")
    assert Path(env["CHECK_MD"]).read_text() == summary.read_text().rstrip("\n") + "\n"
    # The comment step finds its comment by the diff's marker.
    assert f"<!-- {env['COMMENT_MARKER']} -->" in Path(env["DIFF_MD"]).read_text()


def test_workflow_without_a_base_ledger(
    workflow_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # First run on main (or an unmeasured base commit): no baseline file, no comparison.
    env = {**workflow_env, "SERVER_LOG": str(DP16), "BUDGET": str(EXAMPLE_BUDGET)}
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    check = next(a for a in memledger_commands(workflow_text(), env) if "github" in a)
    code = main(check)
    out = capsys.readouterr().out
    assert code == EXIT_OK
    assert f"note: baseline {env['BASELINE']} not found: no comparison" in out
