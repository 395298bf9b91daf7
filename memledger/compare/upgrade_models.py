"""The diff's `upgrade` key: why KV tokens per rank changed between two logs (pure records).

Present when the two logs' SGLang releases differ or their sizing server_args differ. Every
token figure is per rank, head - base; percentages are of base's logged tokens.
"""

from __future__ import annotations

from memledger.record import Field
from memledger.units import FrozenModel


class ReleaseSide(FrozenModel):
    """The SGLang release of one side: given by the user, or the range its line formats allow."""

    text: str
    """`0.5.10` or `0.5.3 .. 0.5.8` or `unknown`."""
    given: bool
    """True when --base-version / --head-version stated it (the formats only bound it)."""


class InputShare(FrozenModel):
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
    defaults: list[str] = Field(default_factory=list)
    """Ids of `memledger.sglang.default_changes.CHANGES` entries behind it."""
    source: str = ""
    """The log lines (base | head) the two values come from."""


class MovedRow(FrozenModel):
    """A ledger row sized before the KV pool that moved: it changed A (or P) and so the budget."""

    id: str
    label: str
    phase: str
    """`before_weights` (changes P) or `weights_load` (changes P - A, the load's take)."""
    delta_bytes: int
    tokens_equivalent: int | None
    """-delta / base's bytes per token: the tokens this row alone moves at base's cost."""


class CrossedDefault(FrozenModel):
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


class UpgradeExplanation(FrozenModel):
    """Why KV tokens per rank changed: inputs, their token shares, rows, crossed defaults."""

    available: bool
    """False when there is no attribution (the reason says why); the rest is still filled in."""
    reason: str | None = None
    base_release: ReleaseSide
    head_release: ReleaseSide
    releases_differ: bool | None
    """None when the format ranges overlap and no release was given."""
    server_args: list[str] = Field(default_factory=list)
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
    inputs: list[InputShare] = Field(default_factory=list)
    """Largest |tokens| first."""
    unexplained_tokens: int | None = None
    """delta_tokens - sum(inputs.tokens): the model's own misses on the two logs, named."""
    unexplained_pct: float | None = None
    rows_before_sizing: list[MovedRow] = Field(default_factory=list)
    defaults_crossed: list[CrossedDefault] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
