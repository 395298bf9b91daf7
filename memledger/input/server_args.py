"""`server_args=ServerArgs(...)` / `server_args={...}` -> a typed parameter map, never evaluated.

Each top-level value is read with `ast.literal_eval` (literals only); a repr that is not a literal
(`<Enum.X: 1>`, `PosixPath('x')`) stays a string. A line cut mid-way yields the complete items.
"""

from __future__ import annotations

import ast
from typing import Any

from memledger.events import ParamValue

MAX_VALUE_CHARS = 20_000
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _split_top_level(body: str) -> list[str]:
    """Split on commas outside quotes and brackets (`<...>` counts only where a value starts)."""
    items: list[str] = []
    stack: list[str] = []
    quote = ""
    start = 0
    index = 0
    length = len(body)
    while index < length:
        char = body[index]
        if quote:
            if char == "\\":
                index += 2
                continue
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPEN:
            if char != "<" or _starts_value(body, index):
                stack.append(_OPEN[char])
        elif stack and char == stack[-1]:
            stack.pop()
        elif char in ")]}" and not stack:
            # closing bracket of the container itself: stop here
            items.append(body[start:index])
            return [i for i in items if i.strip()]
        elif char == "," and not stack:
            items.append(body[start:index])
            start = index + 1
        index += 1
    if not quote and not stack:
        items.append(body[start:])
    # an unfinished trailing item (line cut mid-value) is dropped: never guessed
    return [i for i in items if i.strip()]


def _starts_value(body: str, index: int) -> bool:
    before = body[:index].rstrip()
    return not before or before[-1] in "=:,([{"


def _json_value(value: Any) -> ParamValue:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
        )
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_json_value(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return repr(value)


def _literal(text: str) -> ParamValue:
    text = text.strip()
    if len(text) > MAX_VALUE_CHARS:
        return text[:MAX_VALUE_CHARS]
    try:
        return _json_value(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_server_args(message: str) -> dict[str, ParamValue]:
    """The parameter map of a `server_args=...` message (empty when nothing parses)."""
    text = message.strip()
    if text.startswith("server_args="):
        text = text[len("server_args=") :].lstrip()
    params: dict[str, ParamValue] = {}
    if text.startswith("{"):
        for item in _split_top_level(text[1:]):
            key, sep, value = item.partition(":")
            if not sep:
                continue
            name = _literal(key)
            if isinstance(name, str) and name:
                params[name] = _literal(value)
        return params
    open_paren = text.find("(")
    if open_paren < 0:
        return params
    for item in _split_top_level(text[open_paren + 1 :]):
        key, sep, value = item.partition("=")
        name = key.strip()
        if sep and name.isidentifier():
            params[name] = _literal(value)
    return params
