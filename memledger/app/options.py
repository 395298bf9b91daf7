"""The one flow behind every command and the Python API: open the input, load it, run, render.

- `LoadOptions`: how a log becomes a ledger (rank, startup, model_config, formula_files,
  grammars), one name per option from the CLI down to the parser.
- `open_input`: the ONE place an input is opened and sniffed: gunzip first (by magic, in
  `reader.open_log`), then a saved ledger JSON is told from a log by a bounded peek; a log is
  never read whole here.
- `run_parse` / `run_ledger` / `run_diff` / `run_check`: one per command, options in, an
  `Output` (text, exit code, extra files such as the GitHub step summary) out; `emit` writes it.

No click here: errors are `MemledgerError`s that the CLI maps to exit codes. Heavy modules (the
parser, the engine, the diff and check machinery) are imported by the function that needs them,
so `memledger parse` does not pay for `diff`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeAlias

from memledger.errors import EXIT_OK, ConfigError, InputError
from memledger.events import ParsedLog
from memledger.input.reader import ByteSource, OpenedLog
from memledger.ledger_model import Ledger
from memledger.opener import (
    SAVED_LEDGER_KEYS,
    SAVED_LEDGER_MAX_BYTES,
    Input,
    ledger_from_document,
    open_input,
)
from memledger.render.terminal import PLAIN, Terminal

if TYPE_CHECKING:
    from memledger.budget import Budget
    from memledger.checking import CheckReport
    from memledger.compare import LedgerDiff
    from memledger.diagnosis import Diagnosis
    from memledger.service_vllm import VllmRun
    from memledger.sizing import SizingInputs, WhatIf

Source: TypeAlias = str | os.PathLike[str] | IO[bytes] | IO[str] | ByteSource | ParsedLog | Ledger
"""Anything a ledger can come from: a path, `-` (stdin), a stream, a parsed log or a ledger."""
PathLike: TypeAlias = str | os.PathLike[str]

STDIN = "-"
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
VLLM_NOT_HERE = "a vLLM log: this command models SGLang only (parse, ledger, diagnose, diff, check)"
MAX_LABEL_CHARS = 64
"""A diff's --base-label / --head-label names a side in every table (the default, a file stem,
is at most 24 characters): a longer one is refused rather than echoed whole."""
"""GitHub Actions' job summary file; `check --format github` appends its markdown report there."""


# --- options and outputs ------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadOptions:
    """How an input becomes a ledger; the same names from the CLI options to the parser."""

    rank: str | None = None
    """Rank tag such as `TP3` or `"DP1 TP8 EP8"` (default: rank 0)."""
    startup: int | None = None
    """0-based startup index (default: the last; negative counts from the end)."""
    model_config: Path | None = None
    """A Hugging Face config.json with the model dimensions some formulas need."""
    formula_files: tuple[Path, ...] = ()
    """User formulas TOML files added to the packaged set (`--formulas`)."""
    grammars: tuple[Path, ...] = ()
    """Extra Lark grammars for a fork's own lines (`--grammar`)."""
    progress: bool | None = False
    """Show a progress meter on stderr; None: when stderr is a terminal."""
    saved_ledger_skips_grammars: bool = False
    """For commands that mix logs and saved ledgers under one command line (`check_report` sets
    it): a saved ledger keeps its rows and notes that the grammars were not applied, instead of
    refusing `--grammar` as a one-input command does."""


@dataclass(frozen=True)
class ExtraFile:
    """A file a command appends to besides its main output (the GitHub step summary)."""

    path: Path
    text: str
    what: str
    """How the file is named in an error message (`$GITHUB_STEP_SUMMARY`)."""
    chunks: Iterable[str] = ()
    """More of the text, written as it is produced."""


@dataclass(frozen=True)
class Output:
    """What a command produced: its report, its exit code and any extra files to append to."""

    text: str
    exit_code: int = EXIT_OK
    extra_files: tuple[ExtraFile, ...] = ()
    chunks: Iterable[str] = ()
    """More of the report after `text`, written as it is produced (`check` over a fleet)."""


@dataclass(frozen=True)
class ParseOptions:
    """`memledger parse`."""

    log: Source
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    all_ranks: bool = False
    coverage: bool = False
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""


@dataclass(frozen=True)
class LedgerOptions:
    """`memledger ledger`."""

    log: Source
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    explain: str | None = None
    more_logs: Sequence[Source] = ()
    """More logs: with them (or when `log` is a folder) the fleet view, one line per log."""
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""
    full: bool = False
    """Text output: every table (`--full`), not only the verdict and the rows that matter."""


@dataclass(frozen=True)
class DiagnoseOptions:
    """`memledger diagnose`."""

    log: PathLike | IO[bytes] | IO[str] | ByteSource | ParsedLog
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    terminal: Terminal = PLAIN
    """Text output: the width to fit (`terminal_for`)."""


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff and the options given for it alone (`--base-rank`, ...)."""

    source: Source | None
    """None: not given (only HEAD, and only with `against_release`)."""
    rank: str | None = None
    startup: int | None = None
    model_config: Path | None = None
    label: str | None = None
    version: str | None = None
    """The SGLang release this side ran (`--base-version`), when the log does not pin it."""


MISSING_HEAD = (
    "Missing argument 'HEAD' (usage: memledger diff [OPTIONS] BASE HEAD, or memledger diff "
    "[OPTIONS] LOG --against-release X.Y.Z)"
)
"""click's message for a missing HEAD, now that HEAD may be left out for --against-release."""


@dataclass(frozen=True)
class DiffOptions:
    """`memledger diff`: `load` is shared by both sides, a side's own options override it."""

    base: DiffSide
    head: DiffSide
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    sort: str = "delta"
    show_unchanged: bool = False
    marker: str | None = None
    max_chars: int | None = None
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""
    full: bool = False
    """Text output: every table (`--full`), not only the verdict and the rows that matter."""
    gpu_memory_mib: int | None = None
    """GPU capacity in MiB: lets the upgrade explanation check SGLang's mem_fraction_static
    defaults at each release."""
    against_release: str | None = None
    """`diff LOG --against-release X`: BASE is the one log, compared with release X's defaults
    (`run_diff` hands it to `run_against_release`; the two-log options are refused)."""


@dataclass(frozen=True)
class WhatIfOptions:
    """`memledger whatif`: the log, and setting -> value changes (`--set NAME=VALUE`)."""

    log: Source
    changes: dict[str, Any] = field(default_factory=dict)
    load: LoadOptions = LoadOptions()
    fmt: str = "text"
    solve: str | None = None
    """`--solve SETTING`: find the lowest SETTING that reaches `target`."""
    target: str | None = None
    """`--for FIGURE=N` (with `solve`)."""
    terminal: Terminal = PLAIN
    """Text output: the width to fit (`terminal_for`)."""


@dataclass(frozen=True)
class CheckOptions:
    """`memledger check`: `load` applies to every log and the baseline."""

    logs: Sequence[Source]
    budget: PathLike | Budget | None = None
    baseline: Source | None = None
    load: LoadOptions = LoadOptions()
    strict: bool = False
    today: date | None = None
    fmt: str = "text"
    require_baseline: bool = False
    """A missing baseline (not given, or a path that does not exist) is an InputError instead
    of "relative limits not compared": a CI job whose artifact download failed must not pass."""
    max_chars: int | None = None  # markdown only: size cap (a PR comment has a limit)
    terminal: Terminal = PLAIN
    """Text output: the width to fit and whether to colour (`terminal_for`)."""
    full: bool = False
    """Text output: every table (`--full`), not only the verdict and the rows that matter."""


# --- loading ------------------------------------------------------------------------------------


def _progress(options: LoadOptions) -> bool:
    return sys.stderr.isatty() if options.progress is None else options.progress


def _parse(log: OpenedLog, label: str, options: LoadOptions) -> ParsedLog:
    from memledger.input.parsing import parse_log  # lazy: lark is only needed when a log is parsed

    return parse_log(
        log,
        label=label,
        rank=options.rank,
        startup=options.startup,
        extra_grammars=options.grammars,
        progress=_progress(options),
    )


def load_parsed(
    source: PathLike | IO[bytes] | IO[str] | ByteSource,
    options: LoadOptions = LoadOptions(),
    *,
    label: str | None = None,
) -> ParsedLog:
    """Parse an SGLang log (path, `-` or stream); a saved ledger or a vLLM log is refused."""
    loaded = load_any(source, options, label=label)
    if not isinstance(loaded, ParsedLog):
        raise InputError(VLLM_NOT_HERE, path=loaded.log.path)
    return loaded


def load_any(
    source: PathLike | IO[bytes] | IO[str] | ByteSource,
    options: LoadOptions = LoadOptions(),
    *,
    label: str | None = None,
) -> ParsedLog | VllmRun:
    """A log read by the engine that wrote it: SGLang's events, or vLLM's whole pipeline
    (memledger.service_vllm); a saved ledger is refused (it has no events)."""
    with open_input(source, label=label) as opened:
        if opened.log is None:
            raise InputError(
                "a saved ledger, not a log: it has no events to parse (`memledger ledger` "
                "reads it)",
                path=opened.label,
            )
        return _read_opened(source, opened.log, opened.label, options)


def _read_opened(
    source: object, log: OpenedLog, label: str, options: LoadOptions
) -> ParsedLog | VllmRun:
    from memledger.service_vllm import read_opened

    return read_opened(source, log, label, options, lambda: _parse(log, label, options))


def build(parsed: ParsedLog, options: LoadOptions) -> Ledger:
    """The ledger of a parsed log: packaged formulas plus `formula_files`, optional model dims."""
    from memledger.engine import build_ledger
    from memledger.formulas import load_formulas
    from memledger.model_config import load_model_config

    model = None if options.model_config is None else load_model_config(options.model_config)
    ledger = build_ledger(parsed, formulas=load_formulas(options.formula_files), model_config=model)
    return _with_diagnosis(parsed, ledger)


def _with_diagnosis(parsed: ParsedLog, ledger: Ledger) -> Ledger:
    """The ledger with its diagnosis in brief when the startup failed or came out starved."""
    from memledger.diagnosis import brief, diagnose

    summary = brief(diagnose(parsed, ledger))
    return ledger if summary is None else ledger.model_copy(update={"diagnosis": summary})


def load_ledger(source: Source, options: LoadOptions = LoadOptions()) -> Ledger:
    """The ledger of a log (parsed and built), a saved ledger JSON (validated), a `ParsedLog`
    (built) or a `Ledger` (as is).

    A saved ledger keeps the rows it was built with: `formula_files` (and, with
    `saved_ledger_skips_grammars`, `grammars`) are noted on it, not applied; the options that
    select what a ledger is of (`rank`, `startup`, `model_config`, `grammars`) are refused.
    Raises InputError, SelectionError (a rank or startup the log lacks) or ConfigError.
    """
    if isinstance(source, Ledger):
        return source
    if isinstance(source, ParsedLog):
        return build(source, options)
    if options.formula_files:
        from memledger.formulas import load_formulas

        load_formulas(options.formula_files)  # a bad formulas file fails before a long parse
    return _opened(source, options, options)[0]


def _opened(
    source: PathLike | IO[bytes] | IO[str] | ByteSource, options: LoadOptions, saved: LoadOptions
) -> tuple[Ledger, ParsedLog | None]:
    """Open `source`: a log is parsed and built with `options` (and returned, for its sizing
    inputs); a saved ledger is checked against `saved` (the options given for it), no log."""
    with open_input(source) as opened:
        if opened.document is not None:
            return _saved(opened.label, opened.document, saved), None
        assert opened.log is not None
        loaded = _read_opened(source, opened.log, opened.label, options)
    if not isinstance(loaded, ParsedLog):
        return loaded.ledger, None
    return build(loaded, options), loaded


def _saved(label: str, document: dict[str, Any], options: LoadOptions) -> Ledger:
    skipped_grammars = options.grammars if options.saved_ledger_skips_grammars else ()
    given = [
        name
        for name, value in (
            ("--rank", options.rank),
            ("--startup", options.startup),
            ("--model-config", options.model_config),
            ("--grammar", None if skipped_grammars else options.grammars or None),
        )
        if value is not None
    ]
    if given:
        raise ConfigError(
            f"{', '.join(given)} cannot apply to a saved ledger (it was built for one rank of "
            "one startup); rebuild it from the log instead",
            path=label,
        )
    saved = ledger_from_document(document, label=label)
    notes = [
        f"{what} not applied ({', '.join(os.fspath(f) for f in files)}): "
        "a saved ledger keeps the rows it was built with"
        for what, files in (
            ("formulas files", options.formula_files),
            ("grammars", skipped_grammars),
        )
        if files
    ]
    if not notes:
        return saved
    return saved.model_copy(update={"notes": [*saved.notes, *notes]})


def label_of(source: Source) -> str:
    """How an input is named in reports: its path, or the ledger's / stream's own name."""
    if isinstance(source, Ledger):
        return source.source.path
    if isinstance(source, ParsedLog):
        return source.path
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>"


# --- the commands -------------------------------------------------------------------------------


def run_parse(options: ParseOptions) -> Output:
    """`memledger parse`: the selected rank's events, with the log's facts."""
    from memledger.render.parse import FORMATS, ParseView

    view = ParseView(
        all_ranks=options.all_ranks, coverage=options.coverage, terminal=options.terminal
    )
    render = FORMATS.renderer(options.fmt, view)  # a bad format fails before a long parse
    if isinstance(options.log, Ledger | ParsedLog):
        raise ConfigError("parse reads a log, not an object already built")
    loaded = load_any(options.log, options.load)
    if not isinstance(loaded, ParsedLog):
        from memledger.render.vllm_parse import render_vllm

        return Output(render_vllm(loaded, options.fmt, options.terminal))
    return Output(render(loaded))


def run_ledger(options: LedgerOptions) -> Output:
    """`memledger ledger`: load or build the ledger, then render it (or explain one row)."""
    from memledger.fleet import is_fleet, run_fleet
    from memledger.render import FORMATS, LedgerView

    sources = [options.log, *options.more_logs]
    if is_fleet(sources):
        if options.explain is not None:
            raise ConfigError("--explain takes one LOG, not several")
        return run_fleet(sources, options.load, options.fmt, options.terminal)
    view = LedgerView(explain=options.explain, terminal=options.terminal, full=options.full)
    render = FORMATS.renderer(options.fmt, view)
    text = render(load_ledger(options.log, options.load))
    if options.fmt == "text" and options.explain is None:
        text = options.terminal.colourise(text)
    return Output(text)


def diagnosis_of(options: DiagnoseOptions) -> Diagnosis:
    """Parse the log (a saved ledger has no error text: refused), build its ledger, diagnose."""
    from memledger.diagnosis import diagnose

    log = options.log
    parsed = log if isinstance(log, ParsedLog) else load_any(log, options.load)
    if not isinstance(parsed, ParsedLog):
        return parsed.diagnosis
    return diagnose(parsed, build(parsed, options.load))


def run_diagnose(options: DiagnoseOptions) -> Output:
    """`memledger diagnose`: why the startup failed or came out small."""
    from memledger.render.diagnose import FORMATS

    render = FORMATS.renderer(options.fmt, options.terminal)  # a bad format fails first
    return Output(render(diagnosis_of(options)))


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
        return load_ledger(source, merged), sizing_inputs_of(source, merged)
    ledger, parsed = _opened(source, merged, own)
    return ledger, None if parsed is None else sizing_inputs_of(parsed, merged)


def sizing_inputs_of(parsed: ParsedLog, options: LoadOptions) -> SizingInputs:
    """The numbers SGLang sized the log's pools with (for the diff's upgrade explanation)."""
    from memledger.model_config import load_model_config
    from memledger.sizing import sizing_inputs

    model = None if options.model_config is None else load_model_config(options.model_config)
    return sizing_inputs(parsed, model)


def diff_of(options: DiffOptions) -> LedgerDiff:
    """Load both sides (log, saved ledger or object) and diff them: head - base."""
    from memledger.compare import diff_ledgers
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
    return diff_ledgers(base, head, **labels, sizing=context)


def run_diff(options: DiffOptions) -> Output:
    """`memledger diff`: both sides diffed and rendered (one log with `against_release`)."""
    from memledger.render.diff_formats import FORMATS, diff_view

    for option, side in (("--base-label", options.base), ("--head-label", options.head)):
        if side.label is not None and len(side.label) > MAX_LABEL_CHARS:
            raise ConfigError(
                f"{option}: at most {MAX_LABEL_CHARS} characters, got {len(side.label):,}"
            )
    if options.against_release is not None or options.head.source is None:
        from memledger.service_release import one_log_options, run_against_release

        return run_against_release(one_log_options(options))

    view = diff_view(sort=options.sort, show_unchanged=options.show_unchanged)
    view = replace(view, terminal=options.terminal, full=options.full)
    if options.marker is not None:
        view = replace(view, marker=options.marker)
    if options.max_chars is not None:
        view = replace(view, max_chars=options.max_chars)
    render = FORMATS.renderer(options.fmt, view)  # a bad format fails before a long parse
    return Output(render(diff_of(options)))


def budget_of(budget: PathLike | Budget | None) -> Budget:
    """The budget given, loaded from its file, or found (`discover_budget`)."""
    from memledger.budget import Budget, discover_budget, load_budget

    if isinstance(budget, Budget):
        return budget
    return load_budget(discover_budget() if budget is None else Path(budget))


def check_report(options: CheckOptions) -> CheckReport:
    """Check every log (and the baseline, for relative limits) against the budget: the whole
    report in memory (the Python API; `memledger.check_run`)."""
    from memledger.check_run import check_report as report

    return report(options)


def run_check(options: CheckOptions) -> Output:
    """`memledger check`: the report written as it is read back (`memledger.check_run`)."""
    from memledger.check_run import run_check as run

    return run(options)


def whatif_of(options: WhatIfOptions) -> WhatIf:
    """SGLang's pools under `changes`, anchored on the measured log (memledger.sizing)."""
    from memledger.model_config import load_model_config
    from memledger.sizing import sizing_inputs, whatif
    from memledger.sizing.solve import parse_target, solve

    if (options.solve is None) != (options.target is None):
        raise ConfigError("--solve SETTING and --for FIGURE=N go together")
    wanted = None if options.solve is None else parse_target(options.solve, options.target or "")
    source = options.log
    if isinstance(source, Ledger):
        raise ConfigError("whatif reads a log, not a ledger: it needs the log's events")
    parsed = source if isinstance(source, ParsedLog) else load_parsed(source, options.load)
    path = options.load.model_config
    model = None if path is None else load_model_config(path)
    inputs = sizing_inputs(parsed, model)
    if options.solve is not None and wanted is not None:
        return solve(inputs, options.changes, options.solve, *wanted)
    return whatif(inputs, options.changes)


def run_whatif(options: WhatIfOptions) -> Output:
    """`memledger whatif`: the what-if table, its arithmetic and what is not modelled."""
    from memledger.render.sizing import WHATIF_FORMATS

    return Output(WHATIF_FORMATS.renderer(options.fmt, options.terminal)(whatif_of(options)))


def run_schema(name: str) -> Output:
    """`memledger schema`: the JSON Schema of a JSON output."""
    from memledger.render.schema import render_schema

    return Output(render_schema(name))


from memledger.emitter import (  # noqa: E402 - re-exported: commands call service.emit
    emit as emit,
)

# After the definitions: the emitter uses Output and STDIN from here (a cycle at import).
from memledger.emitter import terminal_for  # noqa: E402

__all__ = [
    "SAVED_LEDGER_KEYS",
    "SAVED_LEDGER_MAX_BYTES",
    "Input",
    "emit",
    "ledger_from_document",
    "open_input",
    "terminal_for",
]
