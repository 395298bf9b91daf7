"""Which rank's lines a parse reads: rank 0 by the real-logs rule, a `--rank` tag, or (when the
input has no rank 0, as pastes often do) the only rank present, said in a note."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from memledger.errors import SelectionError
from memledger.input.logical import iter_logical_lines
from memledger.input.reader import ByteSource, OpenedLog, open_log
from memledger.model.events import Event, EventKind
from memledger.units import GIB, digits_key

_INDEXED_TAG_RE = re.compile(r"[A-Za-z_]+?(\d+)")


def is_rank0_tag(tag: str) -> bool:
    """README rule: tags contain TP0 and every tag has index 0, or `gpu_id=0`."""
    if tag.startswith("gpu"):
        return tag.split("=", 1)[-1] == "0"
    parts = tag.split()
    if "TP0" not in parts:
        return False
    for part in parts:
        match = _INDEXED_TAG_RE.fullmatch(part)
        if match is None or match.group(1).strip("0"):  # not int(): a tag may hold 5,000 digits
            return False
    return True


@dataclass(frozen=True)
class RankSelection:
    """The tags whose lines are read, and what to say about the choice."""

    tags: frozenset[str]
    label: str
    rank0: bool
    """The selected lines are rank 0's (untagged progress bars and summaries belong to it)."""
    leaders: frozenset[str] | None = None
    """Tags whose init and summary lines mark startups and readiness; None: rank 0's."""
    note: str = ""
    """Why this rank, when it is not the default rule's (no rank 0 in the input)."""

    def leads(self, tag: str, any_tag: bool) -> bool:
        """Whether this tag's init/summary lines decide startups and readiness."""
        if not any_tag:
            return True
        return tag in self.leaders if self.leaders is not None else is_rank0_tag(tag)


def select_rank(spec: str | None, tags_first_line: dict[str, int]) -> RankSelection:
    """The rank to read: `spec` (a tag or some of its parts), else rank 0, else the lowest."""
    seen = sorted(tags_first_line, key=lambda t: tags_first_line[t])
    tagged = [t for t in seen if t]
    if spec is None:
        if not tagged:
            return RankSelection(frozenset({""}), "", True)
        rank0 = [t for t in tagged if is_rank0_tag(t)]
        if rank0:
            return RankSelection(frozenset(rank0), rank0[0], True)
        return _without_rank0(tagged)
    wanted_set = set(spec.split())
    if not wanted_set and tagged:
        # F29: `--rank ""` selected only the untagged lines (server_args): an empty ledger
        shown = ", ".join(repr(t) for t in sorted(tagged, key=natural_key)[:12])
        raise SelectionError(f"rank {spec!r} is empty; give a tag (ranks seen: {shown})")
    exact = [t for t in seen if set(t.split()) == wanted_set]
    candidates = exact or [t for t in tagged if wanted_set <= set(t.split())]
    if len(candidates) == 1:
        tag = candidates[0]
        rank0_present = any(is_rank0_tag(t) for t in tagged)
        leaders = None if rank0_present or not tagged else frozenset({tag})
        return RankSelection(frozenset({tag}), tag, is_rank0_tag(tag) or not tagged, leaders)
    in_rank_order = sorted(tagged, key=natural_key)
    shown = ", ".join(repr(t) for t in in_rank_order[:12]) + (" ..." if len(tagged) > 12 else "")
    if not candidates:
        raise SelectionError(
            f"rank {spec!r} does not occur in this log (ranks seen: {shown or 'none'})"
        )
    listed = ", ".join(repr(t) for t in candidates[:12])
    raise SelectionError(f"rank {spec!r} is ambiguous: matches {listed}; give the full tag")


def _without_rank0(tagged: list[str]) -> RankSelection:
    """No rank 0 in the input (a paste of another rank's lines): read the lowest rank present."""
    ordered = sorted(tagged, key=natural_key)
    chosen = ordered[0]
    if _first_replica_without_tp(chosen, ordered):
        # Not a fragment: with tp_size 1 (and pp 1) the scheduler's prefix is ` DP<i>` alone
        # (v0.5.8 managers/scheduler.py:2896-2903), so each DP replica's only worker is its
        # rank 0; the real-logs facts rule (TP0 in the tags) does not count it.
        note = (
            f"no TP tag in this input (tp_size 1): read {chosen}, the first DP replica's only "
            f"worker, one of {len(ordered)} (--rank reads another)"
        )
        return RankSelection(frozenset({chosen}), chosen, False, frozenset({chosen}), note)
    if len(ordered) == 1:
        note = f"no rank 0 in this input: read {chosen}, the only rank present"
    else:
        shown = ", ".join(ordered[:6]) + (", ..." if len(ordered) > 6 else "")
        note = (
            f"no rank 0 in this input: {len(ordered)} ranks present ({shown}), fragments of "
            f"different ranks; read {chosen}, the lowest (--rank reads another)"
        )
    return RankSelection(frozenset({chosen}), chosen, False, frozenset({chosen}), note)


def head_tags(head: bytes, whole: bool) -> Iterator[tuple[str, int]]:
    """(tag, physical line) of every prefixed line in the input's first block (`whole`: the
    block is the entire input, else its cut last line is left out). The keyword scan skips
    lines without a memory word, so a rank that prints only loader chatter or import notices
    (`[... PP0 TP0] Beginning to load weights`) would look absent and another rank's lines be
    read as rank 0's; pastes fit in this block."""
    text = head.decode("utf-8", "replace")
    lines = text.split("\n")
    if not whole:
        lines.pop()
    for number, line in enumerate(lines, start=1):
        for logical in iter_logical_lines(number, line):
            if logical.prefixed:
                yield logical.rank, number


_RANK0_PREFIX_RE = re.compile(
    rb"\[(?:[\d:.,\- ]+ )?(?:[A-Za-z_]+0+ )*TP0+(?: [A-Za-z_]+0+)*\]"
    rb"|\[gpu(?:_id)?=0+\]|\[TP0+(?:\.\.|-)"
)
"""What may start a rank-0 prefix (memledger.input.logical.PREFIX_RE, every tag index 0): the
bytes a later scan looks for before it reads a line."""
RESCAN_CHUNK_BYTES = 1 << 20


def later_rank0(stream: ByteSource) -> tuple[str, int] | None:
    """(tag, physical line) of the input's first rank-0 prefix, read from its start; None when
    it has none. Only when neither the first block (head_tags) nor any memory line showed rank
    0: its lines may all lack a memory word and come later (`... PP0 TP0] Beginning to load
    weights`). A regex over each 1 MiB block finds the candidates in C; only a line holding one
    is decoded and split (memory flat: a line longer than a block is searched in pieces)."""
    carry = b""
    line_base = 1
    while True:
        chunk = stream.read(RESCAN_CHUNK_BYTES)
        data = carry + chunk
        end = data.rfind(b"\n") + 1 if chunk else len(data)
        block = data[:end]
        for match in _RANK0_PREFIX_RE.finditer(block):
            start = block.rfind(b"\n", 0, match.start()) + 1
            stop = block.find(b"\n", match.end())
            number = line_base + block.count(b"\n", 0, start)
            text = block[start : stop if stop >= 0 else len(block)].decode("utf-8", "replace")
            for logical in iter_logical_lines(number, text):
                if logical.prefixed and is_rank0_tag(logical.rank):
                    return logical.rank, number
        if not chunk:
            return None
        line_base += block.count(b"\n")
        carry = data[end:]
        if len(carry) > RESCAN_CHUNK_BYTES:  # one over-long line: keep what a prefix may start
            carry = carry[-256:]


def rank0_after_head(
    source: str | os.PathLike[str] | IO[bytes] | ByteSource | OpenedLog,
    log: OpenedLog,
    tags_first_line: dict[str, int],
    see_tag: Callable[[str, int], None],
) -> None:
    """`see_tag` the `later_rank0` of an input whose tagged lines read so far (its first block,
    its memory lines) showed no rank 0, when it can be read again (a file, gzipped or not); a
    stream was read once: its rank 0 is what those lines showed."""
    if not any(tags_first_line) or any(is_rank0_tag(t) for t in tags_first_line if t):
        return
    found = None
    if log.path is not None:
        with log.path.open("rb") as again:
            found = later_rank0(again)
    elif isinstance(source, (str, os.PathLike)) and str(source) != "-":
        with open_log(source) as reopened:
            found = later_rank0(reopened.stream)
    if found is not None:
        see_tag(*found)


def _first_replica_without_tp(chosen: str, tagged: list[str]) -> bool:
    """Every tag is a bare `DP<i>` and `chosen` is `DP0` (with zeros, `DP00`)."""
    return all(re.fullmatch(r"DP\d+", tag) for tag in tagged) and not chosen[2:].strip("0")


def natural_key(tag: str) -> list[tuple[int, str]]:
    """`DP2 TP10` after `DP2 TP9`: digits compare as numbers (without int(), see digits_key)."""
    return [digits_key(part) if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", tag)]


def rank_sort_key(tag: str) -> tuple[tuple[str, tuple[int, str]], ...]:
    """Order of the per-rank table: by each tag part's name, then its index."""
    parts: list[tuple[str, tuple[int, str]]] = []
    for part in tag.split():
        match = re.fullmatch(r"([A-Za-z_]+?)(\d+)", part)
        parts.append((match.group(1), digits_key(match.group(2))) if match else (part, (-1, "")))
    return tuple(parts)


def rank_key_values(events: list[Event]) -> dict[str, float | int | None]:
    """A rank's key readings (GiB), for the skew view of `parse --all-ranks`."""

    def first(kind: EventKind, key: str, nth: int = 0) -> float | None:
        found = [e for e in events if e.kind is kind and key in e.sizes]
        return round(found[nth].sizes[key].bytes / GIB, 4) if len(found) > nth else None

    kv_events = [e for e in events if e.kind is EventKind.KV_ALLOCATED]
    kv_gib: float | None = None
    tokens: int | None = None
    if kv_events:
        sizes = kv_events[0].sizes
        total = sum(sizes[k].bytes for k in ("k", "v", "kv") if k in sizes)
        kv_gib = round(total / GIB, 4) if sizes else None
        raw_tokens = kv_events[0].values.get("tokens")
        tokens = raw_tokens if isinstance(raw_tokens, int) else None
    return {
        "load_begin_avail": first(EventKind.LOAD_BEGIN, "avail"),
        "load_end_avail": first(EventKind.LOAD_END, "avail"),
        "load_end_usage": first(EventKind.LOAD_END, "usage"),
        "kv_tokens": tokens,
        "kv_gib": kv_gib,
        "mempool_end_avail": first(EventKind.MEMORY_POOL_END, "avail"),
        "capture_end_usage": first(EventKind.CAPTURE_END, "usage"),
        "capture_end_avail": first(EventKind.CAPTURE_END, "avail"),
    }
