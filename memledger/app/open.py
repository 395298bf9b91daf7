"""The one input opener: a path, `-` (stdin) or a stream; gunzipped by magic (`reader.open_log`),
then a saved ledger JSON told from a log by a bounded peek. A log is never read whole here."""

from __future__ import annotations

import codecs
import io
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeVar

from memledger.errors import InputError
from memledger.input.reader import SNIFF_BYTES, ByteSource, OpenedLog, PeekedStream, open_log
from memledger.input.wrappers import is_log_record
from memledger.model.ledger import LEDGER_SCHEMA_VERSION, Ledger, upgrade_document
from memledger.record import field_values, validate

if TYPE_CHECKING:
    from memledger.compare.models import LedgerDiff

T = TypeVar("T")

PathLike = str | os.PathLike[str]

SAVED_LEDGER_KEYS = ("schema_version", "rows")
"""A JSON object with these keys is a saved ledger (`memledger ledger --format json`)."""
SAVED_DIFF_KEYS = ("schema_version", "delta_definition", "inputs", "rows")
"""A JSON object with these keys is a saved diff (`memledger diff --format json`)."""
SAVED_LEDGER_MAX_BYTES = 2 << 20
"""A brace-led input longer than this is not taken for a saved ledger (those are kilobytes: 50 KB
for the largest real log's): it is streamed as a log, so a hostile or huge input is never held
whole. JSON of 2 MiB parses into at most ~45 MB of objects (`[[],[],...]`); 32 MiB could reach
3 GB (a saved ledger of a million keys, then pydantic's error per key)."""


@dataclass(frozen=True)
class Input:
    """An opened input: a saved ledger's JSON object, a saved diff's, or a log ready to scan."""

    label: str
    document: dict[str, Any] | None = None
    log: OpenedLog | None = None
    diff: dict[str, Any] | None = None
    """A saved diff's JSON object (then `document` and `log` are None)."""


class _EncodedText:
    """A text stream read as UTF-8 bytes, chunk by chunk: the parser reads bytes, and a log must
    not be held whole in memory."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = b""
        self.name = getattr(stream, "name", None) or "<stream>"

    def read(self, size: int = -1, /) -> bytes:
        if size < 0:
            data, self._pending = self._pending + self._stream.read().encode("utf-8"), b""
            return data
        while len(self._pending) < size:
            text = self._stream.read(size)
            if not text:
                break
            self._pending += text.encode("utf-8")
        data, self._pending = self._pending[:size], self._pending[size:]
        return data


def _byte_source(source: PathLike | IO[bytes] | IO[str] | ByteSource) -> PathLike | ByteSource:
    """A path unchanged; a text stream re-encoded as bytes (the parser reads bytes)."""
    if isinstance(source, str | os.PathLike):
        return source
    if isinstance(source, io.TextIOBase) or isinstance(source.read(0), str):
        return _EncodedText(source)  # type: ignore[arg-type]
    return source  # type: ignore[return-value]


def _read_up_to(stream: ByteSource, limit: int) -> bytes:
    """At most `limit` bytes (fewer only at the end of the input)."""
    data = bytearray()  # grown in place: never the chunks and their join at once
    while len(data) < limit:
        chunk = stream.read(min(limit - len(data), 1 << 20))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def _json_lines(head: bytes) -> bool:
    """Whether the input's first line is a JSON value with more text after it (Docker's
    `*-json.log`, structured logging): a log, never one saved ledger (that would be JSON's
    "Extra data"), known from the peeked head without reading on."""
    first, newline, rest = head.removeprefix(codecs.BOM_UTF8).partition(b"\n")
    if not newline or not rest.strip():
        return False
    try:
        json.loads(first)
    except (ValueError, UnicodeDecodeError):
        return False
    return True


@contextmanager
def open_input(
    source: PathLike | IO[bytes] | IO[str] | ByteSource, *, label: str | None = None
) -> Iterator[Input]:
    """Open a path, `-` (stdin) or a stream; gunzip by magic; tell a saved ledger from a log.

    Only a brace-led input is read further than the first block, and at most
    SAVED_LEDGER_MAX_BYTES of it: a saved ledger is a small JSON object, a log is streamed.
    Raises InputError for a missing, empty or binary input, or JSON that is not a saved ledger.
    """
    with open_log(_byte_source(source)) as log:
        name = label or log.name
        brace = log.head.removeprefix(codecs.BOM_UTF8).lstrip().startswith(b"{")
        if not brace or _json_lines(log.head):
            yield Input(label=name, log=log)
            return
        data = _read_up_to(log.stream, SAVED_LEDGER_MAX_BYTES + 1)
        document = None if len(data) > SAVED_LEDGER_MAX_BYTES else _saved_ledger(name, data)
        if document is not None and _is_saved_diff(document):
            yield Input(label=name, diff=document)
            return
        if document is not None:
            yield Input(label=name, document=document)
            return
        # A log whose first line starts with `{`: scan on from what was read (one stream).
        yield Input(
            label=name,
            log=OpenedLog(name=log.name, stream=PeekedStream(data, log.stream), head=log.head),
        )


def _saved_ledger(label: str, data: bytes) -> dict[str, Any] | None:
    """The JSON object if `data` is a saved ledger; None if it is (presumably) a log."""
    from memledger.input.saved_ledger import read_document

    try:
        document = read_document(data, label)
    except json.JSONDecodeError as exc:
        if _malformed_json(data, exc):
            raise InputError(
                f"neither a saved ledger nor a log: not valid JSON (line {exc.lineno}, column "
                f"{exc.colno}: {exc.msg}), and no SGLang log lines found",
                path=label,
            ) from None
        return None  # a log line that happens to start with `{`: let the parser judge it
    except UnicodeDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    if not all(key in document for key in SAVED_LEDGER_KEYS):
        if _is_saved_diff(document):
            return document
        if is_log_record(document):
            return None  # one line of a tool's log, as its record (memledger.input.wrappers)
        raise InputError(
            "JSON, but not a saved ledger (expected the object written by "
            "`memledger ledger --format json`, with schema_version and rows)",
            path=label,
        )
    return document


_SGLANG_PREFIX = re.compile(rb"^\[\d{4}-\d\d-\d\d ", re.MULTILINE)


def _malformed_json(data: bytes, error: json.JSONDecodeError) -> bool:
    """A JSON document that does not parse (a truncated saved ledger, `{"a": 1`), not a log
    whose first line is a JSON object (Docker's JSON lines: "Extra data" after the first) or
    holds a brace (F29: such a file was reported as "no SGLang log lines")."""
    if error.msg == "Extra data":
        return False
    first_line = data.removeprefix(codecs.BOM_UTF8).split(b"\n", 1)[0]
    try:
        json.loads(first_line)
        return False  # JSON lines: a log
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    return _SGLANG_PREFIX.search(data, 0, SNIFF_BYTES) is None


def _is_saved_diff(document: dict[str, Any]) -> bool:
    return all(key in document for key in SAVED_DIFF_KEYS)


def ledger_from_document(document: dict[str, Any], *, label: str) -> Ledger:
    """Validate a saved ledger JSON object; InputError naming the first problem otherwise.

    Version 1 files are upgraded first (`ledger_model.upgrade_document`)."""
    document = upgrade_document(document)
    _check_version(document, LEDGER_SCHEMA_VERSION, label, "saved ledger", "ledger LOG")
    from memledger.input.saved_ledger import check_consistent, check_strings

    check_strings(document, label)
    ledger = _validated(Ledger, document, label, "saved ledger")
    check_consistent(ledger, label)
    return ledger


def diff_from_document(document: dict[str, Any], *, label: str) -> LedgerDiff:
    """Validate a saved diff JSON object (`memledger diff --format json`) as untrusted input:
    its strings, its shape (pydantic), and each figure's Δ against its two sides; InputError
    naming the first problem otherwise."""
    from memledger.compare.models import DIFF_SCHEMA_VERSION, LedgerDiff, StatePoolAnalysis
    from memledger.input.saved_ledger import check_strings
    from memledger.render.diff_json import DiffDocument

    _check_version(document, DIFF_SCHEMA_VERSION, label, "saved diff", "diff BASE HEAD")
    check_strings(document, label, "saved diff")
    saved = _validated(DiffDocument, document, label, "saved diff")
    for change in (*saved.rows, *saved.groups, saved.total, *saved.checkpoints):
        base, head, delta = change.base_bytes, change.head_bytes, change.delta_bytes
        if base is not None and head is not None and delta is not None and delta != head - base:
            raise InputError(
                f"saved diff is inconsistent: {getattr(change, 'id', 'a figure')!r} has Δ "
                f"{delta} bytes, but head - base is {head - base}",
                path=label,
            )
    # the document's rendered sentences (verdict, state-pool statement) are made again
    fields = {**field_values(saved)}
    del fields["verdict"]
    pool = field_values(saved.state_pool)
    del pool["statement"], pool["usable_note"]
    return LedgerDiff(**{**fields, "state_pool": StatePoolAnalysis(**pool)})


def _check_version(
    document: dict[str, Any], wanted: int, label: str, what: str, command: str
) -> None:
    version = document.get("schema_version")
    if version != wanted:
        raise InputError(
            f"{what} has schema_version {version!r}; this memledger reads version {wanted} "
            f"(re-run `memledger {command} --format json`)",
            path=label,
        )


def _validated(cls: type[T], document: dict[str, Any], label: str, what: str) -> T:
    """`document` read as `cls` by pydantic; InputError naming the first problem otherwise."""
    from pydantic import ValidationError  # a saved document is the JSON contract: pydantic reads it

    try:
        return validate(cls, document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        message = first["msg"]
        if first["type"] in _MESSAGES:
            message = _MESSAGES[first["type"]].format(**first.get("ctx", {}))
        raise InputError(f"not a valid {what}: {where}: {message}{more}", path=label) from None


_MESSAGES = {
    "unexpected_keyword_argument": "Extra inputs are not permitted",
    "dataclass_type": "Input should be a valid dictionary or instance of {class_name}",
}
"""pydantic's words for a document that is not an object or has a key the record lacks, as it
words them for a model (records are data classes, for which it says "Unexpected keyword
argument" and "Input should be a dictionary or an instance of ...")."""
