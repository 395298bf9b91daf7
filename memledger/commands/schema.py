"""`memledger schema [NAME]`: the JSON Schema of a command's JSON output."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.app.emit import emit
from memledger.app.schema import run_schema
from memledger.commands.options import output_option
from memledger.render.schema import SchemaName


@click.command("schema")
@click.argument("name", type=click.Choice([n.value for n in SchemaName]), default="ledger")
@output_option()
def schema_command(name: str, output: Path | None) -> int:
    """Print the JSON Schema of a command's JSON output (default: ledger).

    Fields may be added in later versions (schema_version says which; the schemas allow
    them); none are removed.
    """
    return emit(run_schema(name), output)
