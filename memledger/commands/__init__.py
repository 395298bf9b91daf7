"""The click commands, one module each; COMMANDS is what `memledger.cli` registers."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
