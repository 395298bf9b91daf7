"""The ledger's outcome of a log SGLang refused to size the KV pool for is diagnose's: `oom`.

SGLang warns `max_total_tokens=N is larger than the profiled value -M` when the profiled pool
has no tokens, then raises `Not enough memory. Please try to increase --mem-fraction-static`
(v0.4.8 model_executor/model_runner.py:914-931; v0.5.8
model_executor/model_runner_kv_cache_mixin.py:299-305, :328-331). A paste often stops at the
warning (sglang#7691): the ledger said `truncated` while diagnose said `oom` at `kv_sizing`.
"""

from __future__ import annotations

import io

from memledger.app.load import build
from memledger.app.options import LoadOptions
from memledger.diagnosis import diagnose
from memledger.input.outcome import outcome_kind
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from tests.diagnosis.test_issue_threads import THREAD_7691

LOAD_END = THREAD_7691[0]


def _outcomes(lines: list[str]) -> tuple[str, str, int | None]:
    """(the ledger's outcome, diagnose's outcome, the ledger's outcome line)."""
    parsed = parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.log")
    ledger = build(parsed, LoadOptions())
    return ledger.outcome, diagnose(parsed, ledger).outcome, parsed.startup.outcome_line


def test_7691_ending_on_the_negative_profile_warning_is_an_oom_in_the_ledger_too() -> None:
    # line 2: the first warning (rank DP0 TP0, the selected rank's)
    assert _outcomes(THREAD_7691) == ("oom", "oom", 2)


def test_sglangs_refusal_is_one_outcome_whichever_of_its_texts_the_log_ends_on() -> None:
    # the raise itself, bare or as the exception line of its traceback (was `crash` in the
    # ledger: the refusal is checked before the crash phrases), and v0.5.23's wording
    for refusal in (
        "Not enough memory. Please try to increase --mem-fraction-static.",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.88",
        "[2025-07-02 07:41:59 DP0 TP0] Loaded weights leave no GPU memory for the KV cache "
        "under --mem-fraction-static=0.88. Raise --mem-fraction-static above 0.8846.",
    ):
        assert _outcomes([LOAD_END, refusal]) == ("oom", "oom", 2), refusal


def test_a_profiled_value_above_zero_or_a_quoted_refusal_is_no_outcome() -> None:
    # the cap was only lowered to a real pool: SGLang goes on sizing it
    positive = THREAD_7691[1].replace("-561981", "93000")
    assert outcome_kind(positive) is None
    assert outcome_kind(THREAD_7691[1]) == (EventKind.OOM, "SGLang refused to size the KV cache")
    # a profiled pool of exactly 0 tokens is refused too (max_total_num_tokens <= 0)
    assert outcome_kind(THREAD_7691[1].replace("-561981", "0")) is not None
    # a request that quotes the text is data the server echoes, not its end
    quoted = (
        'Receive: obj=GenerateReqInput(text="Not enough memory. Please try to increase '
        '--mem-fraction-static")'
    )
    assert outcome_kind(quoted) is None


def _rows(lines: list[str]) -> tuple[list[tuple[int, str]], str, int | None]:
    """(the listed events as (line, kind), the outcome, its line) of a synthetic log."""
    parsed = parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.log")
    startup = parsed.startup
    return [(e.line, e.kind.value) for e in startup.events], startup.outcome, startup.outcome_line


def test_the_line_that_decides_the_outcome_is_listed_once() -> None:
    # the summary line decides `ready` and the OOM message decides `oom`: each keeps its own
    # row, and no second row of the outcome's kind repeats the same line (the summary was
    # listed as `summary` and again as `ready`)
    prefix = "[2031-02-03 04:05:06 DP0 TP0 EP0]"
    ready, outcome, line = _rows(
        [
            f"{prefix} Load weight end. type=ToyForCausalLM, dtype=torch.bfloat16, "
            "avail mem=61.25 GB, mem usage=17.50 GB.",
            f"{prefix} max_total_num_tokens=412345, chunked_prefill_size=4096, "
            "max_prefill_tokens=8192, max_running_requests=96, context_len=65536, "
            "available_gpu_mem=11.20 GB",
            "[2031-02-03 04:05:09] The server is fired up and ready to roll!",
        ]
    )
    assert (outcome, line) == ("ready", 2)
    assert [row for row in ready if row[0] == 2] == [(2, "summary")]
    assert len(ready) == len({row[0] for row in ready})
    oom, outcome, line = _rows(
        [
            f"{prefix} Load weight begin. avail mem=78.50 GB",
            f"{prefix} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.25 GiB. "
            "GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.",
        ]
    )
    assert (outcome, line) == ("oom", 2)
    at_oom = [kind for row_line, kind in oom if row_line == 2]
    assert "oom_message" in at_oom and "oom" not in at_oom
