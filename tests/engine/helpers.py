"""Hand-built events and parsed logs for ledger-engine tests (no parser involved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memledger.engine import build_ledger
from memledger.formulas import Formula, parse_formulas
from memledger.model.events import Event, EventKind, ParamValue, ParsedLog, Startup
from memledger.model.ledger import Ledger, Row
from memledger.model.model_config import ModelDims
from memledger.units import GIB, Size, parse_size

PATH = "hand.log"

TEST_FORMULAS_FILE = Path(__file__).with_name("formulas.toml")
TEST_FORMULAS: list[Formula] = parse_formulas(
    TEST_FORMULAS_FILE.read_text(encoding="utf-8"), "tests/engine/formulas.toml"
)
"""The engine tests' fixed formula set (not the shipped one, which may change)."""


def gb(value: float, digits: int = 2) -> Size:
    """A size printed as SGLang prints GB (GiB) with `digits` decimals."""
    return parse_size(f"{value:.{digits}f}", "GB")


class Log:
    """Builds one startup's events line by line (each call is the next line)."""

    def __init__(self, rank: str = "TP0") -> None:
        self.rank = rank
        self.events: list[Event] = []
        self.line = 0

    def add(
        self,
        kind: EventKind,
        text: str = "",
        *,
        rank: str | None = None,
        values: dict[str, Any] | None = None,
        params: dict[str, ParamValue] | None = None,
        **sizes: float | Size,
    ) -> Event:
        self.line += 1
        event = Event(
            kind=kind,
            line=self.line,
            rank=self.rank if rank is None else rank,
            sizes={k: v if isinstance(v, Size) else gb(v) for k, v in sizes.items()},
            values=values or {},
            params=params,
            text=text or kind.value,
        )
        self.events.append(event)
        return event

    def parsed(
        self,
        *,
        server_args: dict[str, ParamValue] | None = None,
        outcome: str = "ready",
        outcome_line: int | None = None,
        outcome_text: str = "",
    ) -> ParsedLog:
        events = list(self.events)
        if server_args is not None:
            events.insert(
                0,
                Event(
                    kind=EventKind.SERVER_ARGS,
                    line=0,
                    rank="",
                    params=server_args,
                    values={"form": "dict"},  # as the parser types `server_args={...}`
                    text="server_args={...}",
                ),
            )
        startup = Startup(
            index=0,
            first_line=0,
            last_line=self.line,
            rank=self.rank,
            events=events,
            server_args=server_args or {},
            outcome=outcome,
            outcome_line=outcome_line,
            outcome_text=outcome_text,
        )
        return ParsedLog(path=PATH, n_lines=self.line, n_startups=1, selected=0, startup=startup)


def ledger_of(
    log: Log,
    *,
    formulas: list[Formula] | None = None,
    model: ModelDims | None = None,
    **parsed_options: Any,
) -> Ledger:
    return build_ledger(
        log.parsed(**parsed_options),
        formulas=TEST_FORMULAS if formulas is None else formulas,
        model_config=model,
    )


def row(ledger: Ledger, row_id: str) -> Row:
    found = ledger.row(row_id)
    assert found is not None, f"no row {row_id}; rows: {[r.id for r in ledger.rows]}"
    return found


def gib(byte_count: int | None) -> float:
    assert byte_count is not None
    return byte_count / GIB


def partition_sum(ledger: Ledger) -> int:
    return sum(r.bytes for r in ledger.rows if r.in_partition and r.bytes is not None)


def speculative_log(*, release: float = 0.0) -> Log:
    """A 0.5.2x-order startup: target load, draft load, pools, backend, graphs, summary.

    usable = 0.50 + 70.00 = 70.50; weights 40.00 (+ staging 1.00 in the load interval);
    draft 0.80; target pool: Mamba 3.00 + KV 20.00 + residual 0.30; draft KV 1.00;
    attention -> capture 0.20; graphs 2.00 (static 0.10, largest 1.50) + draft 0.40; headroom.
    """
    log = Log()
    log.add(EventKind.DIST_INIT_END, "Init torch distributed ends. mem usage=0.50 GB", usage=0.50)
    log.add(EventKind.LOAD_BEGIN, avail=70.00)
    log.add(EventKind.STAGING_POOL, values={"role": "target"}, total=1.00)
    log.add(EventKind.LOAD_END, values={"type": "FooForCausalLM"}, avail=29.00, usage=41.00)
    log.add(EventKind.LOAD_BEGIN, avail=29.00 + release)
    log.add(EventKind.LOAD_END, values={"type": "FooEagle3"}, avail=28.20 + release, usage=0.80)
    log.add(
        EventKind.MAMBA_ALLOCATED,
        values={"max_mamba_cache_size": 7},
        conv_state=1.00,
        ssm_state=2.00,
    )
    log.add(EventKind.KV_ALLOCATED, values={"tokens": 100000}, kv=20.00)
    log.add(EventKind.MEMORY_POOL_END, avail=4.90 + release)
    log.add(EventKind.KV_ALLOCATED, values={"tokens": 100000}, kv=1.00)
    log.add(EventKind.MEMORY_POOL_END, avail=3.90 + release)
    log.add(EventKind.ATTENTION_BACKEND_BEGIN, avail=3.90 + release)
    log.add(EventKind.ATTENTION_BACKEND_END, avail=3.90 + release)
    log.add(
        EventKind.CAPTURE_BEGIN,
        "Capture target verify CUDA graph begin.",
        values={"role": "target", "phase": "verify", "role_named": True},
        avail=3.70 + release,
    )
    log.add(EventKind.CAPTURE_PROGRESS, rank="", values={"bs": 8}, avail=3.60 + release)
    log.add(EventKind.CAPTURE_PROGRESS, rank="", values={"bs": 4}, avail=2.10 + release)
    log.add(EventKind.CAPTURE_PROGRESS, rank="", values={"bs": 1}, avail=1.90 + release)
    log.add(
        EventKind.CAPTURE_END,
        "Capture target verify CUDA graph end.",
        values={"role": "target", "phase": "verify", "role_named": True},
        avail=1.70 + release,
        usage=2.00,
    )
    log.add(
        EventKind.CAPTURE_BEGIN,
        "Capture draft decode CUDA graph begin.",
        values={"role": "draft", "phase": "decode", "role_named": True},
        avail=1.70 + release,
    )
    log.add(
        EventKind.CAPTURE_END,
        "Capture draft decode CUDA graph end.",
        values={"role": "draft", "phase": "decode", "role_named": True},
        avail=1.30 + release,
        usage=0.40,
    )
    log.add(
        EventKind.SUMMARY,
        values={"max_total_num_tokens": 100000, "max_running_requests": 7, "context_len": 4096},
        available_gpu_mem=1.25 + release,
    )
    return log


SPEC_ARGS: dict[str, ParamValue] = {
    "mem_fraction_static": 0.9,
    "speculative_algorithm": "EAGLE3",
    "speculative_num_draft_tokens": 4,
    "max_running_requests": 7,
    "context_length": 4096,
    "page_size": 1,
    "dp_size": 1,
    "tp_size": 1,
}


def carved_from(ledger: Ledger, key: str) -> int:
    """What the partition rows carve from one interval (`from->to`); a row carved from two
    intervals (resident weights and its release) counts only its part of this one."""
    total = 0
    for r in ledger.rows:
        if not r.in_partition or r.bytes is None:
            continue
        if r.interval_parts:
            total += r.interval_parts.get(key, 0)
        elif r.interval == key:
            total += r.bytes
    return total


def assert_intervals_add_up(ledger: Ledger) -> None:
    """Each interval's logged + named + unexplained row is exactly what rows carve from it."""
    for r in ledger.rows:
        if r.interval_parts:
            assert sum(r.interval_parts.values()) == r.bytes, r.id
            assert r.interval == next(iter(r.interval_parts)), r.id
    for interval in ledger.intervals:
        key = f"{interval.from_id}->{interval.to_id}"
        residual = ledger.row(f"unexplained.{interval.to_id}")
        unexplained = (residual.bytes or 0) if residual and residual.interval == key else 0
        assert carved_from(ledger, key) == (
            interval.logged_bytes + interval.named_bytes + unexplained
        ), key
