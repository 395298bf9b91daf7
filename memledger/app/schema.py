"""`memledger schema`: the JSON Schema of a JSON output."""

from __future__ import annotations

from memledger.app.options import Output


def run_schema(name: str) -> Output:
    """`memledger schema`: the JSON Schema of a JSON output."""
    from memledger.render.schema import render_schema

    return Output(render_schema(name))
