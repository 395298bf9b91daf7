"""`memledger diff BASE HEAD`: two deployments side by side, ready for a PR review."""

from __future__ import annotations

from pathlib import Path

import click

from memledger.app.diff import run_diff
from memledger.app.emit import emit, terminal_for
from memledger.app.options import DiffOptions, DiffSide, LoadOptions
from memledger.commands.options import (
    DIFF_FULL_HELP,
    format_option,
    formulas_option,
    full_option,
    grammar_option,
    load_options,
    model_config_option,
    output_option,
    rank_option,
    startup_option,
)
from memledger.render.diff_formats import FORMATS, SORT_KEYS
from memledger.render.diff_markdown import DEFAULT_MARKER, DEFAULT_MAX_CHARS

HELP = """Compare two deployments: BASE and HEAD are SGLang logs or ledgers saved with
`memledger ledger LOG --format json -o FILE` (one of each works too; `-` reads stdin).

\b
Every row is matched by ledger id: base, head, Δ = head - base and
Δ% = (head - base) / base (in percent; empty when base is 0 or unknown).
A row on one side only is `not comparable` (never the biggest mover); rows within the printing
precision of the logs (at least 0.01 GiB) are `unchanged` and collapsed into
a count unless --show-unchanged.

The state-pool section explains the difference: one side's
state pool is larger by X GiB because its fixed overhead is smaller by X, split into
CUDA graphs + runtime headroom, communication + workspace + unexplained, and weights +
weight staging, which add up exactly. When the releases or the sizing server_args differ,
`Why KV tokens per rank changed` attributes the token change to each input (SGLang's own
arithmetic) and lists the SGLang defaults that changed in between.
--rank/--startup/--model-config apply to both sides; --base-*/--head-* override them for
one side (shared options skip saved ledgers).

\b
One log: `memledger diff LOG --against-release 0.5.2` answers "it was bigger on 0.5.2": the
defaults that size the pool and changed between the two releases for this log, and the pool
0.5.2 would size from this log's measured memory (--head-version: the release LOG ran;
--gpu-memory-mib: the GPU, else inferred).

\b
One saved diff: `memledger diff d.json --format markdown` renders again the JSON that
`diff --format json` wrote (validated; the timeline chart needs the logs).
"""


@click.command("diff", help=HELP)
@click.argument("base", metavar="BASE")
@click.argument("head", metavar="[HEAD]", required=False)
@format_option(FORMATS)
@full_option(help=DIFF_FULL_HELP)
@click.option(
    "--sort",
    type=click.Choice(SORT_KEYS),
    default=SORT_KEYS[0],
    show_default=True,
    help="Row order: largest |Δ| first, by id, or largest base/head value first.",
)
@click.option(
    "--show-unchanged",
    is_flag=True,
    help="List unchanged rows instead of a count (text: in the full tables, as with --full).",
)
@load_options(
    rank_option(help="Rank for both sides (default: rank 0)."),
    startup_option(help="Startup for both sides, 0-based."),
    model_config_option(help="Hugging Face config.json for both sides."),
    grammar_option(help="Extra .lark grammar for fork-specific lines (repeatable, both sides)."),
    formulas_option(
        help="Formulas TOML with named fixed costs, added to the packaged set for both sides "
        "(repeatable; an entry with an existing id replaces it)."
    ),
)
@rank_option("--base-rank", help="Rank of BASE (overrides --rank).")
@rank_option("--head-rank", help="Rank of HEAD (overrides --rank).")
@startup_option("--base-startup", help="Startup of BASE, 0-based.")
@startup_option("--head-startup", help="Startup of HEAD, 0-based.")
@model_config_option("--base-model-config", help="config.json for BASE (overrides --model-config).")
@model_config_option("--head-model-config", help="config.json for HEAD (overrides --model-config).")
@click.option(
    "--base-version",
    metavar="X.Y.Z",
    help="SGLang release BASE ran (its line formats only bound it): dates the defaults crossed.",
)
@click.option("--head-version", metavar="X.Y.Z", help="SGLang release HEAD ran.")
@click.option(
    "--gpu-memory-mib",
    type=click.IntRange(min=1, max=1 << 24),
    metavar="MIB",
    help="GPU capacity (nvidia-smi MiB): checks whether each mem_fraction_static is SGLang's "
    "default at its release.",
)
@click.option(
    "--against-release",
    metavar="X.Y.Z",
    help="With one LOG: its KV pool under release X.Y.Z's defaults (the release before an "
    "upgrade), from this log's measured memory.",
)
@click.option("--base-label", metavar="NAME", help="Name of BASE in tables (default: file stem).")
@click.option("--head-label", metavar="NAME", help="Name of HEAD in tables (default: file stem).")
@click.option(
    "--marker",
    default=DEFAULT_MARKER,
    show_default=True,
    help="markdown: hidden comment `<!-- NAME -->` that lets CI find and update its comment.",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=2_000),
    default=DEFAULT_MAX_CHARS,
    show_default=True,
    help="markdown: size cap; the middle of the details is cut, never the headline or summary.",
)
@output_option()
def diff_command(
    base: str,
    head: str | None,
    fmt: str,
    full: bool,
    sort: str,
    show_unchanged: bool,
    load: LoadOptions,
    base_rank: str | None,
    head_rank: str | None,
    base_startup: int | None,
    head_startup: int | None,
    base_model_config: Path | None,
    head_model_config: Path | None,
    base_version: str | None,
    head_version: str | None,
    gpu_memory_mib: int | None,
    against_release: str | None,
    base_label: str | None,
    head_label: str | None,
    marker: str,
    max_chars: int,
    output: Path | None,
) -> int:
    """Click entry point: build the options, render, write."""
    return emit(
        run_diff(
            DiffOptions(
                base=DiffSide(
                    base,
                    rank=base_rank,
                    startup=base_startup,
                    model_config=base_model_config,
                    label=base_label,
                    version=base_version,
                ),
                head=DiffSide(
                    head,
                    rank=head_rank,
                    startup=head_startup,
                    model_config=head_model_config,
                    label=head_label,
                    version=head_version,
                ),
                load=load,
                fmt=fmt,
                full=full,
                sort=sort,
                show_unchanged=show_unchanged,
                marker=marker,
                max_chars=max_chars,
                terminal=terminal_for(output),
                gpu_memory_mib=gpu_memory_mib,
                against_release=against_release,
            )
        ),
        output,
    )
