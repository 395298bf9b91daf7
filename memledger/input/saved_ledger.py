"""A saved ledger is untrusted input (an artifact of another job, a cache from another branch):
read it bounded and believe it only when it is consistent (issue 12, F12).

`read_document` parses the JSON with NaN/Infinity refused, nesting and numbers bounded;
`check_strings` refuses control characters in its strings; `check_consistent` refuses duplicate
row ids, and a balance, group total, usable figure or summary figure that the rows do not give.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from memledger.config_files import parse_nested
from memledger.errors import ConfigError, InputError, bounded
from memledger.model.ledger import Ledger, group_totals, summary_from_rows
from memledger.record import to_dict
from memledger.units import MAX_DEVICE_BYTES, NumberOutOfRange, checked_number

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


MAX_VALUES = 50_000
"""Keys and values a saved ledger may hold: the largest real log's has 2,568. Checked before
pydantic reads it, which would keep an error for each of a million unknown keys (3 GB)."""


def _count_values(document: Any) -> int:
    """Keys and values in `document`, stopping once past MAX_VALUES (no recursion)."""
    count, pending = 0, [document]
    while pending and count <= MAX_VALUES:
        value = pending.pop()
        count += 1
        if isinstance(value, dict):
            count += len(value)
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return count


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a saved ledger holds")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all distinct: JSON's last-one-wins would hide the first."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {key!r} given twice in one object")
            seen.add(key)
    return found


def _load_json(text: str) -> Any:
    document = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    if _count_values(document) > MAX_VALUES:  # before any other walk of it
        raise ValueError(f"more than {MAX_VALUES:,} keys and values")
    return document


def read_document(data: bytes | str, label: str) -> Any:
    """The JSON value; json.JSONDecodeError when it is not JSON, InputError when it is hostile."""
    text = data.decode("utf-8-sig") if isinstance(data, bytes) else data.removeprefix("\ufeff")
    try:
        document = parse_nested(_load_json, text, label)
    except ConfigError as exc:
        raise InputError(f"not a valid saved ledger: {exc.message}", path=label) from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise
        raise InputError(f"not a valid saved ledger: {exc}", path=label) from None
    try:
        checked_number(document)
    except NumberOutOfRange as exc:
        raise InputError(f"not a valid saved ledger: {exc}", path=label) from None
    return document


def _strings(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, where)
            yield from _strings(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")
    elif isinstance(value, str):
        yield where, value


MAX_STRING_CHARS = 16_384
"""The longest string a saved ledger may hold. memledger writes none near it (log text is cut at
4,096 characters, a path is at most PATH_MAX); a longer one is forged, and every renderer would
echo it whole."""


def check_strings(document: dict[str, Any], label: str, what: str = "saved ledger") -> None:
    """No control character (newline included), bidi override or lone surrogate anywhere, and
    no string longer than MAX_STRING_CHARS: memledger never writes one, and each could forge
    output lines or escape sequences, or fill a terminal or a PR comment (`what`: the kind of
    document the error names, a saved ledger or a saved diff)."""
    for where, text in _strings(document, ""):
        if len(text) > MAX_STRING_CHARS:
            raise InputError(
                f"not a valid {what}: {bounded(where, 80) or '(a key)'} holds a string of "
                f"{len(text):,} characters (memledger writes none over {MAX_STRING_CHARS:,})",
                path=label,
            )
        found = _CONTROL.search(text)
        if found:
            raise InputError(
                f"not a valid {what}: {where or '(a key)'} holds control character "
                f"U+{ord(found.group(0)):04X}",
                path=label,
            )


def check_consistent(ledger: Ledger, label: str) -> None:
    """The figures a saved ledger states must be the ones its rows give."""

    def refuse(why: str) -> InputError:
        return InputError(f"saved ledger is inconsistent: {why}", path=label)

    repeated = [row_id for row_id, count in Counter(r.id for r in ledger.rows).items() if count > 1]
    if repeated:
        raise refuse(f"row id {sorted(repeated)[0]!r} appears more than once")
    partition = sum(r.bytes for r in ledger.rows if r.in_partition and r.bytes is not None)
    if ledger.usable_bytes is not None:
        if partition - ledger.usable_bytes != ledger.balance_error_bytes:
            raise refuse(
                f"rows sum to {partition} bytes, usable is {ledger.usable_bytes}, but the "
                f"stated balance error is {ledger.balance_error_bytes}"
            )
        if ledger.summary.usable is not None and ledger.summary.usable != ledger.usable_bytes:
            raise refuse("summary.usable differs from usable_bytes")
    if ledger.usable_bytes is not None and ledger.usable_bytes < 0:
        raise refuse("usable memory is negative")
    if ledger.usable_bytes is not None:  # the engine's plausibility rules (engine/plausible)
        if ledger.usable_bytes > MAX_DEVICE_BYTES:
            raise refuse(
                f"usable memory is more than any device has ({MAX_DEVICE_BYTES >> 40} TiB)"
            )
        slack = ledger.usable_bytes + ledger.tolerance_bytes
        for point in ledger.checkpoints:
            if point.avail_bytes > slack + point.error_bytes:
                raise refuse(
                    f"checkpoint {bounded(point.id, 60)} (line {point.line}) reads more than "
                    "the usable memory, which no GPU gives"
                )
    if [to_dict(g) for g in ledger.groups] != [to_dict(g) for g in group_totals(ledger.rows)]:
        raise refuse("group totals differ from the sums of their rows")
    stated = to_dict(ledger.summary)
    for name, value in summary_from_rows(ledger.rows).items():
        if stated[name] != value:
            raise refuse(f"summary.{name} is {stated[name]}, but its rows give {value}")
