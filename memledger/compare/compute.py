"""Diff two ledgers: rows matched by id, group totals, and where a state-pool difference comes from.

Pure: no I/O, no click/lark/tabulate. The state-pool analysis follows the seed article: per card,
usable = fixed overhead + state pool, so a smaller fixed overhead is a larger state pool, and the
fixed-overhead delta splits exactly (integer bytes) into the categories of
`STATE_POOL_CATEGORIES`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import PurePath
from typing import Any, Literal, TypeVar

from memledger.compare.categories import (
    DESTINATION_KEYS,
    OTHER_CATEGORY_ID,
    STATE_POOL_CATEGORIES,
    SUMMARY_LABELS,
    Category,
    group_label,
)
from memledger.compare.engines import compare_engines
from memledger.compare.models import (
    MIN_TOLERANCE_BYTES,
    ByteChange,
    CategoryDiff,
    CheckpointDiff,
    CoverageDiff,
    DiffInput,
    DiffInputs,
    DiffStatus,
    GroupDiff,
    IntervalDiff,
    KvTokenSplit,
    LedgerDiff,
    ParamDiff,
    RowContribution,
    RowDiff,
    SideCoverage,
    SortKey,
    StatePoolAnalysis,
    SummaryField,
    SummaryNumber,
    SummarySides,
    _byte_change,
    delta_pct,
)
from memledger.compare.upgrade import UpgradeContext, explain_upgrade
from memledger.model.events import ParamValue
from memledger.model.ledger import (
    FIXED_OVERHEAD_GROUPS,
    LEDGER_PARAM_PREFIX,
    Checkpoint,
    Interval,
    Ledger,
    Row,
    RowGroup,
    Summary,
    SummaryUnit,
)
from memledger.record import computed_names, field_names, to_dict
from memledger.sglang.effects import DERIVED_ALIASES, ParamEffect, param_effect
from memledger.units import GIB

_Item = TypeVar("_Item", Row, Checkpoint, Interval)


def _effect_targets(effect: ParamEffect) -> list[str]:
    return (
        list(effect.row_ids)
        + [f"prefix:{p}" for p in effect.row_prefixes]
        + [f"group:{g.value}" for g in effect.groups]
    )


def _effect_matches(effect: ParamEffect, row: RowDiff) -> bool:
    if row.id in effect.row_ids:
        return True
    # Informational rows (load peak, a "reclaimed vs a hypothetical baseline") are not memory
    # that moved; they are only listed when named explicitly.
    return row.in_partition and (
        row.group in effect.groups or any(row.id.startswith(p) for p in effect.row_prefixes)
    )


def _row_diff(base: Row | None, head: Row | None) -> RowDiff:
    some = head if head is not None else base
    assert some is not None
    notes = []
    for side, row in (("base", base), ("head", head)):
        if row is not None and row.bytes is None:
            notes.append(f"{side}: {row.evidence.note or 'unknown'}")
    if base is not None and head is not None and base.group != head.group:
        notes.append(f"group changed: {base.group.value} -> {head.group.value}")
    if base is None or head is None:
        notes.append(f"only in {'head' if base is None else 'base'}: not comparable")
    change = _byte_change(
        None if base is None else base.bytes,
        None if head is None else head.bytes,
        sum(r.error_bytes for r in (base, head) if r is not None),
        on_base=base is not None,
        on_head=head is not None,
    )
    fields = to_dict(change, exclude=set(computed_names(ByteChange)))
    if base is None or head is None:
        fields["status"] = DiffStatus.NOT_COMPARABLE
    return RowDiff(
        **fields,
        id=some.id,
        label=some.label,
        group=some.group,
        base_kind=None if base is None else base.kind,
        head_kind=None if head is None else head.kind,
        base_in_partition=base is not None and base.in_partition,
        head_in_partition=head is not None and head.in_partition,
        interval=some.interval,
        note="; ".join(notes) or None,
    )


def _matched(
    base: Sequence[_Item], head: Sequence[_Item], key: Callable[[_Item], Hashable]
) -> list[tuple[_Item | None, _Item | None]]:
    """Pairs (base item | None, head item | None) by key: base order, then head-only items."""
    head_by_key = {key(item): item for item in head}
    base_keys = {key(item) for item in base}
    pairs: list[tuple[_Item | None, _Item | None]] = [
        (item, head_by_key.get(key(item))) for item in base
    ]
    pairs += [(None, item) for item in head if key(item) not in base_keys]
    return pairs


def _side_value(row: RowDiff, side: Literal["base", "head"]) -> int:
    """What a row adds to its side's totals: 0 when absent, unknown or not in the partition."""
    if side == "base":
        return (row.base_bytes or 0) if row.base_in_partition else 0
    return (row.head_bytes or 0) if row.head_in_partition else 0


def _sum_rows(rows: Iterable[RowDiff], *, side: Literal["base", "head"]) -> int:
    return sum(_side_value(row, side) for row in rows)


def _aggregate(rows: Sequence[RowDiff]) -> ByteChange:
    base = _sum_rows(rows, side="base")
    head = _sum_rows(rows, side="head")
    return _byte_change(base, head, sum(r.error_bytes for r in rows))


def _unknown_ids(rows: Iterable[RowDiff]) -> list[str]:
    """Rows present on a side whose bytes that side could not compute."""
    return [
        r.id
        for r in rows
        if (r.base_kind is not None and r.base_bytes is None)
        or (r.head_kind is not None and r.head_bytes is None)
    ]


def _group_diff(group_id: str, label: str, rows: Sequence[RowDiff]) -> GroupDiff:
    change = _aggregate(rows)
    return GroupDiff(
        **to_dict(change, exclude=set(computed_names(ByteChange))),
        id=group_id,
        label=label,
        n_rows=len(rows),
        unknown_rows=_unknown_ids(rows),
    )


def _checkpoint_diff(base: Checkpoint | None, head: Checkpoint | None) -> CheckpointDiff:
    some = head if head is not None else base
    assert some is not None
    change = _byte_change(
        None if base is None else base.avail_bytes,
        None if head is None else head.avail_bytes,
        sum(c.error_bytes for c in (base, head) if c is not None),
        on_base=base is not None,
        on_head=head is not None,
    )
    return CheckpointDiff(
        **to_dict(change, exclude=set(computed_names(ByteChange))),
        id=some.id,
        base_line=None if base is None else base.line,
        head_line=None if head is None else head.line,
    )


_INTERVAL_METRICS = ("drop", "logged", "named", "residual", "unexplained")


def _interval_diff(base: Interval | None, head: Interval | None) -> IntervalDiff:
    some = head if head is not None else base
    assert some is not None
    error = sum(i.error_bytes for i in (base, head) if i is not None)
    metrics: dict[str, ByteChange] = {}
    for metric in _INTERVAL_METRICS:
        metrics[metric] = _byte_change(
            None if base is None else getattr(base, f"{metric}_bytes"),
            None if head is None else getattr(head, f"{metric}_bytes"),
            error,
            on_base=base is not None,
            on_head=head is not None,
        )
    statuses = {m.status for m in metrics.values()}
    status = metrics["drop"].status
    if status is DiffStatus.UNCHANGED and DiffStatus.CHANGED in statuses:
        status = DiffStatus.CHANGED
    return IntervalDiff(
        from_id=some.from_id,
        to_id=some.to_id,
        status=status,
        drop=metrics["drop"],
        logged=metrics["logged"],
        named=metrics["named"],
        residual=metrics["residual"],
        unexplained=metrics["unexplained"],
    )


def _summary_sides(base: Summary, head: Summary) -> tuple[SummarySides, list[SummaryField]]:
    delta: dict[str, Any] = {}
    fields: list[SummaryField] = []
    keys = list(SUMMARY_LABELS) + [k for k in field_names(Summary) if k not in SUMMARY_LABELS]
    for key in keys:
        label, unit = SUMMARY_LABELS.get(key, (key.replace("_", " "), "GiB"))
        # Sizes are bytes in the ledger; the diff's summary fields show them in GiB (`unit`).
        in_bytes = Summary.unit(key) is SummaryUnit.BYTES
        base_value = base.gib(key) if in_bytes else getattr(base, key)
        head_value = head.gib(key) if in_bytes else getattr(head, key)
        base_raw, head_raw = getattr(base, key), getattr(head, key)
        if base_value is None or head_value is None:
            diff_value: SummaryNumber = None
            status = DiffStatus.UNKNOWN
            if base_value is None and head_value is not None:
                status = DiffStatus.NEW
            elif head_value is None and base_value is not None:
                status = DiffStatus.REMOVED
        else:
            diff_value = head_value - base_value
            if isinstance(diff_value, float):
                diff_value = round(diff_value, 6)
            threshold = MIN_TOLERANCE_BYTES / GIB if unit == "GiB" else 0
            status = DiffStatus.UNCHANGED if abs(diff_value) <= threshold else DiffStatus.CHANGED
        delta[key] = None if base_raw is None or head_raw is None else head_raw - base_raw
        fields.append(
            SummaryField(
                key=key,
                label=label,
                unit=unit,
                base=base_value,
                head=head_value,
                delta=diff_value,
                delta_pct=delta_pct(base_value, head_value),
                status=status,
            )
        )
    return SummarySides(base=base, head=head, delta=Summary(**delta)), fields


def _contributions(rows: Iterable[RowDiff], *, to_totals: bool = True) -> list[RowContribution]:
    """Rows that moved, largest |Δ| first.

    With `to_totals`, each row's share of the totals (a side's unknown or non-partition value
    counts 0, as in the sums), so the shares add up exactly to the total's delta.
    """
    moved = []
    for r in rows:
        if to_totals:
            delta: int | None = _side_value(r, "head") - _side_value(r, "base")
        else:
            delta = r.delta_bytes
        if delta:
            moved.append(
                RowContribution(
                    id=r.id, label=r.label, group=r.group, delta_bytes=delta, status=r.status
                )
            )
    return sorted(moved, key=lambda c: (-abs(c.delta_bytes), c.id))


def _group_change(
    rows: Sequence[RowDiff], base: Ledger, head: Ledger, groups: frozenset[RowGroup]
) -> ByteChange:
    def total(ledger: Ledger) -> int:
        return sum(g.bytes for g in ledger.groups if g.group in groups)

    return _byte_change(total(base), total(head), sum(r.error_bytes for r in rows))


def _state_pool_analysis(
    rows: Sequence[RowDiff],
    base: Ledger,
    head: Ledger,
    fields: Sequence[SummaryField],
) -> StatePoolAnalysis:
    partition = [r for r in rows if r.in_partition]
    fixed = [r for r in partition if r.group in FIXED_OVERHEAD_GROUPS]
    state = [r for r in partition if r.group is RowGroup.STATE_POOL]
    # Totals are the ledgers' own group totals (the engine's figures); the ± is the rows'.
    fixed_change = _group_change(fixed, base, head, FIXED_OVERHEAD_GROUPS)
    state_change = _group_change(state, base, head, frozenset({RowGroup.STATE_POOL}))
    partition_change = _aggregate(partition)
    usable_change = _byte_change(
        base.usable_bytes,
        head.usable_bytes,
        base.tolerance_bytes + head.tolerance_bytes,
    )
    categories: list[CategoryDiff] = []
    categorised: set[RowGroup] = set()
    for category in STATE_POOL_CATEGORIES:
        categories.append(_category_diff(category, fixed))
        categorised.update(category.groups)
    leftover = tuple(sorted(set(FIXED_OVERHEAD_GROUPS) - categorised))
    if leftover:
        categories.append(_category_diff(Category(OTHER_CATEGORY_ID, "other", leftover), fixed))
    incomplete = sorted(_unknown_ids(partition))
    reasons = []
    if not state:
        reasons.append("neither ledger has state-pool rows")
    if not fixed:
        reasons.append("neither ledger has fixed-overhead rows")
    if incomplete:
        reasons.append(f"rows unknown on a side (counted as 0 there): {', '.join(incomplete)}")
    for side, ledger in (("base", base), ("head", head)):
        if ledger.stopped_at is not None:
            reasons.append(f"{side} ledger is partial (stopped {ledger.stopped_at})")
    available = bool(state) and bool(fixed)
    delta_state = state_change.delta_bytes or 0
    larger: Literal["base", "head"] | None = None
    if abs(delta_state) > state_change.tolerance_bytes:
        larger = "head" if delta_state > 0 else "base"
    by_key = {f.key: f for f in fields}
    return StatePoolAnalysis(
        available=available,
        reason="; ".join(reasons) or None,
        fixed_overhead=fixed_change,
        state_pool=state_change,
        partition=partition_change,
        usable=usable_change,
        larger_pool_side=larger,
        categories=categories,
        destination=[by_key[k] for k in DESTINATION_KEYS if k in by_key],
        state_rows=_contributions(state),
        incomplete_rows=incomplete,
        kv_tokens=kv_token_split(base.summary, head.summary),
    )


def kv_token_split(base: Summary, head: Summary) -> KvTokenSplit | None:
    """Bytes per KV token on each side, and how much of the token change is the pool's size and
    how much each token's cost (None when a side lacks the KV pool or its token count)."""
    sides = [(s.kv_pool, s.kv_tokens_per_rank) for s in (base, head)]
    if any(pool is None or not tokens or pool <= 0 for pool, tokens in sides):
        return None
    (base_pool, base_tokens), (head_pool, head_tokens) = sides
    assert base_pool is not None and head_pool is not None and base_tokens and head_tokens
    base_cost, head_cost = base_pool / base_tokens, head_pool / head_tokens
    from_pool = round((head_pool - base_pool) / base_cost)
    return KvTokenSplit(
        base_pool_bytes=base_pool,
        head_pool_bytes=head_pool,
        base_tokens=base_tokens,
        head_tokens=head_tokens,
        base_bytes_per_token=round(base_cost, 3),
        head_bytes_per_token=round(head_cost, 3),
        from_pool_tokens=from_pool,
        # The rest, so the two parts add up to head - base exactly in integers.
        from_cost_tokens=head_tokens - base_tokens - from_pool,
    )


def _category_diff(category: Category, fixed_rows: Sequence[RowDiff]) -> CategoryDiff:
    members = [r for r in fixed_rows if r.group in category.groups]
    change = _aggregate(members)
    return CategoryDiff(
        **to_dict(change, exclude=set(computed_names(ByteChange))),
        id=category.id,
        label=category.label,
        groups=list(category.groups),
        rows=_contributions(members),
    )


def _same_value(a: ParamValue, b: ParamValue) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _duplicates_server_arg(
    name: str, base_params: dict[str, ParamValue], head_params: dict[str, ParamValue]
) -> bool:
    """`ledger.dp_size` says nothing new when `dp_size` differs the same way."""
    if not name.startswith(LEDGER_PARAM_PREFIX):
        return False
    bare = name.removeprefix(LEDGER_PARAM_PREFIX)
    bare = DERIVED_ALIASES.get(bare, bare)
    if bare not in base_params or bare not in head_params:
        return False
    return all(_same_value(params.get(name), params[bare]) for params in (base_params, head_params))


def _parameter_diffs(base: Ledger, head: Ledger, rows: Sequence[RowDiff]) -> list[ParamDiff]:
    base_params: dict[str, ParamValue] = dict(base.parameters)
    head_params: dict[str, ParamValue] = dict(head.parameters)
    moved = [
        r
        for r in rows
        if r.status in (DiffStatus.CHANGED, DiffStatus.NOT_COMPARABLE, DiffStatus.NEW)
        or r.status is DiffStatus.REMOVED
    ]
    diffs = []
    for name in sorted(set(base_params) | set(head_params)):
        on_base, on_head = name in base_params, name in head_params
        if on_base and on_head and _same_value(base_params[name], head_params[name]):
            continue
        if _duplicates_server_arg(name, base_params, head_params):
            continue
        status = (
            DiffStatus.CHANGED
            if on_base and on_head
            else DiffStatus.NEW
            if on_head
            else DiffStatus.REMOVED
        )
        effect = param_effect(name)
        diffs.append(
            ParamDiff(
                name=name,
                base=base_params.get(name),
                head=head_params.get(name),
                status=status,
                affects=[] if effect is None else _effect_targets(effect),
                why=None if effect is None else effect.why or None,
                moved_rows=[]
                if effect is None
                else _contributions(
                    (r for r in moved if _effect_matches(effect, r)), to_totals=False
                ),
            )
        )
    return diffs


def _input(ledger: Ledger, label: str) -> DiffInput:
    return DiffInput(
        label=label,
        path=ledger.source.path,
        startup=ledger.source.startup,
        n_startups=ledger.source.n_startups,
        rank=ledger.source.rank,
        outcome=ledger.outcome,
        stopped_at=ledger.stopped_at,
        ledger_schema_version=ledger.schema_version,
    )


def _coverage(ledger: Ledger) -> SideCoverage:
    return SideCoverage(
        outcome=ledger.outcome,
        stopped_at=ledger.stopped_at,
        n_checkpoints=len(ledger.checkpoints),
        n_intervals=len(ledger.intervals),
        n_rows=len(ledger.rows),
        unknown_rows=[r.id for r in ledger.rows if r.bytes is None],
        balance_error_bytes=ledger.balance_error_bytes,
        tolerance_bytes=ledger.tolerance_bytes,
        notes=list(ledger.notes),
    )


def default_labels(base: Ledger, head: Ledger) -> tuple[str, str]:
    """The two inputs' file stems, whole (a renderer with a width limit shortens them,
    `render.diff_common.distinct_labels`); `folder/stem` when the stems are equal;
    `base`/`head` only when even those cannot tell the sides apart."""
    base_path, head_path = PurePath(base.source.path), PurePath(head.source.path)
    labels = (base_path.stem, head_path.stem)
    if labels[0] == labels[1] and base_path.parent.name != head_path.parent.name:
        labels = (
            f"{base_path.parent.name}/{base_path.stem}",
            f"{head_path.parent.name}/{head_path.stem}",
        )
    if labels[0] == labels[1] or not all(labels):
        return "base", "head"
    return labels


def diff_ledgers(
    base: Ledger,
    head: Ledger,
    *,
    base_label: str | None = None,
    head_label: str | None = None,
    sizing: UpgradeContext | None = None,
) -> LedgerDiff:
    """Compare two ledgers (head - base): rows, groups, checkpoints, intervals, pool, config;
    with `sizing`, also why KV tokens per rank changed (`upgrade`)."""
    default_base, default_head = default_labels(base, head)
    base_label = base_label or default_base
    head_label = head_label or default_head
    rows = [_row_diff(b, h) for b, h in _matched(base.rows, head.rows, lambda r: r.id)]
    partition = [r for r in rows if r.in_partition]
    present_groups = [g for g in RowGroup if any(r.group is g for r in partition)]
    groups = [
        _group_diff(g.value, group_label(g), [r for r in partition if r.group is g])
        for g in present_groups
    ]
    total = _group_diff("TOTAL", "TOTAL", partition)
    checkpoints = [
        _checkpoint_diff(b, h)
        for b, h in _matched(base.checkpoints, head.checkpoints, lambda c: c.id)
    ]
    intervals = [
        _interval_diff(b, h)
        for b, h in _matched(base.intervals, head.intervals, lambda i: (i.from_id, i.to_id))
    ]
    summary, fields = _summary_sides(base.summary, head.summary)
    counts = {status.value: sum(1 for r in rows if r.status is status) for status in DiffStatus}
    mover_group, mover_row = _biggest_mover(groups, partition)
    return LedgerDiff(
        inputs=DiffInputs(base=_input(base, base_label), head=_input(head, head_label)),
        rows=rows,
        groups=groups,
        total=total,
        checkpoints=checkpoints,
        intervals=intervals,
        summary=summary,
        summary_fields=fields,
        state_pool=_state_pool_analysis(rows, base, head, fields),
        parameters=_parameter_diffs(base, head, rows),
        coverage=CoverageDiff(base=_coverage(base), head=_coverage(head)),
        counts=counts,
        biggest_mover_group=mover_group,
        biggest_mover=mover_row,
        upgrade=None
        if (base.engine, head.engine) != ("sglang", "sglang")
        else explain_upgrade(base, head, rows, sizing or UpgradeContext()),
        engines=compare_engines(base, head),
    )


def _biggest_mover(
    groups: Sequence[GroupDiff], partition: Sequence[RowDiff]
) -> tuple[str | None, str | None]:
    """The moved group with the largest |Δ| (fixed-overhead groups first) and its top row.

    Only rows on both sides count: a row present on one side only is not comparable, so a
    startup that stopped before its CUDA graphs does not make "CUDA graphs" the biggest mover.
    """
    comparable: dict[str, int] = {}
    for row in partition:
        if row.status is DiffStatus.CHANGED:
            comparable[row.group.value] = comparable.get(row.group.value, 0) + (
                row.delta_bytes or 0
            )
    moved = [g for g in groups if g.status is DiffStatus.CHANGED and comparable.get(g.id)]
    fixed = [g for g in moved if g.id != RowGroup.STATE_POOL.value]
    candidates = fixed or moved
    if not candidates:
        return None, None
    group = max(candidates, key=lambda g: (abs(comparable[g.id]), g.id))
    shares = _contributions(
        r for r in partition if r.group.value == group.id and r.status is DiffStatus.CHANGED
    )
    return group.id, shares[0].id if shares else None


def sort_rows(rows: Iterable[RowDiff], key: SortKey = SortKey.DELTA) -> list[RowDiff]:
    """Rows in display order: by |Δ|, id, base or head value (unknown values last).

    In the value orders, informational rows (the load peak, "reclaimed vs a baseline") come after
    the partition rows: they are in no total, so they must not top a list read as "what moved".
    The id order stays plainly alphabetical, for looking rows up.
    """
    big = 1 << 62

    def order(row: RowDiff) -> tuple[bool, int, str]:
        informational = not row.in_partition
        if key is SortKey.DELTA:
            delta = -abs(row.delta_bytes) if row.delta_bytes is not None else big
            return (informational, delta, row.id)
        if key is SortKey.BASE:
            return (informational, -row.base_bytes if row.base_bytes is not None else big, row.id)
        if key is SortKey.HEAD:
            return (informational, -row.head_bytes if row.head_bytes is not None else big, row.id)
        return (False, 0, row.id)

    return sorted(rows, key=order)
