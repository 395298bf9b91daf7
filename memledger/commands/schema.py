"""`memledger schema [ledger|parse|diff]`: the JSON Schema of a JSON output."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.commands.options import output_option
from memledger.pipeline import write_output
from memledger.render.schema import SchemaName, render_schema


@click.command("schema")
@click.argument(
    "name",
    type=click.Choice([name.value for name in SchemaName]),
    default=SchemaName.LEDGER.value,
)
@output_option()
def schema_command(name: str, output: Path | None) -> None:
    """Print the JSON Schema of `ledger`, `parse` or `diff` JSON output (default: ledger).

    Fields may be added in later versions (schema_version says which); none are removed.
    """
    write_output(render_schema(name), output)
