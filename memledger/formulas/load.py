"""Loading formulas: the packaged TOML file, `$MEMLEDGER_FORMULAS` and `--formulas FILE`.

Every entry is validated with its file:line; expressions are compiled by the evaluator in
`memledger.formulas.expr` and never passed to `eval`.
"""

from __future__ import annotations

import ast
import os
import re
import tomllib
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from memledger.config_files import parse_nested, read_config_text
from memledger.errors import ConfigError
from memledger.formulas.expr import (
    _ID_PATTERN,
    _PLACEHOLDER,
    FORMULAS_ENV,
    NAMESPACES,
    ExpressionError,
    Formula,
    _Evaluator,
    _shown_text,
    compile_expression,
)
from memledger.formulas.reserved import reserved_reason
from memledger.model.ledger import RowGroup
from memledger.record import field_names

_REQUIRED_KEYS = ("id", "label", "expression", "text", "why")
_KNOWN_KEYS = frozenset(field_names(Formula)) - {"origin"}


FormulaFiles = str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None
"""One user formulas file, several (applied in order), or none."""


def load_formulas(
    paths: FormulaFiles = None, *, include_packaged: bool = True, include_env: bool = True
) -> list[Formula]:
    """The packaged formulas, then $MEMLEDGER_FORMULAS's file, then each of `paths` in order.

    Later files add entries; an entry whose id is already defined (packaged, or by an earlier
    file) replaces that entry. ConfigError (file:line) on a bad file or entry.
    """
    formulas: list[Formula] = list(_packaged_formulas()) if include_packaged else []
    files: list[str | os.PathLike[str]] = []
    env_path = os.environ.get(FORMULAS_ENV) if include_env else None
    if env_path:
        files.append(env_path)
    if isinstance(paths, str | os.PathLike):
        files.append(paths)
    elif paths is not None:
        files.extend(paths)
    for path in files:
        user = read_formulas_file(path)
        replaced = {formula.id for formula in user}
        formulas = [f for f in formulas if f.id not in replaced] + user
    return formulas


@lru_cache(maxsize=1)
def _packaged_formulas() -> tuple[Formula, ...]:
    """The packaged formulas, read once per process (a fleet builds many ledgers)."""
    packaged = resources.files("memledger").joinpath("data", "formulas.toml")
    return tuple(
        parse_formulas(
            packaged.read_text(encoding="utf-8"), "memledger/data/formulas.toml", packaged=True
        )
    )


def read_formulas_file(path: str | os.PathLike[str]) -> list[Formula]:
    """The entries of one user formulas file; ConfigError (file:line) when it is bad."""
    return parse_formulas(read_config_text(path, "formulas file"), os.fspath(path))


def parse_formulas(text: str, label: str, *, packaged: bool = False) -> list[Formula]:
    """Formulas from TOML text (`[[formula]]` tables); ConfigError with file:line on problems.

    A user file (not `packaged`) may redefine a packaged formula, but not take the id of a row
    the engine reads from the log or of a summary figure (`formulas.reserved`)."""
    try:
        document = parse_nested(tomllib.loads, text, label)
    except tomllib.TOMLDecodeError as exc:
        line_match = re.search(r"line (\d+)", str(exc))
        raise ConfigError(
            f"not valid TOML: {exc}",
            path=label,
            line=int(line_match.group(1)) if line_match else None,
        ) from None
    unknown_top = set(document) - {"formula"}
    if unknown_top:
        raise ConfigError(
            f"unknown top-level key(s) {sorted(unknown_top)}; entries are [[formula]] tables",
            path=label,
        )
    entries = document.get("formula", [])
    if not isinstance(entries, list):
        raise ConfigError("`formula` must be an array of tables ([[formula]])", path=label)
    header_lines = [
        number
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip().startswith("[[formula]]")
    ]
    formulas: list[Formula] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        line = header_lines[index] if index < len(header_lines) else None
        formula = _formula_from_entry(entry, label, line, text)
        if formula.id in seen:
            raise ConfigError(f"duplicate formula id {formula.id!r}", path=label, line=line)
        if not packaged:
            _refuse_reserved(formula.id, label, _key_line(text, line, "id"))
        seen.add(formula.id)
        formulas.append(formula)
    return formulas


def _refuse_reserved(formula_id: str, label: str, line: int | None) -> None:
    if formula_id in {formula.id for formula in _packaged_formulas()}:
        return
    reason = reserved_reason(formula_id)
    if reason is not None:
        raise ConfigError(
            f"formula id {formula_id!r} {reason}; choose another id", path=label, line=line
        )


def _formula_from_entry(entry: Any, label: str, line: int | None, text: str) -> Formula:
    def fail(message: str, key: str | None = None) -> ConfigError:
        return ConfigError(message, path=label, line=_key_line(text, line, key))

    if not isinstance(entry, dict):
        raise fail("a [[formula]] entry must be a table")
    missing = [key for key in _REQUIRED_KEYS if key not in entry]
    if missing:
        raise fail(f"formula is missing {', '.join(missing)}")
    unknown = set(entry) - _KNOWN_KEYS
    if unknown:
        raise fail(f"unknown key(s) {sorted(unknown)} (known: {', '.join(sorted(_KNOWN_KEYS))})")
    for key in ("id", "label", "expression", "text", "why", "interval", "when"):
        if key in entry and not isinstance(entry[key], str):
            raise fail(f"`{key}` must be a string", key)
    formula_id = entry["id"]
    if not _ID_PATTERN.match(formula_id):
        raise fail(f"id {formula_id!r} must be lower_snake_case", "id")
    let = entry.get("let", {})
    if not isinstance(let, dict) or not all(isinstance(v, str) for v in let.values()):
        raise fail("`let` must be a table of name = 'expression'", "let")
    for name in let:
        if not _ID_PATTERN.match(name) or name in NAMESPACES:
            raise fail(f"let name {name!r} must be lower_snake_case and not args/log/model", "let")
    group_text = entry.get("group", RowGroup.WORKSPACE.value)
    try:
        group = RowGroup(group_text)
    except ValueError:
        choices = ", ".join(g.value for g in RowGroup)
        raise fail(f"group {group_text!r} is not one of {choices}", "group") from None
    informational = entry.get("informational", False)
    if not isinstance(informational, bool):
        raise fail("`informational` must be true or false", "informational")
    if not informational and not entry.get("interval"):
        raise fail("formula needs an `interval` (the checkpoint it is carved before)", "interval")
    # Validate every expression now, so a typo fails at load time with its line.
    names: set[str] = set()
    for let_name, let_expr in let.items():
        _validate(let_expr, frozenset(names), fail, "let")
        names.add(let_name)
    frozen_names = frozenset(names)
    _validate(entry["expression"], frozen_names, fail, "expression")
    if "when" in entry:
        _validate(entry["when"], frozenset(), fail, "when")
    for placeholder in _PLACEHOLDER.findall(entry["text"].replace("{{", "").replace("}}", "")):
        _validate(placeholder, frozen_names, fail, "text")
    return Formula(
        id=formula_id,
        label=entry["label"],
        interval=entry.get("interval"),
        expression=entry["expression"],
        text=entry["text"],
        why=entry["why"],
        group=group,
        when=entry.get("when"),
        let=dict(let),
        informational=informational,
        origin=f"{label}:{line}" if line is not None else label,
    )


def _validate(
    expression: str,
    names: frozenset[str],
    fail: Callable[[str, str | None], ConfigError],
    key: str,
) -> None:
    try:
        tree = compile_expression(expression, names)
        if _is_constant(tree):
            # Nothing in it depends on a log: what fails now fails on every log, so say it
            # at load time with the line (`1e20 ** 16`, `round(1, -10**8)`).
            _Evaluator({}, {}).visit(tree.body)
    except ExpressionError as exc:
        raise fail(f"{key}: {exc}: {_shown_text(expression)}", key) from None


def _is_constant(tree: ast.Expression) -> bool:
    """No variable in the tree (function names aside; `default`, `defined` look variables up)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("default", "defined"):
                return False
        elif isinstance(node, ast.Name) and not any(
            isinstance(call, ast.Call) and call.func is node for call in ast.walk(tree)
        ):
            return False
    return True


def _key_line(text: str, header_line: int | None, key: str | None) -> int | None:
    """The line of `key = ...` after the entry's header, or the header line itself."""
    if header_line is None or key is None:
        return header_line
    lines = text.splitlines()
    for number in range(header_line, len(lines)):
        stripped = lines[number].strip()
        if stripped.startswith("[[formula]]"):
            break
        if re.match(rf"{re.escape(key)}(\.|\s*=)", stripped):
            return number + 1
    return header_line
