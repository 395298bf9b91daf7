"""`memledger whatif LOG --set NAME=VALUE ...`: SGLang's pools under other settings."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.app.emit import emit, terminal_for
from memledger.app.options import LoadOptions, WhatIfOptions
from memledger.app.whatif import run_whatif
from memledger.commands.options import (
    format_option,
    grammar_option,
    load_options,
    model_config_option,
    output_option,
    rank_option,
    startup_option,
)
from memledger.errors import ConfigError
from memledger.model.sizing import SETTING_NAMES
from memledger.render.sizing import WHATIF_FORMATS


def _changes(pairs: tuple[str, ...]) -> dict[str, str]:
    changes: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip().replace("-", "_").removeprefix("__")
        if not sep or not name:
            raise ConfigError(f"--set needs NAME=VALUE, got {pair!r}")
        if name in changes:
            raise ConfigError(f"--set {name} given twice")
        changes[name] = value.strip()
    return changes


@click.command("whatif")
@click.argument("log", metavar="LOG")
@click.option(
    "--set",
    "pairs",
    metavar="NAME=VALUE",
    multiple=True,
    help=f"A setting to change (repeatable): {', '.join(SETTING_NAMES)}.",
)
@click.option(
    "--solve",
    "solve",
    metavar="SETTING",
    default=None,
    help="Find the lowest SETTING that reaches --for (mem_fraction_static).",
)
@click.option(
    "--for",
    "target",
    metavar="FIGURE=N",
    default=None,
    help="With --solve: the figure to reach (max_total_num_tokens=N, KV tokens per rank).",
)
@format_option(WHATIF_FORMATS)
@load_options(
    rank_option(help="Rank whose pools to model (default: rank 0)."),
    startup_option(),
    model_config_option(),
    grammar_option(),
)
@output_option()
def whatif_command(
    log: str,
    pairs: tuple[str, ...],
    solve: str | None,
    target: str | None,
    fmt: str,
    load: LoadOptions,
    output: Path | None,
) -> int:
    """Predict SGLang's KV pool, state pool and headroom of LOG under other settings.

    Each figure is the measured log plus the modelled change (SGLang's sizing rules for this
    log's release), with the arithmetic, a ± range from the printing precision, and what the
    model leaves out. `--set gpu_memory_mib=N` lets a log without mem_fraction_static be sized
    with SGLang's default for that GPU. `--solve mem_fraction_static --for
    max_total_num_tokens=N` finds the lowest value (0.001 steps) that gives N KV tokens per rank.
    """
    return emit(
        run_whatif(
            WhatIfOptions(
                log=log,
                changes=_changes(pairs),
                load=load,
                fmt=fmt,
                solve=solve.strip().replace("-", "_").removeprefix("__") if solve else None,
                target=target,
                terminal=terminal_for(output),
            )
        ),
        output,
    )
