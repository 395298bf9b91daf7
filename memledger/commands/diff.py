"""`memledger diff BASE HEAD`: two deployments side by side, ready for a PR review."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click

from memledger.commands.options import (
    formulas_option,
    grammar_option,
    model_config_option,
    output_option,
    rank_option,
    startup_option,
)
from memledger.diffing import SortKey
from memledger.render.diff_formats import DiffFormat
from memledger.render.diff_markdown import DEFAULT_MARKER, DEFAULT_MAX_CHARS


@dataclass(frozen=True)
class SideOptions:
    """How to load one side: a log (with selection options) or a saved ledger JSON."""

    source: str
    rank: str | None = None
    startup: int | None = None
    model_config: Path | None = None
    label: str | None = None


@dataclass(frozen=True)
class DiffOptions:
    """Everything `memledger diff` was asked to do."""

    base: SideOptions
    head: SideOptions
    fmt: str = DiffFormat.TEXT.value
    sort: str = SortKey.DELTA.value
    show_unchanged: bool = False
    marker: str = DEFAULT_MARKER
    max_chars: int = DEFAULT_MAX_CHARS
    grammars: Sequence[Path] = field(default_factory=tuple)
    formula_files: Sequence[Path] = field(default_factory=tuple)
    """User formulas files, for both sides (a saved ledger keeps its rows, with a note)."""


def diff_report(options: DiffOptions) -> str:
    """Load both sides (log or saved ledger), diff them and render the result."""
    from memledger.diffing import diff_ledgers
    from memledger.pipeline import load_ledger
    from memledger.render.diff_formats import diff_format, render_diff

    fmt = diff_format(options.fmt)  # a bad format fails before a long parse, not after
    ledgers = [
        load_ledger(
            side.source,
            rank=side.rank,
            startup=side.startup,
            model_config_path=side.model_config,
            extra_grammars=options.grammars,
            formula_files=options.formula_files,
        )
        for side in (options.base, options.head)
    ]
    diff = diff_ledgers(
        ledgers[0], ledgers[1], base_label=options.base.label, head_label=options.head.label
    )
    return render_diff(
        diff,
        fmt,
        sort=options.sort,
        show_unchanged=options.show_unchanged,
        marker=options.marker,
        max_chars=options.max_chars,
    )


HELP = """Compare two deployments: BASE and HEAD are SGLang logs or ledgers saved with
`memledger ledger LOG --format json -o FILE` (one of each works too; `-` reads stdin).

\b
Every row is matched by ledger id: base, head, Δ = head - base and
Δ% = (head - base) / base (in percent; empty when base is 0 or unknown).
Rows only in head are `new`, only in base `removed`; rows within the printing
precision of the logs (at least 0.01 GiB) are `unchanged` and collapsed into
a count unless --show-unchanged.

The state-pool section explains the difference the way the seed article does: one side's
state pool is larger by X GiB because its fixed overhead is smaller by X, split into
CUDA graphs + runtime headroom, DCP/per-slot structures + NCCL + workspace, and weights +
weight staging, which add up exactly. --rank/--startup/--model-config apply to both sides;
--base-*/--head-* override them for one side (shared options skip saved ledgers).
"""


def looks_like_saved_ledger(source: str) -> bool:
    """Whether a file starts with `{` (a saved ledger); stdin and unreadable paths say no."""
    if source == "-":
        return False
    try:
        with open(source, "rb") as handle:
            return handle.read(4096).lstrip().startswith(b"{")
    except OSError:
        return False  # the loader reports the problem with its own message


def side_options(
    source: str,
    *,
    rank: str | None,
    startup: int | None,
    model_config: Path | None,
    shared_rank: str | None,
    shared_startup: int | None,
    shared_model_config: Path | None,
    label: str | None,
) -> SideOptions:
    """One side's options: its own override, else the shared option (logs only).

    A saved ledger is already one rank of one startup, so the shared options skip it; a
    per-side option given for a saved ledger still reaches the loader, which refuses it.
    """
    if looks_like_saved_ledger(source):
        shared_rank, shared_startup, shared_model_config = None, None, None
    return SideOptions(
        source=source,
        rank=rank if rank is not None else shared_rank,
        startup=startup if startup is not None else shared_startup,
        model_config=model_config if model_config is not None else shared_model_config,
        label=label,
    )


@click.command("diff", help=HELP)
@click.argument("base", metavar="BASE")
@click.argument("head", metavar="HEAD")
@click.option(
    "--format",
    "fmt",
    type=click.Choice([f.value for f in DiffFormat]),
    default=DiffFormat.TEXT.value,
    show_default=True,
    help="text tables and bars, a markdown PR comment, the full JSON diff, or flat CSV.",
)
@click.option(
    "--sort",
    type=click.Choice([k.value for k in SortKey]),
    default=SortKey.DELTA.value,
    show_default=True,
    help="Row order: largest |Δ| first, by id, or largest base/head value first.",
)
@click.option("--show-unchanged", is_flag=True, help="List unchanged rows instead of a count.")
@rank_option(help="Rank for both sides (default: rank 0).")
@startup_option(help="Startup for both sides, 0-based.")
@model_config_option(help="Hugging Face config.json for both sides.")
@rank_option("--base-rank", help="Rank of BASE (overrides --rank).")
@rank_option("--head-rank", help="Rank of HEAD (overrides --rank).")
@startup_option("--base-startup", help="Startup of BASE, 0-based.")
@startup_option("--head-startup", help="Startup of HEAD, 0-based.")
@model_config_option("--base-model-config", help="config.json for BASE (overrides --model-config).")
@model_config_option("--head-model-config", help="config.json for HEAD (overrides --model-config).")
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
@grammar_option(help="Extra .lark grammar for fork-specific lines (repeatable, both sides).")
@formulas_option(
    help="Formulas TOML with named fixed costs, added to the packaged set for both sides "
    "(repeatable; an entry with an existing id replaces it)."
)
@output_option()
def diff_command(
    base: str,
    head: str,
    fmt: str,
    sort: str,
    show_unchanged: bool,
    rank: str | None,
    startup: int | None,
    model_config: Path | None,
    base_rank: str | None,
    head_rank: str | None,
    base_startup: int | None,
    head_startup: int | None,
    base_model_config: Path | None,
    head_model_config: Path | None,
    base_label: str | None,
    head_label: str | None,
    marker: str,
    max_chars: int,
    grammars: tuple[Path, ...],
    formula_files: tuple[Path, ...],
    output: Path | None,
) -> None:
    """Click entry point: build the options, render, write."""
    from memledger.pipeline import write_output

    if base == "-" and head == "-":
        raise click.UsageError("only one of BASE and HEAD can be `-` (stdin)")
    options = DiffOptions(
        base=side_options(
            base,
            rank=base_rank,
            startup=base_startup,
            model_config=base_model_config,
            label=base_label,
            shared_rank=rank,
            shared_startup=startup,
            shared_model_config=model_config,
        ),
        head=side_options(
            head,
            rank=head_rank,
            startup=head_startup,
            model_config=head_model_config,
            label=head_label,
            shared_rank=rank,
            shared_startup=startup,
            shared_model_config=model_config,
        ),
        fmt=fmt,
        sort=sort,
        show_unchanged=show_unchanged,
        marker=marker,
        max_chars=max_chars,
        grammars=grammars,
        formula_files=formula_files,
    )
    write_output(diff_report(options), os.fspath(output) if output is not None else None)
