"""The names formulas read: `args.*` (server_args), `model.*` (--model-config) and `log.*`.

Every `log.*` input is one `LogInput` entry below: where its value comes from, and the text a
formula's unknown row shows when the log does not give it. Entries are read in order (a later
one may use an earlier one's value). Adding an input is one entry here (and its docs line).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memledger.engine.audit import Audit
from memledger.engine.chain import Chain
from memledger.engine.roles import TARGET
from memledger.model.events import Event, EventKind
from memledger.model.ledger import LOG_PARAM_PREFIX
from memledger.model.model_config import ModelDims
from memledger.sglang.releases import known_within, within
from memledger.sglang.request_table import (
    decode_extra_slots,
    default_max_num_reqs,
    extra_columns,
    extra_columns_by_release,
    padding_rows,
    pool_requests,
)
from memledger.sglang.sizing_rules import RULE
from memledger.sglang.versions import (
    DEFAULT_REQUESTS,
    EXTRA_SLOTS,
    FLASHINFER_INDEX_BUFFER,
    LOGICAL_DCP_TOKENS,
    format_ceiling,
    format_version,
    holds,
    version_text,
)
from memledger.units import GIB, count_or, int_or


@dataclass
class Variables:
    """Formula inputs by dotted name, with the log line each came from."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, Event] = field(default_factory=dict)
    format_version: int = 0
    """A lower bound of the SGLang release the log's formats imply (0 = unknown)."""
    format_ceiling: int = 0
    """The first release the log's formats predate (an exclusive upper bound; 0 = unknown)."""
    model_source: str | None = None
    """Where the `model.*` values came from when it was not --model-config (the model
    catalogue's entry): shown beside every derived number that read one."""
    from_model: set[str] = field(default_factory=set)
    """`log.*` names whose value came from the model dims (context_len without a summary line)."""

    def log(self, name: str, default: Any = None) -> Any:
        return self.values.get(LOG_PARAM_PREFIX + name, default)


@dataclass(frozen=True)
class Reading:
    """What one input step sees: the chain, the lines it reads, the values found so far."""

    chain: Chain
    found: Variables
    audit: Audit
    args_event: Event | None
    summary: Event | None

    def summary_value(self, key: str) -> Any:
        return None if self.summary is None else self.summary.value(key)

    def first(self, kind: EventKind) -> Event | None:
        return next((e for e in self.chain.events if e.kind == kind), None)


Found = tuple[Any, Event | None] | None
"""A value (None = not given) and the line it came from."""


@dataclass(frozen=True)
class LogInput:
    """One `log.<name>` formula input."""

    name: str
    read: Callable[[Reading], Found]
    missing: str = "not in this log"
    """Why a formula that needs it is unknown when the log does not give it."""


_DP_TAG = re.compile(r"(?:^| )DP(\d+)(?: |$)")
"""A data-parallel worker's tag: SGLang's scheduler prefixes ` DP{dp_rank}` to every line of a
DP worker (v0.5.10 managers/scheduler.py:3535-3537; TP/EP/PP follow it)."""


def _dp_size(r: Reading) -> Found:
    """server_args' dp_size; without server_args, the DP workers the rank tags show (a fragment
    of a DP-attention server: complex/014 prints DP0-DP3), else 1."""
    given = count_or(r.chain.args.get("dp_size"), None)
    if given is not None or r.args_event is not None:
        return given or 1, r.args_event
    seen = {m.group(1) for info in r.chain.startup.ranks if (m := _DP_TAG.search(info.rank))}
    if len(seen) > 1:
        r.audit.note(
            f"dp_size {len(seen)} from the rank tags (DP{', DP'.join(sorted(seen, key=int))}): "
            "no server_args; the KV tokens per instance count these DP workers"
        )
        return len(seen), None
    return 1, None


_TP_TAG = re.compile(r"(?:^| )TP(\d+)(?: |$)")
"""A tensor-parallel rank's tag (` TP{tp_rank}`, the global TP rank under DP attention too)."""


def _tp_size(r: Reading) -> Found:
    """server_args' tp_size; without server_args, the TP ranks the rank tags show (a fragment
    that prints TP0-TP3 ran at least tp 4: a lower bound, as a fragment may show fewer ranks),
    else 1."""
    given = count_or(r.chain.args.get("tp_size"), None)
    if given is not None or r.args_event is not None:
        return given or 1, r.args_event
    seen = {int(m.group(1)) for info in r.chain.startup.ranks if (m := _TP_TAG.search(info.rank))}
    if seen and max(seen) > 0:
        r.audit.note(
            f"tp_size {max(seen) + 1} from the rank tags (TP0-TP{max(seen)}): no server_args; "
            "a fragment may show fewer ranks than ran"
        )
        return max(seen) + 1, None
    return 1, None


def _dcp_size(r: Reading) -> Found:
    args = r.chain.args
    size = (
        count_or(args.get("dcp_size"), None)
        or count_or(args.get("decode_context_parallel_size"), None)
        or 1
    )
    return size, r.args_event


def _mem_fraction_static(r: Reading) -> Found:
    mfs = r.chain.args.get("mem_fraction_static")
    return (mfs if isinstance(mfs, int | float) else None), r.args_event


def _context_len(r: Reading) -> Found:
    context_len = r.summary_value("context_len")
    if isinstance(context_len, int):
        return context_len, r.summary
    given = r.chain.args.get("context_length")
    if isinstance(given, int):
        return given, r.args_event
    model = count_or(r.found.values.get("model.max_position_embeddings"), None)
    if model is not None:
        # SGLang's context_len without --context-length: the model's max_position_embeddings
        # (model_config.get_context_length; rope-scaling factors are not applied here).
        r.audit.note(
            f"context_len {model} from the model config's max_position_embeddings "
            "(no summary line and no context_length in server_args)"
        )
        r.found.from_model.add(LOG_PARAM_PREFIX + "context_len")
        return model, None
    return None


def _default_requests(r: Reading) -> int | None:
    """SGLang's request count when --max-running-requests is not given (versions.DEFAULT_REQUESTS),
    for a log whose server_args say so and whose release and model the rule is known for."""
    args = r.chain.args
    if (
        r.args_event is None
        or args.get("max_running_requests") is not None
        or args.get("speculative_algorithm") is not None
        or r.first(EventKind.MAMBA_ALLOCATED) is not None
        or not holds(DEFAULT_REQUESTS, r.found.format_version)
    ):
        return None
    context_len, tokens = r.found.log("context_len"), _kv_tokens(r)
    if not isinstance(context_len, int) or context_len <= 0 or tokens is None:
        return None
    total = tokens[0]
    if not isinstance(total, int):
        return None
    halved = known_within(r.found.format_version, 0, RULE["max_num_reqs_half"].releases)
    requests = default_max_num_reqs(total, context_len, halved=halved)
    r.audit.note(
        f"max_running_requests {requests}: SGLang's default ({DEFAULT_REQUESTS.what}) with "
        f"T={total} and context_len {context_len}: no summary line"
    )
    return requests


def _max_running_requests(r: Reading) -> Found:
    """The summary's per-DP value, else server_args' (divided by dp_size under DP attention)."""
    mrr = r.summary_value("max_running_requests")
    if isinstance(mrr, int):
        return mrr, r.summary
    user = count_or(r.chain.args.get("max_running_requests"), None)
    if user is None:
        default = _default_requests(r)
        return None if default is None else (default, r.args_event)
    dp_size = r.found.log("dp_size", 1)
    per_dp = max(1, user // dp_size) if r.chain.args.get("enable_dp_attention") else user
    if r.summary is None:
        r.audit.note(
            "max_running_requests from server_args"
            + (f" ({user} / dp_size {dp_size})" if per_dp != user else "")
            + ": no summary line"
        )
    return per_dp, r.args_event


def _max_running_requests_global(r: Reading) -> Found:
    """The whole server's --max-running-requests (what releases < 0.5.10 sized req_to_token by)."""
    user = count_or(r.chain.args.get("max_running_requests"), None)
    if user is not None:
        return user, r.args_event
    if r.summary is None and r.chain.args.get("max_running_requests") is None:
        # SGLang's own default is per rank: never multiplied by dp_size.
        per_rank = r.found.log("max_running_requests")
        return None if per_rank is None else (per_rank, r.args_event)
    per_dp = r.found.log("max_running_requests")
    if not isinstance(per_dp, int):
        return None
    dp = r.found.log("dp_size", 1) if r.chain.args.get("enable_dp_attention") else 1
    return per_dp * dp, r.found.sources.get(LOG_PARAM_PREFIX + "max_running_requests")


def _table_requests(r: Reading) -> int | None:
    """The request count the req_to_token pool was sized by, at this log's release."""
    found = r.found
    per_dp, whole = found.log("max_running_requests"), found.log("max_running_requests_global")
    if not isinstance(per_dp, int) or not isinstance(whole, int):
        return None
    return pool_requests(found.format_version, found.format_ceiling, per_dp, whole)


def _extra_slots(r: Reading) -> Found:
    """PD decode's pre-allocated request slots (0 on other servers)."""
    args = r.chain.args
    if args.get("disaggregation_mode") != "decode":
        return 0, r.args_event
    given = int_or(args.get("disaggregation_decode_extra_slots"), None)
    if given is not None:
        return decode_extra_slots(0, given), r.args_event
    reqs = _table_requests(r)
    if reqs is None:
        return None
    extra = decode_extra_slots(reqs, None)
    r.audit.note(
        f"PD decode pre-allocated slots not in server_args: assumed {extra} "
        f"({EXTRA_SLOTS.what}, the rule before {EXTRA_SLOTS.replaced_in})"
    )
    return extra, r.args_event


def _req_padding(r: Reading) -> Found:
    return padding_rows(r.found.format_version), None


def _slots(r: Reading) -> Found:
    """The req_to_token rows: requests (global or per DP by release) + extra + padding row."""
    reqs, extra = _table_requests(r), r.found.log("extra_slots")
    if reqs is None or extra is None:
        return None
    rows = reqs + extra + r.found.log("req_padding", 0)
    return rows, r.found.sources.get(LOG_PARAM_PREFIX + "max_running_requests")


def _req_extra_cols(r: Reading) -> Found:
    """The req_to_token columns beyond context_len at this log's release (sglang.request_table)."""
    dcp = r.found.log("dcp_size", 1)
    found = r.found
    by_release = extra_columns_by_release(
        found.format_version, found.format_ceiling, r.chain.args, dcp
    )
    if len(by_release) > 1:
        # the formats cannot tell the releases apart and their column rules differ: say so
        shown = ", ".join(f"{cols} at {version_text(code)}" for code, cols in by_release.items())
        r.audit.note(
            f"req_to_token columns beyond context_len differ across the log's releases "
            f"{version_text(found.format_version)} - {version_text(found.format_ceiling - 1)} "
            f"({shown}; rule sglang/request_table.py extra_columns): the lower bound applied"
        )
    return extra_columns(found.format_version, r.chain.args, dcp), r.args_event


def _kv_tokens(r: Reading) -> Found:
    kv_event = _target_kv_event(r.chain)
    tokens = kv_event.value("tokens") if kv_event else None
    if isinstance(tokens, int):
        return tokens, kv_event
    total = r.summary_value("max_total_num_tokens")
    if not isinstance(total, int):
        return None
    dcp = r.found.log("dcp_size", 1)
    if dcp > 1 and holds(LOGICAL_DCP_TOKENS, r.found.format_version):
        # From 0.5.21 the summary prints the logical capacity (versions.LOGICAL_DCP_TOKENS).
        r.audit.note(
            f"KV tokens per rank {total // dcp:,}: from 0.5.21 the summary's max_total_num_tokens "
            f"({total:,}) is the logical capacity, the per-rank rows x dcp {dcp}"
        )
        return total // dcp, r.summary
    return total, r.summary


def _kv_line(r: Reading) -> Found:
    """1 when the log printed a `KV Cache is allocated` line (0.4.2+), else not given."""
    line = r.first(EventKind.KV_ALLOCATED)
    return None if line is None else (1, line)


_POOL_LINES = frozenset(
    {
        EventKind.KV_ALLOCATED,
        EventKind.KV_SKIPPED,
        EventKind.SWA_SPLIT,
        EventKind.SWA_POOL,
        EventKind.DSV4_CALC,
        EventKind.DSV4_POOL_SIZES,
        EventKind.DSV4_POOL_INIT,
        EventKind.POST_CAPTURE_KV,
    }
)


def _plain_kv_pool(r: Reading) -> Event | None:
    """The target's KV line when it is the target's only KV pool line (no SWA or DSV4 pool
    beside it; a hybrid's Mamba/SSM state pool is its own tensors): one KV pool of per-layer
    buffers, whose printed sizes are all of it."""
    lines = [
        event
        for span in r.chain.spans
        if span.region == TARGET
        for event in span.events
        if event.kind in _POOL_LINES
    ]
    if (
        len(lines) != 1
        or lines[0].kind != EventKind.KV_ALLOCATED
        or not lines[0].sizes
        or lines[0].value("va_upper_bound")
    ):
        return None
    return lines[0]


def _kv_pool_size(half_ulp: bool) -> Callable[[Reading], Found]:
    def read(r: Reading) -> Found:
        line = _plain_kv_pool(r)
        if line is None:
            return None
        sizes = line.sizes.values()
        return sum(s.half_ulp if half_ulp else s.bytes for s in sizes), line

    return read


def _mla_kv_line(r: Reading) -> Found:
    """1 when the target's KV line prints one `KV size` (an MLA pool), not K and V sizes."""
    line = _target_kv_event(r.chain)
    if line is None or "kv" not in line.sizes or "k" in line.sizes:
        return None
    return 1, line


def _swa_pool(r: Reading) -> Found:
    """1 when the log prints a sliding-window pool (an SWA split or SWAKVPool line)."""
    line = r.first(EventKind.SWA_SPLIT) or r.first(EventKind.SWA_POOL)
    return None if line is None else (1, line)


def _max_total_num_tokens(r: Reading) -> Found:
    total = r.summary_value("max_total_num_tokens")
    return (total, r.summary) if isinstance(total, int) else None


def _max_mamba_cache_size(r: Reading) -> Found:
    mamba = r.first(EventKind.MAMBA_ALLOCATED)
    if mamba is None or not isinstance(mamba.value("max_mamba_cache_size"), int):
        return None
    return mamba.value("max_mamba_cache_size"), mamba


def _slot_map(key: str) -> Callable[[Reading], Found]:
    def read(r: Reading) -> Found:
        slot_map = r.first(EventKind.DSPARK_SLOT_MAP)
        return None if slot_map is None else (slot_map.value(key), slot_map)

    return read


def _dcp_q_layers(r: Reading) -> Found:
    """The MLA layers --dcp-replicate-q-proj gathered, as the log says (0.5.17+ prints it)."""
    line = r.first(EventKind.DCP_Q_PREPARED)
    return None if line is None else (line.value("layers"), line)


def _env(name: str) -> Callable[[Reading], Found]:
    """An environment variable the launcher printed (`ENV_VAR NAME:value`, sglang.lines)."""

    def read(r: Reading) -> Found:
        line = next(
            (e for e in r.chain.events if e.kind == EventKind.ENV_VAR and name in e.values), None
        )
        return None if line is None else (line.value(name), line)

    return read


def _load_begin_avail(gib: bool) -> Callable[[Reading], Found]:
    def read(r: Reading) -> Found:
        points = r.chain.points
        if not points or not (
            points[0].event.kind == EventKind.LOAD_BEGIN or points[0].derived_text
        ):
            return None
        avail = points[0].avail.bytes
        return (round(avail / GIB, 2) if gib else avail), points[0].event

    return read


def _model_type(r: Reading) -> Found:
    """The target's model class as the load-end line prints it (`type=Qwen3ForCausalLM`)."""
    # The target loads first (a draft's load follows it: engine.roles).
    for event in r.chain.events:
        if event.kind == EventKind.LOAD_END and isinstance(event.value("type"), str):
            return event.value("type"), event
    return None


def _attention_backend(r: Reading) -> Found:
    """The attention backend the target runs: server_args' attention_backend, else the one SGLang
    says it picked (`Attention backend not set. Use X backend by default.`: before 0.5.x the
    printed server_args still say None)."""
    given = r.chain.args.get("attention_backend")
    if isinstance(given, str) and given:
        return given, r.args_event
    line = r.first(EventKind.ATTENTION_BACKEND_DEFAULT)
    backend = None if line is None else line.value("backend")
    return (backend, line) if isinstance(backend, str) else None


def _flashinfer_index_buffer(r: Reading) -> Found:
    """1 when the log's release pins a FlashInfer whose verify wrapper keeps a 64 MiB index
    buffer, 0 when it does not (sglang/versions.py FLASHINFER_INDEX_BUFFER); None when the
    formats leave the release open on both sides of the change."""
    found = r.found
    if found.format_version <= 0:
        return None
    ceiling = found.format_ceiling - 1 if found.format_ceiling > 0 else None
    inside = within(found.format_version, ceiling, FLASHINFER_INDEX_BUFFER.releases)
    return None if inside is None else (int(inside), None)


def _unified_memory(r: Reading) -> Found:
    """1 when nvidia-smi gave SGLang no memory total (the GB10 / unified-memory fallback line)."""
    line = r.first(EventKind.GPU_CAPACITY_FALLBACK)
    return None if line is None else (1, line)


def _format_version(r: Reading) -> Found:
    return format_version(r.chain.events), None


LOG_INPUTS: tuple[LogInput, ...] = (
    LogInput("format_version", _format_version),
    LogInput("dp_size", _dp_size),
    LogInput("tp_size", _tp_size),
    LogInput("dcp_size", _dcp_size),
    LogInput(
        "mem_fraction_static",
        _mem_fraction_static,
        "server_args does not give mem_fraction_static",
    ),
    LogInput("context_len", _context_len, "no summary line and no context_length in server_args"),
    LogInput(
        "max_running_requests",
        _max_running_requests,
        "no summary line and no max_running_requests in server_args",
    ),
    LogInput(
        "max_running_requests_global",
        _max_running_requests_global,
        "no summary line and no max_running_requests in server_args",
    ),
    LogInput("extra_slots", _extra_slots, "PD decode slots unknown"),
    LogInput("req_padding", _req_padding),
    LogInput("req_extra_cols", _req_extra_cols),
    LogInput(
        "slots",
        _slots,
        "max_running_requests unknown: no summary line and none in server_args; SGLang's "
        "default count needs context_len (--model-config gives max_position_embeddings)",
    ),
    LogInput("kv_tokens", _kv_tokens, "no KV #tokens and no max_total_num_tokens in the log"),
    LogInput("max_total_num_tokens", _max_total_num_tokens),
    LogInput(
        "kv_pool_bytes",
        _kv_pool_size(False),
        "no target KV line, or other KV pools (SWA, DSV4) beside it",
    ),
    LogInput(
        "kv_pool_half_ulp",
        _kv_pool_size(True),
        "no target KV line, or other KV pools (SWA, DSV4) beside it",
    ),
    LogInput("kv_line", _kv_line, "no `KV Cache is allocated` line (0.4.1 and older)"),
    LogInput("mla_kv_line", _mla_kv_line, "the target's KV line prints K and V sizes (not MLA)"),
    LogInput("swa_pool", _swa_pool, "no sliding-window pool line"),
    LogInput("max_mamba_cache_size", _max_mamba_cache_size),
    LogInput("model_type", _model_type, "no `type=` on the target's load-end line"),
    LogInput(
        "attention_backend",
        _attention_backend,
        "server_args give no attention_backend and the log has no `Use X backend by default` line",
    ),
    LogInput(
        "flashinfer_index_buffer",
        _flashinfer_index_buffer,
        "the log's formats leave its SGLang release open across 0.4.6 - 0.5.7, the releases "
        "whose pinned FlashInfer keeps the verify wrappers' 64 MiB index buffer",
    ),
    LogInput(
        "unified_memory",
        _unified_memory,
        "no `Failed to get GPU memory capacity from nvidia-smi` line",
    ),
    LogInput("dspark_slots_per_req", _slot_map("slots_per_req")),
    LogInput("dspark_multiplier", _slot_map("multiplier")),
    LogInput("dcp_q_layers", _dcp_q_layers),
    LogInput(
        "hccl_buffsize",
        _env("HCCL_BUFFSIZE"),
        "HCCL_BUFFSIZE is not in the log (no `ENV_VAR HCCL_BUFFSIZE:N` launcher line)",
    ),
    LogInput("load_begin_avail_bytes", _load_begin_avail(False), "no load-begin avail reading"),
    LogInput("load_begin_avail_gib", _load_begin_avail(True), "no load-begin avail reading"),
)
"""Every `log.*` name a formula may use, in the order they are read."""

_MISSING = {LOG_PARAM_PREFIX + entry.name: entry.missing for entry in LOG_INPUTS}


def collect(chain: Chain, model: ModelDims | None, audit: Audit) -> Variables:
    """`args.*`, `log.*` and `model.*` names for formulas, with the line each came from."""
    found = Variables(values={f"args.{key}": value for key, value in chain.args.items()})
    found.format_ceiling = format_ceiling(chain.events)
    args_event = next((e for e in chain.events if e.kind == EventKind.SERVER_ARGS), None)
    if args_event is not None:
        for key in chain.args:
            found.sources[f"args.{key}"] = args_event
    if model is not None:
        found.values.update(model.as_variables())
        if model.catalogue is not None:
            found.model_source = model.catalogue
            audit.note(
                f"model dims: the model {model.catalogue}; no --model-config was given (one "
                "would override it)"
            )
    reading = Reading(chain, found, audit, args_event, chain.summary_event())
    for entry in LOG_INPUTS:
        result = entry.read(reading)
        if result is None or result[0] is None:
            continue
        value, source = result
        found.values[LOG_PARAM_PREFIX + entry.name] = value
        if source is not None:
            found.sources[LOG_PARAM_PREFIX + entry.name] = source
        if entry.name == "format_version":
            found.format_version = value
    return found


def missing_reason(name: str, model: ModelDims | None) -> str:
    """Why a formula input is not known, for the formula's unknown row."""
    if name.startswith("model."):
        if model is not None and model.catalogue is not None:
            return f"needs model dims ({name}), which the model catalogue's entry lacks: pass " + (
                "--model-config config.json"
            )
        return f"needs model dims ({name}): pass --model-config config.json" + (
            "" if model is None else " with that key"
        )
    if name.startswith("args."):
        return f"needs {name[5:]}, which server_args does not give"
    explanation = _MISSING.get(name, "not in this log")
    return f"needs {name} ({explanation})"


def _target_kv_event(chain: Chain) -> Event | None:
    """The target's full-attention KV line: its #tokens is the per-rank capacity."""
    in_target = [
        event
        for span in chain.spans
        if span.region == TARGET
        for event in span.events
        if event.kind == EventKind.KV_ALLOCATED and isinstance(event.value("tokens"), int)
    ]
    candidates = in_target or [
        e
        for e in chain.events
        if e.kind == EventKind.KV_ALLOCATED and isinstance(e.value("tokens"), int)
    ]
    if not candidates:
        return None
    full = [e for e in candidates if str(e.value("label") or "").lower() == "full"]
    if full:
        return full[0]
    # Unlabelled SWA logs print the SWA pool first, then the full pool (sglang.versions.SWA_ORDER).
    swa = any(e.kind in (EventKind.SWA_POOL, EventKind.SWA_SPLIT) for e in chain.events)
    return candidates[-1] if swa else candidates[0]
