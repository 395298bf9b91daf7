"""The sizing records: the knobs a prediction takes (`Settings`), the terms of its arithmetic
(`Term`), what SGLang's arithmetic gives (`Prediction`) and the verdict of one log
(`SizingResult`, the ledger's `sizing` key). Computed by `memledger.sizing`."""

from __future__ import annotations

from dataclasses import field

from memledger.record import field_names, record

CATALOGUE_NOTE = "model catalogue entry "
"""How `theoretical_note` begins when the model's dimensions are the model catalogue's (no
--model-config given)."""


@record
class Settings:
    """The knobs a what-if may change (None: not given, SGLang's default applies)."""

    mem_fraction_static: float | None = None
    max_running_requests: int | None = None
    disaggregation_decode_extra_slots: int | None = None
    context_length: int | None = None
    cuda_graph_max_bs: int | None = None
    kv_cache_dtype: str | None = None
    max_total_tokens: int | None = None
    page_size: int = 1
    gpu_memory_mib: int | None = None
    """GPU capacity (nvidia-smi MiB): lets SGLang's mem_fraction_static default be inferred."""


SETTING_NAMES: tuple[str, ...] = tuple(field_names(Settings))


@record
class Term:
    """One number of the arithmetic, with where it came from."""

    name: str
    value: int | float | str | None
    unit: str
    """`bytes`, `tokens`, `slots`, `rows`, `fraction`, `bytes/token`."""
    kind: str
    """`measured` (a log line), `given` (server_args), `modelled` (a rule), `inferred`."""
    source: str
    rule: str | None = None
    """The sizing_rules id the value follows (its citation is RULE[rule].source)."""


@record
class Prediction:
    """What SGLang's arithmetic gives for these inputs and settings."""

    tokens: int | None = None
    """max_total_num_tokens per rank (the full-attention pool for hybrid SWA models)."""
    tokens_low: int | None = None
    tokens_high: int | None = None
    """The range the printing precision of the inputs allows."""
    swa_tokens: int | None = None
    tokens_per_dp_group: int | None = None
    tokens_per_instance: int | None = None
    slack_bytes: int | None = None
    rest_bytes: int | None = None
    kv_budget_bytes: int | None = None
    state_bytes: int | None = None
    """Mamba/linear-attention state taken out of the budget before the KV pool."""
    mamba_slots: int | None = None
    per_slot_bytes: int | None = None
    cell_bytes: float | None = None
    kv_bytes: int | None = None
    max_num_reqs: int | None = None
    req_to_token_rows: int | None = None
    req_to_token_cols: int | None = None
    req_to_token_bytes: int | None = None
    terms: list[Term] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing: str | None = None
    """Why there is no token prediction (None when there is one)."""


@record
class SizingResult:
    """`ledger --format json` key `sizing` (the first six keys are the contract)."""

    predicted_max_total_num_tokens: int | None
    logged_max_total_num_tokens: int | None
    min_mem_fraction_static: float | None
    """1 - A/P: below it the weights leave nothing for the KV pool (SGLang's own refusal)."""
    slack_bytes: int | None
    """P x (1 - mem_fraction_static): what everything sized after the KV pool must fit in."""
    bytes_per_token: float | None
    """Bytes per KV token as this log's KV lines show them (cell size)."""
    mismatch: str | None
    """None, or one sentence: why there is no prediction or why it misses."""
    predicted_range: list[int] | None = None
    """[low, high] the printing precision of P, A and the KV line allows."""
    logged_source: str = ""
    theoretical_bytes_per_token: int | None = None
    theoretical_note: str = ""
    implied_mem_fraction_static: float | None = None
    """The mfs the logged pools imply: 1 - (A - pools) / P (when server_args does not say)."""
    fitted_mem_fraction_static: float | None = None
    """The mfs under which SGLang's arithmetic gives the logged token count (only computed
    when the log does not give mem_fraction_static)."""
    slack_used_bytes: int | None = None
    """Allocated after the weights, beyond the state pools: A - last free reading - pools."""
    free_last_bytes: int | None = None
    logged_req_to_token_rows: int | None = None
    """The request table's rows by SGLang's rule from the logged token count (the predicted
    count's table is `prediction.req_to_token_rows`)."""
    logged_req_to_token_cols: int | None = None
    logged_req_to_token_bytes: int | None = None
    version: str = "unknown"
    prediction: Prediction = field(default_factory=Prediction)
    settings: Settings = field(default_factory=Settings)
