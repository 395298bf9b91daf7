"""Which SGLang releases could have written a log, by what its lines print: ONE table and ONE
function, read by the engine (`versions.format_version`/`format_ceiling`), the sizing model
(`SizingInputs.version`), the upgrade comparison and diagnose.

`FORMAT_MARKS` has one entry per line format that bounds the release: the kinds it is on, what
tells it apart (typed fields only, never `Event.text`), the first release that prints it and the
last (None = open), and the wheel line that prints it (`vX path:line`, path under
`python/sglang/srt/` of `pip download sglang==X --no-deps`). `release_range(events)` intersects the
bounds of every mark seen and keeps, per mark, the first line that showed it: the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from memledger.model.events import Event, EventKind
from memledger.record import record
from memledger.sglang.releases import ReleaseRange, release_text, version_code, within


@dataclass(frozen=True)
class FormatMark:
    """A line format printed by the releases `releases` only."""

    name: str
    kinds: frozenset[EventKind]
    matches: Callable[[Event], bool]
    releases: ReleaseRange
    source: str
    """The wheel line that prints the format (`vX path:line`), and where it stops if it does."""
    shape: str
    """What distinguishes the format, in words."""


def _kinds(*kinds: EventKind) -> frozenset[EventKind]:
    return frozenset(kinds)


_CAPTURE = _kinds(EventKind.CAPTURE_BEGIN, EventKind.CAPTURE_END)


def _always(_: Event) -> bool:
    return True


def _has_server_arg(name: str) -> Callable[[Event], bool]:
    """ServerArgs prints every field it has (the dataclass repr; from 0.5.19 the resolved dict),
    so a field that first exists in a release dates the log to it or later."""
    return lambda event: name in (event.params or {})


def _repr_has_server_arg(name: str) -> Callable[[Event], bool]:
    """A field in the repr form (before 0.5.19's dict), for a field later releases dropped."""
    return lambda event: event.values.get("form") != "dict" and name in (event.params or {})


def _device_in_capitals(event: Event) -> bool:
    """0.5.14+ writes the graph's device word in capitals (`draft extend CUDA graph`, `NPU
    graph`); 0.4.7-0.5.13 already printed `Capture draft extend cuda graph begin.`"""
    words = str(event.values.get("graph") or "").split()
    return any(word.isupper() and len(word) > 1 for word in words[:-1])


def _weights_line(event: Event) -> bool:
    """The load-end line of the weights (not 0.5.19's `Committed real weights` line)."""
    return not event.values.get("overlap_commit")


_LOAD = _kinds(EventKind.LOAD_END)
_KV = _kinds(EventKind.KV_ALLOCATED)
_DIST = _kinds(EventKind.DIST_INIT_END)
_SUMMARY = _kinds(EventKind.SUMMARY)
_ARGS = _kinds(EventKind.SERVER_ARGS)
_RUNNER = "model_executor/model_runner.py"
_POOL = "mem_cache/memory_pool.py"
_GRAPHS = "model_executor/model_runner_components/cuda_graph_setup.py"

FORMAT_MARKS: tuple[FormatMark, ...] = (
    FormatMark(
        "kv_line",
        _KV,
        _always,
        ReleaseRange("0.4.2"),
        f"v0.4.2 {_POOL}:195 (0.4.1 prints no KV line)",
        "`KV Cache is allocated. K size: ...`",
    ),
    FormatMark(
        "kv_line_without_tokens",
        _KV,
        lambda e: e.values.get("tokens") is None,
        ReleaseRange(last="0.4.3"),
        f"v0.4.3 {_POOL}:195; v0.4.4 {_POOL}:219 adds `#tokens:`",
        "a KV line without `#tokens:`",
    ),
    FormatMark(
        "kv_line_with_tokens_no_dtype",
        _KV,
        lambda e: e.values.get("tokens") is not None and "dtype" not in e.values,
        ReleaseRange("0.4.4", "0.5.12"),
        f"v0.4.4 {_POOL}:219 .. v0.5.12 {_POOL}:744; v0.5.13 {_POOL}:819 adds `dtype:`",
        "`#tokens:` in the KV line, without `dtype:`",
    ),
    FormatMark(
        "kv_line_with_dtype",
        _KV,
        lambda e: "dtype" in e.values,
        ReleaseRange("0.5.13"),
        f"v0.5.13 {_POOL}:819",
        "`dtype:` inside the KV line",
    ),
    FormatMark(
        "kv_line_labelled",
        _KV,
        lambda e: bool(e.values.get("label") or e.values.get("va_upper_bound")),
        ReleaseRange("0.5.17"),
        f"v0.5.17 {_POOL}:1670 (`{{cache_name}} is allocated`; `VA upper bound` v0.5.19 :1738)",
        "a label (`Full `, `SWA `) or `VA upper bound` on the KV line",
    ),
    FormatMark(
        "kv_dtype_line",
        _kinds(EventKind.KV_DTYPE),
        _always,
        ReleaseRange("0.5.3", "0.5.12"),
        f"v0.5.3 {_RUNNER}:1425 .. v0.5.12 {_RUNNER}:2386 (gone from v0.5.13)",
        "`Using KV cache dtype: ...`",
    ),
    FormatMark(
        "load_end_without_usage",
        _LOAD,
        lambda e: _weights_line(e) and e.size("usage") is None and e.values.get("elapsed") is None,
        ReleaseRange(last="0.4.3"),
        f"v0.4.3 {_RUNNER}:356; v0.4.4 {_RUNNER}:402 adds `mem usage=`",
        "`Load weight end. ...` without `mem usage=`",
    ),
    FormatMark(
        "load_end_usage",
        _LOAD,
        lambda e: _weights_line(e) and e.size("usage") is not None,
        ReleaseRange("0.4.4"),
        f"v0.4.4 {_RUNNER}:402",
        "`mem usage=` on the load end line",
    ),
    FormatMark(
        "load_end_usage_no_elapsed",
        _LOAD,
        lambda e: (
            _weights_line(e) and e.size("usage") is not None and e.values.get("elapsed") is None
        ),
        ReleaseRange("0.4.4", "0.5.8"),
        f"v0.4.4 {_RUNNER}:402 .. v0.5.8 {_RUNNER}:950; v0.5.9 {_RUNNER}:1041 adds `elapsed=`",
        "`Load weight end. type=...` without `elapsed=`",
    ),
    FormatMark(
        "load_end_elapsed_with_dtype",
        _LOAD,
        lambda e: (
            _weights_line(e)
            and e.values.get("elapsed") is not None
            and e.values.get("dtype") is not None
        ),
        ReleaseRange("0.5.9", "0.5.9"),
        f"v0.5.9 {_RUNNER}:1041; v0.5.10 {_RUNNER}:1247 drops `dtype=`",
        "`Load weight end. elapsed=..., type=..., dtype=...`",
    ),
    FormatMark(
        "load_end_elapsed_no_dtype",
        _LOAD,
        lambda e: (
            _weights_line(e)
            and e.values.get("elapsed") is not None
            and e.values.get("dtype") is None
        ),
        ReleaseRange("0.5.10"),
        f"v0.5.10 {_RUNNER}:1247",
        "`Load weight end. elapsed=...` without `dtype=`",
    ),
    FormatMark(
        "load_end_overlap_commit",
        _LOAD,
        lambda e: e.values.get("overlap_commit") is True,
        ReleaseRange("0.5.19"),
        "v0.5.19 model_executor/model_runner_components/startup_weight_load.py:539",
        "`Load weight end. Committed real weights after CUDA graph capture ...`",
    ),
    FormatMark(
        "dist_end",
        _DIST,
        _always,
        ReleaseRange("0.4.4"),
        f"v0.4.4 {_RUNNER}:322 (0.4.3 prints no distributed-init end line)",
        "`Init torch distributed ends. ...`",
    ),
    FormatMark(
        "dist_end_usage_no_elapsed",
        _DIST,
        lambda e: e.size("usage") is not None and e.values.get("elapsed") is None,
        ReleaseRange(last="0.5.8"),
        f"v0.5.8 {_RUNNER}:801; v0.5.9 {_RUNNER}:850 adds `elapsed=`",
        "`Init torch distributed ends. mem usage=...` without `elapsed=`",
    ),
    FormatMark(
        "dist_end_elapsed",
        _DIST,
        lambda e: e.values.get("elapsed") is not None,
        ReleaseRange("0.5.9", "0.5.20"),
        f"v0.5.9 {_RUNNER}:850 .. v0.5.20 distributed/bootstrap.py:164 (gone from v0.5.21)",
        "`Init torch distributed ends. elapsed=...`",
    ),
    FormatMark(
        "memory_baseline",
        _kinds(EventKind.MEMORY_BASELINE),
        _always,
        ReleaseRange("0.5.21"),
        "v0.5.21 distributed/bootstrap.py:204",
        "`Memory baseline taken. mem usage=...`",
    ),
    FormatMark(
        "summary_chunked_prefill",
        _SUMMARY,
        lambda e: e.values.get("chunked_prefill_size") is not None,
        ReleaseRange("0.4.2"),
        "v0.4.2 managers/scheduler.py:284 (v0.4.1 :223 prints no chunked_prefill_size)",
        "`chunked_prefill_size=` in the summary line",
    ),
    FormatMark(
        "summary_with_available_gpu_mem",
        _SUMMARY,
        lambda e: e.size("available_gpu_mem") is not None,
        ReleaseRange("0.4.7"),
        "v0.4.7 managers/scheduler.py:347",
        "`available_gpu_mem=` in the summary line",
    ),
    FormatMark(
        "summary_without_available_gpu_mem",
        _SUMMARY,
        lambda e: (
            e.values.get("max_running_requests") is not None
            and e.size("available_gpu_mem") is None
            and e.size("available_cpu_mem") is None
        ),
        ReleaseRange(last="0.4.6"),
        "v0.4.6 managers/scheduler.py:309; v0.4.7 :347 adds `available_gpu_mem=` (v0.5.2 :417 "
        "prints `available_cpu_mem=` on CPU)",
        "a summary line without `available_gpu_mem=`",
    ),
    FormatMark(
        "server_args_dict",
        _ARGS,
        lambda e: e.values.get("form") == "dict",
        ReleaseRange("0.5.19"),
        "v0.5.19 entrypoints/engine.py:265 (`server_args.resolved_dict()`)",
        "`server_args={resolved dict}`",
    ),
    # The ServerArgs fields below were checked against the ServerArgs of every release wheel from
    # 0.3.0 to 0.5.23.
    FormatMark(
        "server_arg_moe_runner_backend",
        _ARGS,
        _has_server_arg("moe_runner_backend"),
        ReleaseRange("0.5.1"),
        "v0.5.1 server_args.py:184 (no 0.3.0-0.4.10 ServerArgs has it)",
        "`moe_runner_backend=` among the server_args",
    ),
    FormatMark(
        "server_arg_tokenizer_backend",
        _ARGS,
        _has_server_arg("tokenizer_backend"),
        ReleaseRange("0.5.11"),
        "v0.5.11 server_args.py:317 (no 0.3.0-0.5.10.post1 ServerArgs has it)",
        "`tokenizer_backend=` among the server_args",
    ),
    FormatMark(
        "server_arg_cuda_graph_max_bs",
        _ARGS,
        _repr_has_server_arg("cuda_graph_max_bs"),
        ReleaseRange(last="0.5.13"),
        "v0.5.13 server_args.py:735 (a field 0.4.0 - 0.5.13.post1, gone from v0.5.14)",
        "`cuda_graph_max_bs=` in the ServerArgs repr",
    ),
    FormatMark(
        "all_reduce_config",
        _kinds(EventKind.ALL_REDUCE_CONFIG),
        _always,
        ReleaseRange("0.5.16"),
        "v0.5.16 distributed/device_communicators/custom_all_reduce_v2.py:229",
        "`All Reduce config: ...` (CustomAllReduceV2)",
    ),
    FormatMark(
        "replay_ssm_ring_len",
        _kinds(EventKind.REPLAY_SSM),
        lambda e: "L" in e.values,
        ReleaseRange("0.5.15", "0.5.16"),
        f"v0.5.15 {_POOL}:626, v0.5.16 {_POOL}:748 (v0.5.14 has no ReplaySSM; v0.5.17 :817 "
        "prints record_len= instead)",
        "the GDN ReplaySSM buffer line with `(L=N)`",
    ),
    FormatMark(
        "replay_ssm_record_len",
        _kinds(EventKind.REPLAY_SSM),
        lambda e: "record_len" in e.values,
        ReleaseRange("0.5.17"),
        f"v0.5.17 {_POOL}:817, v0.5.18 :834, v0.5.20 :894, v0.5.23 :1012",
        "the GDN ReplaySSM buffer line with `(record_len=N, fold=M)`",
    ),
    FormatMark(
        "capture_end",
        _kinds(EventKind.CAPTURE_END),
        _always,
        ReleaseRange("0.4.0"),
        f"v0.4.0 {_RUNNER}:625 (0.3.6.post3 and older print no end line)",
        "`Capture cuda graph end. Time elapsed: ...`",
    ),
    FormatMark(
        "capture_begin_avail",
        _kinds(EventKind.CAPTURE_BEGIN),
        lambda e: e.size("avail") is not None,
        ReleaseRange("0.4.4"),
        f"v0.4.4 {_RUNNER}:879",
        "`avail mem=` on the capture begin line",
    ),
    FormatMark(
        "capture_role_phase",
        _CAPTURE,
        lambda e: e.values.get("role_named") is True and _device_in_capitals(e),
        ReleaseRange("0.5.14"),
        f"v0.5.14 {_RUNNER}:2563",
        "`Capture {target|draft} {decode|verify|prefill|extend} CUDA graph ...`",
    ),
    FormatMark(
        "capture_tokens_per_req",
        _CAPTURE,
        lambda e: "num_tokens_per_req" in e.values,
        ReleaseRange("0.5.16"),
        f"v0.5.16 {_GRAPHS}:313 (v0.5.14 {_RUNNER}:2564 printed `num_tokens_per_bs=`)",
        "`num_tokens_per_req=` in the capture line",
    ),
    FormatMark(
        "capture_end_bs",
        _kinds(EventKind.CAPTURE_END),
        lambda e: "bs" in e.values,
        ReleaseRange("0.5.22"),
        f"v0.5.22 {_GRAPHS}:746 (v0.5.21 :656 prints no `bs=` on the end line)",
        "the batch sizes on the capture end line",
    ),
    FormatMark(
        "mfs_reduced_value",
        _kinds(EventKind.MFS_REDUCED),
        lambda e: "mem_fraction_static" in e.values,
        ReleaseRange("0.4.2", "0.4.8"),
        f"v0.4.2 {_RUNNER}:132 .. v0.4.8 {_RUNNER}:417 (v0.4.1 :119-120 reduces silently, "
        "v0.4.9 not at all)",
        "`Automatically reduce --mem-fraction-static to X because this is a multimodal model.`",
    ),
    FormatMark(
        "mfs_reduced_no_value",
        _kinds(EventKind.MFS_REDUCED),
        lambda e: "mem_fraction_static" not in e.values,
        ReleaseRange(last="0.4.0"),
        f"v0.3.0 {_RUNNER}:104 .. v0.4.0 {_RUNNER}:115 (v0.4.1 prints nothing)",
        "`Automatically turn off --chunked-prefill-size and adjust --mem-fraction-static ...`",
    ),
    FormatMark(
        "mfs_vlm_adjusted",
        _kinds(EventKind.MFS_VLM_ADJUSTED),
        _always,
        ReleaseRange("0.4.10", "0.5.0"),
        "v0.4.10 server_args.py:1984 (v0.5.1 :2297-2331 adjusts without a line; 0.5.0 not read)",
        "`Multimodal model: Dynamically adjusted --mem-fraction-static from: X to: Y.`",
    ),
)


@record
class Evidence:
    """One mark seen in the log: its first line and the releases it allows."""

    mark: str
    line: int
    first: int | None = None
    last: int | None = None
    source: str = ""

    @property
    def text(self) -> str:
        """`line 12 (...): >= 0.5.13 (v0.5.13 mem_cache/memory_pool.py:819)`."""
        bounds = " and ".join(
            part
            for part in (
                f">= {release_text(self.first)}" if self.first is not None else "",
                f"<= {release_text(self.last)}" if self.last is not None else "",
            )
            if part
        )
        return f"line {self.line} ({self.mark}): {bounds} ({self.source})"


class Ranged(Protocol):
    """A rule that holds for some releases (a SizingRule, a VersionRule, ...)."""

    @property
    def releases(self) -> ReleaseRange: ...


@record
class VersionRange:
    """The releases consistent with every format mark seen (codes from `version_code`)."""

    first: int | None = None
    last: int | None = None
    evidence: tuple[Evidence, ...] = ()
    given: bool = False
    """True when the range is a release the user named (`--base-version`), not the formats'."""

    @property
    def markers(self) -> tuple[str, ...]:
        return tuple(item.mark for item in self.evidence)

    @property
    def lower(self) -> int:
        """The lowest release the formats allow (0 = unknown)."""
        return self.first or 0

    @property
    def consistent(self) -> bool:
        return self.first is None or self.last is None or self.first <= self.last

    @property
    def ceiling(self) -> int:
        """The first release after the range (an exclusive upper bound; 0 = unknown, and for
        formats that contradict each other, a fork's, which bound nothing)."""
        return 0 if self.last is None or not self.consistent else self.last + 1

    @property
    def text(self) -> str:
        show = release_text
        if self.first is None and self.last is None:
            return "unknown"
        if not self.consistent:
            return f"inconsistent formats ({show(self.first)}+ and <= {show(self.last)}: a fork?)"
        if self.first == self.last:
            return show(self.first)
        if self.first is None:
            return f"<= {show(self.last)}"
        if self.last is None:
            return f">= {show(self.first)}"
        return f"{show(self.first)} .. {show(self.last)}"

    def allows(self, code: int) -> bool:
        """Whether release `code` is inside the range."""
        return not (
            (self.first is not None and code < self.first)
            or (self.last is not None and code > self.last)
        )

    def within(self, rule: Ranged | ReleaseRange) -> bool | None:
        """True: every release in the range has the rule; False: none has; None: it depends
        (memledger.sglang.releases.within)."""
        releases = rule if isinstance(rule, ReleaseRange) else rule.releases
        return within(self.first, self.last, releases)


def given_release(code: int) -> VersionRange:
    """The range of one release the user named."""
    return VersionRange(first=code, last=code, given=True)


_MARKS_BY_KIND: dict[EventKind, tuple[FormatMark, ...]] = {}
"""FORMAT_MARKS by the event kinds they read, in their order (filled on first use)."""


def _marks_of(kind: EventKind) -> tuple[FormatMark, ...]:
    found = _MARKS_BY_KIND.get(kind)
    if found is None:
        found = _MARKS_BY_KIND[kind] = tuple(m for m in FORMAT_MARKS if kind in m.kinds)
    return found


NAMED_RELEASE = "release named"
"""The mark of a release an environment output names (check_env's `sglang: X`, pip's list):
memledger.sglang.env_reports."""


def _named_release(event: Event) -> Evidence | None:
    """The release a `release_named` event gives, as a mark of that one release."""
    release = event.values.get("release") if event.kind is EventKind.RELEASE_NAMED else None
    if not isinstance(release, str) or not release[:1].isdigit():
        return None
    code = version_code(release)
    source = f"{event.values.get('form')} names sglang {release} (memledger.sglang.env_reports)"
    return Evidence(mark=NAMED_RELEASE, line=event.line, first=code, last=code, source=source)


def release_range(events: Iterable[Event]) -> VersionRange:
    """Which releases could have written these lines: the intersection of every mark's range
    (marks that contradict are all kept: a fork shows as an inconsistent range)."""
    first: int | None = None
    last: int | None = None
    seen: dict[str, Evidence] = {}
    for event in events:
        named = _named_release(event)
        if named is not None and named.first is not None and NAMED_RELEASE not in seen:
            seen[NAMED_RELEASE], code = named, named.first
            first, last = max(first or code, code), min(last or code, code)
        for mark in _marks_of(event.kind):
            if not mark.matches(event):
                continue
            known = seen.get(mark.name)
            if known is not None and known.line <= event.line:
                continue
            lo, hi = mark.releases.lo, mark.releases.hi
            seen[mark.name] = Evidence(
                mark=mark.name, line=event.line, first=lo, last=hi, source=mark.source
            )
            if lo is not None:
                first = lo if first is None else max(first, lo)
            if hi is not None:
                last = hi if last is None else min(last, hi)
    evidence = tuple(sorted(seen.values(), key=lambda item: (item.line, item.mark)))
    return VersionRange(first=first, last=last, evidence=evidence)
