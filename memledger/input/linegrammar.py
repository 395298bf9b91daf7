"""The Lark message grammar and its transformer: one SGLang message -> one typed line parse.

The reader strips the `[date time TAGS]` prefix; this module parses what follows. Rule names in
`memledger/sglang/sglang.lark` are event kinds (`load_end`, `weight_shard_info__draft`); the
generic `fields` part becomes sizes (integer bytes) and values under canonical keys (see
`memledger.events`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from memledger.errors import ConfigError
from memledger.events import EventKind, Value
from memledger.units import (
    UNIT_BYTES,
    NumberOutOfRange,
    Size,
    bounded_float,
    bounded_int,
    parse_size,
)

GRAMMAR_FILE = "sglang.lark"

# Printed key (or the last words of it) -> canonical key of memledger.events.
KEY_ALIASES: dict[str, str] = {
    "avail mem": "avail",
    "avail_mem": "avail",
    "mem usage": "usage",
    "Time elapsed": "elapsed",
    "elapsed": "elapsed",
    "#tokens": "tokens",
    "K size": "k",
    "V size": "v",
    "KV size": "kv",
    "physical K/V size": "kv",
    "conv_state size": "conv_state",
    "ssm_state size": "ssm_state",
    "intermediate_ssm_state_cache size": "intermediate_ssm",
    "intermediate_conv_window_cache size": "intermediate_conv",
    "swa size": "swa_size",
    "full size": "full_size",
    "free memory": "free",
    "num_tokens_per_bs": "num_tokens_per_req",
    "VA upper bound": "usage",
}

# Keys whose value must be a number with a memory unit; anything else there is garbage.
SIZE_KEYS = frozenset(
    {
        "avail",
        "usage",
        "k",
        "v",
        "kv",
        "conv_state",
        "ssm_state",
        "intermediate_ssm",
        "intermediate_conv",
        "available_gpu_mem",
        "available_bytes",
        "free",
        "symmetric_memory",
        "local_buffer",
        "total",
        "rawv",
        "rawk",
        "beta",
        "host",
        "reclaimed",
    }
)
# Keys whose value must be an integer (or None).
INT_KEYS = frozenset(
    {
        "tokens",
        "max_total_num_tokens",
        "chunked_prefill_size",
        "max_prefill_tokens",
        "max_running_requests",
        "context_len",
        "max_mamba_cache_size",
        "swa_size",
        "full_size",
        "full_layer_tokens",
        "swa_layer_tokens",
        "buffers",
        "slots_per_req",
        "multiplier",
        "num_tokens_per_req",
        "record_len",
        "full_token",
    }
)
# Keys printed as raw byte counts: kept as an int value AND mirrored into sizes (half_ulp 0).
RAW_BYTES_KEYS = frozenset({"capacity", "num_bytes", "total_bytes"})
# Sizes that are differences and may print negative (`mem usage=-0.00 GB` after a free); any
# other negative size is garbage.
SIGNED_SIZE_KEYS = frozenset({"usage"})
MEMORY_UNITS = frozenset({"GB", "GiB", "MB", "MiB", "KB", "KiB", "B", "bytes"})
TIME_UNITS = {"s": 1.0, "ms": 0.001}

# Kinds whose sentence carries one size without a key ("Allocating 12.34 GB host memory").
LOOSE_SIZE_KEY: dict[EventKind, str] = {
    EventKind.HICACHE_HOST: "host",
    EventKind.DSPARK_RECLAIMED: "reclaimed",
    EventKind.ASCEND_KV_AVAIL: "avail_kv",
    EventKind.SYMM_PREALLOC: "size",
}
# Kinds where an unkeyed size is garbage (a line cut mid-text), never a value.
STRAY_IS_PROBLEM = frozenset({EventKind.SUMMARY, EventKind.LOAD_END, EventKind.CAPTURE_END})

INT_RE = re.compile(r"[+-]?\d+")
_LITERAL_RE = re.compile(r'"((?:[^"\\]|\\.)+)"')


@dataclass(frozen=True)
class RawValue:
    """A value as printed: a number with optional unit, a word, or a list of values."""

    kind: str  # "num" | "word" | "list"
    text: str = ""
    unit: str | None = None
    items: tuple[RawValue, ...] = ()

    def printed(self) -> str:
        """The value as it appeared in the log."""
        if self.kind == "list":
            return "[" + ", ".join(item.printed() for item in self.items) + "]"
        return f"{self.text} {self.unit}" if self.unit else self.text


@dataclass
class LineParse:
    """What one recognised message said: its kind and typed fields, plus any garbage found."""

    kind: EventKind
    variant: str = ""
    sizes: dict[str, Size] = field(default_factory=dict)
    values: dict[str, Value] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def grammar_dir() -> Path:
    """Where the packaged grammar is: `memledger/sglang/` (package data, inside the wheel too)."""
    return Path(str(resources.files("memledger.sglang")))


def base_grammar_text() -> str:
    """The text of the packaged message grammar."""
    try:
        return (grammar_dir() / GRAMMAR_FILE).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"grammar file {GRAMMAR_FILE} not readable in the package: {exc}"
        ) from exc


def _read_extra(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read grammar: {exc}", path=str(path)) from exc


def extra_keywords(texts: Iterable[str]) -> tuple[str, ...]:
    """Literal words of extension grammars: lines holding one are worth parsing (prefilter)."""
    found: list[str] = []
    for text in texts:
        for literal in _LITERAL_RE.findall(text):
            if len(literal) >= 4 and literal not in found:
                found.append(literal)
    return tuple(found)


class LineGrammar:
    """The compiled message grammar (packaged + extensions) and the line transformer."""

    def __init__(self, extra_grammars: Sequence[Path] = (), *, strict: bool = False) -> None:
        import lark  # heavy import kept out of module import time

        extras = [(Path(p), _read_extra(Path(p))) for p in extra_grammars]
        text = base_grammar_text() + "".join(f"\n// ---- {p}\n{t}\n" for p, t in extras)
        # only the packaged grammar is cached: extension files are the user's and change freely
        cache = None if strict or extras else _cache_file(text, lark.__version__)
        try:
            try:
                self._lark = lark.Lark(
                    text, parser="lalr", lexer="contextual", strict=strict, cache=cache or False
                )
            except OSError:
                # unwritable cache: build without it
                self._lark = lark.Lark(text, parser="lalr", lexer="contextual", strict=strict)
        except Exception as exc:  # lark raises many types for grammar errors
            where = str(extras[-1][0]) if extras else GRAMMAR_FILE
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"grammar does not build: {first}", path=where) from exc
        self._errors: tuple[type[Exception], ...] = (lark.exceptions.LarkError,)
        self.keywords = extra_keywords(t for _, t in extras)

    def parse(self, message: str) -> LineParse | None:
        """Parse one message; None when it is no known shape."""
        try:
            tree = self._lark.parse(message)
        except self._errors:
            return None
        except RecursionError:
            return None
        node: Any = tree.children[0]
        name = str(getattr(node, "data", ""))
        kind = _kind_of(name)
        if kind is None:
            return None
        variant = name.split("__", 1)[1] if "__" in name else ""
        return _build(kind, variant, node, message)


def _cache_file(grammar_text: str, lark_version: str) -> str | None:
    """A per-user file for Lark's compiled parser tables (building them takes ~0.2 s).

    MEMLEDGER_NO_GRAMMAR_CACHE=1 disables it; so does an unusable cache directory.
    """
    if os.environ.get("MEMLEDGER_NO_GRAMMAR_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = Path(base) / "memledger"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return None
    digest = hashlib.sha256(f"{lark_version}\n{grammar_text}".encode()).hexdigest()[:24]
    return str(directory / f"grammar-{digest}.lark-cache")


@lru_cache(maxsize=8)
def _cached_grammar(extra: tuple[str, ...]) -> LineGrammar:
    return LineGrammar([Path(p) for p in extra])


def load_grammar(extra_grammars: Sequence[Path] = ()) -> LineGrammar:
    """The grammar for these extensions, built once per process."""
    key = tuple(str(Path(p).resolve()) for p in extra_grammars)
    for p in extra_grammars:
        if not Path(p).is_file():
            raise ConfigError("grammar file not found", path=str(p))
    return _cached_grammar(key)


def _kind_of(rule_name: str) -> EventKind | None:
    base = rule_name.split("__", 1)[0]
    try:
        return EventKind(base)
    except ValueError:
        return None


# ---- tree -> raw entries -------------------------------------------------------------------------


@dataclass
class _Entry:
    """One generic field: `key` is None for unkeyed numbers/lists; `nested` for parentheses."""

    key: str | None
    value: RawValue | None
    nested: list[_Entry] = field(default_factory=list)


def _tok(node: Any) -> str:
    return str(node)


def _raw_value(node: Any) -> RawValue:
    # node is a `value`, `number`, `list` tree or a VWORD token
    data = getattr(node, "data", None)
    if data is None:
        return RawValue("word", _tok(node))
    if data == "value":
        return _raw_value(node.children[-1])
    if data == "number":
        number = _tok(node.children[0])
        unit = _tok(node.children[1].children[0]) if len(node.children) > 1 else None
        return RawValue("num", number, unit)
    if data == "list":
        return RawValue("list", items=tuple(_raw_value(child) for child in node.children))
    return RawValue("word", " ".join(_tok(t) for t in node.scan_values(lambda _: True)))


def _entries(fields_node: Any) -> list[_Entry]:
    entries: list[_Entry] = []
    for child in fields_node.children:
        data = getattr(child, "data", None)
        if data == "item":
            key = _tok(child.children[0])
            value = _raw_value(child.children[1]) if len(child.children) > 1 else None
            entries.append(_Entry(key, value))
        elif data == "loose":
            if not child.children:
                continue
            first = child.children[0]
            if getattr(first, "data", None) in ("number", "list"):
                value = _raw_value(child.children[1]) if len(child.children) > 1 else None
                entries.append(_Entry(None, _raw_value(first)))
                if value is not None:
                    entries.append(_Entry(_raw_value(first).printed(), value))
            else:
                entries.append(_Entry(None, RawValue("word", _tok(first))))
        elif data == "paren":
            nested = _entries(child.children[0]) if child.children else []
            entries.append(_Entry(None, None, nested))
    return entries


def canonical_key(printed: str) -> str:
    """The canonical key for a printed key (longest matching alias suffix, else snake_case)."""
    words = printed.split()
    for start in range(len(words)):
        alias = KEY_ALIASES.get(" ".join(words[start:]))
        if alias is not None:
            return alias
    return "_".join(words).lstrip("#")


# ---- raw entries -> typed sizes and values ------------------------------------------------------


class _Builder:
    def __init__(self, kind: EventKind, decimal_gb: bool = False) -> None:
        self.parse = LineParse(kind)
        self.decimal_gb = decimal_gb

    def size(self, key: str, raw: RawValue) -> None:
        """Store a size; garbage becomes a problem, never a guess."""
        if raw.kind != "num":
            self.problem(key, raw, "not a number")
            return
        if raw.unit is None or raw.unit not in MEMORY_UNITS:
            self.problem(key, raw, "no memory unit")
            return
        unit = "GB_decimal" if (self.decimal_gb and raw.unit == "GB") else raw.unit
        try:
            self.parse.sizes[key] = parse_size(raw.text, unit, signed=key in SIGNED_SIZE_KEYS)
        except NumberOutOfRange:
            self.problem(key, raw, "malformed number (out of range)")
        except ValueError:
            self.problem(key, raw, "malformed number")

    def problem(self, key: str, raw: RawValue, why: str) -> None:
        self.parse.problems.append(f"{why} {key}={raw.printed()!r}")

    def put(self, key: str, raw: RawValue) -> None:
        """Store a keyed value under its canonical key, typed by the key's contract."""
        if key in SIZE_KEYS:
            self.size(key, raw)
            return
        if raw.kind == "num" and raw.unit in MEMORY_UNITS:
            self.size(key, raw)
            return
        if raw.kind == "num" and raw.unit in TIME_UNITS:
            seconds = _finite(raw.text)
            if seconds is None:
                self.problem(key, raw, "malformed number")
            else:
                self.parse.values[key] = seconds * TIME_UNITS[raw.unit]
            return
        if key in RAW_BYTES_KEYS:
            if raw.kind == "num" and INT_RE.fullmatch(raw.text):
                count = _bounded_int(raw.text)
                if count is None or count < 0:
                    self.problem(key, raw, "malformed number (out of range)")
                    return
                self.parse.values[key] = count
                self.parse.sizes[key] = Size(bytes=count, half_ulp=0, text=f"{count} B")
            else:
                self.problem(key, raw, "not a byte count")
            return
        if key in INT_KEYS:
            if raw.kind == "num" and raw.unit is None and INT_RE.fullmatch(raw.text):
                count = _bounded_int(raw.text)
                if count is None:  # -1 is SGLang's "off" (chunked_prefill_size=-1): kept
                    self.problem(key, raw, "malformed number (out of range)")
                else:
                    self.parse.values[key] = count
            elif raw.kind == "word" and raw.text == "None":
                self.parse.values[key] = None
            else:
                self.problem(key, raw, "not an integer")
            return
        typed = _typed(raw)
        if isinstance(typed, _Bad):
            self.problem(key, raw, "malformed number")
        else:
            self.parse.values[key] = typed


class _Bad:
    """Marker: a number that is not finite or not representable."""


def _finite(text: str) -> float | None:
    """A finite, bounded number, or None (see memledger.units.bounded_float)."""
    try:
        return bounded_float(text)
    except ValueError:
        return None


def _bounded_int(text: str) -> int | None:
    try:
        return bounded_int(text)
    except ValueError:
        return None


def _typed(raw: RawValue) -> Value | _Bad:
    if raw.kind == "num":
        if raw.unit is None and INT_RE.fullmatch(raw.text):
            whole = _bounded_int(raw.text)
            return _Bad() if whole is None else whole
        number = _finite(raw.text)
        return _Bad() if number is None else number
    if raw.kind == "list":
        ints = [
            _bounded_int(i.text) for i in raw.items if i.kind == "num" and INT_RE.fullmatch(i.text)
        ]
        if None in ints:
            return _Bad()
        if len(ints) == len(raw.items):
            return [i for i in ints if i is not None]
        return raw.printed()
    if raw.text in ("True", "False"):
        return raw.text == "True"
    if raw.text == "None":
        return None
    return raw.text


def _graph_values(words: list[str]) -> dict[str, Value]:
    lowered = [w.lower() for w in words]
    role = "draft" if "draft" in lowered else "target"
    phase = "decode"
    for candidate in ("extend", "verify", "prefill", "decode", "piecewise"):
        if candidate in lowered:
            phase = candidate
            break
    if "single-cg" in lowered:
        phase = "single_cg"
    device = "cuda"
    if "graph" in lowered:
        index = lowered.index("graph")
        if index > 0 and lowered[index - 1] not in ("draft", "extend", "target", "piecewise"):
            device = lowered[index - 1]
    return {"role": role, "phase": phase, "device": device, "graph": " ".join(words)}


def _build(kind: EventKind, variant: str, node: Any, message: str) -> LineParse:
    builder = _Builder(kind, decimal_gb=kind is EventKind.HICACHE_HOST)
    result = builder.parse
    result.variant = variant
    head_tokens: list[Any] = []
    entries: list[_Entry] = []
    for child in node.children:
        data = getattr(child, "data", None)
        if data == "fields":
            entries.extend(_entries(child))
        elif data == "paren":
            entries.append(
                _Entry(None, None, _entries(child.children[0]) if child.children else [])
            )
        elif data in ("label", "graph_words"):
            head_tokens.append(child)
        elif data in ("value", "list"):
            head_tokens.append(child)
        else:
            head_tokens.append(child)

    _apply_head(kind, variant, head_tokens, result, builder, message)

    loose_key = LOOSE_SIZE_KEY.get(kind, "size")
    _apply_entries(kind, entries, builder, loose_key)
    return result


def _apply_head(
    kind: EventKind,
    variant: str,
    head: list[Any],
    result: LineParse,
    builder: _Builder,
    message: str,
) -> None:
    tokens = [t for t in head if getattr(t, "data", None) is None]
    numbers = [str(t) for t in tokens if getattr(t, "type", "") == "NUMBER"]
    if kind in (EventKind.DIST_INIT_BEGIN, EventKind.DIST_INIT_END):
        what = next((str(t) for t in tokens if getattr(t, "type", "") == "INIT_WHAT"), "")
        result.values["variant"] = what.replace(" ", "_")
    elif kind is EventKind.KV_ALLOCATED:
        if any(getattr(t, "data", None) == "label" for t in head):
            # from the text: the grammar drops the literal words `draft`/`target` of a label
            result.values["label"] = " ".join(message.split("KV Cache", 1)[0].split())
        result.values["va_upper_bound"] = any(getattr(t, "type", "") == "KV_VA" for t in tokens)
    elif kind in (EventKind.CAPTURE_BEGIN, EventKind.CAPTURE_END, EventKind.CAPTURE_BS):
        graph = next((t for t in head if getattr(t, "data", None) == "graph_words"), None)
        if graph is not None:
            result.values.update(_graph_values([str(t) for t in graph.children]))
        if kind is EventKind.CAPTURE_BS:
            list_node = next((t for t in head if getattr(t, "data", None) == "list"), None)
            is_tokens = any(getattr(t, "type", "") == "NUM_TOKENS" for t in tokens)
            if list_node is not None:
                builder.put("num_tokens" if is_tokens else "bs", _raw_value(list_node))
    elif kind is EventKind.SUMMARY:
        value = next((t for t in head if getattr(t, "data", None) == "value"), None)
        if value is not None:
            builder.put("max_total_num_tokens", _raw_value(value))
    elif kind is EventKind.WEIGHT_SHARD_INFO:
        _weight_shard_head(variant, numbers, builder, message.split(maxsplit=1)[0])
    elif kind is EventKind.LORA:
        phase = next((str(t) for t in tokens if getattr(t, "type", "") == "WORD"), "")
        result.values["phase"] = phase
    elif kind is EventKind.SWA_POOL:
        result.values["va_upper_bound"] = "VA upper bound" in message
    elif kind is EventKind.SWA_SPLIT:
        result.values["all_swa"] = "(all SWA)" in message
    elif kind is EventKind.LOAD_END and "Committed real weights" in message:
        result.values["overlap_commit"] = True
    elif kind is EventKind.HICACHE_HOST:
        result.values["pool"] = "mamba" if "Mamba" in message else "kv"
    elif kind is EventKind.POST_CAPTURE_KV and "draft" in message.split(":", 1)[-1][:40]:
        result.values["draft"] = True


def _weight_shard_head(
    variant: str, numbers: list[str], builder: _Builder, first_word: str
) -> None:
    values = builder.parse.values
    if variant in ("target", "draft") and numbers:
        builder.put("sharded_layers", RawValue("num", numbers[0]))
        values["role"] = variant
        if variant == "draft":
            values["draft_name"] = first_word
    elif variant == "requant" and numbers:
        values["requant_then_shard"] = True
        builder.put("requant_weights", RawValue("num", numbers[0]))
    elif variant == "hoisted" and len(numbers) >= 2:
        builder.put("hoisted", RawValue("num", numbers[0]))
        builder.put("hoisted_of", RawValue("num", numbers[1]))
        values["role"] = first_word


def _apply_entries(
    kind: EventKind, entries: list[_Entry], builder: _Builder, loose_key: str
) -> None:
    result = builder.parse
    previous_word: str | None = None
    for entry in entries:
        if entry.nested:
            _apply_nested(kind, entry.nested, builder)
            continue
        if entry.value is None:
            if kind is EventKind.KV_DTYPE and entry.key and "dtype" not in result.values:
                result.values["dtype"] = entry.key
            previous_word = entry.key
            continue
        if entry.key is not None:
            key = canonical_key(entry.key)
            if kind is EventKind.HICACHE_HOST and key.endswith("host_pool"):
                key = "tokens"
            if key[:1].isalpha() or key[:1] == "_":
                builder.put(key, entry.value)
            previous_word = None
            continue
        raw = entry.value
        if raw.kind == "num" and raw.unit in MEMORY_UNITS:
            if kind in STRAY_IS_PROBLEM:
                result.problems.append(f"value without a key {raw.printed()!r}")
            elif loose_key not in result.sizes:
                builder.size(loose_key, raw)
        elif raw.kind == "num" and raw.unit is None and kind is EventKind.HICACHE_HOST:
            builder.put("tokens", raw)
        elif raw.kind == "num" and raw.unit is None and previous_word == "step":
            builder.put("step", raw)
        previous_word = None


def _apply_nested(kind: EventKind, nested: list[_Entry], builder: _Builder) -> None:
    # `(step 1)`, `(record_len=4, fold=2)`, `(layers 1-92, group size 8)`: keyed values count
    previous_word: str | None = None
    for entry in nested:
        if entry.value is None:
            previous_word = entry.key
            continue
        if entry.key is not None:
            builder.put(canonical_key(entry.key), entry.value)
        elif entry.value.kind == "num" and entry.value.unit is None and previous_word is not None:
            key = canonical_key(previous_word)
            if key in ("step", "group_size") and key not in builder.parse.values:
                builder.put(key, entry.value)
        previous_word = None


__all__ = [
    "KEY_ALIASES",
    "UNIT_BYTES",
    "LineGrammar",
    "LineParse",
    "RawValue",
    "base_grammar_text",
    "canonical_key",
    "grammar_dir",
    "load_grammar",
]
