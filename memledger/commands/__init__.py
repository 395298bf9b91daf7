"""The click commands, one module each; COMMANDS is what `memledger.cli` registers."""

from __future__ import annotations

import click

from memledger.commands.check import check_command
from memledger.commands.diff import diff_command
from memledger.commands.ledger import ledger_command
from memledger.commands.parse import parse_command
from memledger.commands.schema import schema_command

COMMANDS: list[click.Command] = [
    parse_command,
    ledger_command,
    diff_command,
    check_command,
    schema_command,
]
