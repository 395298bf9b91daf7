"""One log against another release: "it was bigger on 0.5.2" without the 0.5.2 log (pure).

For each default that sizes the pool (mem_fraction_static, the attention backend, page_size)
this decides whether the log ran SGLang's default at its own release, and if so takes the other
release's default for this log's GPU; the other sizing rules of that release (speculative
headroom, draft KV, SWA split, Mamba slots) come with its version. The pool at the other release
is then the log's max_total_num_tokens plus SGLang's arithmetic at the other release minus at
the log's own (memledger.sizing.predict), on this log's measured P and A.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from memledger.compare.upgrade_gpu import (
    GPU_WINDOW_MIB,
    MFS_MATCH,
    fraction_defaults_at,
    infer_gpu,
)
from memledger.compare.upgrade_models import (
    AgainstRelease,
    Candidate,
    ReleaseSide,
    SettingAtRelease,
)
from memledger.compare.upgrade_releases import (
    FIRST_FORMULA,
    MFS,
    crossed_defaults,
    features_of,
    given_settings,
    side_release,
)
from memledger.sglang.backend_defaults import (
    ARCHES,
    default_attention,
    default_page_size,
    page_size_rule,
)
from memledger.sglang.default_changes import CHANGE, Effect
from memledger.sglang.release_markers import VersionRange, given_release
from memledger.sglang.releases import release_text, version_code
from memledger.sizing import SizingInputs, base_settings, predict
from memledger.sizing.result import TOLERANCE
from memledger.sizing.whatif import refuse_impossible_gpu
from memledger.units import float_or, int_or

NON_CUDA_BACKENDS = frozenset({"aiter", "wave", "ascend", "torch_native", "intel_amx", "intel_xpu"})
"""Backends SGLang picks off CUDA (memledger.sglang.backend_defaults tables CUDA's picks)."""


def _codes(found: VersionRange) -> list[int]:
    """The ends of a release range (one code when pinned; none when open)."""
    if found.first is None or found.last is None:
        return []
    return sorted({found.first, found.last})


def _matches(value: float | None, candidates: Iterable[tuple[str, float]]) -> bool:
    return value is not None and any(abs(value - c) <= MFS_MATCH for _, c in candidates)


def _fraction_row(
    inputs: SizingInputs,
    log_range: VersionRange,
    other: VersionRange,
    gpus: list[int],
) -> tuple[SettingAtRelease, list[tuple[str, float]]]:
    """The mem_fraction_static row and the (label, value) candidates the other release's
    prediction uses: one per GPU capacity end and post release whose default differs."""
    printed = float_or(inputs.knobs.get(MFS), None)
    own = [v for g in gpus for _, v in fraction_defaults_at(inputs, log_range, g)]
    theirs: dict[float, str] = {}
    for gpu in gpus:
        for names, value in fraction_defaults_at(inputs, other, gpu):
            label = f"{gpu:,} MiB" + (f", {names}" if names else "")
            theirs.setdefault(value, label)
    logged = "-" if printed is None else f"{printed:g}"
    kept = [] if printed is None else [("as printed", printed)]
    if not gpus:
        status, used = "unknown", kept
        note = (
            "no GPU capacity (give --gpu-memory-mib): whether this is SGLang's default is not "
            "known; kept"
        )
    elif printed is None or _matches(printed, [("", v) for v in own]):
        status, used = "default", [(label, value) for value, label in theirs.items()]
        note = "" if printed is not None else "not printed: SGLang's default assumed"
        if not used:
            status, used = "unknown", kept
            note = f"SGLang's default at {release_text(other.first)} for this GPU is not modelled"
    else:
        status, used, note = "set", kept, "not SGLang's default for this GPU: kept"
    if len(used) > 1:
        note = "one default per candidate: " + ", ".join(f"{v:.3f} ({k})" for k, v in used)
    return (
        SettingAtRelease(
            setting=MFS,
            logged=logged,
            log_default=_span(own),
            other_default=_span(list(theirs)),
            status=status,
            used=_span([v for _, v in used]) or "-",
            effect=Effect.FRACTION.value,
            source=f"{inputs.server_args_source} {inputs.server_args_line or '-'}",
            note=note,
        ),
        used,
    )


def _span(values: list[float]) -> str | None:
    if not values:
        return None
    low, high = min(values), max(values)
    return f"{low:.3f}" if abs(high - low) < MFS_MATCH else f"{low:.3f} .. {high:.3f}"


def _backend_rows(
    inputs: SizingInputs, log_range: VersionRange, other_code: int
) -> tuple[list[SettingAtRelease], int | None]:
    """The attention-backend and page_size rows; the page_size the other release runs with."""
    knobs = inputs.knobs
    backend = knobs.get("attention_backend")
    backend = backend if isinstance(backend, str) and backend else None
    kind = "mla" if inputs.target_kv and all(p.combined for p in inputs.target_kv) else "mha"
    codes = _codes(log_range)
    arches = [
        arch
        for arch in ARCHES
        if codes
        and all(
            (entry := default_attention(kind, arch, code)) is not None and entry.backend == backend
            for code in codes
        )
    ]
    theirs = sorted(
        {e.backend for a in arches if (e := default_attention(kind, a, other_code)) is not None}
    )
    sources = [
        e.source for a in arches if (e := default_attention(kind, a, other_code)) is not None
    ]
    if backend is None:
        status, note = "unknown", "not printed (resolved after server_args before 0.5.5): kept"
        other_backend = None
    elif backend in NON_CUDA_BACKENDS:
        status, other_backend = "unknown", backend
        note = (
            "a ROCm, NPU or CPU backend: its defaults by release are not tabled (CUDA only); kept"
        )
    elif arches:
        status = "default"
        note = f"SGLang's {kind.upper()} default on {' or '.join(arches)} GPUs at this release"
        other_backend = theirs[0] if len(theirs) == 1 else None
        if other_backend != backend:
            note += "; its workspace is allocated after the KV pool (out of the slack)"
    else:
        status, note, other_backend = "set", "not SGLang's default for any GPU: kept", backend
    rows = [
        SettingAtRelease(
            setting="attention_backend",
            logged=backend or "-",
            log_default=backend if arches else None,
            other_default=" or ".join(theirs) or None,
            status=status,
            used=(other_backend or backend or "-") if status != "unknown" else (backend or "-"),
            effect=Effect.SLACK.value,
            source="; ".join(dict.fromkeys(sources)) or "server_args",
            note=note,
        )
    ]
    page = int_or(knobs.get("page_size"), None)
    own_pages = {default_page_size(backend, c) for c in codes}
    other_page = default_page_size(other_backend or backend, other_code)
    rule = page_size_rule(other_backend or backend, other_code)
    page_default = page is not None and own_pages == {page}
    used_page = other_page if page_default or page is None else page
    rows.append(
        SettingAtRelease(
            setting="page_size",
            logged="-" if page is None else str(page),
            log_default=str(next(iter(own_pages))) if len(own_pages) == 1 else None,
            other_default=str(other_page),
            status="default" if page_default or page is None else "set",
            used=str(used_page),
            effect=Effect.TOKENS.value,
            source=rule.source if rule else "v0.4.9 server_args.py:82; v0.4.10 :405-406",
            note="the pool is floored to a multiple of it",
        )
    )
    return rows, used_page


def _direction(log_range: VersionRange, other: int) -> str:
    if log_range.first is not None and log_range.first == log_range.last == other:
        return "same"
    if log_range.first is not None and other < log_range.first:
        return "upgrade"
    if log_range.last is not None and other > log_range.last:
        return "downgrade"
    return "unknown"


def against_release(
    inputs: SizingInputs,
    other_release: str,
    *,
    log_release: str | None = None,
    gpu_memory_mib: int | None = None,
) -> AgainstRelease:
    """This log's pool under `other_release`'s defaults and rules, beside the logged pool."""
    other_code = version_code(other_release)
    other = given_release(other_code)
    log_range = side_release(inputs, log_release)
    notes: list[str] = []
    if log_release and not inputs.version.allows(version_code(log_release)):
        notes.append(
            f"the given release {log_release} is outside what the line formats allow "
            f"({inputs.version.text}): a fork, or a wrong --head-version"
        )
    log_side = ReleaseSide(
        text=log_range.text if not log_release else release_text(log_range.first),
        given=bool(log_release),
    )
    if gpu_memory_mib is not None:
        refuse_impossible_gpu(inputs, gpu_memory_mib)
        gpus, gpu_source = [gpu_memory_mib], "given"
    else:
        found = infer_gpu(inputs, log_range)
        gpus = [] if found is None else sorted({found.start, found.stop - 1})
        gpu_source = (
            ""
            if found is None
            else f"inferred: {found.start:,} - {found.stop - 1:,} MiB are the capacities from P "
            f"up to {GPU_WINDOW_MIB // 1024} GiB above it whose default at "
            f"{log_range.text} is the printed mem_fraction_static"
        )
    fraction_row, fractions = _fraction_row(inputs, log_range, other, gpus)
    backend_rows, page = _backend_rows(inputs, log_range, other_code)
    settings = [fraction_row, *backend_rows]
    gpu_for_defaults = gpus[0] if len(gpus) == 1 else None
    crossed = [
        c
        for c in crossed_defaults(
            other, log_range, gpu_for_defaults, features_of(inputs), given_settings(inputs)
        )
        if not gpus or any(CHANGE[c.id].fits_gpu(g) for g in gpus)
    ]
    if fraction_row.status == "set":
        # a fraction the user gave is kept: the default's own changes do not reach this pool
        dropped = [c for c in crossed if c.effect == Effect.FRACTION.value]
        crossed = [c for c in crossed if c.effect != Effect.FRACTION.value]
        if dropped:
            notes.append(
                f"{len(dropped)} change(s) of the mem_fraction_static default left out "
                f"({', '.join(c.id for c in dropped)}): this log sets it"
            )
    assumptions = [
        "P (free before the weights) and P - A (what the load took) are this log's: the same "
        "weights, torch/NCCL and other processes at the other release",
        "the bytes per KV token are this log's (same model, kv_cache_dtype and layers)",
        "server_args that are not SGLang's default at this log's release were given by the user "
        "and would be given again",
    ]
    if other_code >= FIRST_FORMULA:
        assumptions.append(
            f"chunked_prefill_size and cuda_graph_max_bs enter {release_text(other_code)}'s "
            "mem_fraction_static default as this log printed them (their defaults changed since "
            "0.5.3 only on 20-35 GiB GPUs: cuda_graph_max_bs 16 -> 24 at 0.5.5, 16 MiB of reserve)"
        )
    if gpu_source.startswith("inferred"):
        assumptions.append(
            f"the GPU capacity is inferred ({gpus[0]:,} - {gpus[-1]:,} MiB); "
            "--gpu-memory-mib pins it"
        )
    result = AgainstRelease(
        path=inputs.path,
        log_release=log_side,
        other_release=release_text(other_code),
        direction=_direction(log_range, other_code),
        gpu_memory_mib=gpu_for_defaults,
        gpu_source=gpu_source,
        logged_tokens=inputs.logged_tokens,
        settings=settings,
        defaults_crossed=crossed,
        assumptions=assumptions,
        notes=notes,
    )
    own_fraction = None
    if float_or(inputs.knobs.get(MFS), None) is None and len(gpus) == 1:
        defaults = fraction_defaults_at(inputs, log_range, gpus[0])
        own_fraction = defaults[0][1] if len(defaults) == 1 else None
    return _predict(result, inputs, log_range, other, fractions, page, own_fraction)


def _predict(
    result: AgainstRelease,
    inputs: SizingInputs,
    log_range: VersionRange,
    other: VersionRange,
    fractions: list[tuple[str, float]],
    page: int | None,
    own_fraction: float | None,
) -> AgainstRelease:
    """The other release's pool for each candidate, anchored on the logged pool;
    `own_fraction` stands in for a mem_fraction_static the log does not print."""
    notes = list(result.notes)
    own = replace(inputs, version=log_range)
    if own_fraction is not None:
        own = replace(own, knobs={**own.knobs, MFS: own_fraction})
        notes.append(
            f"mem_fraction_static not printed: SGLang's default at {log_range.text} for this "
            f"GPU, {own_fraction:.3f}, stands in for the log's own"
        )
    own_settings = base_settings(own)
    if own_settings.mem_fraction_static is None:
        return replace(
            result,
            missing="mem_fraction_static not printed: the log's own pool cannot be "
            "modelled (--gpu-memory-mib lets SGLang's default stand in)",
        )
    mine = predict(own, own_settings)
    if mine.tokens is None:
        return replace(result, missing=mine.missing or "no prediction")
    logged = inputs.logged_tokens
    shift = 0 if logged is None else logged - mine.tokens
    if logged is not None and abs(mine.tokens - logged) > TOLERANCE * logged:
        notes.append(
            f"the model misses this log's own pool ({mine.tokens:,} vs {logged:,} tokens): the "
            "figure is the log plus the modelled change, not an absolute prediction",
        )
    candidates: list[Candidate] = []
    low = high = None
    for label, value in fractions:
        knobs = {**inputs.knobs, MFS: value}
        if page is not None:
            knobs["page_size"] = page
        theirs = replace(inputs, version=other, knobs=knobs)
        prediction = predict(theirs, base_settings(theirs))
        if prediction.tokens is None:
            return replace(result, missing=prediction.missing or "no prediction", notes=notes)
        notes.extend(n for n in prediction.notes if n not in notes)
        tokens = prediction.tokens + shift
        if tokens <= 0:
            # SGLang raises "Not enough memory" when max_total_num_tokens <= 0 (v0.5.2
            # model_executor/model_runner.py:1316-1319): no pool, no start
            notes.append(
                f"{label or 'this GPU'}: mem_fraction_static {value:.3f} leaves no KV budget "
                f"at {release_text(other.first)}: SGLang would not start (counted as 0 tokens)"
            )
            tokens = 0
        candidates.append(Candidate(label=label, mem_fraction_static=value, tokens=tokens))
        below = prediction.tokens_low if prediction.tokens_low is not None else tokens - shift
        above = prediction.tokens_high if prediction.tokens_high is not None else tokens - shift
        below, above = max(0, below + shift), max(0, above + shift)
        low = min(below, tokens) if low is None else min(low, below, tokens)
        high = max(above, tokens) if high is None else max(high, above, tokens)
    if not candidates:
        return replace(result, missing="no mem_fraction_static to size with")
    centre = candidates[0].tokens
    delta = None if logged is None else logged - centre
    return replace(
        result,
        predicted_tokens=centre,
        low=low,
        high=high,
        candidates=candidates if len(candidates) > 1 else [],
        delta_tokens=delta,
        delta_pct=None if delta is None or not centre else round(100 * delta / centre, 2),
        kind="anchored" if logged is not None else "modelled",
        notes=notes,
    )
