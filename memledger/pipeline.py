"""Glue: a log or a saved ledger JSON in, a `Ledger` (or a rendered report) out.

Used by every command that needs a ledger (`ledger`, `diff`, `check`) and by the Python API.
No click here: errors are `MemledgerError`s that the CLI maps to exit codes.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import ValidationError

from memledger.errors import ConfigError, InputError
from memledger.events import ParsedLog
from memledger.input.reader import ByteSource, PeekedStream
from memledger.ledger_model import LEDGER_SCHEMA_VERSION, Ledger

if TYPE_CHECKING:
    from memledger.formulas import Formula

LogSource = str | os.PathLike[str] | IO[bytes] | ByteSource
"""A path, `-` for stdin, or an open binary stream."""

STDIN_LABEL = "<stdin>"
SAVED_LEDGER_KEYS = ("schema_version", "rows")
"""A JSON object with these keys is a saved ledger (`memledger ledger --format json`)."""
_PEEK_BYTES = 4096
FormulaPath = str | os.PathLike[str]
"""A user formulas file (`--formulas FILE`)."""


def load_ledger(
    source: LogSource,
    *,
    rank: str | None = None,
    startup: int | None = None,
    model_config_path: str | os.PathLike[str] | None = None,
    extra_grammars: Sequence[Path] = (),
    progress: bool = False,
    formula_files: Sequence[FormulaPath] = (),
    grammars_for_logs_only: bool = False,
) -> Ledger:
    """The ledger of a log (parsed and built) or of a saved ledger JSON (validated).

    `formula_files` are user formulas files added to the packaged set (`--formulas`); a saved
    ledger keeps the rows it was built with, and says so in a note when files were given.
    `extra_grammars` given for a saved ledger are refused like `rank`, unless
    `grammars_for_logs_only` (check: one `--grammar` for logs and saved ledgers alike), which
    treats them as `formula_files`: the saved ledger keeps its rows, with a note.
    Raises InputError for unreadable or not-understood input, SelectionError for a rank or
    startup the log lacks, ConfigError for a bad formulas file or for options that do not apply
    to a saved ledger.
    """
    from memledger.formulas import load_formulas

    # Given files are read first: a bad one fails before a long parse, not after.
    formulas = load_formulas(formula_files) if formula_files else None
    label, data, stream = _peek_source(source)
    document = _saved_ledger_document(label, data)
    if document is not None:
        _refuse_log_options(
            label,
            rank=rank,
            startup=startup,
            model_config_path=model_config_path,
            extra_grammars=() if grammars_for_logs_only else extra_grammars,
        )
        saved = ledger_from_document(document, label=label)
        # diff and check mix saved ledgers with logs: the files apply to the logs only.
        notes = [
            f"{what} not applied ({', '.join(os.fspath(f) for f in files)}): "
            "a saved ledger keeps the rows it was built with"
            for what, files in (
                ("formulas files", formula_files),
                ("grammars", extra_grammars if grammars_for_logs_only else ()),
            )
            if files
        ]
        if not notes:
            return saved
        return saved.model_copy(update={"notes": [*saved.notes, *notes]})
    # A path is re-opened by the streaming parser; stdin and streams go on from their peek
    # (or from the bytes read whole, for a brace-led log that was not JSON).
    if stream is None and data is not None:
        stream = io.BytesIO(data)
    parsed = load_parsed(
        source if stream is None else stream,
        label=label,
        rank=rank,
        startup=startup,
        extra_grammars=extra_grammars,
        progress=progress,
    )
    return _build(parsed, load_formulas() if formulas is None else formulas, model_config_path)


def load_parsed(
    source: LogSource,
    *,
    label: str | None = None,
    rank: str | None = None,
    startup: int | None = None,
    extra_grammars: Sequence[Path] = (),
    progress: bool = False,
) -> ParsedLog:
    """Parse a log (path, `-` or stream) into events; `label` names a stream in messages."""
    from memledger.input.parsing import parse_log  # lazy: lark is only needed when a log is parsed

    return parse_log(
        source,
        label=label,
        rank=rank,
        startup=startup,
        extra_grammars=extra_grammars,
        progress=progress,
    )


def ledger_from_parsed(
    parsed: ParsedLog,
    *,
    model_config_path: str | os.PathLike[str] | None = None,
    formula_files: Sequence[FormulaPath] = (),
) -> Ledger:
    """Build the ledger of a parsed log with the packaged formulas (plus `formula_files`) and
    optional model dims."""
    from memledger.formulas import load_formulas

    return _build(parsed, load_formulas(formula_files), model_config_path)


def _build(
    parsed: ParsedLog,
    formulas: Sequence[Formula],
    model_config_path: str | os.PathLike[str] | None,
) -> Ledger:
    from memledger.engine import build_ledger
    from memledger.model_config import load_model_config

    model_config = None if model_config_path is None else load_model_config(model_config_path)
    return build_ledger(parsed, formulas=formulas, model_config=model_config)


def ledger_from_document(document: dict[str, Any], *, label: str) -> Ledger:
    """Validate a saved ledger JSON object; InputError naming the first problem otherwise."""
    version = document.get("schema_version")
    if version != LEDGER_SCHEMA_VERSION:
        raise InputError(
            f"saved ledger has schema_version {version!r}; this memledger reads version "
            f"{LEDGER_SCHEMA_VERSION} (re-run `memledger ledger LOG --format json`)",
            path=label,
        )
    try:
        return Ledger.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise InputError(
            f"not a valid saved ledger: {where}: {first['msg']}{more}", path=label
        ) from None


def ledger_report(
    source: LogSource,
    *,
    fmt: str = "text",
    explain: str | None = None,
    rank: str | None = None,
    startup: int | None = None,
    model_config_path: str | os.PathLike[str] | None = None,
    extra_grammars: Sequence[Path] = (),
    progress: bool = False,
    formula_files: Sequence[FormulaPath] = (),
) -> str:
    """`memledger ledger` as a function: load or build the ledger, then render it."""
    from memledger.render import output_format, render_ledger

    output_format(fmt)  # a bad format fails before a long parse, not after
    ledger = load_ledger(
        source,
        rank=rank,
        startup=startup,
        model_config_path=model_config_path,
        extra_grammars=extra_grammars,
        progress=progress,
        formula_files=formula_files,
    )
    return render_ledger(ledger, fmt, explain=explain)


def write_output(text: str, output: str | os.PathLike[str] | None) -> None:
    """Write a rendered report to a file, or to stdout when `output` is None or `-`."""
    if output is None or os.fspath(output) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write output: {exc.strerror or exc}", path=str(output)) from None


# --- input detection -------------------------------------------------------------------------


def _peek_source(source: LogSource) -> tuple[str, bytes | None, ByteSource | None]:
    """A display label; the whole input when it may be a saved ledger (it starts with `{`);
    else, for stdin and streams, the stream to parse (its first block re-attached).

    Logs are never read whole here: the streaming parser reads them (a path is re-opened).
    """
    if not isinstance(source, str | os.PathLike):
        return _peek_stream(getattr(source, "name", None) or "<stream>", source)
    label = os.fspath(source)
    if label == "-":
        return _peek_stream(STDIN_LABEL, sys.stdin.buffer)
    path = Path(label)
    try:
        with path.open("rb") as handle:
            head = handle.read(_PEEK_BYTES)
            if not head.lstrip().startswith(b"{"):
                return label, None, None
            return label, head + handle.read(), None
    except FileNotFoundError:
        raise InputError("no such file", path=label) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a log or saved ledger", path=label) from None
    except PermissionError:
        raise InputError("permission denied", path=label) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=label) from None


def _peek_stream(label: str, stream: ByteSource) -> tuple[str, bytes | None, ByteSource | None]:
    head = stream.read(_PEEK_BYTES)
    if head.lstrip().startswith(b"{"):
        return label, head + stream.read(), None
    return label, None, PeekedStream(head, stream)


def _saved_ledger_document(label: str, data: bytes | None) -> dict[str, Any] | None:
    """The JSON object if `data` is a saved ledger; None if it is (presumably) a log."""
    if data is None or not data.lstrip().startswith(b"{"):
        return None
    try:
        document = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # a log line that happens to start with `{`: let the parser judge it
    if not isinstance(document, dict):
        return None
    if not all(key in document for key in SAVED_LEDGER_KEYS):
        raise InputError(
            "JSON, but not a saved ledger (expected the object written by "
            "`memledger ledger --format json`, with schema_version and rows)",
            path=label,
        )
    return document


def _refuse_log_options(
    label: str,
    *,
    rank: str | None,
    startup: int | None,
    model_config_path: str | os.PathLike[str] | None,
    extra_grammars: Sequence[Path],
) -> None:
    """A saved ledger is already one rank of one startup: log-only options cannot apply."""
    given = [
        name
        for name, value in (
            ("--rank", rank),
            ("--startup", startup),
            ("--model-config", model_config_path),
            ("--grammar", extra_grammars or None),
        )
        if value is not None
    ]
    if given:
        raise ConfigError(
            f"{', '.join(given)} cannot apply to a saved ledger (it was built for one rank of "
            "one startup); rebuild it from the log instead",
            path=label,
        )
