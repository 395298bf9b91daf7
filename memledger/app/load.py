"""Load an input: a log is parsed and built into its ledger, a saved ledger is checked.

- `open_input` (memledger.app.open) is the ONE place an input is opened and sniffed; here a log
  is parsed (`load_parsed`), built (`build`), or a saved ledger validated (`load_ledger`).
- `label_of`: how an input is named in reports.

No click here: errors are `MemledgerError`s that the CLI maps to exit codes. The parser, the
engine and the diagnosis are imported by the function that needs them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any

from memledger.app.analyse import Analysis, analyse
from memledger.app.open import diff_from_document, ledger_from_document, open_input
from memledger.app.options import LoadOptions, PathLike, Source
from memledger.errors import ConfigError, InputError
from memledger.input.reader import ByteSource, OpenedLog
from memledger.model.events import ParsedLog
from memledger.model.ledger import Ledger

if TYPE_CHECKING:
    from memledger.app.vllm import VllmRun
    from memledger.compare.models import LedgerDiff
    from memledger.sizing import SizingInputs

VLLM_NOT_HERE = "a vLLM log: this command models SGLang only (parse, ledger, diagnose, diff, check)"


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
    (memledger.app.vllm); a saved ledger is refused (it has no events)."""
    with open_input(source, label=label) as opened:
        _refuse_saved_diff(opened.diff, opened.label)
        if opened.log is None:
            raise InputError(
                "a saved ledger, not a log: it has no events to parse (`memledger ledger` "
                "reads it)",
                path=opened.label,
            )
        return _read_opened(source, opened.log, opened.label, options)


SAVED_DIFF_HERE = (
    "a saved diff, not a log or a ledger (`memledger diff FILE --format F` renders it again)"
)


def _refuse_saved_diff(diff: dict[str, Any] | None, label: str) -> None:
    if diff is not None:
        raise InputError(SAVED_DIFF_HERE, path=label)


def load_saved_diff(source: PathLike | IO[bytes] | IO[str] | ByteSource) -> LedgerDiff | None:
    """The diff saved in `source` (`memledger diff --format json`), validated as untrusted
    input (`open.diff_from_document`); None when `source` is a log or a saved ledger."""
    with open_input(source) as opened:
        if opened.diff is None:
            return None
        return diff_from_document(opened.diff, label=opened.label)


def _read_opened(
    source: object, log: OpenedLog, label: str, options: LoadOptions
) -> ParsedLog | VllmRun:
    from memledger.app.vllm import read_opened

    return read_opened(source, log, label, options, lambda: _parse(log, label, options))


def build(parsed: ParsedLog, options: LoadOptions) -> Ledger:
    """The ledger of a parsed log, with its sizing and its diagnosis in brief (`analyse`)."""
    return analyse(parsed, options, diagnose=True).ledger


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
    return load_ledger_and_log(source, options, options)[0]


def load_ledger_and_log(
    source: PathLike | IO[bytes] | IO[str] | ByteSource,
    options: LoadOptions,
    saved: LoadOptions,
    *,
    diagnose: bool = True,
) -> tuple[Ledger, Analysis | None]:
    """Open `source`: a log is parsed and analysed with `options` (its analysis returned too);
    a saved ledger is checked against `saved` (the options given for it), no analysis."""
    with open_input(source) as opened:
        _refuse_saved_diff(opened.diff, opened.label)
        if opened.document is not None:
            return _saved(opened.label, opened.document, saved), None
        assert opened.log is not None
        loaded = _read_opened(source, opened.log, opened.label, options)
    if not isinstance(loaded, ParsedLog):
        return loaded.ledger, None
    analysis = analyse(loaded, options, diagnose=diagnose)
    return analysis.ledger, analysis


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
    return replace(saved, notes=[*saved.notes, *notes])


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


def sizing_inputs_of(parsed: ParsedLog, options: LoadOptions) -> SizingInputs:
    """The numbers SGLang sized the log's pools with (for the diff's upgrade explanation)."""
    from memledger.model_catalogue import model_dims
    from memledger.sizing import sizing_inputs

    model = model_dims(options.model_config, parsed.startup.server_args.get("model_path"))
    return sizing_inputs(parsed, model)
