"""The vLLM branch of the one flow (`memledger.app`): an opened input that is a vLLM log is
read, sized, accounted and diagnosed here; everything else goes on down SGLang's path.

`is_vllm(log)` decides from the sniffed head (`memledger.input.engine_detect`); a path whose
head is inconclusive and in which SGLang's parser found nothing is read again whole
(`vllm_after_sglang_found_nothing`). `load_vllm` is the whole vLLM pipeline for one startup:
reader -> facts -> sizing -> ledger -> diagnosis, each a pure step of the one before.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memledger.errors import InputError
from memledger.input.engine_detect import VLLM, detect_engine
from memledger.input.reader import ByteSource, OpenedLog, decode_line, open_log
from memledger.input.vllm_reader import MAX_LINE_CHARS, Startup, VllmLog, read_vllm
from memledger.model.ledger import Ledger

if TYPE_CHECKING:  # the vLLM pipeline's own modules are imported when a vLLM log is read
    from memledger.app.options import LoadOptions
    from memledger.diagnosis.model import Diagnosis
    from memledger.input.vllm_facts import Fact
    from memledger.model.events import ParsedLog
    from memledger.model.model_config import ModelDims
    from memledger.sizing.vllm import VllmSizing

CHUNK = 1 << 20
NEITHER = "and no vLLM log lines either (neither engine's line shapes)"
"""Appended to SGLang's 'no SGLang log lines found' when the input is no vLLM log either."""


@dataclass(frozen=True)
class VllmRun:
    """One vLLM startup, every step of the pipeline."""

    log: VllmLog
    index: int
    startup: Startup
    facts: dict[str, Fact]
    sizing: VllmSizing
    ledger: Ledger
    diagnosis: Diagnosis


def _lines(stream: ByteSource) -> Iterator[str]:
    """Physical lines of a byte stream, each cut at MAX_LINE_CHARS (memory stays bounded)."""
    rest = b""
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        rest += chunk
        parts = rest.split(b"\n")
        rest = parts.pop()
        if len(rest) > 4 * MAX_LINE_CHARS:  # a line without an end: keep its start only
            rest = rest[: 4 * MAX_LINE_CHARS]
        for raw in parts:
            yield decode_line(raw[: 4 * MAX_LINE_CHARS].rstrip(b"\r"))
    if rest:
        yield decode_line(rest.rstrip(b"\r"))


def is_vllm(log: OpenedLog) -> bool:
    """Whether the head of an opened input is a vLLM log's."""
    head = log.head.decode("utf-8", "replace").splitlines()
    return detect_engine(head).engine == VLLM


def read_vllm_log(log: OpenedLog, label: str) -> VllmLog:
    """Every reading of an opened vLLM log."""
    return read_vllm(_lines(log.stream), label)


def vllm_after_sglang_found_nothing(source: object, label: str, error: InputError) -> VllmLog:
    """SGLang's parser found no line: a path is read again whole for vLLM's lines; the error is
    raised again (saying neither engine's) when there are none, or for a stream."""
    if not isinstance(source, str | os.PathLike) or os.fspath(source) == "-":
        raise InputError(f"{error.message} {NEITHER}", path=error.path) from None
    with open_log(source) as reopened:
        detection = detect_engine(_lines(reopened.stream))
    if detection.engine != VLLM:
        raise InputError(f"{error.message} {NEITHER}", path=error.path) from None
    with open_log(source) as reopened:
        return read_vllm_log(reopened, label)


def kv_bytes_per_token(model: ModelDims | None, tp: int) -> int | None:
    """KV bytes per token on one rank of full attention: 2 x layers x kv_heads/tp x head_dim x
    dtype bytes (v0.6.4.post1 vllm/worker/cache_engine.py:101-119)."""
    if model is None:
        return None
    layers, heads = model.num_hidden_layers, model.num_key_value_heads
    head_dim = model.head_dim
    if head_dim is None and model.hidden_size and model.num_attention_heads:
        head_dim = model.hidden_size // model.num_attention_heads
    dtype = model.dtype_bytes
    if None in (layers, heads, head_dim, dtype) or model.kv_lora_rank:
        return None
    assert layers is not None and heads is not None and head_dim is not None and dtype
    return int(2 * layers * max(heads // max(tp, 1), 1) * head_dim * dtype)


def era_of(startup: Startup, log: VllmLog) -> str:
    """`V0` or `V1`: the generation of the engine whose wordings the startup holds."""
    if (
        log.version is not None
        and log.version.startswith("0.")
        and "V1 LLM" in " ".join(r.text for r in startup.of("config"))
    ):
        return "V1"
    return "V0" if any(r.engine == "v0" for r in startup.readings) else "V1"


def read_opened(
    source: object,
    log: OpenedLog,
    label: str,
    options: LoadOptions,
    parse_sglang: Callable[[], ParsedLog],
) -> ParsedLog | VllmRun:
    """An opened log read by the engine that wrote it: vLLM's pipeline when its head is
    vLLM's, else SGLang's parser (`parse_sglang`); a path in which SGLang's parser found nothing
    is looked at again whole for vLLM's lines."""
    if is_vllm(log):
        vllm = read_vllm_log(log, label)
    else:
        try:
            return parse_sglang()
        except InputError as exc:
            if "no SGLang log lines found" not in exc.message:
                raise
            vllm = vllm_after_sglang_found_nothing(source, label, exc)
    from memledger.model.model_config import load_model_config

    model = None if options.model_config is None else load_model_config(options.model_config)
    return load_vllm(vllm, startup=options.startup, rank=options.rank, model=model)


def load_vllm(
    log: VllmLog,
    *,
    startup: int | None = None,
    rank: str | None = None,
    model: ModelDims | None = None,
) -> VllmRun:
    """The whole vLLM pipeline for the selected startup (default the last)."""
    from memledger.diagnosis import brief
    from memledger.diagnosis.vllm import diagnose_vllm
    from memledger.engine.vllm import build_vllm_ledger
    from memledger.input.vllm_facts import select_startup, startup_facts
    from memledger.sizing.vllm import size_vllm

    if not any(s.readings for s in log.startups) and not log.serve_settings:
        raise InputError("a vLLM log with no memory line, failure text or setting", path=log.path)
    index, chosen = select_startup(log, startup)
    if rank is not None and rank not in {r.tag for r in chosen.readings}:
        from memledger.errors import SelectionError

        seen = sorted({r.tag or "rank 0" for r in chosen.readings})
        raise SelectionError(
            f"rank {rank!r} printed no line in startup {index}; ranks seen: {', '.join(seen)}",
            path=log.path,
        )
    facts = startup_facts(log, chosen, rank=rank)
    era = era_of(chosen, log)
    calibration = None
    for other_index, other in enumerate(log.startups):
        if other_index == index:
            continue
        other_facts = startup_facts(log, other, rank=rank)
        kv, tokens = other_facts.get("kv_cache_gib"), other_facts.get("kv_tokens")
        if kv is not None and kv.bytes and tokens is not None and isinstance(tokens.value, int):
            calibration = (kv.bytes, tokens.value)
            break
    tp_fact = facts.get("tp")
    tp = int(tp_fact.value) if tp_fact is not None and isinstance(tp_fact.value, int) else 1
    sizing = size_vllm(
        facts,
        era=era,
        release=log.version,
        kv_bytes_per_token=kv_bytes_per_token(model, tp),
        calibration=calibration,
    )
    ledger = build_vllm_ledger(log, index, chosen, facts, sizing)
    diagnosis = diagnose_vllm(log, chosen, facts, ledger, sizing)
    summary = brief(diagnosis)
    if summary is not None:
        ledger = replace(ledger, diagnosis=summary)
    return VllmRun(log, index, chosen, facts, sizing, ledger, diagnosis)
