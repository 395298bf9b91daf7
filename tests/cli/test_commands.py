"""The command table: every entry resolves, and a command imports only what it needs."""

from __future__ import annotations

import subprocess
import sys

import click

from memledger.commands import COMMANDS
from memledger.commands.group import cli
from tests.conftest import PROJECT_ROOT, SAMPLES


def test_every_command_resolves_to_a_click_command_of_its_name() -> None:
    context = click.Context(cli)
    assert cli.list_commands(context) == sorted(COMMANDS)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert isinstance(command, click.Command)
        assert command.name == name
    assert cli.get_command(context, "nosuch") is None


def test_parse_does_not_import_the_diff_and_check_machinery() -> None:
    probe = (
        "import sys\n"
        "from memledger.cli import main\n"
        f"code = main(['parse', {str(SAMPLES / 'dp16.log')!r}, '--format', 'json'])\n"
        "heavy = sorted(m for m in ('memledger.compare', 'memledger.checking.evaluate', "
        "'memledger.checking.budget')"
        " if m in sys.modules)\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60
    )
    assert run.stderr.strip().splitlines()[-1] == "0 []", run.stderr


def test_a_ledger_of_an_sglang_log_imports_neither_the_vllm_pipeline_nor_pydantic() -> None:
    """Start-up is most of a `ledger` run on one log: what the SGLang path never calls is never
    imported (the vLLM pipeline loads when a vLLM log is read; pydantic only to validate)."""
    unwanted = (
        "pydantic",
        "memledger.sizing.vllm",
        "memledger.input.vllm_facts",
        "memledger.engine.vllm",
        "memledger.diagnosis.vllm",
        "memledger.compare",
    )
    probe = (
        "import sys, os\n"
        "from memledger.cli import main\n"
        "sys.stdout = open(os.devnull, 'w')\n"
        f"code = main(['ledger', {str(SAMPLES / 'dp2.log')!r}])\n"
        f"found = sorted(m for m in {unwanted!r} if m in sys.modules)\n"
        "print(code, found, file=sys.stderr)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60
    )
    assert run.stderr.strip().splitlines()[-1] == "0 []", run.stderr
