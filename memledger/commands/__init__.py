"""The click commands, one module each; COMMANDS is what `memledger.cli` registers."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
from memledger.commands.ledger import ledger_command  # noqa: E402

COMMANDS.append(ledger_command)
from memledger.commands.schema import schema_command  # noqa: E402

COMMANDS.append(schema_command)
from memledger.commands.check import check_command  # noqa: E402

COMMANDS.append(check_command)
from memledger.commands.diff import diff_command  # noqa: E402
COMMANDS.append(diff_command)
from memledger.commands.parse import parse_command  # noqa: E402
COMMANDS.append(parse_command)
