"""Budget files: the TOML model of `memledger check` limits, and its loader with file:line errors.

A budget file (`memledger.toml`, or `[tool.memledger]` in `pyproject.toml`) holds `version = 1`,
an optional `[defaults]` table and a list of `[[budget]]` entries. Each entry names an item (a
ledger summary key or row id) and any of `max`, `min`, `max_increase`, `max_increase_pct`.
Sizes are written with a unit ("8 GiB", "1196 MiB", "8 GB" = SGLang's GB = GiB, "627048448 bytes")
and held as integer bytes; counts (tokens, slots, fractions) are plain numbers.
"""

from __future__ import annotations

import difflib
import importlib
import re
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from pathlib import Path
from typing import Any

from memledger.config_files import parse_nested, read_config_text
from memledger.errors import ConfigError, bounded
from memledger.model.check import ItemKind, Level, Quantity
from memledger.model.ledger import Summary, SummaryUnit
from memledger.record import field_names, record
from memledger.units import (
    GIB,
    KIB,
    MAX_BYTES,
    MIB,
    NumberOutOfRange,
    checked_number,
)

BUDGET_VERSION = 1
DEFAULT_BUDGET_FILE = "memledger.toml"
PYPROJECT_FILE = "pyproject.toml"
DEFAULT_TIGHTEN_HEADROOM_PCT = 25.0
"""A passing item whose headroom exceeds this % of its limit gets a "could be tightened" hint."""

# Units a budget may use for sizes. SGLang prints GiB as "GB" and MiB as "MB", so those mean the
# binary units here too (never 10^9): a budget copied from a log line means what the log meant.
SIZE_UNITS: dict[str, int] = {
    "GiB": GIB,
    "GB": GIB,
    "MiB": MIB,
    "MB": MIB,
    "KiB": KIB,
    "KB": KIB,
    "bytes": 1,
    "B": 1,
}

# Row ids named by the issues; the packaged formulas add theirs (see `known_items`). Other row
# ids depend on the deployment (a ledger only has rows for what it allocates), so they are
# resolved per log: a row id the log's ledger lacks is exit 3, not a config error.
NAMED_ROW_IDS = frozenset({"req_to_token", "dcp_q_replica", "draft_slot_map"})
ROW_ID_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:>-]*$")

_SHARED_KEYS = {"level", "message", "logs", "max_increase", "max_increase_pct", "if_absent"}
ENTRY_KEYS = frozenset({"item", "max", "min", "waived_until", "reason", *_SHARED_KEYS})
DEFAULT_KEYS = frozenset({"tighten_headroom_pct", *_SHARED_KEYS})
TOP_LEVEL_KEYS = frozenset({"version", "defaults", "budget"})

ROW_ITEM_PREFIX = "row:"
"""`item = "row:my_formula"` names a ledger row id that is not in memledger's own vocabulary."""
# Every report line about an item echoes it, and its `message`/`reason`/`logs` text: bounded.
MAX_ITEM_CHARS, MAX_TEXT_CHARS = 128, 1000


class IfAbsent(StrEnum):
    """What an entry means on a complete ledger without its item (a pool the deployment does not
    allocate, such as a fork's weight staging on upstream SGLang). A partial ledger's missing item
    is always `missing`: the startup stopped before it, which no budget may wave through."""

    MISSING = "missing"  # exit 3: this log cannot provide a budgeted item
    SKIP = "skip"  # not compared, with a note
    ZERO = "zero"  # counts as 0


# --- did-you-mean for names in budget files ---------------------------------------------------

TYPO_DISTANCE = 2
"""A name this close (edits) to a known one is taken as a typo of it."""


def edit_distance(left: str, right: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions, transpositions."""
    previous2: list[int] = []
    previous = list(range(len(right) + 1))
    for i, char in enumerate(left, 1):
        current = [i]
        for j, other in enumerate(right, 1):
            cost = 0 if char == other else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char == right[j - 2] and left[i - 2] == other:
                value = min(value, previous2[j - 2] + 1)
            current.append(value)
        previous2, previous = previous, current
    return previous[-1]


def typo_of(item: str, names: Collection[str]) -> str | None:
    """The known name `item` is most likely a misspelling of, if any."""
    close = [(edit_distance(item, name), name) for name in names if abs(len(name) - len(item)) <= 2]
    best = min(close, default=None)
    return best[1] if best is not None and best[0] <= TYPO_DISTANCE else None


def _suggest(word: str, choices: Collection[str]) -> str:
    """` (did you mean 'x'?)` for the closest choice, or an empty string."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _summary_item_kinds() -> dict[str, ItemKind]:
    # Sizes are the fields whose unit is bytes; slots, tokens and the fraction are counts.
    return {
        name: ItemKind.SIZE if Summary.unit(name) is SummaryUnit.BYTES else ItemKind.COUNT
        for name in field_names(Summary)
    }


SUMMARY_ITEM_KINDS: Mapping[str, ItemKind] = _summary_item_kinds()


def item_kind(item: str) -> ItemKind:
    """The kind of a budget item: summary keys by their type, every ledger row is a size."""
    return SUMMARY_ITEM_KINDS.get(item, ItemKind.SIZE)


def known_items() -> frozenset[str]:
    """Items known whatever the log: summary keys, and the row ids of named formulas."""
    return frozenset(SUMMARY_ITEM_KINDS) | NAMED_ROW_IDS | _formula_ids()


def _formula_ids() -> frozenset[str]:
    # Looked up by name so that a budget can be read even where the formulas cannot be loaded.
    try:
        load_formulas = importlib.import_module("memledger.formulas").load_formulas
        return frozenset(str(formula.id) for formula in load_formulas())
    except (ImportError, AttributeError, ConfigError):
        return frozenset()


@record
class BudgetEntry:
    """One `[[budget]]` entry after defaults were applied; limits in bytes (sizes) or numbers."""

    item: str
    """A summary key or ledger row id (the `row:` prefix already stripped)."""
    kind: ItemKind
    max: Quantity | None = None
    min: Quantity | None = None
    max_increase: Quantity | None = None
    """Allowed growth against --baseline, in the item's unit."""
    max_increase_pct: float | None = None
    """Allowed growth against --baseline in percent of the baseline: (head - base) / base x 100."""
    level: Level = Level.FAIL
    message: str | None = None
    logs: str | None = None
    """Glob: the entry applies only to logs whose path or file name matches."""
    waived_until: date | None = None
    reason: str | None = None
    if_absent: IfAbsent = IfAbsent.MISSING
    line: int | None = None
    """Line of the entry's `[[budget]]` header in the budget file."""
    index: int = 0
    """0-based position among the file's entries."""

    @property
    def has_relative(self) -> bool:
        """Whether this entry compares against a baseline."""
        return self.max_increase is not None or self.max_increase_pct is not None


@record
class Budget:
    """A loaded budget file."""

    path: str
    version: int = BUDGET_VERSION
    entries: list[BudgetEntry] = field(default_factory=list)
    tighten_headroom_pct: float = DEFAULT_TIGHTEN_HEADROOM_PCT


# ---------------------------------------------------------------------------------------------
# Discovery and loading (the only I/O in this module)
# ---------------------------------------------------------------------------------------------


def discover_budget(directory: Path | None = None) -> Path:
    """`memledger.toml`, else a `pyproject.toml` with `[tool.memledger]`, in `directory` (cwd)."""
    # Relative to the working directory when searching it: GitHub annotations want repo paths.
    base = Path() if directory is None else directory
    candidate = base / DEFAULT_BUDGET_FILE
    if candidate.is_file():
        return candidate
    pyproject = base / PYPROJECT_FILE
    if pyproject.is_file():
        # The PR's checkout supplies this file in CI: a hostile or broken one is an error that
        # names it, never a traceback, and never silently "no budget file".
        label = str(pyproject)
        text = read_config_text(pyproject, "pyproject.toml")
        try:
            data = parse_nested(tomllib.loads, text, label)
        except tomllib.TOMLDecodeError as exc:
            raise _toml_error(exc, text, label) from None
        if isinstance(data.get("tool"), dict) and "memledger" in data["tool"]:
            return pyproject
    raise ConfigError(
        f"no budget file: pass --budget FILE, or create {DEFAULT_BUDGET_FILE} "
        f"(or [tool.memledger] in {PYPROJECT_FILE}) in {base.resolve()}"
    )


def load_budget(path: str | Path) -> Budget:
    """Read a budget file (`pyproject.toml` is read from its `[tool.memledger]` table)."""
    file_path = Path(path)
    text = read_config_text(file_path, "budget file")
    in_pyproject = file_path.name == PYPROJECT_FILE
    return parse_budget(text, path=str(path), in_pyproject=in_pyproject)


_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_TOML_END = re.compile(r"\s*\(at end of document\)$")


def parse_budget(
    text: str,
    *,
    path: str = "<budget>",
    in_pyproject: bool = False,
) -> Budget:
    """Parse budget TOML text; every problem is a ConfigError with path:line."""
    try:
        document = parse_nested(tomllib.loads, text, path)
    except tomllib.TOMLDecodeError as exc:
        raise _toml_error(exc, text, path) from None
    locator = _Locator(text, prefix="tool.memledger." if in_pyproject else "")
    if in_pyproject:
        tool = document.get("tool")
        if not isinstance(tool, dict) or "memledger" not in tool:
            raise ConfigError("no [tool.memledger] table", path=path)
        table = tool["memledger"]
        if not isinstance(table, dict):
            raise ConfigError("tool.memledger must be a table", path=path, line=1)
    else:
        table = document
    return _BudgetBuilder(table, path, locator).build()


def _toml_error(exc: tomllib.TOMLDecodeError, text: str, path: str) -> ConfigError:
    message = str(exc)
    position = _TOML_POSITION.search(message)
    if position:
        line, column = int(position.group(1)), int(position.group(2))
        reason = message[: position.start()]
        return ConfigError(f"malformed TOML: {reason} (column {column})", path=path, line=line)
    end = _TOML_END.search(message)
    reason = message[: end.start()] if end else message
    last_line = max(1, text.count("\n") + (0 if text.endswith("\n") else 1))
    return ConfigError(f"malformed TOML: {reason} (at end of file)", path=path, line=last_line)


class _Locator:
    """Finds the line of a table header or key in the TOML text, for semantic errors."""

    def __init__(self, text: str, prefix: str) -> None:
        self.lines = text.splitlines()
        dotted = r"\s*\.\s*".join(re.escape(part) for part in (prefix + "budget").split("."))
        self._entry_header = re.compile(rf"^\s*\[\[\s*{dotted}\s*\]\]")
        defaults = r"\s*\.\s*".join(re.escape(part) for part in (prefix + "defaults").split("."))
        self._defaults_header = re.compile(rf"^\s*\[\s*{defaults}\s*\]")
        self._any_header = re.compile(r"^\s*\[")
        self.entry_lines = [
            number for number, line in enumerate(self.lines, 1) if self._entry_header.match(line)
        ]
        self._table_start = 0
        if prefix:
            own = r"\s*\.\s*".join(re.escape(part) for part in prefix.rstrip(".").split("."))
            header = re.compile(rf"^\s*\[\s*{own}\s*\]")
            self._table_start = next(
                (n for n, line in enumerate(self.lines, 1) if header.match(line)), 0
            )

    def entry(self, index: int) -> int | None:
        """Line of the index-th `[[budget]]` header (None for inline-array entries)."""
        return self.entry_lines[index] if index < len(self.entry_lines) else None

    def entry_key(self, index: int, key: str) -> int | None:
        """Line of `key = ...` inside the index-th entry, else the entry's header line."""
        start = self.entry(index)
        return self._key_after(start, key) if start is not None else self.top_key("budget")

    def defaults_key(self, key: str) -> int | None:
        """Line of `key = ...` in the [defaults] table (or of the header)."""
        start = next(
            (n for n, line in enumerate(self.lines, 1) if self._defaults_header.match(line)), None
        )
        return self._key_after(start, key) if start is not None else self.top_key("defaults")

    def top_key(self, key: str) -> int | None:
        """Line of a top-level `key = ...` (before the first table header)."""
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for number in range(self._table_start + 1, len(self.lines) + 1):
            line = self.lines[number - 1]
            if pattern.match(line):
                return number
            if self._any_header.match(line) and number != self._table_start:
                break
        return self._table_start or None

    def _key_after(self, start: int, key: str) -> int:
        pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
        for number in range(start + 1, len(self.lines) + 1):
            line = self.lines[number - 1]
            if self._any_header.match(line):
                break
            if pattern.match(line):
                return number
        return start


class _BudgetBuilder:
    """Validates the parsed TOML table and turns it into a Budget."""

    def __init__(self, table: dict[str, Any], path: str, locator: _Locator) -> None:
        self.table = table
        self.path = path
        self.locator = locator
        self.items = known_items()

    def error(self, message: str, line: int | None) -> ConfigError:
        return ConfigError(message, path=self.path, line=line)

    def build(self) -> Budget:
        for key in self.table:
            if key not in TOP_LEVEL_KEYS:
                raise self.error(
                    f"unknown key {key!r}{_suggest(key, TOP_LEVEL_KEYS)} "
                    f"(allowed: {', '.join(sorted(TOP_LEVEL_KEYS))})",
                    self.locator.top_key(key),
                )
        version = self.table.get("version", BUDGET_VERSION)
        if version != BUDGET_VERSION or type(version) is not int:
            raise self.error(
                f"unsupported budget version {version!r} (this memledger reads version "
                f"{BUDGET_VERSION})",
                self.locator.top_key("version"),
            )
        defaults = self.table.get("defaults", {})
        if not isinstance(defaults, dict):
            raise self.error(
                "defaults must be a table ([defaults])", self.locator.top_key("defaults")
            )
        self._check_keys(defaults, DEFAULT_KEYS, "[defaults]", self.locator.defaults_key)
        entries_raw = self.table.get("budget", [])
        if not isinstance(entries_raw, list) or not all(isinstance(e, dict) for e in entries_raw):
            raise self.error(
                "budget must be an array of tables ([[budget]] entries)",
                self.locator.top_key("budget"),
            )
        if not entries_raw:
            raise self.error("the budget file has no [[budget]] entries", None)
        tighten = defaults.get("tighten_headroom_pct", DEFAULT_TIGHTEN_HEADROOM_PCT)
        if not _is_number(tighten) or tighten < 0:
            raise self.error(
                f"tighten_headroom_pct must be a finite non-negative number, not {tighten!r}",
                self.locator.defaults_key("tighten_headroom_pct"),
            )
        entries = [self._entry(index, raw, defaults) for index, raw in enumerate(entries_raw)]
        return Budget(
            path=self.path,
            version=BUDGET_VERSION,
            entries=entries,
            tighten_headroom_pct=float(tighten),
        )

    def _check_keys(
        self,
        table: Mapping[str, Any],
        allowed: frozenset[str],
        where: str,
        locate: Any,
    ) -> None:
        for key in table:
            if key not in allowed:
                raise self.error(
                    f"unknown key {key!r} in {where}{_suggest(key, allowed)} "
                    f"(allowed: {', '.join(sorted(allowed))})",
                    locate(key),
                )

    def _entry(self, index: int, raw: dict[str, Any], defaults: dict[str, Any]) -> BudgetEntry:
        def where(key: str) -> int | None:
            return self.locator.entry_key(index, key)

        def in_defaults(key: str) -> bool:
            return key not in raw and key in defaults

        def locate(key: str) -> int | None:
            return self.locator.defaults_key(key) if in_defaults(key) else where(key)

        self._check_keys(raw, ENTRY_KEYS, "[[budget]]", where)
        item = raw.get("item")
        if not isinstance(item, str) or not item.strip():
            raise self.error(
                'a [[budget]] entry needs item = "<summary key or row id>"', where("item")
            )
        item = self._item(item.strip(), where("item"))
        kind = item_kind(item)
        merged = {**{k: v for k, v in defaults.items() if k != "tighten_headroom_pct"}, **raw}
        # A size-valued default (max_increase) cannot apply to a count item: it only fills in
        # entries of the same kind, and `max_increase_pct` applies to both.
        if in_defaults("max_increase") and kind is ItemKind.COUNT:
            merged.pop("max_increase")

        limits: dict[str, Quantity | None] = {}
        for key in ("max", "min", "max_increase"):
            limits[key] = (
                self._quantity(merged[key], kind, key, item, locate(key)) if key in merged else None
            )
        pct = merged.get("max_increase_pct")
        if pct is not None and (not _is_number(pct) or pct < 0):
            raise self.error(
                "max_increase_pct must be a finite non-negative number (percent of the "
                f"baseline), not {pct!r}",
                locate("max_increase_pct"),
            )
        if all(value is None for value in limits.values()) and pct is None:
            raise self.error(
                f"budget for {item!r} sets no limit: give max, min, max_increase or "
                "max_increase_pct",
                where("item"),
            )
        low, high = limits["min"], limits["max"]
        if low is not None and high is not None and low > high:
            raise self.error(f"budget for {item!r} has min above max", where("min"))

        level_text = merged.get("level", Level.FAIL.value)
        if level_text not in {level.value for level in Level}:
            raise self.error(f'level must be "fail" or "warn", not {level_text!r}', locate("level"))
        if_absent = merged.get("if_absent", IfAbsent.MISSING.value)
        if if_absent not in {choice.value for choice in IfAbsent}:
            raise self.error(
                f'if_absent must be "missing", "skip" or "zero", not {if_absent!r}',
                locate("if_absent"),
            )
        message = self._text(merged, "message", locate)
        logs = self._text(merged, "logs", locate)
        reason = self._text(merged, "reason", locate)
        waived_until = self._date(raw.get("waived_until"), where("waived_until"))
        if waived_until is not None and not reason:
            raise self.error(
                'waived_until needs reason = "..." (why the breach is accepted until then)',
                where("waived_until"),
            )
        if reason and waived_until is None:
            raise self.error("reason is only used with waived_until = YYYY-MM-DD", where("reason"))
        return BudgetEntry(
            item=item,
            kind=kind,
            max=high,
            min=low,
            max_increase=limits["max_increase"],
            max_increase_pct=None if pct is None else float(pct),
            level=Level(level_text),
            message=message,
            logs=logs,
            waived_until=waived_until,
            reason=reason,
            if_absent=IfAbsent(if_absent),
            line=self.locator.entry(index),
            index=index,
        )

    def _item(self, item: str, line: int | None) -> str:
        if len(item) > MAX_ITEM_CHARS:  # before any echo or typo search of it
            raise self.error(
                f"item {bounded(item, 60)!r} is {len(item):,} characters long: no summary key "
                f"or row id is longer than {MAX_ITEM_CHARS}",
                line,
            )
        if item.startswith(ROW_ITEM_PREFIX):
            row_id = item[len(ROW_ITEM_PREFIX) :].strip()
            if not ROW_ID_PATTERN.match(row_id):
                raise self.error(f'not a row id: {item!r} (e.g. item = "row:my_pool")', line)
            return row_id
        if item.startswith("summary."):
            item = item[len("summary.") :]
            if item not in SUMMARY_ITEM_KINDS:
                raise self.error(
                    f"unknown summary key {item!r}{_suggest(item, SUMMARY_ITEM_KINDS)}", line
                )
        if item in self.items:
            return item
        typo = typo_of(item, self.items)
        if typo is not None:
            raise self.error(f"unknown item {item!r} (did you mean {typo!r}?)", line)
        if not ROW_ID_PATTERN.match(item):
            raise self.error(
                f"unknown item {item!r}; items are summary keys "
                f"({', '.join(sorted(SUMMARY_ITEM_KINDS))}) or ledger row ids "
                "(`memledger ledger LOG` lists them)",
                line,
            )
        return item  # a row id: resolved in each log's ledger

    def _quantity(
        self, value: Any, kind: ItemKind, key: str, item: str, line: int | None
    ) -> Quantity:
        if kind is ItemKind.COUNT:
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise self.error(
                    f"{key} for {item!r} must be a plain number ({item} is a count), not {value!r}",
                    line,
                )
            if not _is_number(value):
                raise self.error(f"{key} for {item!r} must be a finite number, not {value!r}", line)
            if value < 0:
                raise self.error(f"{key} for {item!r} must not be negative", line)
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise self.error(
                f'{key} for {item!r} needs a unit: write "{value} GiB" (units: '
                f"{', '.join(SIZE_UNITS)}; SGLang's GB is GiB)",
                line,
            )
        if not isinstance(value, str):
            raise self.error(f'{key} for {item!r} must be a size such as "8 GiB"', line)
        try:
            return parse_budget_size(value)
        except ValueError as exc:
            raise self.error(f"{key} for {item!r}: {exc}", line) from None

    def _text(self, merged: dict[str, Any], key: str, locate: Any) -> str | None:
        value = merged.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.error(f"{key} must be a string", locate(key))
        if len(value) > MAX_TEXT_CHARS:  # every report would echo it
            raise self.error(
                f"{key} is {len(value):,} characters long (at most {MAX_TEXT_CHARS:,})", locate(key)
            )
        return value

    def _date(self, value: Any, line: int | None) -> date | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return value.date()
        if isinstance(value, date):
            return value
        if isinstance(value, str):
            try:
                return date.fromisoformat(value)
            except ValueError:
                pass
        raise self.error(f"waived_until must be a date such as 2027-01-31, not {value!r}", line)


_SIZE_TEXT = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9_]+)?)\s*([A-Za-z]+)\s*$")


def parse_budget_size(text: str) -> int:
    """`"8 GiB"` -> bytes; raises ValueError naming the accepted units."""
    match = _SIZE_TEXT.match(text)
    if not match:
        raise ValueError(
            f'not a size: {text!r} (write a non-negative number and a unit, e.g. "8 GiB")'
        )
    number, unit = match.groups()
    if unit not in SIZE_UNITS:
        raise ValueError(
            f"unknown unit {unit!r} in {text!r} (units: {', '.join(SIZE_UNITS)}; "
            "GB and MB are SGLang's, i.e. GiB and MiB)"
        )
    try:
        value = Decimal(number.replace("_", ""))
    except InvalidOperation:
        raise ValueError(f"not a number: {number!r}") from None
    if value.adjusted() > 30:
        raise ValueError(f"size out of range: {text!r}")
    byte_count = int((value * SIZE_UNITS[unit]).to_integral_value())
    if byte_count > MAX_BYTES:
        raise ValueError(f"size out of range: {text!r}")
    return byte_count


def _is_number(value: object) -> bool:
    """A finite, bounded int or float (not a bool): TOML's nan and inf are no limit."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        checked_number(value)
    except NumberOutOfRange:
        return False
    return True


__all__ = [
    "Budget",
    "BudgetEntry",
    "IfAbsent",
    "discover_budget",
    "item_kind",
    "known_items",
    "load_budget",
    "parse_budget",
    "parse_budget_size",
]
