"""The transformer: one parsed message tree -> `LineParse` (kind, typed sizes and values).

The grammar (grammars/sglang.lark) gives each line a fixed head of words and a generic
`fields` part. `fields` becomes sizes (integer bytes) and values under canonical keys, typed by
the key tables of memledger.sglang.lines. A head says something only for a few kinds: those
have a reader method named after their rule in `_HeadReader` (Lark's Transformer idiom), which
turns the head's words into typed values so no later stage has to read the text again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from memledger.model.events import EventKind, Value
from memledger.sglang.lines import (
    INT_KEYS,
    KEY_ALIASES,
    RAW_BYTES_KEYS,
    SIGNED_SIZE_KEYS,
    SIZE_KEYS,
    SPECS,
    LineSpec,
)
from memledger.units import NumberOutOfRange, Size, float_or_none, int_or_none, parse_size

MEMORY_UNITS = frozenset({"GB", "GiB", "MB", "MiB", "KB", "KiB", "B", "bytes"})
TIME_UNITS = {"s": 1.0, "ms": 0.001}

INT_RE = re.compile(r"[+-]?\d+")


class RawValue(NamedTuple):
    """A value as printed: a number with optional unit, a word, or a list of values (a named
    tuple: a few are made for every line parsed)."""

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


# ---- tree -> raw entries -------------------------------------------------------------------------


class _Entry(NamedTuple):
    """One generic field: `key` is None for unkeyed numbers/lists; `nested` for parentheses."""

    key: str | None
    value: RawValue | None
    nested: Sequence[_Entry] = ()


def _data(node: Any) -> str | None:
    """A subtree's rule name; None for a token (a str: Lark's and the shape store's tokens are)
    or a missing optional item. Tested before `getattr`, whose miss raises inside."""
    return None if isinstance(node, str) else getattr(node, "data", None)


def _raw_value(node: Any) -> RawValue:
    # node is a `value`, `number`, `list` tree or a VWORD token
    data = None if isinstance(node, str) else getattr(node, "data", None)  # _data, inlined
    if data is None:
        return RawValue("word", str(node))
    if data == "value":
        return _raw_value(node.children[-1])
    if data == "number":
        number = str(node.children[0])
        unit = str(node.children[1].children[0]) if len(node.children) > 1 else None
        return RawValue("num", number, unit)
    if data == "list":
        return RawValue("list", items=tuple(_raw_value(child) for child in node.children))
    return RawValue("word", " ".join(str(t) for t in node.scan_values(lambda _: True)))


def _entries(fields_node: Any) -> list[_Entry]:
    entries: list[_Entry] = []
    for child in fields_node.children:
        data = None if isinstance(child, str) else getattr(child, "data", None)
        if data == "item":
            key = str(child.children[0])
            if len(child.children) == 3:  # `label: key=value`: the label is text, the key its own
                entries.append(_Entry(key, None))
                entries.append(_Entry(str(child.children[1]), _raw_value(child.children[2])))
                continue
            value = _raw_value(child.children[1]) if len(child.children) > 1 else None
            entries.append(_Entry(key, value))
        elif data == "loose":
            if not child.children:
                continue
            first = child.children[0]
            if _data(first) in ("number", "list"):
                value = _raw_value(child.children[1]) if len(child.children) > 1 else None
                entries.append(_Entry(None, _raw_value(first)))
                if value is not None:
                    entries.append(_Entry(_raw_value(first).printed(), value))
            else:
                entries.append(_Entry(None, RawValue("word", str(first))))
        elif data == "paren":
            nested = _entries(child.children[0]) if child.children else []
            entries.append(_Entry(None, None, nested))
    return entries


_CANONICAL: dict[str, str] = {}


def canonical_key(printed: str) -> str:
    """The canonical key for a printed key (longest matching alias suffix, else snake_case)."""
    found = _CANONICAL.get(printed)
    if found is None:
        if len(_CANONICAL) >= 4096:
            _CANONICAL.clear()
        found = _CANONICAL[printed] = _canonical_key(printed)
    return found


def _canonical_key(printed: str) -> str:
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
            seconds = float_or_none(raw.text)
            if seconds is None:
                self.problem(key, raw, "malformed number")
            else:
                self.parse.values[key] = seconds * TIME_UNITS[raw.unit]
            return
        if key in RAW_BYTES_KEYS:
            if raw.kind == "num" and INT_RE.fullmatch(raw.text):
                count = int_or_none(raw.text)
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
                count = int_or_none(raw.text)
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


def _typed(raw: RawValue) -> Value | _Bad:
    if raw.kind == "num":
        if raw.unit is None and INT_RE.fullmatch(raw.text):
            whole = int_or_none(raw.text)
            return _Bad() if whole is None else whole
        number = float_or_none(raw.text)
        return _Bad() if number is None else number
    if raw.kind == "list":
        ints = [
            int_or_none(i.text) for i in raw.items if i.kind == "num" and INT_RE.fullmatch(i.text)
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


_ROLE_WORDS = ("target", "draft")
_GRAPH_PHASES = ("extend", "verify", "prefill", "decode", "piecewise")
_NAMED_PHASES = ("decode", "verify", "prefill", "extend")


def _graph_values(words: list[str]) -> dict[str, Value]:
    """Typed values of the words naming a graph (`target verify CUDA graph`, `cuda graph`)."""
    lowered = [w.lower() for w in words]
    role = "draft" if "draft" in lowered else "target"
    phase = "decode"
    for candidate in _GRAPH_PHASES:
        if candidate in lowered:
            phase = candidate
            break
    if "single-cg" in lowered:
        phase = "single_cg"
    device = "cuda"
    graph_at = next((i for i, w in enumerate(lowered) if w in ("graph", "graphs")), None)
    if graph_at:
        if lowered[graph_at - 1] not in ("draft", "extend", "target", "piecewise"):
            device = lowered[graph_at - 1]
    return {
        "role": role,
        "phase": phase,
        "device": device,
        "graph": " ".join(words),
        # the words end in `graph`: `Capture <x> graph begin/end/bs` (the real-logs fact rule)
        "graph_named": bool(lowered) and lowered[-1] in ("graph", "graphs"),
        # `Capture {target|draft} {decode|verify|prefill|extend} ...`: SGLang >= 0.5.14 names both
        "role_named": len(lowered) >= 2
        and lowered[0] in _ROLE_WORDS
        and lowered[1] in _NAMED_PHASES,
    }


@dataclass
class _Head:
    """The fixed part of a rule (subtrees and tokens before `fields`), in order."""

    variant: str
    nodes: list[Any]
    message: str
    builder: _Builder

    @property
    def values(self) -> dict[str, Value]:
        return self.builder.parse.values

    def tokens(self, terminal: str) -> list[str]:
        """The text of each token of this terminal type (`NUMBER`, `INIT_WHAT`, ...)."""
        return [str(n) for n in self.nodes if getattr(n, "type", None) == terminal]

    def subtree(self, rule: str) -> Any:
        """The first subtree of this rule (`graph_words`, `label`, `list`, `value`), or None."""
        return next((n for n in self.nodes if _data(n) == rule), None)


class _HeadReader:
    """One method per rule whose head words carry information; named after the rule (kind)."""

    def dist_init_begin(self, head: _Head) -> None:
        what = head.tokens("INIT_WHAT")
        head.values["variant"] = what[0].replace(" ", "_") if what else ""

    dist_init_end = dist_init_begin

    def kv_allocated(self, head: _Head) -> None:
        if head.subtree("label") is not None:
            # from the text: the grammar drops the literal words `draft`/`target` of a label
            head.values["label"] = " ".join(head.message.split("KV Cache", 1)[0].split())
        head.values["va_upper_bound"] = bool(head.tokens("KV_VA"))

    def capture_begin(self, head: _Head) -> None:
        graph = head.subtree("graph_words")
        if graph is not None:
            head.values.update(_graph_values([str(t) for t in graph.children]))
        else:  # an extension's capture rule without graph words: the role from the sentence
            words = head.message.lower().split()
            head.values["role"] = "draft" if "draft" in words else "target"

    capture_end = capture_begin

    def capture_bs(self, head: _Head) -> None:
        self.capture_begin(head)
        listed = head.subtree("list")
        if listed is not None:
            key = "num_tokens" if head.tokens("NUM_TOKENS") else "bs"
            head.builder.put(key, _raw_value(listed))

    def summary(self, head: _Head) -> None:
        value = head.subtree("value")
        if value is not None:
            head.builder.put("max_total_num_tokens", _raw_value(value))

    def weight_shard_info(self, head: _Head) -> None:
        numbers, put = head.tokens("NUMBER"), head.builder.put
        first_word = head.message.split(maxsplit=1)[0]
        if head.variant in ("target", "draft") and numbers:
            put("sharded_layers", RawValue("num", numbers[0]))
            head.values["role"] = head.variant
            if head.variant == "draft":
                head.values["draft_name"] = first_word
        elif head.variant == "requant" and numbers:
            head.values["requant_then_shard"] = True
            put("requant_weights", RawValue("num", numbers[0]))
        elif head.variant == "hoisted" and len(numbers) >= 2:
            put("hoisted", RawValue("num", numbers[0]))
            put("hoisted_of", RawValue("num", numbers[1]))
            head.values["role"] = first_word

    def dcp_q_prepared(self, head: _Head) -> None:
        numbers = head.tokens("NUMBER")
        if numbers:
            head.builder.put("layers", RawValue("num", numbers[0]))

    def attention_backend_default(self, head: _Head) -> None:
        # the word after `Use`: the last head word (`not set` / `not explicitly specified` first)
        words = head.tokens("WORD")
        if words:
            head.values["backend"] = words[-1]

    def lora_backend(self, head: _Head) -> None:
        names = head.tokens("LORA_KERNELS")
        if names:
            head.values["backend"] = names[0]

    def lora(self, head: _Head) -> None:
        # `loading starts:` -> `starts`; `unloading completes:` -> `unloading_completes`
        phase = head.tokens("WORD")
        action = "unloading_" if "unloading" in head.tokens("LORA_ACTION") else ""
        head.values["phase"] = action + phase[0] if phase else ""

    def swa_pool(self, head: _Head) -> None:
        head.values["va_upper_bound"] = "VA upper bound" in head.message

    def swa_split(self, head: _Head) -> None:
        head.values["all_swa"] = "(all SWA)" in head.message

    def load_end(self, head: _Head) -> None:
        if "Committed real weights" in head.message:
            head.values["overlap_commit"] = True

    def hicache_host(self, head: _Head) -> None:
        head.values["pool"] = "mamba" if "Mamba" in head.message else "kv"

    def mfs_reduced(self, head: _Head) -> None:
        numbers = head.tokens("NUMBER")
        if numbers:
            head.builder.put("mem_fraction_static", RawValue("num", numbers[-1]))

    def mfs_vlm_adjusted(self, head: _Head) -> None:
        numbers = head.tokens("NUMBER")
        if len(numbers) >= 2:
            head.builder.put("mem_fraction_static_before", RawValue("num", numbers[0]))
            head.builder.put("mem_fraction_static", RawValue("num", numbers[1]))

    def post_capture_kv(self, head: _Head) -> None:
        if "draft" in head.message.split(":", 1)[-1][:40]:
            head.values["draft"] = True


_HEADS = _HeadReader()
_READERS = {kind: getattr(_HEADS, kind.value) for kind in EventKind if hasattr(_HEADS, kind.value)}
"""The head reader of each kind that has one (looked up once, not once a line)."""


def transform(
    kind: EventKind, variant: str, node: Any, message: str, *, declared_only: bool = True
) -> LineParse:
    """The typed parse of one message whose tree `node` is a line rule of this kind;
    `declared_only`: keys the kind's LineSpec does not declare are refused (the packaged
    grammar's lines; an extension rule of `--grammar` may carry keys of its own)."""
    spec = SPECS[kind]
    builder = _Builder(kind, decimal_gb=spec.decimal_gb)
    builder.parse.variant = variant
    head: list[Any] = []
    entries: list[_Entry] = []
    for child in node.children:
        data = None if isinstance(child, str) else getattr(child, "data", None)  # _data
        if data == "fields":
            entries.extend(_entries(child))
        elif data == "paren":
            entries.append(
                _Entry(None, None, _entries(child.children[0]) if child.children else [])
            )
        else:
            head.append(child)
    reader = _READERS.get(kind)
    if reader is not None:
        reader(_Head(variant, head, message, builder))
    _apply_entries(kind, entries, builder, spec.loose_size, spec.stray_size_is_problem)
    _drop_half_pair(builder.parse)
    if declared_only:
        _refuse_undeclared(spec, builder.parse)
    return builder.parse


def _refuse_undeclared(spec: LineSpec, parse: LineParse) -> None:
    """Keys the kind's LineSpec does not declare are dropped, a problem each (the line shows as
    malformed in `parse --coverage`): the engine reads only declared keys."""
    for found, declared, what in (
        (parse.sizes, spec.sizes, "size"),
        (parse.values, spec.values, "value"),
    ):
        for key in [key for key in found if key not in declared]:
            del found[key]
            parse.problems.append(f"{what} {key!r} not declared for {spec.kind} (sglang.lines)")


def _drop_half_pair(parse: LineParse) -> None:
    """SGLang prints K and V sizes together (v0.5.8 mem_cache/memory_pool.py:351-355): one alone
    is a cut or garbled line, and would understate the pool as the whole of it."""
    sizes = parse.sizes
    if ("k" in sizes) != ("v" in sizes) and parse.kind in _KV_PAIR_KINDS:
        half = "k" if "k" in sizes else "v"
        parse.problems.append(f"{half.upper()} size without its pair")
        # kept as printed text only, for the `k_size`/`v_size` facts (the number the line shows)
        parse.values[f"{half}_size_unpaired"] = sizes.pop(half).text


_KV_PAIR_KINDS = frozenset({EventKind.KV_ALLOCATED, EventKind.POST_CAPTURE_KV})


def _apply_entries(
    kind: EventKind,
    entries: list[_Entry],
    builder: _Builder,
    loose_key: str,
    stray_is_problem: bool,
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
            if stray_is_problem:
                result.problems.append(f"value without a key {raw.printed()!r}")
            elif loose_key not in result.sizes:
                builder.size(loose_key, raw)
        elif raw.kind == "num" and raw.unit is None and kind is EventKind.HICACHE_HOST:
            builder.put("tokens", raw)
        elif raw.kind == "num" and raw.unit is None and previous_word == "step":
            builder.put("step", raw)
        previous_word = None


def _apply_nested(kind: EventKind, nested: Sequence[_Entry], builder: _Builder) -> None:
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
