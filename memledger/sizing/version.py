"""Which SGLang releases a log's line formats allow: a range, from the markers in sizing_rules."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from memledger.events import Event, EventKind
from memledger.record import ConfigDict, Record
from memledger.sglang.release_markers import FORMAT_MARKERS, SERVER_ARG_MARKERS, version_code
from memledger.sglang.sizing_rules import SizingRule


class VersionRange(Record):
    """Releases consistent with every format marker seen (codes from `version_code`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first: int | None = None
    last: int | None = None
    markers: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        def show(code: int | None) -> str:
            if code is None:
                return "?"
            return f"{code // 1_000_000}.{code // 1_000 % 1_000}.{code % 1_000}"

        if self.first is None and self.last is None:
            return "unknown"
        if self.first is not None and self.last is not None and self.first > self.last:
            return f"inconsistent formats ({show(self.first)}+ and <= {show(self.last)}: a fork?)"
        if self.first == self.last:
            return show(self.first)
        if self.first is None:
            return f"<= {show(self.last)}"
        if self.last is None:
            return f">= {show(self.first)}"
        return f"{show(self.first)} .. {show(self.last)}"

    def within(self, rule: SizingRule) -> bool | None:
        """True: every release in the range has the rule; False: none has; None: it depends."""
        lo = version_code(rule.first) if rule.first else None
        hi = version_code(rule.last) if rule.last else None
        first, last = self.first, self.last
        if (hi is not None and first is not None and first > hi) or (
            lo is not None and last is not None and last < lo
        ):
            return False
        inside_lo = lo is None or (first is not None and first >= lo)
        inside_hi = hi is None or (last is not None and last <= hi)
        return True if inside_lo and inside_hi else None


def _kv_marker(event: Event) -> str:
    if event.values.get("dtype") is not None or "dtype:" in event.text:
        return "kv_line_with_dtype"
    if event.values.get("tokens") is not None:
        return "kv_line_with_tokens_no_dtype"
    return "kv_line_without_tokens"


def _load_end_marker(event: Event) -> str:
    if event.values.get("elapsed") is not None:
        return (
            "load_end_elapsed_with_dtype"
            if event.values.get("dtype") is not None
            else "load_end_elapsed_no_dtype"
        )
    return "load_end_usage_no_elapsed" if "usage" in event.sizes else "load_end_without_usage"


def _markers(events: Iterable[Event]) -> list[str]:
    found: list[str] = []
    simple: dict[EventKind, Callable[[Event], str | None]] = {
        EventKind.KV_ALLOCATED: _kv_marker,
        EventKind.KV_DTYPE: lambda e: "kv_dtype_line",
        EventKind.LOAD_END: lambda e: (
            None if e.values.get("overlap_commit") else _load_end_marker(e)
        ),
        EventKind.SUMMARY: lambda e: (
            "summary_with_available_gpu_mem"
            if "available_gpu_mem" in e.sizes
            else (
                "summary_without_available_gpu_mem"
                if e.values.get("max_running_requests") is not None
                else None
            )
        ),
        EventKind.DIST_INIT_END: lambda e: (
            "dist_end_elapsed" if e.values.get("elapsed") is not None else None
        ),
        EventKind.MEMORY_BASELINE: lambda e: "memory_baseline",
        EventKind.SERVER_ARGS: lambda e: (
            "server_args_dict" if e.text.lstrip().startswith("server_args={") else None
        ),
        EventKind.REPLAY_SSM: lambda e: "replay_ssm",
        EventKind.CAPTURE_BEGIN: lambda e: (
            "capture_role_phase"
            if e.text.startswith(
                ("Capture target ", "Capture draft decode", "Capture draft verify")
            )
            and "CUDA graph" in e.text
            else None
        ),
    }
    for event in events:
        pick = simple.get(event.kind)
        marker = pick(event) if pick else None
        if marker is not None and marker not in found:
            found.append(marker)
        if event.kind is EventKind.SERVER_ARGS and event.values.get("form") != "dict":
            for name in SERVER_ARG_MARKERS:
                field = f"server_arg_{name}"
                if name in (event.params or {}) and field not in found:
                    found.append(field)
    return found


def version_range(events: Iterable[Event]) -> VersionRange:
    """The release range every marker agrees with (markers that contradict are all kept)."""
    bounds = {name: (first, last) for name, first, last in FORMAT_MARKERS}
    first: int | None = None
    last: int | None = None
    seen = _markers(events)
    for name in seen:
        lo, hi = bounds[name]
        if lo is not None:
            first = max(first or 0, version_code(lo))
        if hi is not None:
            code = version_code(hi)
            last = code if last is None else min(last, code)
    return VersionRange(first=first, last=last, markers=tuple(seen))
