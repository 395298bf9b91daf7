"""What-if: the pools under other settings, anchored on the measured log.

Each figure is `measured + (model(new) - model(log's own settings))`: the model's own error on this
log cancels, so the log's own settings reproduce the log exactly, and a fork whose absolute sizing
the model misses still gets the effect of a change (marked as such).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields, replace
from typing import Any

from memledger.errors import ConfigError, NoSuchRowError
from memledger.model.sizing import SETTING_NAMES, Prediction, Settings, Term
from memledger.record import record
from memledger.sizing.inputs import SizingInputs
from memledger.sizing.model import predict
from memledger.sizing.settings import base_settings, dp_of
from memledger.units import MIB, count_or

# What each knob moves, for the notes on effects this model leaves out.
UNMODELLED: dict[str, str] = {
    "cuda_graph_max_bs": (
        "cuda_graph_max_bs changes CUDA-graph memory, which comes out of the slack after the KV "
        "pool is sized: not modelled (headroom shown without it)"
    ),
    "page_size": "page_size also changes attention-backend workspaces: not modelled",
    "context_length": (
        "context_length also changes the attention workspaces and the model's position buffers: "
        "not modelled"
    ),
}


@record
class WhatIfRow:
    """One figure: the log, the model under the log's settings and under the new ones."""

    name: str
    unit: str
    measured: int | float | None
    """What the log printed (None: the log does not print it)."""
    modelled_base: int | float | None
    modelled_new: int | float | None
    predicted: int | float | None
    """measured + (modelled_new - modelled_base); modelled_new where nothing was measured."""
    delta: int | float | None
    delta_pct: float | None
    low: int | float | None = None
    high: int | float | None = None
    """The ± range of `predicted` from the printing precision of the inputs."""
    kind: str = "modelled"
    """`anchored` (measured + modelled change) or `modelled` (no measured value to anchor on)."""


@record
class Solved:
    """`whatif --solve SETTING --for FIGURE=N`: the lowest SETTING that reaches N."""

    setting: str
    figure: str
    """The figure solved for, by SGLang's name (`max_total_num_tokens`: KV tokens per rank)."""
    target: int
    value: float | None
    """The lowest value (in 0.001 steps) that reaches the target; None: none below 1 does."""
    reached: int | None
    """The figure at `value` (anchored on the measured log, as the rows are)."""
    note: str


WHATIF_SCHEMA_VERSION = 1
"""Versions `memledger whatif --format json` like the other JSON outputs: fields may be added,
none removed or retyped without a new version."""


@record
class WhatIf:
    """The answer to `memledger whatif LOG --set NAME=VALUE ...`."""

    schema_version: int = WHATIF_SCHEMA_VERSION
    path: str
    version: str
    changes: dict[str, int | float | str | None]
    base: Settings
    new: Settings
    rows: list[WhatIfRow]
    arithmetic: list[Term]
    notes: list[str] = field(default_factory=list)
    missing: str | None = None
    """Why no prediction could be made (then rows holds what the log measured only)."""
    solved: Solved | None = None
    """Set by `--solve`: the value found, and the rows are the what-if at it."""

    def row(self, name: str) -> WhatIfRow | None:
        """The figure called `name` (e.g. `KV tokens per instance`), or None when the answer
        has none (`answer[name]` raises), as `Ledger.row` is."""
        return next((row for row in self.rows if row.name == name), None)

    def __getitem__(self, name: str) -> WhatIfRow:
        """The figure called `name`; a `NoSuchRowError` (a KeyError) naming the figures the
        answer has when it has none, as `ledger[row_id]` does."""
        found = self.row(name)
        if found is None:
            names = ", ".join(row.name for row in self.rows) or "(none)"
            raise NoSuchRowError(
                f"no row {name!r} in the what-if of {self.path}; its rows: {names}"
            )
        return found


_SETTING_TYPES = {f.name: f.type for f in fields(Settings)}
"""Each setting's annotation as written."""


def parse_setting(name: str, text: str | int | float | None) -> int | float | str | None:
    """A `--set` value for `name`, typed as Settings wants it; ConfigError when it does not fit."""
    if name not in SETTING_NAMES:
        raise ConfigError(f"unknown setting {name!r}; known: {', '.join(SETTING_NAMES)}")
    if text is None or (isinstance(text, str) and text.lower() in ("none", "null", "")):
        if name == "page_size":
            raise ConfigError("page_size cannot be unset")
        return None
    annotation = str(_SETTING_TYPES[name])
    try:
        if "float" in annotation:
            value = float(text)
            if not 0 < value < 1:
                raise ConfigError(f"{name} must be between 0 and 1, got {text}")
            return value
        if "int" in annotation:
            number = int(str(text))
            if number < 0 or number > 1 << 40:
                raise ConfigError(f"{name} out of range: {text}")
            if name == "page_size" and number < 1:
                raise ConfigError("page_size must be at least 1")
            return number
    except ValueError:
        raise ConfigError(f"{name} needs a number, got {text!r}") from None
    if len(str(text)) > MAX_SETTING_CHARS:  # a dtype name: every table and note echoes it
        raise ConfigError(f"{name}: at most {MAX_SETTING_CHARS} characters, got {len(str(text)):,}")
    return str(text)


MAX_SETTING_CHARS = 64
"""The longest text value of a `--set` (kv_cache_dtype names are a dozen characters)."""


def _row(
    name: str,
    unit: str,
    measured: int | float | None,
    base: int | float | None,
    new: int | float | None,
    low: int | float | None = None,
    high: int | float | None = None,
) -> WhatIfRow:
    if measured is not None and base is not None and new is not None:
        delta: int | float | None = new - base
        anchored = measured + (new - base)
        predicted: int | float | None = anchored
        kind = "anchored"
        shift = anchored - new
        low = None if low is None else low + shift
        high = None if high is None else high + shift
    else:
        predicted = new
        delta = None if base is None or new is None else new - base
        kind = "modelled"
    reference = measured if measured is not None else base
    pct = (
        round(delta / reference * 100, 3)
        if delta is not None and reference not in (None, 0)
        else None
    )
    return WhatIfRow(
        name=name,
        unit=unit,
        measured=measured,
        modelled_base=base,
        modelled_new=new,
        predicted=predicted,
        delta=delta,
        delta_pct=pct,
        low=low,
        high=high,
        kind=kind,
    )


def _rows(inputs: SizingInputs, pb: Prediction, pn: Prediction) -> list[WhatIfRow]:
    logged = inputs.logged_tokens
    dcp_n = count_or(inputs.knobs.get("dcp_size"), 1)
    dp_n = dp_of(inputs)
    rows = [
        _row(
            "KV tokens per rank",
            "tokens",
            logged,
            pb.tokens,
            pn.tokens,
            pn.tokens_low,
            pn.tokens_high,
        ),
        _row(
            "KV tokens per DP group",
            "tokens",
            None if logged is None else logged * dcp_n,
            pb.tokens_per_dp_group,
            pn.tokens_per_dp_group,
        ),
        _row(
            "KV tokens per instance",
            "tokens",
            None if logged is None else logged * dcp_n * dp_n,
            pb.tokens_per_instance,
            pn.tokens_per_instance,
        ),
    ]
    target_bytes = sum(p.bytes for p in inputs.target_kv) or None
    rows.append(_row("KV pool", "bytes", target_bytes, pb.kv_bytes, pn.kv_bytes))
    if pb.swa_tokens is not None or pn.swa_tokens is not None:
        rows.append(
            _row(
                "SWA tokens per rank", "tokens", inputs.swa_swa_tokens, pb.swa_tokens, pn.swa_tokens
            )
        )
    if inputs.mamba is not None:
        mamba = inputs.mamba
        state_logged = mamba.bytes + mamba.replay_bytes
        per_slot = pb.per_slot_bytes
        rows.append(_row("state slots (K)", "slots", mamba.slots, pb.mamba_slots, pn.mamba_slots))
        rows.append(_row("state per slot", "bytes", per_slot, per_slot, pn.per_slot_bytes))
        base_pool = (
            None if pb.mamba_slots is None or per_slot is None else (pb.mamba_slots + 1) * per_slot
        )
        new_pool = (
            None if pn.mamba_slots is None or per_slot is None else (pn.mamba_slots + 1) * per_slot
        )
        rows.append(_row("state pool", "bytes", state_logged, base_pool, new_pool))
    rows.append(
        _row("req_to_token table", "bytes", None, pb.req_to_token_bytes, pn.req_to_token_bytes)
    )
    rows.append(_row("slack P x (1 - mfs)", "bytes", None, pb.slack_bytes, pn.slack_bytes))
    free = inputs.free_last.bytes if inputs.free_last is not None else None
    if free is not None and pb.slack_bytes is not None and pn.slack_bytes is not None:
        table_delta = 0
        if pn.req_to_token_bytes is not None and pb.req_to_token_bytes is not None:
            table_delta = pn.req_to_token_bytes - pb.req_to_token_bytes
        rows.append(
            _row(
                "headroom (free at the end)",
                "bytes",
                free,
                free,
                free + (pn.slack_bytes - pb.slack_bytes) - table_delta,
            )
        )
    return rows


def _capped(rows: list[WhatIfRow], new: Settings, pn: Prediction) -> list[WhatIfRow]:
    """--max-total-tokens is a cap, not a change: an anchored figure above it is the cap."""
    cap = new.max_total_tokens
    if cap is None or pn.tokens is None:
        return rows
    cap = cap // new.page_size * new.page_size if new.page_size > 1 else cap
    per_rank = next((r for r in rows if r.name == "KV tokens per rank"), None)
    if per_rank is None or per_rank.predicted is None or per_rank.predicted <= cap:
        return rows
    scale = cap / per_rank.predicted
    fixed: list[WhatIfRow] = []
    for row in rows:
        if row.name.startswith("KV tokens") or row.name == "KV pool":
            assert row.predicted is not None
            value = round(row.predicted * scale)
            base = row.measured if row.measured is not None else row.modelled_base
            delta = None if base is None else value - base
            pct = None if delta is None or not base else round(delta / base * 100, 3)
            modelled = None if row.modelled_new is None else round(row.modelled_new * scale)
            row = replace(
                row,
                predicted=value,
                modelled_new=modelled,
                delta=delta,
                delta_pct=pct,
                low=None,
                high=None,
            )
        fixed.append(row)
    return fixed


def refuse_impossible_gpu(inputs: SizingInputs | None, gpu_mib: object) -> None:
    """A given GPU smaller than the free memory the log measured on it cannot be the log's GPU:
    sizing on it would be a true sum of a false figure (whatif --set, diff --gpu-memory-mib)."""
    free = None if inputs is None else inputs.load_begin
    if inputs is None or free is None or not isinstance(gpu_mib, int):
        return
    if free.bytes - free.half_ulp > gpu_mib * MIB:
        where = f"{inputs.path}:{free.line}" if free.line is not None else inputs.path
        raise ConfigError(
            f"gpu_memory_mib={gpu_mib:,} is less than the free memory the log measured before "
            f"the weights ({free.bytes / MIB:,.0f} MiB, {where}): not this log's GPU"
        )


def whatif(inputs: SizingInputs, changes: Mapping[str, int | float | str | None]) -> WhatIf:
    """The pools under `changes` (setting -> value), beside the measured log."""
    typed: dict[str, Any] = {name: parse_setting(name, value) for name, value in changes.items()}
    refuse_impossible_gpu(inputs, typed.get("gpu_memory_mib"))
    base = base_settings(inputs)
    new = replace(base, **typed)
    pb = predict(inputs, base)
    pn = predict(inputs, new)
    # the cap applies to the anchored figure: model the change without it, then cap
    uncapped = pn
    if new.max_total_tokens != base.max_total_tokens:
        uncapped = predict(inputs, replace(new, max_total_tokens=base.max_total_tokens))
    notes = list(dict.fromkeys(pn.notes))
    notes.extend(
        UNMODELLED[name]
        for name in typed
        if typed[name] != getattr(base, name) and name in UNMODELLED
    )
    if (
        "max_running_requests" in typed
        and inputs.mamba is None
        and pb.req_to_token_bytes == pn.req_to_token_bytes
    ):
        notes.append(
            "max_running_requests moves no pool of this log: no state slots, and the request "
            "table is sized without it"
        )
    if "gpu_memory_mib" in typed and base.mem_fraction_static is not None:
        notes.append(
            "gpu_memory_mib only matters when mem_fraction_static is not given; this log gives it"
        )
    if (pb.req_to_token_bytes is None) != (pn.req_to_token_bytes is None):
        notes.append(
            "the request table is known under one of the two settings only (context length or "
            "max_running_requests missing): its change is left out of the headroom"
        )
    if inputs.model_source is not None:
        notes.append(f"model dims: the model {inputs.model_source}; no --model-config was given")
    logged = inputs.logged_tokens
    if pb.tokens is not None and logged and abs(pb.tokens - logged) > 0.005 * logged:
        notes.insert(
            0,
            f"the model misses this log's own pool ({pb.tokens:,} vs {logged:,} tokens): the "
            "figures are the measured log plus the modelled change, not absolute predictions",
        )
    if pb.missing and not pn.missing:
        notes.insert(
            0,
            f"the log's own settings cannot be modelled ({pb.missing}): the figures are "
            "modelled, not anchored on the log",
        )
    missing = pn.missing
    return WhatIf(
        path=inputs.path,
        version=inputs.version.text,
        changes=dict(typed),
        base=base,
        new=new,
        rows=_capped(_rows(inputs, pb, uncapped), new, pn),
        arithmetic=pn.terms,
        notes=notes,
        missing=missing,
    )
