"""Reading the user's config files (budget, formulas, model config, grammar), depth bounded."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from memledger.errors import ConfigError


def read_config_text(path: str | os.PathLike[str], what: str, *, directory_hint: str = "") -> str:
    """The file's UTF-8 text; a one-line ConfigError naming `what` and the path when it cannot be.

    `directory_hint` follows "is a directory" (e.g. "; pass its config.json").
    """
    label = os.fspath(path)
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", path=label) from None
    except IsADirectoryError:
        raise ConfigError(f"{what} is a directory{directory_hint}", path=label) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{what} is not UTF-8 text", path=label) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {exc.strerror or exc}", path=label) from None


MAX_CONFIG_DEPTH = 32
"""Deepest nesting of tables/arrays accepted in a config or saved-ledger document."""

_Document = TypeVar("_Document")
_SYNTAX_ERRORS = (tomllib.TOMLDecodeError, json.JSONDecodeError)
_LONG_NUMBER = re.compile(r"\d{4301,}")


def parse_nested(
    parse: Callable[[str], _Document], text: str, label: str, *, max_depth: int = MAX_CONFIG_DEPTH
) -> _Document:
    """`parse(text)` (tomllib.loads, json.loads) with its nesting bounded.

    A document nested deeper than `max_depth` is a ConfigError, whether the parser itself gave
    up (RecursionError) or later code would have: nothing memledger reads nests that deep.
    The parser's own syntax errors pass through for the caller to place at file:line.
    """
    try:
        document = parse(text)
    except RecursionError:
        raise ConfigError(f"nested more than {max_depth} levels deep", path=label) from None
    except ValueError as exc:
        long = None if isinstance(exc, _SYNTAX_ERRORS) else _LONG_NUMBER.search(text)
        if long is None:
            raise
        # Python reads no int of more than 4300 digits (sys.get_int_max_str_digits): its
        # ValueError named no place, and passed every caller's catch as a traceback
        line = text.count("\n", 0, long.start()) + 1
        message = f"a number of {len(long.group(0))} digits"
        raise ConfigError(message, path=label, line=line) from None
    if nesting_depth(document) > max_depth:
        raise ConfigError(f"nested more than {max_depth} levels deep", path=label)
    return document


def nesting_depth(document: object) -> int:
    """How many levels of dicts/lists `document` nests (a scalar is 0), without recursion."""
    deepest = 0
    pending: list[tuple[object, int]] = [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            children: Iterable[object] = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        deepest = max(deepest, depth + 1)
        pending.extend((child, depth + 1) for child in children)
    return deepest
