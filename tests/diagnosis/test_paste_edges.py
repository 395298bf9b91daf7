"""Four paste families at the edges of what a paste holds (issue 24): the reporter's words above
the log naming the failure, an OOM word in a greeting beside SGLang's KV refusal, SGLang 0.1's
own line shapes (printed bare, `new fill batch.`, `Rank 0: load weight begin.`), and the tail of
PyTorch's CUDA error dump without its error line. Every input is a synthetic line in its family's
shape, in the shapes reporters paste it."""

from __future__ import annotations

import io

import pytest

from memledger.errors import InputError
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind, ParsedLog
from memledger.sglang.failure_rules import Phase
from memledger.sglang.lines import read_serving_batch
from tests.conftest import diagnose_paste, knobs_of, said_of

P = "[2026-05-01 15:16:15 TP1] "
ARGS = "[2026-05-01 15:16:08] server_args=ServerArgs(model_path='/m/x', tp_size=4, mem_fraction_"
CUT_LOAD = [
    "[2026-05-01 15:16:15] Received sigquit from a child process. It usually means the child "
    "failed.",
    P + "Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 3118, in run_scheduler_process',
    "    scheduler = Scheduler(",
    '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 517, in init_tp_model_worker',
    "    self.tp_worker = TpModelWorker(",
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 415, in __init__',
    "    self.initialize(min_per_gpu_memory)",
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 495, in initialize',
    "    self.load_model()",
    '  File "/sgl/python/sglang/srt/model_',
]
"""A startup whose traceback the paste cut inside `load_model`, before its exception."""

SAID_OOM = (
    "tried to launch three models but always got CUDA out of memory",
    "Title: OOM when loading the model on 4 cards",
    "- it OOMs every time",
    "启动的时候显存不足",
)


# ---- 1. the reporter's words above the log name the failure ------------------------------------


@pytest.mark.parametrize("said", SAID_OOM)
def test_an_oom_said_above_a_cut_traceback_is_the_failures_kind(said: str) -> None:
    result = diagnose_paste(["### Reproduction", said, "", ARGS, *CUT_LOAD])
    # the kind from the words, the phase from the frames
    assert (result.outcome, result.phase) == ("oom", Phase.LOAD)
    assert "error is not in the log" not in result.verdict


def test_without_the_words_the_cut_traceback_still_says_the_error_is_not_in_the_log() -> None:
    result = diagnose_paste(["### Reproduction", "it does not start", "", ARGS, *CUT_LOAD])
    assert (result.outcome, result.phase) == ("crash", Phase.LOAD)
    assert "error is not in the log" in result.verdict


def test_the_words_above_a_log_without_server_args_count_too() -> None:
    init = "[2026-05-01 15:16:10 TP1] Init torch distributed begin."
    result = diagnose_paste(["the server always runs out of memory", init, *CUT_LOAD])
    assert (result.outcome, result.phase) == ("oom", Phase.LOAD)


def test_the_logs_own_oom_text_decides_the_outcome_line_before_the_words() -> None:
    oom = (
        P + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
        "total capacity of 23.55 GiB of which 1.06 GiB is free."
    )
    paste = ["it always OOMs", ARGS, *CUT_LOAD[:-1], oom]
    parsed = parse_log_text(paste)
    assert parsed.startup.outcome == "oom" and parsed.startup.outcome_line == len(paste)


def test_the_words_above_the_first_startup_stay_with_it() -> None:
    # two startups: the second, ready, is read by default; the words above the first are not its
    ready = "[2026-05-01 15:20:00] The server is fired up and ready to roll!"
    paste = ["it OOMed at first", ARGS, *CUT_LOAD, ARGS.replace("15:16:08", "15:19:00"), ready]
    assert diagnose_paste(paste).outcome == "ready"
    first = parse_log_text(paste, startup=0)
    assert first.startup.outcome == "oom"
    assert EventKind.REPORTED not in {e.kind for e in parse_log_text(paste).startup.events}


def parse_log_text(lines: list[str], startup: int | None = None) -> ParsedLog:
    data = io.BytesIO(("\n".join(lines) + "\n").encode())
    return parse_log(data, label="paste.txt", startup=startup)


# ---- 2. an OOM word with no value and no fraction of its own is the refusal's name -------------

REFUSAL = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
GREETINGS = (
    "Hi, I encounter 'OOM' when launch server with --lora-paths",
    "Title: OOM when starting the server",
    "we get CUDA out of memory errors at startup:",
)


@pytest.mark.parametrize("greeting", GREETINGS)
def test_an_oom_greeting_beside_the_refusal_is_the_refusal(greeting: str) -> None:
    result = diagnose_paste([greeting, "", REFUSAL])
    assert result.phase is Phase.KV_SIZING
    assert result.verdict.startswith("SGLang refused to size the KV cache")
    assert "no_fraction_fits" not in {str(f.id) for f in result.findings}
    assert ("mem_fraction_static", "raise") in knobs_of(result)


@pytest.mark.parametrize(
    "said",
    [
        "with --mem-fraction-static 0.86 it gives CUDA out of memory",  # a value of its own
        "raising mem_fraction_static gives out-of-memory errors",  # the fraction, no value
    ],
)
def test_an_oom_tied_to_the_fraction_beside_the_refusal_is_a_second_failure(said: str) -> None:
    result = diagnose_paste([said, REFUSAL])
    assert "no fraction fits" in result.verdict


# ---- 3. SGLang 0.1's own lines (Jan - Apr 2024: printed bare) -----------------------------------

FILL = (
    "new fill batch. #seq: {n}. #cached_token: 12. #new_token: 2400. #remaining_req: {q}. "
    "#running_req: {r}. tree_cache_hit_rate: 3.00%."
)
DECODE_01 = "#running-req: {r}, #token: 41000, token usage: 0.78, #queue-req: {q}"
STARTUP_02 = [
    "[gpu_id=0] Load weight begin. avail mem=78.50 GB",
    "[gpu_id=0] Load weight end. type=LlamaForCausalLM, dtype=torch.float16, avail mem=65.20 GB",
    "[gpu_id=0] Memory pool end. avail mem=8.10 GB",
    "[gpu_id=0] max_total_num_tokens=409600, max_prefill_tokens=16384, context_len=4096",
]
"""SGLang 0.1.17 - 0.2.x's startup lines: no ready line followed them either."""
PREFILL_02 = (
    "[gpu_id=0] Prefill batch. #new-seq: {n}, #new-token: 5200, #cached-token: 0, cache hit rate: "
    "1.00%, #running-req: {r}, #queue-req: {q}"
)


def test_sglang_01_serving_lines_alone_are_read_not_refused() -> None:
    # no ready line, no error: the log ends while serving (exit 3 before: no line was known)
    paste = [FILL.format(n=1, q=0, r=0), DECODE_01.format(r=12, q=3), FILL.format(n=4, q=0, r=9)]
    result = diagnose_paste(paste)
    assert (result.outcome, result.phase) == ("truncated", Phase.SERVING)


def test_a_raise_after_serving_many_requests_is_serving_not_warmup() -> None:
    # 0.1 and 0.2 printed no ready line (v0.1.12 server.py:495-520): a batch of more than the
    # warmup's one request was serving
    paste = [
        *STARTUP_02,
        PREFILL_02.format(n=40, q=3, r=20),
        "Prefill out of memory. This should never happen.",
        "#tokens: 52100",
    ]
    result = diagnose_paste(paste)
    assert (result.outcome, result.phase) == ("oom", Phase.SERVING)
    assert "leak" in result.verdict


def test_a_batch_of_the_warmups_one_request_before_any_ready_line_stays_warmup() -> None:
    raised = "Prefill out of memory. This should never happen."
    paste = [*STARTUP_02, PREFILL_02.format(n=1, q=0, r=0), raised]
    assert diagnose_paste(paste).phase is Phase.WARMUP


@pytest.mark.parametrize(
    ("line", "stage", "values"),
    [
        (FILL.format(n=4, q=2, r=9), "prefill", {"new_seq": 4, "queue_req": 2, "running_req": 9}),
        (DECODE_01.format(r=12, q=3), "decode", {"running_req": 12, "token_usage": 0.78}),
        (
            "Prefill batch. #new-seq: 3, #new-token: 6417, #cached-token: 0, cache hit rate: "
            "21.42%, #running-req: 1, #queue-req: 0",
            "prefill",
            {"new_seq": 3, "new_token": 6417},
        ),
    ],
)
def test_serving_lines_of_every_release_read_alike(
    line: str, stage: str, values: dict[str, object]
) -> None:
    read = read_serving_batch(line)
    assert read is not None and read["stage"] == stage
    assert {k: read[k] for k in values} == values
    # pasted bare, the line is read as SGLang's (no exit 3)
    assert diagnose_paste(line + "\n").phase is Phase.SERVING


def test_serving_words_in_prose_are_no_serving_line() -> None:
    with pytest.raises(InputError):
        diagnose_paste("the token usage: is it high?\n")


# ---- 4. the tail of a CUDA error dump without its error line -----------------------------------

DUMP_TAIL = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "",
    "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 "
    "(most recent call first):",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f0 in libc10.so)",
]


@pytest.mark.parametrize(
    "lines",
    [
        DUMP_TAIL,
        DUMP_TAIL[1:3],
        [f"(WorkerDict pid=4242) {line}" for line in DUMP_TAIL[:3]],
        [
            "HIP kernel errors might be asynchronously reported at some other API call.",
            "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
        ],
    ],
    ids=["whole tail", "two lines", "ray actor", "hip"],
)
def test_a_cuda_dumps_tail_is_a_crash_that_may_be_memory(lines: list[str]) -> None:
    result = diagnose_paste(lines)  # exit 3 before: no SGLang line, no OOM text
    assert result.outcome == "crash"
    assert "cuda_error_cut" in {str(f.id) for f in result.findings}
    assert "possibly GPU memory" in result.verdict
    assert knobs_of(result)[0] == ("mem_fraction_static", "lower")


def test_a_dumps_tail_in_an_rl_framework_names_its_knob() -> None:
    warning = "(WorkerDict pid=7) /home/u/verl/sglang/python/sglang/srt/utils.py:8: UserWarning: x"
    result = diagnose_paste([warning, *DUMP_TAIL[:3]])
    assert "actor_rollout_ref.rollout.gpu_memory_utilization" in " ".join(
        s.why for s in result.suggestions
    )


@pytest.mark.parametrize(
    ("error", "finding"),
    [
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "illegal_memory_access",
        ),
        ("RuntimeError: CUDA error: out of memory", None),
    ],
)
def test_a_dump_with_its_error_line_is_that_error(error: str, finding: str | None) -> None:
    result = diagnose_paste([error, *DUMP_TAIL])
    ids = {str(f.id) for f in result.findings}
    assert "cuda_error_cut" not in ids
    if finding is None:
        assert result.outcome == "oom"
    else:
        assert finding in ids and "possibly GPU memory" in said_of(result)
