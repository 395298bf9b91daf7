"""`server_args=ServerArgs(...)` / `server_args={...}` -> a typed parameter map, never evaluated.

Each top-level value is read with `ast.literal_eval` (literals only); a repr that is not a literal
(`<Enum.X: 1>`, `PosixPath('x')`) stays a string. A line cut mid-way yields the complete items.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from memledger.events import ParamValue
from memledger.units import NumberOutOfRange, checked_number

MAX_VALUE_CHARS = 20_000
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_PLAIN_RUN = re.compile(r"[^\\'\"()\[\]{}<>,]+")
_LT_RUN = re.compile("<+")


def _split_top_level(body: str) -> list[str]:
    """Split on commas outside quotes and brackets (`<...>` counts only where a value starts).

    One pass, constant work per character: the character before a `<` is tracked as the scan
    goes (slicing the prefix for each `<` made a 1.6 MB line take 68 s).
    """
    items: list[str] = []
    stack: list[str] = []
    quote = ""
    start = 0
    index = 0
    length = len(body)
    last_solid = ""  # the last non-whitespace character before `index`
    while index < length:
        plain = _PLAIN_RUN.match(body, index)
        if plain:  # characters that change no state: skipped in C, not one by one
            tail = body[index : plain.end()].rstrip()
            last_solid = tail[-1] if tail else last_solid
            index = plain.end()
            continue
        char = body[index]
        if quote:
            if char == "\\":
                following = body[index + 1 : index + 2]
                last_solid = following if following and not following.isspace() else char
                index += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPEN:
            if char != "<" or not last_solid or last_solid in _VALUE_STARTS_AFTER:
                stack.append(_OPEN[char])
            elif not quote:  # a `<` that opens nothing: so does the rest of its run
                index = _LT_RUN.match(body, index).end()  # type: ignore[union-attr]
                last_solid = "<"
                continue
        elif stack and char == stack[-1]:
            stack.pop()
        elif char in ")]}" and not stack:
            # closing bracket of the container itself: stop here
            items.append(body[start:index])
            return [i for i in items if i.strip()]
        elif char == "," and not stack:
            items.append(body[start:index])
            start = index + 1
        if not char.isspace():
            last_solid = char
        index += 1
    if not quote and not stack:
        items.append(body[start:])
    # an unfinished trailing item (line cut mid-value) is dropped: never guessed
    return [i for i in items if i.strip()]


_VALUE_STARTS_AFTER = frozenset("=:,([{")


def _json_value(value: Any, problems: list[str]) -> ParamValue:
    """A literal as JSON data; numbers out of range (memledger.units) become their text."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        try:
            return checked_number(value)  # type: ignore[no-any-return]
        except NumberOutOfRange as exc:
            problems.append(str(exc))
            return repr(value) if isinstance(value, float) else f"<{exc}>"
    if isinstance(value, list | tuple):
        return [_json_value(v, problems) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_json_value(v, problems) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): _json_value(v, problems) for k, v in value.items()}
    return repr(value)


def _literal(text: str, problems: list[str]) -> ParamValue:
    text = text.strip()
    if len(text) > MAX_VALUE_CHARS:
        return text[:MAX_VALUE_CHARS]
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _json_value(value, problems)


def parse_server_args(message: str, problems: list[str] | None = None) -> dict[str, ParamValue]:
    """The parameter map of a `server_args=...` message (empty when nothing parses).

    A number out of range (`dp_size=<400 digits>`, `1e999`) is kept as text and described in
    `problems`, when given, as `key: why`.
    """
    found: list[str] = []
    params = _parameters(message, found)
    if problems is not None:
        problems.extend(found)
    return params


def _parameters(message: str, problems: list[str]) -> dict[str, ParamValue]:
    text = message.strip()
    if text.startswith("server_args="):
        text = text[len("server_args=") :].lstrip()
    params: dict[str, ParamValue] = {}
    if text.startswith("{"):
        for item in _split_top_level(text[1:]):
            key, sep, value = item.partition(":")
            if not sep:
                continue
            name = _literal(key, [])
            if isinstance(name, str) and name:
                params[name] = _value(name, value, problems)
        return params
    open_paren = text.find("(")
    if open_paren < 0:
        return params
    for item in _split_top_level(text[open_paren + 1 :]):
        key, sep, value = item.partition("=")
        name = key.strip()
        if sep and name.isidentifier():
            params[name] = _value(name, value, problems)
    return params


def _value(name: str, text: str, problems: list[str]) -> ParamValue:
    found: list[str] = []
    value = _literal(text, found)
    problems.extend(f"{name}: {why}" for why in found)
    return value
