"""`server_args=ServerArgs(...)` / `server_args={...}` -> a typed parameter map, never evaluated.

Each top-level value is read with `ast.literal_eval` (literals only); a repr that is not a literal
(`<Enum.X: 1>`, `PosixPath('x')`) stays a string. A line cut mid-way yields the complete items.

Memory is bounded whatever the line (issue 12): the parameters memledger reads are always kept,
others up to `MAX_KEPT_PARAMS`; each value is cut at `MAX_VALUE_CHARS`. What is not kept is
counted and said (`not_kept`), never dropped silently. A real ServerArgs has under 500 fields.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from memledger.model.events import ParamValue
from memledger.sglang.rows import PARAMETER_KEYS
from memledger.units import NumberOutOfRange, checked_number

MAX_VALUE_CHARS = 4096
"""A value longer than this is kept as its first characters (real values stay under 600)."""
MAX_KEPT_PARAMS = 512
"""Parameters kept beyond the ones memledger reads (the largest real ServerArgs has ~460)."""

READ_KEYS = frozenset(
    {
        # read by the engine, formulas (`args.*`), sizing KNOBS, diagnosis and hints, beyond
        # `sglang.rows.PARAMETER_KEYS` (tests/security/test_server_args.py checks the union)
        "attention_backend",
        "disable_overlap_schedule",
        "enable_aiter_allreduce_fusion",
        "enable_lora",
        "ep_num_redundant_experts",
        "lora_paths",
        "lora_target_modules",
        "mamba_radix_cache_strategy",
        "mamba_scheduler_strategy",
        "max_lora_rank",
        "max_loras_per_batch",
    }
)


def is_read_key(name: str) -> bool:
    """True for a parameter memledger reads somewhere: kept whatever its position."""
    return name in READ_KEYS or PARAMETER_KEYS.match(name) is not None


_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_PLAIN_RUN = re.compile(r"[^\\'\"()\[\]{}<>,]+")
_LT_RUN = re.compile("<+")


def _split_top_level(body: str) -> list[str]:
    return list(_iter_top_level(body, 0))


def _iter_top_level(body: str, begin: int, unclosed: list[str] | None = None) -> Iterator[str]:
    """Split on commas outside quotes and brackets (`<...>` counts only where a value starts).

    `unclosed`, when given, means `body[begin:]` is a container's inside: if its closing bracket
    never comes (a paste cut the repr), the last item may be cut too (`enable_metrics=Fa`), so
    it is not yielded but appended to `unclosed`.

    One pass, constant work per character: the character before a `<` is tracked as the scan
    goes (slicing the prefix for each `<` made a 1.6 MB line take 68 s). Items are yielded, not
    collected: 100,000 of them held at once cost ~20 MB.
    """
    stack: list[str] = []
    quote = ""
    start = begin
    index = begin
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
            item = body[start:index]
            if item.strip():
                yield item
            return
        elif char == "," and not stack:
            item = body[start:index]
            if item.strip():
                yield item
            start = index + 1
        if not char.isspace():
            last_solid = char
        index += 1
    # an unfinished trailing item (line cut mid-value) is dropped: never guessed
    if not quote and not stack and body[start:].strip():
        if unclosed is None:
            yield body[start:]
        else:
            unclosed.append(body[start:].strip())


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


_CONSTANTS: dict[str, ParamValue] = {"None": None, "True": True, "False": False}
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
_PLAIN_STRING = re.compile(r"'[^'\\\x00-\x1f]*'|\"[^\"\\\x00-\x1f]*\"")
"""A quoted string with nothing Python's tokenizer reads specially inside (no escape, no
control character): its text is what `ast.literal_eval` returns."""


def _simple_literal(text: str) -> tuple[bool, object]:
    """(True, value) for the 98 % of real values that are None/True/False, a decimal int or
    float, or a plain quoted string: what `ast.literal_eval` gives, at ~1/30 of its cost."""
    if text in _CONSTANTS:
        return True, _CONSTANTS[text]
    if _INT.fullmatch(text):
        return True, int(text)  # more than 4300 digits: ValueError, as literal_eval's
    if _FLOAT.fullmatch(text):
        return True, float(text)
    if _PLAIN_STRING.fullmatch(text):
        return True, text[1:-1]
    return False, None


def _literal(text: str, problems: list[str], cut: list[int] | None = None) -> ParamValue:
    text = text.strip()
    if len(text) > MAX_VALUE_CHARS:
        if cut is not None:
            cut[0] += 1
        return text[:MAX_VALUE_CHARS]
    try:
        simple, value = _simple_literal(text)
        if not simple:
            value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return _json_value(value, problems)


def parse_server_args(
    message: str, problems: list[str] | None = None, not_kept: list[str] | None = None
) -> dict[str, ParamValue]:
    """The parameter map of a `server_args=...` message (empty when nothing parses).

    A number out of range (`dp_size=<400 digits>`, `1e999`) is kept as text and described in
    `problems`, when given, as `key: why`. What the bounds left out (parameters beyond
    `MAX_KEPT_PARAMS`, values cut at `MAX_VALUE_CHARS`) is counted in `not_kept`, when given.
    """
    found: list[str] = []
    params = _Params()
    params.read(message, found)
    if problems is not None:
        problems.extend(found)
    if not_kept is not None:
        if params.dropped:
            not_kept.append(
                f"{params.dropped:,} parameters beyond the first {MAX_KEPT_PARAMS} not kept"
            )
        if params.cut[0]:
            not_kept.append(f"{params.cut[0]:,} values cut at {MAX_VALUE_CHARS} characters")
        for item in params.unclosed:
            shown = item if len(item) <= 40 else item[:37] + "..."
            not_kept.append(f"cut before its closing bracket: the last item {shown!r} not read")
    return params.kept


def _key(text: str, cut: list[int]) -> ParamValue:
    """A dict key: `'name'` read directly (the common case, 100,000 times on a hostile line)."""
    text = text.strip()
    if len(text) > 2 and text[0] == text[-1] and text[0] in "'\"" and text[1:-1].isidentifier():
        return text[1:-1]
    return _literal(text, [], cut)


def coverage_reason(problems: list[str], not_kept: list[str]) -> str:
    """The coverage reason of a server_args line: numbers kept as text, then what the bound
    left out (`bounded_parts`, which the engine also notes)."""
    reasons = ["malformed: " + "; ".join(problems[:3])] if problems else []
    return "; ".join(reasons + bounded_parts(not_kept))


def bounded_parts(not_kept: list[str]) -> list[str]:
    """What the memory bound left out of a server_args line, one `server_args: ...` each."""
    return [f"server_args: {why}" for why in not_kept]


class _Params:
    """The kept parameters of one line, and counts of what was not kept."""

    def __init__(self) -> None:
        self.kept: dict[str, ParamValue] = {}
        self.dropped = 0
        self.cut = [0]
        self.unclosed: list[str] = []
        """The last item of a repr or dict whose closing bracket never came (not read)."""

    def _keeps(self, name: str) -> bool:
        if len(self.kept) < MAX_KEPT_PARAMS or name in self.kept or is_read_key(name):
            return True
        self.dropped += 1
        return False

    def _store(self, name: str, text: str, problems: list[str]) -> None:
        found: list[str] = []
        self.kept[name] = _literal(text, found, self.cut)
        problems.extend(f"{name}: {why}" for why in found)

    def read(self, message: str, problems: list[str]) -> None:
        text = message.strip()
        if text.startswith("server_args="):
            text = text[len("server_args=") :].lstrip()
        if text.startswith("{"):
            for item in _iter_top_level(text, 1, self.unclosed):
                key, sep, value = item.partition(":")
                if not sep:
                    continue
                name = _key(key, self.cut)
                if isinstance(name, str) and name and self._keeps(name):
                    self._store(name, value, problems)
            return
        open_paren = text.find("(")
        if open_paren < 0:
            return
        for item in _iter_top_level(text, open_paren + 1, self.unclosed):
            key, sep, value = item.partition("=")
            name = key.strip()
            if sep and name.isidentifier() and self._keeps(name):
                self._store(name, value, problems)
