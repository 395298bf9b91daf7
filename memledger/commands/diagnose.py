"""`memledger diagnose LOG`: why a startup failed or came out small."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.app.diagnose import run_diagnose
from memledger.app.emit import emit, terminal_for
from memledger.app.options import DiagnoseOptions, LoadOptions
from memledger.commands.options import (
    format_option,
    formulas_option,
    grammar_option,
    load_options,
    model_config_option,
    output_option,
    rank_option,
    startup_option,
)
from memledger.render.diagnose import FORMATS


@click.command("diagnose")
@click.argument("log", metavar="LOG")
@format_option(FORMATS)
@load_options(
    rank_option(help="Rank whose ledger the diagnosis uses (default: rank 0)."),
    startup_option(),
    model_config_option(),
    grammar_option(),
    formulas_option(),
)
@output_option()
def diagnose_command(log: str, fmt: str, load: LoadOptions, output: Path | None) -> int:
    """Say why a startup in LOG failed or came out small: the phase, the bytes missing, the knob.

    LOG is an SGLang log (`-` for stdin; .gz works), whole or pasted in part: error text of
    any rank is read (allocator OOM messages, SGLang's refusals, tracebacks, kills). A failure
    without memory evidence gets no memory knob.
    """
    return emit(
        run_diagnose(
            DiagnoseOptions(
                log=log,
                load=load,
                fmt=fmt,
                terminal=terminal_for(output),
            )
        ),
        output,
    )
