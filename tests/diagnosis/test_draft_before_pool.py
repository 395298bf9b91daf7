"""A draft with an embed/lm_head of its own (EAGLE, NextN/MTP) loaded before the KV pool's lines,
in a log that stops before any reading after the pool: the head was held while the pool was
sized (failure_rules.DRAFT_BEFORE_POOL_CAUSE: v0.5.16 managers/scheduler.py:845-851, v0.5.23
speculative/eagle_worker_v2.py:243-258). Synthetic lines in the shapes of v0.5.16
model_executor/model_runner.py (load end, KV allocation, pool end, capture)."""

from __future__ import annotations

import pytest

from memledger.diagnosis import Diagnosis
from tests.conftest import diagnose_paste

P = "[2026-01-05 10:00:00 TP0] "
BEGIN = P + "Load weight begin. avail mem={} GB"
TARGET = P + "Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=50.00 GB, "
TARGET += "mem usage=28.00 GB."
KV = P + "KV Cache is allocated. #tokens: 270000, K size: 12.00 GB, V size: 12.00 GB"
POOL_END = P + "Memory pool end. avail mem=20.00 GB"
CAPTURE = P + "Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB"


def _draft(kind: str) -> str:
    """The draft worker's own load (its distributed init prints nothing read here)."""
    return (
        BEGIN.format("50.00")
        + "\n"
        + P
        + f"Load weight end. type={kind}, dtype=torch.bfloat16, avail mem=45.00 GB, "
        "mem usage=5.00 GB."
    )


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines, label="paste.log")


def _held(result: Diagnosis) -> list[str]:
    return [f.message for f in result.findings if "embed_tokens/lm_head" in f.message]


@pytest.mark.parametrize("kind", ["Qwen3ForCausalLMMTP", "LlamaForCausalLMEagle3"])
def test_a_draft_with_its_own_head_loaded_before_the_pool_is_named(kind: str) -> None:
    (message,) = _held(_diagnose([BEGIN.format("78.00"), TARGET, _draft(kind), KV]))
    assert message.startswith(f"the draft model ({kind}, 5.00 GiB) was loaded before the KV pool")


@pytest.mark.parametrize("kind", ["Qwen3ForCausalLMMTP", "LlamaForCausalLMEagle3"])
def test_a_cut_off_log_with_no_error_is_led_by_the_held_draft(kind: str) -> None:
    # the log ends at the pool with no error: the outcome is unknown, and the news is why the
    # pool came out small (the draft's own head held while it was sized)
    result = _diagnose([BEGIN.format("78.00"), TARGET, _draft(kind), KV])
    assert result.outcome == "truncated"
    lead = f"the draft model ({kind}, 5.00 GiB) was loaded before the KV pool was sized, so the "
    assert result.verdict.startswith(lead + "pool came out smaller by the draft's own "), result
    assert result.verdict.endswith("no error text, outcome unknown")
    # without the draft: the outcome only
    plain = _diagnose([BEGIN.format("78.00"), TARGET, KV])
    assert plain.verdict.startswith("log ends during"), plain.verdict


def test_a_dflash_draft_borrows_the_targets_head_and_is_not_named() -> None:
    assert (
        _held(_diagnose([BEGIN.format("78.00"), TARGET, _draft("DFlashQwen3ForCausalLM"), KV]))
        == []
    )


def test_a_reading_after_the_pool_shows_what_was_released_instead() -> None:
    # no rise between the pool's end and the capture: nothing was held for the pool's sake
    startup = [BEGIN.format("78.00"), TARGET, _draft("Qwen3ForCausalLMMTP"), KV, POOL_END]
    assert len(_held(_diagnose(startup))) == 1  # the log stops at the pool's end
    assert _held(_diagnose([*startup, CAPTURE])) == []
