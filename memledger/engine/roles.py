"""Roles and stable ids: which load is the target's and which the draft's, which capture is
the main one, which `Memory pool end` closes the draft's pools. Assigned once, as fields."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memledger.engine.carve import slug
from memledger.model.events import Event, EventKind, ParamValue
from memledger.sglang.rows import DRAFT_TYPE

TARGET, DRAFT, POST_CAPTURE = "target", "draft", "post_capture"
"""Regions: which pool interval a line's rows belong to (row ids and labels follow it)."""


@dataclass
class Roles:
    """Stable ids and roles assigned to the events of one startup (by event index)."""

    ids: dict[int, str] = field(default_factory=dict)
    load_role: dict[int, str] = field(default_factory=dict)
    """load_begin / load_end index -> `target`, `draft` or `extra`."""
    load_pairs: dict[int, int] = field(default_factory=dict)
    """load_begin index -> load_end index."""
    capture_pairs: dict[int, int] = field(default_factory=dict)
    """capture_begin index -> capture_end index."""
    capture_prefix: dict[int, str] = field(default_factory=dict)
    """capture begin/end index -> id prefix (`""`, `draft_`, `prefill_`, ...)."""
    progress: dict[int, list[Event]] = field(default_factory=dict)
    """capture_begin index -> its tqdm progress readings, in order."""
    draft_pools: set[int] = field(default_factory=set)
    """`Memory pool end` indices that close the draft's pools."""
    has_draft: bool = False


def assign_roles(events: list[Event], args: dict[str, ParamValue]) -> Roles:
    """Stable ids for every checkpoint-kind event: target vs draft by order and `type=`."""
    roles = Roles()
    speculative = bool(args.get("speculative_algorithm"))
    used: set[str] = set()

    def unique(base: str) -> str:
        candidate, number = base, 2
        while candidate in used:
            candidate = f"{base}_{number}"
            number += 1
        used.add(candidate)
        return candidate

    _assign_loads(events, roles, speculative, unique)
    pool_count = 0
    backend_count = {EventKind.ATTENTION_BACKEND_BEGIN: 0, EventKind.ATTENTION_BACKEND_END: 0}
    open_captures: list[int] = []
    target_main_done = False

    def fresh_prefix(event: Event) -> str:
        """The id prefix of a capture no earlier one pairs with: the first target decode (or
        verify) capture is the main one and has none."""
        nonlocal target_main_done
        role, phase = capture_role(event)
        if role == TARGET and phase in (None, "decode", "verify") and not target_main_done:
            target_main_done = True
            return ""
        return _capture_prefix(role, phase, event.value("step"))

    for index, event in enumerate(events):
        kind = event.kind
        if kind == EventKind.MEMORY_POOL_END:
            base = "memory_pool_end"
            if pool_count > 0 and (roles.has_draft or speculative):
                base = "draft_memory_pool_end"
                roles.draft_pools.add(index)
            pool_count += 1
            roles.ids[index] = unique(base)
        elif kind in backend_count:
            count = backend_count[kind]
            backend_count[kind] += 1
            stem = (
                "attention_backend_begin"
                if kind == EventKind.ATTENTION_BACKEND_BEGIN
                else "attention_backend_end"
            )
            draft = count > 0 and (roles.has_draft or speculative)
            roles.ids[index] = unique(("draft_" if draft else "") + stem)
        elif kind == EventKind.CAPTURE_BEGIN:
            prefix = fresh_prefix(event)
            roles.capture_prefix[index] = prefix
            roles.ids[index] = unique(prefix + "capture_begin")
            roles.progress[index] = []
            open_captures.append(index)
        elif kind == EventKind.CAPTURE_PROGRESS:
            if open_captures:
                roles.progress[open_captures[-1]].append(event)
        elif kind == EventKind.CAPTURE_END:
            role = capture_role(event)[0]
            begin = next(
                (c for c in reversed(open_captures) if capture_role(events[c])[0] == role),
                open_captures[-1] if open_captures else None,
            )
            if begin is not None:
                open_captures.remove(begin)
                roles.capture_pairs[begin] = index
                prefix = roles.capture_prefix[begin]
            else:
                prefix = fresh_prefix(event)
            roles.capture_prefix[index] = prefix
            roles.ids[index] = unique(prefix + "capture_end")
        elif kind == EventKind.POST_CAPTURE_KV:
            roles.ids[index] = unique("post_capture_kv")
        elif kind == EventKind.LORA:
            roles.ids[index] = unique(f"lora_{slug(str(event.value('phase') or 'adapter'))}")
    return roles


def _assign_loads(
    events: list[Event], roles: Roles, speculative: bool, unique: Callable[[str], str]
) -> None:
    """Pair load begin/end lines, then decide each pair's role."""
    pairs: list[tuple[int | None, int | None]] = []
    pending: int | None = None
    for index, event in enumerate(events):
        if event.kind == EventKind.LOAD_BEGIN:
            if pending is not None:
                pairs.append((pending, None))
            pending = index
        elif event.kind == EventKind.LOAD_END:
            pairs.append((pending, index))
            pending = None
    if pending is not None:
        pairs.append((pending, None))
    target_seen = False
    for begin, end in pairs:
        type_name = str(events[end].value("type") or "") if end is not None else ""
        if type_name and DRAFT_TYPE.search(type_name):
            role = DRAFT
        elif not target_seen:
            role = TARGET
        else:
            role = DRAFT if speculative or type_name == "" else "extra"
        target_seen = target_seen or role == TARGET
        roles.has_draft = roles.has_draft or role == DRAFT
        prefix = {TARGET: "", DRAFT: "draft_", "extra": "extra_"}[role]
        for position, suffix in ((begin, "load_begin"), (end, "load_end")):
            if position is not None:
                roles.load_role[position] = role
                roles.ids[position] = unique(prefix + suffix)
        if begin is not None and end is not None:
            roles.load_pairs[begin] = end


def capture_role(event: Event) -> tuple[str, str | None]:
    role = event.value("role")  # the transformer sets it on every capture line
    if not isinstance(role, str):
        role = TARGET
    phase = event.value("phase")
    return role, phase if isinstance(phase, str) else None


def _capture_prefix(role: str, phase: str | None, step: Any) -> str:
    prefix = "draft_" if role == DRAFT else ""
    if phase in ("extend", "prefill", "piecewise", "single_cg") or (
        role == TARGET and phase in ("decode", "verify")
    ):
        prefix += f"{phase}_"
    if step is not None:
        prefix += f"step{step}_"
    return prefix


def capture_label(prefix: str) -> str:
    words = prefix.replace("_", " ").strip()
    return f"{words} CUDA graphs" if words else "CUDA graphs"
