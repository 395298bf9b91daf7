"""The diff's `upgrade` key: why KV tokens per rank changed between two logs (pure records).

Present when the two logs' SGLang releases differ or their sizing server_args differ. Every
token figure is per rank, head - base; percentages are of base's logged tokens.
"""

from __future__ import annotations

from dataclasses import field

from memledger.record import record


@record
class ReleaseSide:
    """The SGLang release of one side: given by the user, or the range its line formats allow."""

    text: str
    """`0.5.10` or `0.5.3 .. 0.5.8` or `unknown`."""
    given: bool
    """True when --base-version / --head-version stated it (the formats only bound it)."""


@record
class InputShare:
    """One sizing input that differs, and its share of the token change."""

    id: str
    """`mem_fraction_static`, `free_before_weights`, `load_taken`, `bytes_per_token`,
    `state_pool`, `server_args` or `release_rules`."""
    label: str
    base: str
    head: str
    tokens: int
    """Its Shapley share of the modelled change (memledger.sizing.predict, with each of base's
    inputs replaced by head's in every order): the shares add up to the modelled change."""
    pct: float | None
    """tokens / base's logged tokens, in percent."""
    why: str
    """Where the difference comes from: a changed SGLang default, server_args, or a measurement."""
    defaults: list[str] = field(default_factory=list)
    """Ids of `memledger.sglang.default_changes.CHANGES` entries behind it."""
    source: str = ""
    """The log lines (base | head) the two values come from."""


@record
class MovedRow:
    """A ledger row sized before the KV pool that moved: it changed A (or P) and so the budget."""

    id: str
    label: str
    phase: str
    """`before_weights` (changes P) or `weights_load` (changes P - A, the load's take)."""
    delta_bytes: int
    tokens_equivalent: int | None
    """-delta / base's bytes per token: the tokens this row alone moves at base's cost."""


@record
class CrossedDefault:
    """A default change (memledger.sglang.default_changes) the upgrade crosses."""

    id: str
    setting: str
    title: str
    old: str
    new: str
    release: str
    old_source: str
    new_source: str
    effect: str
    applies: str = ""
    certain: bool
    """True when both releases are known to lie on either side of `release`; False when the
    format ranges leave it open."""


@record
class UpgradeExplanation:
    """Why KV tokens per rank changed: inputs, their token shares, rows, crossed defaults."""

    available: bool
    """False when there is no attribution (the reason says why); the rest is still filled in."""
    reason: str | None = None
    base_release: ReleaseSide
    head_release: ReleaseSide
    releases_differ: bool | None
    """None when the format ranges overlap and no release was given."""
    server_args: list[str] = field(default_factory=list)
    """Sizing server_args whose values differ (memledger.sizing.inputs.KNOBS)."""
    gpu_memory_mib: int | None = None
    base_tokens: int | None = None
    head_tokens: int | None = None
    """Logged max_total_num_tokens per rank."""
    delta_tokens: int | None = None
    delta_pct: float | None = None
    base_predicted: int | None = None
    head_predicted: int | None = None
    """SGLang's arithmetic on each log's own inputs (memledger.sizing.predict)."""
    inputs: list[InputShare] = field(default_factory=list)
    """Largest |tokens| first."""
    unexplained_tokens: int | None = None
    """delta_tokens - sum(inputs.tokens): the model's own misses on the two logs, named."""
    unexplained_pct: float | None = None
    rows_before_sizing: list[MovedRow] = field(default_factory=list)
    defaults_crossed: list[CrossedDefault] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


AGAINST_RELEASE_SCHEMA_VERSION = 1
"""Versions `memledger diff LOG --against-release X --format json`: fields may be added, none
removed or retyped without a new version."""


@record
class SettingAtRelease:
    """One default that sizes the pool, as this log ran it and as the other release sets it."""

    setting: str
    logged: str
    """This log's value (`-`: not printed)."""
    log_default: str | None
    """SGLang's default for this log at its own release (None: not known, e.g. no GPU size)."""
    other_default: str | None
    """SGLang's default for this log at the release compared against."""
    status: str
    """`default` (the log ran SGLang's default: the other release's default is used), `set`
    (given by the user or a launcher: kept), `unknown` (kept; the answer says why)."""
    used: str
    """The value the other release's prediction uses."""
    effect: str
    """How it reaches the pool (memledger.sglang.default_changes.Effect values)."""
    source: str
    note: str = ""


@record
class Candidate:
    """One default the other release may have had for this log, and the pool it gives."""

    label: str
    """What it holds for: a GPU capacity, and the post releases when they differ."""
    mem_fraction_static: float
    tokens: int


@record
class AgainstRelease:
    """`memledger diff LOG --against-release X`: this log's pool under release X's defaults.

    `predicted_tokens` is the log's max_total_num_tokens plus the modelled change (SGLang's
    arithmetic at X minus at the log's release, on this log's measured P and A), so the model's
    own miss on the log cancels; `low`/`high` add the printing precision and every candidate
    default (a GPU capacity range, post releases that differ)."""

    schema_version: int = AGAINST_RELEASE_SCHEMA_VERSION
    path: str
    log_release: ReleaseSide
    other_release: str
    direction: str
    """`upgrade` (the log runs the newer release), `downgrade`, or `same`."""
    gpu_memory_mib: int | None = None
    gpu_source: str = ""
    """`given`, or how the capacity was inferred (from P and the printed mem_fraction_static)."""
    logged_tokens: int | None = None
    predicted_tokens: int | None = None
    low: int | None = None
    high: int | None = None
    delta_tokens: int | None = None
    """logged - predicted: what the release change did to this log's pool."""
    delta_pct: float | None = None
    """delta_tokens / predicted_tokens, in percent."""
    candidates: list[Candidate] = field(default_factory=list)
    """When the other release's default is not one value (an inferred GPU capacity range, post
    releases that differ): each candidate; `predicted_tokens` is the first (the lowest GPU
    capacity), `low`/`high` span them all."""
    kind: str = "anchored"
    """`anchored` (logged + modelled change) or `modelled` (no logged tokens to anchor on)."""
    settings: list[SettingAtRelease] = field(default_factory=list)
    defaults_crossed: list[CrossedDefault] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing: str | None = None
    """Why there is no prediction (the settings and crossed defaults are still listed)."""
