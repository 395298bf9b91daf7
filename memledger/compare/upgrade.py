"""Why KV tokens per rank changed between two logs (an upgrade, or other server_args): pure.

The token count is SGLang's arithmetic (memledger.sizing.predict) on a few inputs: the fraction
(mem_fraction_static), P (free before the weights), the load's take P - A, the bytes per KV
token, the Mamba state, the other sizing server_args and the release's rules. Each input of
base is replaced by head's in every order and its Shapley share of the modelled change taken, so
the shares add up to the modelled change exactly; what the model misses on the two logs is the
named remainder `unexplained`. Defaults that changed between the two releases come from
memledger.sglang.default_changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from memledger.compare.models import RowDiff
from memledger.compare.upgrade_gpu import MFS_MATCH
from memledger.compare.upgrade_models import (
    CrossedDefault,
    InputShare,
    MovedRow,
    ReleaseSide,
    UpgradeExplanation,
)
from memledger.compare.upgrade_releases import (
    MFS,
    crossed_defaults,
    default_fraction,
    features,
    given_settings,
    releases_differ,
    side_release,
)
from memledger.model.events import ParamValue
from memledger.model.ledger import Ledger
from memledger.model.sizing import Settings
from memledger.sglang.default_changes import (
    CHANGE,
    Effect,
)
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.releases import release_text, version_code
from memledger.sizing import SizingInputs, base_settings, predict
from memledger.sizing.inputs import KNOBS, Reading
from memledger.sizing.result import TOLERANCE
from memledger.sizing.whatif import refuse_impossible_gpu
from memledger.units import GIB, float_or

SAME_CELL_BYTES = 0.5
_CELL_FIELDS = (
    "target_kv",
    "draft_kv",
    "swa_full_tokens",
    "swa_swa_tokens",
    "logged_kv_dtype",
    "model_dtype",
    "model_type",
    "theoretical_cell_bytes",
)
_ARG_FIELDS = (
    "logged_max_running_requests",
    "logged_context_len",
    "logged_chunked_prefill_size",
    "logged_max_capture_bs",
    "logged_prefill_graph_sizes",
)


@dataclass(frozen=True)
class UpgradeContext:
    """What the upgrade explanation needs beyond the two ledgers (all optional)."""

    base_inputs: SizingInputs | None = None
    head_inputs: SizingInputs | None = None
    """The sizing inputs of each log (None for a saved ledger: no attribution then)."""
    base_release: str | None = None
    head_release: str | None = None
    """The SGLang release each side ran (--base-version/--head-version), else the formats'."""
    gpu_memory_mib: int | None = None
    """GPU capacity (nvidia-smi MiB): lets SGLang's mem_fraction_static default be checked."""


class _Sides:
    """Both sides' sizing inputs, with their releases applied, and the hybrid builder."""

    def __init__(self, base: SizingInputs, head: SizingInputs) -> None:
        self.base, self.head = base, head

    def hybrid(self, taken: frozenset[str]) -> SizingInputs:
        """Base's inputs with the groups in `taken` replaced by head's."""
        base, head = self.base, self.head
        assert base.load_begin is not None and base.budget_avail is not None
        assert head.load_begin is not None and head.budget_avail is not None
        update: dict[str, Any] = {}
        knobs = dict(base.knobs)
        if MFS in taken:
            _copy_knob(knobs, head.knobs, MFS)
        if "server_args" in taken:
            for name in KNOBS:
                if name != MFS:
                    _copy_knob(knobs, head.knobs, name)
            update.update({f: getattr(head, f) for f in _ARG_FIELDS})
        if "bytes_per_token" in taken:
            update.update({f: getattr(head, f) for f in _CELL_FIELDS})
        if "state_pool" in taken:
            update["mamba"] = head.mamba
        if "release_rules" in taken:
            update["version"] = head.version
        p = head.load_begin if "free_before_weights" in taken else base.load_begin
        take_side = head if "load_taken" in taken else base
        assert take_side.load_begin is not None and take_side.budget_avail is not None
        taken_bytes = take_side.load_begin.bytes - take_side.budget_avail.bytes
        update["load_begin"] = p
        update["budget_avail"] = Reading(bytes=p.bytes - taken_bytes, line=None, note="hybrid")
        update["knobs"] = knobs
        return replace(base, **update)


def _copy_knob(into: dict[str, ParamValue], source: dict[str, ParamValue], name: str) -> None:
    if name in source:
        into[name] = source[name]
    else:
        into.pop(name, None)


def _cell(inputs: SizingInputs, settings: Settings) -> float | None:
    found = _cell_and_half(inputs, settings)
    return None if found is None else found[0]


def _cell_and_half(inputs: SizingInputs, settings: Settings) -> tuple[float, float] | None:
    """Bytes per KV token as SGLang sized them, and the ± the printed KV sizes leave."""
    from memledger.sizing.cell import build_cell

    cell = build_cell(inputs, settings, [])
    return None if cell is None else (cell.bytes, cell.half)


def _differing(sides: _Sides, settings: Callable[[SizingInputs], Settings]) -> list[str]:
    """The input groups whose values differ between the two sides, in display order."""
    base, head = sides.base, sides.head
    assert base.load_begin is not None and base.budget_avail is not None
    assert head.load_begin is not None and head.budget_avail is not None
    groups: list[str] = []
    if float_or(base.knobs.get(MFS), None) != float_or(head.knobs.get(MFS), None):
        groups.append(MFS)
    if base.load_begin.bytes != head.load_begin.bytes:
        groups.append("free_before_weights")
    if (base.load_begin.bytes - base.budget_avail.bytes) != (
        head.load_begin.bytes - head.budget_avail.bytes
    ):
        groups.append("load_taken")
    cells = (_cell_and_half(base, settings(base)), _cell_and_half(head, settings(head)))
    if (
        cells[0] is None
        or cells[1] is None
        or abs(cells[0][0] - cells[1][0]) > max(SAME_CELL_BYTES, cells[0][1] + cells[1][1])
    ):
        if [getattr(base, f) for f in _CELL_FIELDS] != [getattr(head, f) for f in _CELL_FIELDS]:
            groups.append("bytes_per_token")
    if base.mamba != head.mamba:
        groups.append("state_pool")
    others = [n for n in KNOBS if n != MFS]
    if [base.knobs.get(n) for n in others] != [head.knobs.get(n) for n in others]:
        groups.append("server_args")
    if (base.version.first, base.version.last) != (head.version.first, head.version.last):
        groups.append("release_rules")
    return groups


def _shapley(groups: Sequence[str], value: Callable[[frozenset[str]], int]) -> dict[str, float]:
    n = len(groups)
    shares = dict.fromkeys(groups, 0.0)
    for group in groups:
        others = [g for g in groups if g != group]
        for size in range(n):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            for subset in combinations(others, size):
                s = frozenset(subset)
                shares[group] += weight * (value(s | {group}) - value(s))
    return shares


def _whole(shares: dict[str, float], total: int) -> dict[str, int]:
    """Integer shares that add up to `total` exactly (largest remainder)."""
    floors = {k: math.floor(v) for k, v in shares.items()}
    left = total - sum(floors.values())
    order = sorted(shares, key=lambda k: (shares[k] - floors[k], k), reverse=True)
    for key in order[: max(0, left)]:
        floors[key] += 1
    return floors


def _gib(byte_count: int) -> str:
    return f"{byte_count / GIB:.2f} GiB"


def _pct(tokens: int, base: int | None) -> float | None:
    return None if not base else round(100.0 * tokens / base, 2)


LABELS: dict[str, str] = {
    MFS: "mem_fraction_static",
    "free_before_weights": "free before the weights (P)",
    "load_taken": "taken by the load (P - A)",
    "bytes_per_token": "bytes per KV token",
    "state_pool": "Mamba/linear-attention state",
    "server_args": "other sizing server_args",
    "release_rules": "release's sizing rules",
}


def _line(reading: Reading | None) -> str:
    return "-" if reading is None or reading.line is None else f"line {reading.line}"


def _fraction_why(
    sides: _Sides,
    releases: tuple[VersionRange, VersionRange],
    gpu_mib: int | None,
    crossed: Sequence[CrossedDefault],
) -> tuple[str, list[str]]:
    """Whether each side's fraction is SGLang's default at its release (needs the GPU size)."""
    fraction_ids = [c.id for c in crossed if CHANGE[c.id].effect is Effect.FRACTION]
    if gpu_mib is None:
        if fraction_ids:
            return (
                "server_args differ; the default changed in between (give --gpu-memory-mib to "
                "check whether these are SGLang's defaults)",
                fraction_ids,
            )
        return "server_args differ", []
    matches = []
    for inputs, release in zip((sides.base, sides.head), releases, strict=True):
        expected = default_fraction(inputs, release, gpu_mib)
        printed = float_or(inputs.knobs.get(MFS), None)
        matches.append(
            expected is not None and printed is not None and abs(expected - printed) <= MFS_MATCH
        )
    if all(matches):
        return f"SGLang's default at each release for a {gpu_mib:,} MiB GPU", fraction_ids
    if any(matches):
        side = "base" if matches[0] else "head"
        return f"{side}'s is SGLang's default for a {gpu_mib:,} MiB GPU, the other is set", []
    return f"set on both sides (neither is SGLang's default for a {gpu_mib:,} MiB GPU)", []


def _describe(
    group: str, sides: _Sides, settings: Callable[[SizingInputs], Settings]
) -> tuple[str, str, str]:
    """(base value, head value, source) for one input group."""
    base, head = sides.base, sides.head
    if group == MFS:
        return (
            str(base.knobs.get(MFS, "default")),
            str(head.knobs.get(MFS, "default")),
            f"server_args line {base.server_args_line or '-'} | {head.server_args_line or '-'}",
        )
    if group == "free_before_weights":
        assert base.load_begin is not None and head.load_begin is not None
        return (
            _gib(base.load_begin.bytes),
            _gib(head.load_begin.bytes),
            f"{_line(base.load_begin)} | {_line(head.load_begin)}",
        )
    if group == "load_taken":
        assert base.load_begin is not None and base.budget_avail is not None
        assert head.load_begin is not None and head.budget_avail is not None
        return (
            _gib(base.load_begin.bytes - base.budget_avail.bytes),
            _gib(head.load_begin.bytes - head.budget_avail.bytes),
            f"{_line(base.budget_avail)} | {_line(head.budget_avail)}",
        )
    if group == "bytes_per_token":
        cells = [_cell(s, settings(s)) for s in (base, head)]
        shown = ["-" if c is None else f"{c:,.1f} B" for c in cells]
        lines = [str(s.target_kv[0].line) if s.target_kv else "-" for s in (base, head)]
        return shown[0], shown[1], f"KV line {lines[0]} | {lines[1]}"
    if group == "state_pool":
        shown = [
            "-" if s.mamba is None else f"{s.mamba.slots} slots, {_gib(s.mamba.bytes)}"
            for s in (base, head)
        ]
        return shown[0], shown[1], "Mamba pool lines"
    if group == "server_args":
        names = [n for n in KNOBS if n != MFS and base.knobs.get(n) != head.knobs.get(n)]
        shown = [", ".join(f"{n}={s.knobs.get(n)}" for n in names) for s in (base, head)]
        return shown[0], shown[1], "server_args"
    return base.version.text, head.version.text, "line formats or --base/--head-version"


def _why(group: str, fraction_why: str) -> str:
    if group == MFS:
        return fraction_why
    if group == "server_args":
        return "server_args differ"
    if group == "release_rules":
        return "the sizing rules of each release (memledger.sglang.sizing_rules)"
    return "measured on each log"


def _rows_before_sizing(
    rows: Sequence[RowDiff], base: Ledger, head: Ledger, base_cell: float | None
) -> list[MovedRow]:
    """Rows of intervals that end by the load end (the reading SGLang sized the pool from)."""
    order = [c.id for c in head.checkpoints] or [c.id for c in base.checkpoints]
    if "load_end" not in order:
        return []
    last = order.index("load_end")
    begin = order.index("load_begin") if "load_begin" in order else -1
    moved: list[MovedRow] = []
    for row in rows:
        if not row.in_partition or row.interval is None or not row.delta_bytes:
            continue
        end = row.interval.split("->")[-1]
        if end not in order or order.index(end) > last:
            continue
        phase = "before_weights" if order.index(end) <= begin else "weights_load"
        tokens = None if not base_cell else round(-row.delta_bytes / base_cell)
        moved.append(
            MovedRow(
                id=row.id,
                label=row.label,
                phase=phase,
                delta_bytes=row.delta_bytes,
                tokens_equivalent=tokens,
            )
        )
    return sorted(moved, key=lambda r: (-abs(r.delta_bytes), r.id))


def _sizing_args(base: Ledger, head: Ledger) -> list[str]:
    return [
        name
        for name in KNOBS
        if (name in base.parameters or name in head.parameters)
        and base.parameters.get(name) != head.parameters.get(name)
    ]


def explain_upgrade(
    base: Ledger,
    head: Ledger,
    rows: Sequence[RowDiff],
    context: UpgradeContext,
) -> UpgradeExplanation | None:
    """Why KV tokens per rank changed; None when the releases and sizing server_args agree."""
    base_inputs, head_inputs = context.base_inputs, context.head_inputs
    base_release, head_release = context.base_release, context.head_release
    gpu_memory_mib = context.gpu_memory_mib
    for inputs in (base_inputs, head_inputs):
        refuse_impossible_gpu(inputs, gpu_memory_mib)
    releases = (side_release(base_inputs, base_release), side_release(head_inputs, head_release))
    differ = releases_differ(*releases)
    if base_release and head_release:
        differ = version_code(base_release) != version_code(head_release)
    args = _sizing_args(base, head)
    if not args and not differ:
        return None
    notes: list[str] = []
    for name, given, inputs in (
        ("base", base_release, base_inputs),
        ("head", head_release, head_inputs),
    ):
        if given and inputs is not None and not inputs.version.allows(version_code(given)):
            notes.append(
                f"{name}: the given release {given} is outside what its line formats allow "
                f"({inputs.version.text}): a fork, or a wrong --{name}-version"
            )
    crossed = (
        crossed_defaults(
            *releases,
            gpu_memory_mib,
            features(base_inputs, base) | features(head_inputs, head),
            # a setting both sides give never meets the changed default
            given_settings(base_inputs) & given_settings(head_inputs),
        )
        if differ
        else []
    )
    if differ is None:
        notes.append(
            "the line formats cannot tell whether the two releases differ "
            f"({releases[0].text} vs {releases[1].text}): --base-version/--head-version say it"
        )
    sides_text = [
        ReleaseSide(text=r.text if not g else release_text(r.first), given=bool(g))
        for r, g in zip(releases, (base_release, head_release), strict=True)
    ]
    base_tokens = base_inputs.logged_tokens if base_inputs is not None else None
    head_tokens = head_inputs.logged_tokens if head_inputs is not None else None
    if base_tokens is None:
        base_tokens = base.summary.kv_tokens_per_rank
    if head_tokens is None:
        head_tokens = head.summary.kv_tokens_per_rank
    delta = None if base_tokens is None or head_tokens is None else head_tokens - base_tokens
    result = UpgradeExplanation(
        available=False,
        base_release=sides_text[0],
        head_release=sides_text[1],
        releases_differ=differ,
        server_args=args,
        gpu_memory_mib=gpu_memory_mib,
        base_tokens=base_tokens,
        head_tokens=head_tokens,
        delta_tokens=delta,
        delta_pct=None if delta is None else _pct(delta, base_tokens),
        defaults_crossed=crossed,
        notes=notes,
    )
    if base_inputs is None or head_inputs is None:
        return replace(
            result,
            reason="no sizing inputs on a side (a saved ledger or a Ledger object): diff the two "
            "logs to attribute the change",
        )
    return _attribute(result, base, head, rows, base_inputs, head_inputs, releases, crossed)


def _with_release(
    inputs: SizingInputs, release: VersionRange, gpu_mib: int | None, name: str, notes: list[str]
) -> SizingInputs:
    """The side's inputs at its release, with a missing fraction inferred from the GPU size."""
    inputs = replace(inputs, version=release)
    if MFS in inputs.knobs or gpu_mib is None:
        return inputs
    value = default_fraction(inputs, release, gpu_mib)
    if value is None:
        return inputs
    notes.append(
        f"{name}: mem_fraction_static not printed; SGLang's default at {release.text} for a "
        f"{gpu_mib:,} MiB GPU is {value} (used)"
    )
    return replace(inputs, knobs={**inputs.knobs, MFS: value})


def _attribute(
    result: UpgradeExplanation,
    base: Ledger,
    head: Ledger,
    rows: Sequence[RowDiff],
    base_inputs: SizingInputs,
    head_inputs: SizingInputs,
    releases: tuple[VersionRange, VersionRange],
    crossed: Sequence[CrossedDefault],
) -> UpgradeExplanation:
    gpu = result.gpu_memory_mib
    notes = list(result.notes)
    sides = _Sides(
        _with_release(base_inputs, releases[0], gpu, "base", notes),
        _with_release(head_inputs, releases[1], gpu, "head", notes),
    )

    def settings(inputs: SizingInputs) -> Settings:
        return replace(base_settings(inputs), gpu_memory_mib=gpu)

    base_cell = _cell(sides.base, settings(sides.base))
    moved = _rows_before_sizing(rows, base, head, base_cell)
    result = replace(result, rows_before_sizing=moved, notes=notes)
    for name, side in (("base", sides.base), ("head", sides.head)):
        if side.load_begin is None or side.budget_avail is None:
            return replace(
                result, reason=f"{name} has no load-begin and load-end avail readings (P, A)"
            )
    cache: dict[frozenset[str], int | None] = {}
    missing: list[str] = []

    def tokens(taken: frozenset[str]) -> int | None:
        if taken not in cache:
            hybrid = sides.hybrid(taken)
            prediction = predict(hybrid, settings(hybrid))
            cache[taken] = prediction.tokens
            if prediction.tokens is None and prediction.missing:
                missing.append(prediction.missing)
        return cache[taken]

    groups = _differing(sides, settings)
    every = frozenset(groups)
    first, last = tokens(frozenset()), tokens(every)
    updates: dict[str, Any] = {"base_predicted": first, "head_predicted": last}
    if first is None or last is None:
        updates["reason"] = f"no prediction: {missing[0] if missing else 'unknown'}"
        return replace(result, **updates)
    for size in range(1, len(groups)):
        for subset in combinations(groups, size):
            if tokens(frozenset(subset)) is None:
                updates["reason"] = (
                    f"no prediction with {', '.join(subset)} from head: "
                    f"{missing[0] if missing else 'unknown'}"
                )
                return replace(result, **updates)

    misses = [
        f"{name} by {(predicted - logged) / logged * 100:+.1f} %"
        for name, predicted, logged in (
            ("base", first, result.base_tokens),
            ("head", last, result.head_tokens),
        )
        if logged and abs(predicted - logged) > TOLERANCE * logged
    ]
    if misses:
        # Shares of the model's change are this change's only when the model reproduces both
        # logs: otherwise they would be a balanced but untrue account (see each sizing section).
        updates["reason"] = (
            f"SGLang's arithmetic misses {' and '.join(misses)} of the logged tokens, more than "
            f"{TOLERANCE:.1%}: its shares would not be this change's; each ledger's sizing "
            "section says why"
        )
        return replace(result, **updates)

    def known(taken: frozenset[str]) -> int:
        value = tokens(taken)
        assert value is not None
        return value

    shares = _whole(_shapley(groups, known), last - first)
    fraction_why, fraction_ids = _fraction_why(sides, releases, gpu, crossed)
    base_tokens = result.base_tokens
    inputs: list[InputShare] = []
    for group in groups:
        base_text, head_text, source = _describe(group, sides, settings)
        inputs.append(
            InputShare(
                id=group,
                label=LABELS[group],
                base=base_text,
                head=head_text,
                tokens=shares[group],
                pct=_pct(shares[group], base_tokens),
                why=_why(group, fraction_why),
                defaults=fraction_ids if group == MFS else _cell_defaults(group, crossed),
                source=source,
            )
        )
    inputs.sort(key=lambda i: (-abs(i.tokens), i.id))
    unexplained = None if result.delta_tokens is None else result.delta_tokens - (last - first)
    updates.update(
        {
            "available": True,
            "inputs": inputs,
            "unexplained_tokens": unexplained,
            "unexplained_pct": None if unexplained is None else _pct(unexplained, base_tokens),
        }
    )
    return replace(result, **updates)


def _cell_defaults(group: str, crossed: Sequence[CrossedDefault]) -> list[str]:
    """The crossed defaults a release's rules bring (the cell, token and split rules)."""
    if group != "release_rules":
        return []
    wanted = {Effect.CELL, Effect.TOKENS}
    return [c.id for c in crossed if CHANGE[c.id].effect in wanted]
