"""`memledger diff`: two sides loaded (log, saved ledger or object) and diffed, head - base."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from memledger.app.analyse import analyse
from memledger.app.load import load_ledger_and_log
from memledger.app.options import (
    MAX_LABEL_CHARS,
    MISSING_HEAD,
    STDIN,
    DiffOptions,
    DiffSide,
    LoadOptions,
    Output,
    side_options,
)
from memledger.errors import ConfigError
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger

if TYPE_CHECKING:
    from memledger.compare.models import LedgerDiff
    from memledger.sizing import SizingInputs


def _side_ledger(side: DiffSide, shared: LoadOptions) -> tuple[Ledger, SizingInputs | None]:
    """One side and, for a log, its sizing inputs: its own options override the shared ones; a
    saved ledger takes only its own (it is already one rank of one startup), so a shared
    `--rank` skips it."""
    own = replace(shared, rank=side.rank, startup=side.startup, model_config=side.model_config)
    merged = replace(
        shared,
        rank=side.rank if side.rank is not None else shared.rank,
        startup=side.startup if side.startup is not None else shared.startup,
        model_config=side.model_config if side.model_config is not None else shared.model_config,
    )
    source = side.source
    if source is None:
        raise ConfigError(MISSING_HEAD)
    if isinstance(source, Ledger):
        return source, None
    if isinstance(source, ParsedLog):
        built = analyse(source, merged)  # the diff shows no diagnosis: none is run
        return built.ledger, built.inputs
    ledger, analysis = load_ledger_and_log(source, merged, own, diagnose=False)
    return ledger, None if analysis is None else analysis.inputs


def diff_of(options: DiffOptions) -> LedgerDiff:
    """Load both sides (log, saved ledger or object) and diff them: head - base."""
    return diff_and_sides(options)[0]


def diff_and_sides(options: DiffOptions) -> tuple[LedgerDiff, tuple[Ledger, Ledger]]:
    """The diff and the two ledgers it compares (base, head)."""
    from memledger.compare.compute import diff_ledgers
    from memledger.compare.upgrade import UpgradeContext
    from memledger.compare.upgrade_releases import parse_release

    base_release = parse_release(options.base.version, "--base-version")
    head_release = parse_release(options.head.version, "--head-version")
    sides = (options.base.source, options.head.source)
    if all(isinstance(s, str | os.PathLike) and os.fspath(s) == STDIN for s in sides):
        raise ConfigError("only one of BASE and HEAD can be `-` (stdin)")
    if options.load.formula_files:
        from memledger.formulas import load_formulas

        load_formulas(options.load.formula_files)
    (base, base_inputs), (head, head_inputs) = (
        _side_ledger(side, options.load) for side in (options.base, options.head)
    )
    context = UpgradeContext(
        base_inputs, head_inputs, base_release, head_release, options.gpu_memory_mib
    )
    labels = {"base_label": options.base.label, "head_label": options.head.label}
    return diff_ledgers(base, head, **labels, sizing=context), (base, head)


def run_diff(options: DiffOptions) -> Output:
    """`memledger diff`: both sides diffed and rendered (one log with `against_release`; one
    saved diff JSON rendered again)."""
    from memledger.render.diff_formats import FORMATS

    for option, side in (("--base-label", options.base), ("--head-label", options.head)):
        if side.label is not None and len(side.label) > MAX_LABEL_CHARS:
            raise ConfigError(
                f"{option}: at most {MAX_LABEL_CHARS} characters, got {len(side.label):,}"
            )
    if options.against_release is None and options.head.source is None:
        saved = _saved_diff(options)
        if saved is not None:
            return _render(options, saved, None)
    if options.against_release is not None or options.head.source is None:
        from memledger.app.against_release import one_log_options, run_against_release

        return run_against_release(one_log_options(options))
    FORMATS.pick(options.fmt)  # a bad format fails before a long parse
    diff, sides = diff_and_sides(options)
    return _render(options, diff, sides)


def _saved_diff(options: DiffOptions) -> LedgerDiff | None:
    """`memledger diff SAVED.json`: the diff a `--format json` run saved, to render again in
    another format (infracost's `output --format`); None when the one input is not a saved
    diff. What only makes a diff (the sides' options) is refused, never ignored."""
    source = options.base.source
    if source is None or isinstance(source, Ledger | ParsedLog):
        return None
    from memledger.app.load import load_saved_diff

    saved = load_saved_diff(source)
    if saved is None:
        return None
    base, head, load = options.base, options.head, options.load
    given = [
        name
        for name, value in (
            ("--rank", load.rank),
            ("--startup", load.startup),
            ("--model-config", load.model_config),
            ("--grammar", load.grammars or None),
            ("--formulas", load.formula_files or None),
            *side_options(base, head),
            ("--head-version", head.version),
            ("--gpu-memory-mib", options.gpu_memory_mib),
        )
        if value is not None
    ]
    if given:
        raise ConfigError(
            f"{', '.join(given)}: a saved diff is rendered as it was made; diff the logs again "
            "to change what it compares"
        )
    labels = {"base": base.label, "head": head.label}
    sides = {
        name: replace(getattr(saved.inputs, name), label=label)
        for name, label in labels.items()
        if label is not None
    }
    return replace(saved, inputs=replace(saved.inputs, **sides)) if sides else saved


def _render(options: DiffOptions, diff: LedgerDiff, sides: tuple[Ledger, Ledger] | None) -> Output:
    """The diff in `options.fmt`; `sides` (the two ledgers) draw the markdown timeline."""
    from memledger.render.diff_formats import FORMATS, diff_view

    view = diff_view(sort=options.sort, show_unchanged=options.show_unchanged)
    view = replace(view, terminal=options.terminal, full=options.full)
    if options.marker is not None:
        view = replace(view, marker=options.marker)
    if options.max_chars is not None:
        view = replace(view, max_chars=options.max_chars)
    return Output(FORMATS.renderer(options.fmt, replace(view, sides=sides))(diff))
