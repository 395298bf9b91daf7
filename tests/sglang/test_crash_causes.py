"""The crash-cause table (memledger.sglang.failure_rules.CRASH_CAUSES): every cause against its own
example line, pasted alone and, for a standalone cause, quoted in the middle of a sentence the way
reporters quote an error."""

from __future__ import annotations

import re

import pytest

from memledger.input.error_texts import ErrorTextReader
from memledger.input.outcome import outcome_kind
from memledger.model.events import EventKind
from memledger.sglang.failure_rules import CRASH_CAUSES, PHASE_TEXT, CrashCause
from tests.conftest import diagnose_paste


def _reads_as(cause: CrashCause, paste: str) -> None:
    """The paste's diagnosis names the cause; a text that itself says it ran out of memory (SGLang
    guessing another rank's OOM) is an OOM of the cause's phase."""
    result = diagnose_paste(paste)
    if cause.finding_id in [str(f.id) for f in result.findings]:
        return
    stated = outcome_kind(cause.example)
    assert stated is not None and stated[0] is EventKind.OOM, paste
    assert result.outcome == "oom" and cause.phase is not None, paste
    assert result.phase == cause.phase and PHASE_TEXT[cause.phase] in result.verdict, paste


def _causes_read(text: str) -> list[object]:
    reader = ErrorTextReader()
    events = [*reader.feed(1, text, "", False), *reader.finish()]
    return [e.values.get("cause") for e in events if e.kind is EventKind.TRACEBACK]


@pytest.mark.parametrize("cause", CRASH_CAUSES, ids=[c.finding_id for c in CRASH_CAUSES])
def test_every_crash_cause_reads_its_example(cause: CrashCause) -> None:
    assert cause.example and cause.source and cause.fix
    assert not cause.standalone or cause.words, "a standalone text names its words"
    assert cause.pattern.search(cause.example) is not None, cause.example
    _reads_as(cause, cause.example + "\n")
    # quoted as reporters do, often without the exception's type (`...Error: `)
    said = re.sub(r"^[A-Za-z_][\w.]*(?:Error|Exception): ", "", cause.example)
    quoted = f'After the weights load it stops with "{said}" and exits.'
    if cause.standalone:
        assert _causes_read(quoted) == [cause.finding_id]
        _reads_as(cause, quoted + "\n")
    else:
        # without `standalone` only an exception line (at a line's start) or a traceback names
        # the cause: a quote in prose does not
        assert cause.finding_id not in _causes_read(quoted)


def test_triton_and_tpu_on_chip_limits_are_no_device_oom() -> None:
    # an on-chip resource per kernel block (Triton's threads, a TPU kernel's VMEM) is named as
    # the kernel limit it is, never as the device running out of memory
    for text in (
        "triton.runtime.errors.OutOfResources: out of resource: threads, Required: 2048, "
        "Hardware limit: 1024. Reducing block sizes or `num_stages` may help.",
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem "
        "while allocating on stack for %kv_cache_update.1",
    ):
        result = diagnose_paste(text + "\n")
        assert result.outcome == "crash", text
        assert "kernel_shared_memory" in [str(f.id) for f in result.findings], text


_WARNINGS = (
    "kv_pool_below_context",
    "deepgemm_warmup_budget",
    "dflash_graph_disabled",
    "multimodal_preprocess_cpu",
)
_READY_LOG = (
    "[2026-01-05 10:00:00 TP0] Load weight begin. avail mem=78.50 GB",
    "[2026-01-05 10:00:40 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
    "avail mem=62.40 GB, mem usage=16.10 GB.",
    "[2026-01-05 10:00:41 TP0] KV Cache is allocated. #tokens: 400000, K size: 24.41 GB, "
    "V size: 24.41 GB",
    "[2026-01-05 10:00:41 TP0] Memory pool end. avail mem=12.60 GB",
    "[2026-01-05 10:00:50 TP0] Capture cuda graph end. Time elapsed: 8.00 s. mem usage=0.90 GB. "
    "avail mem=11.70 GB.",
    "{warning}",
    "[2026-01-05 10:00:55] The server is fired up and ready to roll!",
)


@pytest.mark.parametrize("name", _WARNINGS)
def test_a_memory_warning_alone_says_what_it_is_and_in_a_ready_log_changes_nothing(
    name: str,
) -> None:
    # SGLang went on after each: pasted alone the warning is the report (its finding, a lever
    # with a direction, never exit 3); in a log that reached ready the ready diagnosis stands
    cause = next(c for c in CRASH_CAUSES if c.finding_id == name)
    alone = diagnose_paste(cause.example + "\n")
    assert name in [str(f.id) for f in alone.findings]
    assert alone.suggestions and all(s.direction for s in alone.suggestions)
    warned = "[2026-01-05 10:00:52 TP0] " + cause.example
    ready = diagnose_paste([line.format(warning=warned) for line in _READY_LOG])
    plain = diagnose_paste([line for line in _READY_LOG if line != "{warning}"])
    assert ready.outcome == plain.outcome == "ready"
    assert name not in [str(f.id) for f in ready.findings]
