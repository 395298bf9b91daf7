"""vLLM's KV-cache arithmetic redone with a log's own numbers, release by release.

A pure function of one startup's facts (`memledger.input.vllm_facts`): each step applies one
rule of `memledger.vllm.sizing_rules` (its formula and wheel line) to the printed inputs and sets
the result beside what vLLM printed. A printed figure is matched when the recomputation lands
within the printing precision of its inputs, or within 0.5 %; otherwise the step says so. Where
the log does not hold what a step needs, the step is not made and the reason is given.

Bytes per KV block come from, in order: the model's dimensions (`--model-config`), the CPU swap
blocks (V0 sizes `# CPU blocks` as swap_space // block bytes, swap_space 4 GiB by default:
v0.6.4.post1 vllm/engine/arg_utils.py:119, vllm/worker/worker.py:227), or another startup of the
same log that printed both a KV budget and its token count.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from memledger.input.vllm_facts import Fact, fact_bytes
from memledger.vllm.sizing_rules import DEFAULT_BLOCK_SIZE, REDUNDANCY_BUFFER_BYTES, RULE

GIB = 1 << 30
MIB = 1 << 20
TOLERANCE = 0.005
"""A recomputed figure within 0.5 % of the printed one is a match (the issue's bar)."""
DEFAULT_SWAP_BYTES = 4 * GIB


@dataclass(frozen=True)
class Step:
    """One recomputed figure: the rule, the arithmetic with its numbers, and the verdict."""

    rule: str
    what: str
    arithmetic: str
    value: float
    unit: str
    """`bytes`, `blocks`, `tokens`, `x` (concurrency) or `fraction`."""
    logged: float | None = None
    logged_line: int | None = None
    slack: float = 0.0
    """How far the value may be from the logged one from printing precision alone."""
    note: str = ""

    @property
    def source(self) -> str:
        return RULE[self.rule].source

    @property
    def off(self) -> float | None:
        """Relative difference to the logged figure (None when nothing was logged)."""
        if self.logged is None:
            return None
        if self.logged == 0:
            return 0.0 if self.value == 0 else math.inf
        return (self.value - self.logged) / abs(self.logged)

    @property
    def matches(self) -> bool | None:
        if self.logged is None:
            return None
        if abs(self.value - self.logged) <= self.slack:
            return True
        off = self.off
        return off is not None and abs(off) <= TOLERANCE


@dataclass(frozen=True)
class VllmSizing:
    """Every step made for one startup, and why the others were not."""

    era: str
    """`V0` or `V1`."""
    release: str | None
    steps: list[Step] = field(default_factory=list)
    not_made: list[str] = field(default_factory=list)
    block_bytes: int | None = None
    block_bytes_from: str | None = None

    def step(self, rule: str) -> Step | None:
        return next((s for s in self.steps if s.rule == rule), None)


def _n(facts: Mapping[str, Fact], name: str) -> float | None:
    fact = facts.get(name)
    if fact is None or isinstance(fact.value, str):
        return None
    return float(fact.value)


def _line(facts: Mapping[str, Fact], name: str) -> int | None:
    fact = facts.get(name)
    return None if fact is None else fact.line


def gib(value: float) -> str:
    return f"{value / GIB:,.2f} GiB"


def release_at_least(release: str | None, first: str) -> bool | None:
    """Whether `release` is `first` or later (None: unknown release)."""
    if release is None:
        return None

    def key(text: str) -> tuple[int, ...]:
        parts = []
        for piece in text.split("+")[0].split(".")[:3]:
            digits = "".join(c for c in piece if c.isdigit())
            parts.append(int(digits) if digits else 0)
        return tuple(parts)

    return key(release) >= key(first)


def size_vllm(
    facts: Mapping[str, Fact],
    *,
    era: str,
    release: str | None,
    kv_bytes_per_token: int | None = None,
    calibration: tuple[int, int] | None = None,
) -> VllmSizing:
    """Redo the startup's KV sizing. `kv_bytes_per_token`: from the model's dimensions (all
    layers, this rank); `calibration`: (KV bytes, KV tokens) of another startup of the same
    model in the same log."""
    steps: list[Step] = []
    not_made: list[str] = []
    kv = _budget(facts, era, release, steps, not_made)
    exact = fact_bytes(facts, "kv_cache_memory_in_use_bytes")  # the 0.10 summary's exact KV bytes
    if exact is not None:
        kv = exact
    block_size = DEFAULT_BLOCK_SIZE
    block_bytes, block_from = _block_bytes(facts, block_size, kv_bytes_per_token, calibration)
    _blocks_and_tokens(facts, era, kv, block_size, block_bytes, block_from, steps, not_made)
    _max_len(facts, steps)
    _suggestion(facts, release, steps)
    return VllmSizing(era, release, steps, not_made, block_bytes, block_from)


def _budget(
    facts: Mapping[str, Fact],
    era: str,
    release: str | None,
    steps: list[Step],
    not_made: list[str],
) -> tuple[int, int] | None:
    """The usable budget and the KV bytes vLLM derived from it; returns the KV (bytes, ±)."""
    total, util = fact_bytes(facts, "total_gpu_gib"), _n(facts, "gpu_memory_utilization")
    usable = fact_bytes(facts, "usable_gib") or fact_bytes(facts, "requested_gib")
    if total is not None and util is not None:
        slack = total[1] * util + 0.005 * total[0]  # util printed with 2 decimals
        step = Step(
            "usable",
            "budget (total x gpu_memory_utilization)",
            f"{gib(total[0])} x {util:g}",
            total[0] * util,
            "bytes",
            None if usable is None else usable[0],
            _line(facts, "usable_gib") or _line(facts, "requested_gib"),
            slack + (0 if usable is None else usable[1]),
        )
        steps.append(step)
        if usable is None:
            usable = (round(total[0] * util), round(slack))
    logged_kv = fact_bytes(facts, "kv_cache_gib")
    weights, non_torch = fact_bytes(facts, "weights_gib"), fact_bytes(facts, "non_torch_gib")
    activation = fact_bytes(facts, "activation_peak_gib")
    peak = fact_bytes(facts, "peak_torch_memory_gib")
    consumed = fact_bytes(facts, "consumed_gib")
    if "initial_free_gib" in facts:  # kv_cache_memory_bytes set: profiling skipped
        not_made.append(
            "KV budget: set by kv_cache_memory_bytes (rule kv_bytes_given, "
            f"{RULE['kv_bytes_given'].source}): no arithmetic to redo"
        )
        return logged_kv
    if usable is None:
        if logged_kv is None:
            not_made.append("KV budget: the log prints neither the budget nor the KV memory")
        else:
            not_made.append(
                "KV budget: the log prints the KV memory but not the budget it was cut from "
                "(total GPU memory x gpu_memory_utilization)"
            )
        return logged_kv
    if peak is not None and non_torch is not None:
        value = usable[0] - peak[0] - non_torch[0]
        arith = f"{gib(usable[0])} - peak {gib(peak[0])} - non-torch {gib(non_torch[0])}"
        rule, slack = "budget_peak", usable[1] + peak[1] + non_torch[1]
    elif consumed is not None and activation is not None:  # the 0.21+ summary
        value = usable[0] - consumed[0] - activation[0]
        arith = (
            f"{gib(usable[0])} - consumed (weights + non-torch) {gib(consumed[0])} - activation "
            f"with the CUDA-graph estimate {gib(activation[0])}"
        )
        rule, slack = "budget_graph", usable[1] + consumed[1] + activation[1]
    elif weights is not None and non_torch is not None and activation is not None:
        value = usable[0] - weights[0] - non_torch[0] - activation[0]
        arith = (
            f"{gib(usable[0])} - weights {gib(weights[0])} - non-torch {gib(non_torch[0])} - "
            f"activation {gib(activation[0])}"
        )
        rule = "budget_v0" if era == "V0" else "budget_v1"
        slack = usable[1] + weights[1] + non_torch[1] + activation[1]
    else:
        missing = [
            n
            for n, v in (
                ("weights", weights),
                ("non-torch", non_torch),
                ("activation peak", activation),
            )
            if v is None
        ]
        not_made.append(
            f"KV budget: the log prints no {', no '.join(missing)} figure (V1 prints them only "
            "at DEBUG level, or in the post-capture summary since 0.10)"
        )
        return logged_kv
    steps.append(
        Step(
            rule,
            "KV cache memory",
            arith,
            value,
            "bytes",
            None if logged_kv is None else logged_kv[0],
            _line(facts, "kv_cache_gib"),
            slack + (0 if logged_kv is None else logged_kv[1]),
        )
    )
    return logged_kv or (round(value), round(slack))


def _block_bytes(
    facts: Mapping[str, Fact],
    block_size: int,
    per_token: int | None,
    calibration: tuple[int, int] | None,
) -> tuple[int | None, str | None]:
    if per_token is not None:
        return per_token * block_size, "the model's dimensions (--model-config)"
    cpu = _n(facts, "cpu_blocks")
    if cpu:
        swap = DEFAULT_SWAP_BYTES
        return (
            swap // int(cpu),
            f"the CPU swap blocks: 4 GiB default swap_space / {int(cpu):,} CPU blocks",
        )
    if calibration is not None and calibration[1] > 0:
        kv_bytes, tokens = calibration
        return (
            round(kv_bytes * block_size / tokens),
            "another startup of this log (its KV memory / its KV tokens)",
        )
    return None, None


def _blocks_and_tokens(
    facts: Mapping[str, Fact],
    era: str,
    kv: tuple[int, int] | None,
    block_size: int,
    block_bytes: int | None,
    block_from: str | None,
    steps: list[Step],
    not_made: list[str],
) -> None:
    blocks = _n(facts, "gpu_blocks") or _n(facts, "num_gpu_blocks")
    tokens = _n(facts, "kv_tokens")
    max_len = _n(facts, "max_model_len")
    if kv is not None and block_bytes:
        predicted_blocks = max(kv[0], 0) // block_bytes
        low = max(kv[0] - kv[1], 0) // block_bytes
        step_rule = "blocks_v0" if era == "V0" else "blocks_v1"
        if blocks is not None or tokens is None:
            steps.append(
                Step(
                    step_rule,
                    "GPU blocks",
                    f"{gib(kv[0])} / {block_bytes:,} B per block (from {block_from})",
                    predicted_blocks,
                    "blocks",
                    blocks,
                    _line(facts, "gpu_blocks"),
                    predicted_blocks - low + 1,
                )
            )
        if tokens is not None:
            steps.append(
                Step(
                    "tokens",
                    "KV tokens",
                    f"{predicted_blocks:,} blocks x {block_size}",
                    predicted_blocks * block_size,
                    "tokens",
                    tokens,
                    _line(facts, "kv_tokens"),
                    (predicted_blocks - low + 1) * block_size,
                )
            )
    elif blocks is not None or tokens is not None:
        not_made.append(
            "KV blocks from bytes: no bytes per block (no --model-config, no CPU swap blocks, no "
            "other startup of the same model in this log)"
            if kv is not None
            else "KV blocks from bytes: the log prints no KV memory figure"
        )
    if blocks is not None and tokens is not None:
        steps.append(
            Step(
                "tokens",
                "KV tokens from the logged blocks",
                f"{int(blocks):,} x {block_size}",
                blocks * block_size,
                "tokens",
                tokens,
                _line(facts, "kv_tokens"),
            )
        )
    concurrency = _n(facts, "max_concurrency")
    have = tokens if tokens is not None else (None if blocks is None else blocks * block_size)
    if have is not None and max_len and concurrency is not None:
        rule = "concurrency_v0" if era == "V0" else "concurrency_v1"
        value = have / max_len
        if era != "V0":
            value = (have // block_size) / math.ceil(max_len / block_size)
        steps.append(
            Step(
                rule,
                "maximum concurrency",
                f"{int(have):,} tokens / {int(max_len):,}",
                value,
                "x",
                concurrency,
                _line(facts, "max_concurrency"),
                0.005,
            )
        )


def _max_len(facts: Mapping[str, Fact], steps: list[Step]) -> None:
    """The max-seq-len errors: V0's token bound, V1's estimated maximum length."""
    blocks, limit = _n(facts, "gpu_blocks"), _n(facts, "kv_tokens")
    needed, available = fact_bytes(facts, "kv_needed_gib"), fact_bytes(facts, "kv_cache_gib")
    max_len, estimate = _n(facts, "max_model_len"), _n(facts, "estimated_max_model_len")
    if needed is not None and available is not None and max_len and needed[0] > 0:
        value = max_len * available[0] / needed[0]
        rel = available[1] / max(available[0], 1) + needed[1] / needed[0]
        steps.append(
            Step(
                "max_len_v1",
                "estimated maximum model length",
                f"{int(max_len):,} x {gib(available[0])} available / {gib(needed[0])} needed",
                value,
                "tokens",
                estimate,
                _line(facts, "estimated_max_model_len"),
                value * rel + DEFAULT_BLOCK_SIZE,
            )
        )
    if blocks is not None and limit is not None and "kv_needed_gib" not in facts:
        steps.append(
            Step(
                "max_len_v0",
                "tokens the KV cache holds (V0 bound)",
                f"{int(blocks):,} blocks x {DEFAULT_BLOCK_SIZE}",
                blocks * DEFAULT_BLOCK_SIZE,
                "tokens",
                limit,
                _line(facts, "kv_tokens"),
            )
        )


def _suggestion(facts: Mapping[str, Fact], release: str | None, steps: list[Step]) -> None:
    """vLLM's `--kv-cache-memory=` suggestion, recomputed from the same line's figures."""
    suggested = _n(facts, "suggested_kv_cache_memory_bytes")
    requested = fact_bytes(facts, "requested_gib")
    if suggested is None or requested is None:
        return
    graph = fact_bytes(facts, "graph_gib")
    activation = fact_bytes(facts, "activation_peak_gib")
    consumed = fact_bytes(facts, "consumed_gib")
    weights = fact_bytes(facts, "weights_gib_summary")
    non_torch = fact_bytes(facts, "non_torch_gib")
    if consumed is None and weights is not None and non_torch is not None:
        consumed = (weights[0] + non_torch[0], weights[1] + non_torch[1])
    if None in (graph, activation, consumed):
        return
    assert graph is not None and activation is not None and consumed is not None
    value = requested[0] - consumed[0] - activation[0] - graph[0] - REDUNDANCY_BUFFER_BYTES
    twice = release_at_least(release, "0.21.0") is True or "consumed_gib" in facts
    steps.append(
        Step(
            "suggestion_graph_twice" if twice else "suggestion",
            "vLLM's --kv-cache-memory suggestion (fit the requested memory)",
            f"{gib(requested[0])} - {gib(consumed[0])} - activation {gib(activation[0])} - "
            f"graphs {gib(graph[0])} - 150 MiB",
            value,
            "bytes",
            suggested,
            _line(facts, "suggested_kv_cache_memory_bytes"),
            requested[1] + consumed[1] + activation[1] + graph[1],
        )
    )
