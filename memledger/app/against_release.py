"""`memledger diff LOG --against-release X` (and `memledger.against_release`): one log's KV pool
under another SGLang release's defaults. The two-log diff is `memledger.app.diff`; the flow is the
same: options in, an `Output` out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memledger.app.load import load_parsed, sizing_inputs_of
from memledger.app.options import (
    MISSING_HEAD,
    DiffOptions,
    LoadOptions,
    Output,
    Source,
    side_options,
)
from memledger.errors import ConfigError
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger
from memledger.render.terminal import PLAIN, Terminal

if TYPE_CHECKING:
    from memledger.compare.upgrade_models import AgainstRelease


@dataclass(frozen=True)
class AgainstReleaseOptions:
    """`memledger diff LOG --against-release X`: one log's pool under another release."""

    log: Source
    release: str
    """The release to compare against (`0.5.2`): usually the one before the upgrade."""
    log_release: str | None = None
    """The release the log ran (`--head-version`), when its line formats do not pin it."""
    gpu_memory_mib: int | None = None
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    terminal: Terminal = PLAIN


def one_log_options(options: DiffOptions) -> AgainstReleaseOptions:
    """`diff LOG --against-release X` as its own options; what only two logs can use (a second
    log, per-side or table options) is refused, never ignored."""
    from memledger.render.diff_formats import diff_view

    if options.against_release is None:
        raise ConfigError(MISSING_HEAD)
    base, head = options.base, options.head
    if head.source is not None:
        raise ConfigError("--against-release takes one LOG, not BASE and HEAD")
    view = diff_view()
    given = [
        name
        for name, value in (
            *side_options(base, head),
            ("--base-label", base.label),
            ("--head-label", head.label),
            ("--show-unchanged", options.show_unchanged or None),
            ("--full", options.full or None),
            ("--sort", None if options.sort == view.sort else options.sort),
            ("--marker", None if options.marker in (None, view.marker) else options.marker),
            ("--max-chars", None if options.max_chars in (None, view.max_chars) else 1),
        )
        if value is not None
    ]
    if given:
        raise ConfigError(f"{', '.join(given)}: only with two logs, not with --against-release")
    if base.source is None:
        raise ConfigError(MISSING_HEAD)
    return AgainstReleaseOptions(
        log=base.source,
        release=options.against_release,
        log_release=head.version,
        gpu_memory_mib=options.gpu_memory_mib,
        load=options.load,
        fmt=options.fmt,
        terminal=options.terminal,
    )


def against_release_of(options: AgainstReleaseOptions) -> AgainstRelease:
    """This log's KV pool under `options.release`'s defaults (memledger.compare.upgrade_against)."""
    from memledger.compare.upgrade_against import against_release
    from memledger.compare.upgrade_releases import parse_release

    release = parse_release(options.release, "--against-release")
    log_release = parse_release(options.log_release, "--head-version")
    assert release is not None
    source = options.log
    if isinstance(source, Ledger):
        raise ConfigError("--against-release reads a log, not a ledger: it needs the log's events")
    parsed = source if isinstance(source, ParsedLog) else load_parsed(source, options.load)
    inputs = sizing_inputs_of(parsed, options.load)
    return against_release(
        inputs, release, log_release=log_release, gpu_memory_mib=options.gpu_memory_mib
    )


def run_against_release(options: AgainstReleaseOptions) -> Output:
    """`memledger diff LOG --against-release X`: the answer rendered."""
    from memledger.render.diff_release import AGAINST_RELEASE_FORMATS

    render = AGAINST_RELEASE_FORMATS.renderer(options.fmt, options.terminal)
    return Output(render(against_release_of(options)))
