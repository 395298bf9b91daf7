"""What diagnose says of each finding its rules report about a vLLM startup: one
`memledger.sglang.findings.Said` per wording (name, severity, `str.format` words, source), read by
memledger.diagnosis.vllm. Tested with SGLang's rows by tests/sglang/test_findings.py."""

from __future__ import annotations

from memledger.sglang.findings import Said

VLLM_SAYINGS: tuple[Said, ...] = (
    Said(
        "in_use_at_start",
        "error",
        "{others} of the {total} GPU was in use before vLLM started (another process, or an "
        "earlier engine still holding memory)",
    ),
    Said(
        "kv_short_of_one_request",
        "error",
        "one request of {max_len:,} tokens needs {needed} of KV cache; the budget left "
        "{available} ({shortfall} short)",
    ),
    Said(
        "kv_short_of_one_request.tokens",
        "error",
        "the KV cache holds {tokens:,} tokens, one request may take {max_len:,}{short}",
    ),
    Said(
        "no_kv_budget",
        "error",
        "nothing left for the KV cache: weights, non-torch memory and the activation peak fill the "
        "budget{over}{weights}",
    ),
    Said(
        "failed_at_kv_check",
        "error",
        "the engine failed right after sizing {kv} of KV cache, where V1 checks that one "
        "max-length request fits (the failure text is not in the log)",
    ),
    Said("oom", "error", "out of GPU memory during {phase}{asked}"),
    Said(
        "thin_headroom",
        "warning",
        "only {headroom} left outside the gpu_memory_utilization budget; {graphs}: a higher batch "
        "or a second process can OOM",
    ),
    Said(
        "kv_cache_memory_suggestion",
        "info",
        "vLLM suggests --kv-cache-memory={suggested:,}; recomputed {value:,} ({same}, "
        "{arithmetic}); {judgement}",
    ),
)

VLLM_SAID: dict[str, Said] = {said.name: said for said in VLLM_SAYINGS}
