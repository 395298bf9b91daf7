"""Families from the newest SGLang threads (issue 24, held-out threads 152-159, 2026): the phase a
reporter's sentence names for a crash (`killed during weight load`) and a graph capture named
without `CUDA` (`OOMed during graph capture`); a traceback cut off before its exception whose
frames only SGLang's idle pool check runs (the leak check, whatever its text would have said);
Triton's MoE kernel finding no pipeline depth whose tiles fit a block's shared memory (`assert
num_stages >= 1`, SM120 cards); the draft's own KV buffer named in words, and a DFLASH/DSpark draft
named with DP attention. Each is read in several shapes of the family through the whole command
path. Every input is a synthetic line."""

from __future__ import annotations

import pytest

from memledger.sglang.failure_rules import Phase
from tests.conftest import (
    MEMORY_KNOBS,
    PROSE_SHAPES,
    diagnose_text,
    finding_ids,
    knobs_of,
    paste_id,
    said_of,
)

FRAME = '  File "/sgl-workspace/sglang/python/sglang/srt/{path}", line {n}, in {func}'

KILLED_WHILE_LOADING = (
    "the model cannot be loaded at --tp 4: every rank is SIGKILLed (exit code: -9) during "
    "weight load",
    "Killed during the model load, exit code -9",
    "the server was killed (exit code 137) while loading the weights",
)


@pytest.mark.parametrize("text", KILLED_WHILE_LOADING, ids=paste_id)
def test_a_kill_said_with_its_moment_is_placed_there(text: str) -> None:
    result = diagnose_text(text)
    assert result.outcome == "crash"
    assert result.phase is Phase.LOAD
    assert "host RAM, not GPU memory" in result.verdict


def test_a_kill_said_without_a_moment_stays_unplaced() -> None:
    result = diagnose_text("every rank is SIGKILLed (exit code: -9)")
    assert result.outcome == "crash"
    assert result.phase is Phase.UNKNOWN


def test_the_weight_load_said_after_sglangs_own_line_is_not_the_noun() -> None:
    # SGLang's `Load weight begin` and a timing `weight load time` say no failure's moment
    result = diagnose_text("CUDA out of memory; the weight load time was 30 s")
    assert result.phase is Phase.UNKNOWN


GRAPH_CAPTURE_SAID = (
    "the decode CUDA graph max_bs=512 OOMed during graph capture on the 96GB card",
    "the OOM happens in the decode graph capture",
    "it runs out of memory while graph capture runs for bs 256",
)


@pytest.mark.parametrize("text", GRAPH_CAPTURE_SAID, ids=paste_id)
def test_a_graph_capture_said_without_cuda_places_the_oom(text: str) -> None:
    result = diagnose_text(text)
    assert result.outcome == "oom"
    assert result.phase is Phase.GRAPH_CAPTURE
    assert knobs_of(result)[0] == ("cuda_graph_max_bs", "lower")


def test_the_drafts_graph_capture_said_is_the_drafts_startup() -> None:
    result = diagnose_text("the OOM happens during the draft graph capture")
    assert result.phase is Phase.DRAFT


def _leak_check_traceback(frames: list[str], prefix: str = "") -> str:
    head = [prefix + "Scheduler hit an exception: Traceback (most recent call last):"]
    return "\n".join([*head, *frames])


IDLE_CHECK_FRAMES = (
    [
        FRAME.format(path="managers/scheduler.py", n=1124, func="event_loop_normal"),
        "    self.self_check_during_idle()",
        FRAME.format(
            path="managers/scheduler_runtime_checker_mixin.py", n=384, func="self_check_during_idle"
        ),
        "    self.check_memory()",
        FRAME.format(
            path="managers/scheduler_runtime_checker_mixin.py", n=296, func="check_memory"
        ),
        "    raise_error_or_warn(",
        FRAME.format(path="utils/common.py", n=4082, func="raise_error_or_warn"),
    ],
    [
        FRAME.format(path="managers/scheduler.py", n=1105, func="event_loop_normal"),
        FRAME.format(
            path="managers/scheduler_runtime_checker_mixin.py", n=251, func="check_memory"
        ),
        FRAME.format(
            path="managers/scheduler_runtime_checker_mixin.py", n=190, func="_check_mamba_memory"
        ),
    ],
    [
        FRAME.format(path="managers/scheduler.py", n=2210, func="on_idle"),
        FRAME.format(
            path="managers/scheduler_runtime_checker_mixin.py", n=480, func="_report_leak"
        ),
        "    raise_error_or_warn(",
    ],
)


@pytest.mark.parametrize("frames", IDLE_CHECK_FRAMES, ids=lambda f: paste_id(f[-1]))
@pytest.mark.parametrize("prefix", ("", "[2026-03-09 10:00:00 TP0] "), ids=("bare", "tagged"))
def test_a_traceback_cut_inside_the_idle_pool_check_is_the_leak_check(
    frames: list[str], prefix: str
) -> None:
    result = diagnose_text(_leak_check_traceback(frames, prefix))
    assert result.outcome == "crash"
    assert "pool_leak_check" in finding_ids(result)
    assert "an SGLang accounting bug" in result.verdict
    assert "upgrade" in result.verdict
    assert not {k for k, _ in knobs_of(result)} & MEMORY_KNOBS


def test_a_traceback_cut_elsewhere_is_still_not_in_the_log() -> None:
    result = diagnose_text(
        _leak_check_traceback(
            [
                FRAME.format(path="managers/scheduler.py", n=1124, func="event_loop_normal"),
                FRAME.format(path="managers/scheduler.py", n=2001, func="run_batch"),
            ]
        )
    )
    assert "pool_leak_check" not in finding_ids(result)
    assert "the error is not in the log" in result.verdict


def test_a_leak_check_frame_with_another_exception_is_that_exception() -> None:
    # the frames decide only when the exception line is cut off
    frames = list(IDLE_CHECK_FRAMES[0]) + ["KeyboardInterrupt: stop"]
    result = diagnose_text(_leak_check_traceback(frames))
    assert "pool_leak_check" not in finding_ids(result)


NUM_STAGES = "assert num_stages >= 1"


@pytest.mark.parametrize(
    "paste",
    [
        *(shape.format(s=f"GPT-OSS startup hits `{NUM_STAGES}`") for shape in PROSE_SHAPES),
        "\n".join(
            [
                "Traceback (most recent call last):",
                '  File "/usr/local/lib/python3.12/dist-packages/triton_kernels/matmul_ogs_details/'
                'opt_flags.py", line 188, in make_default_opt_flags_nvidia',
                f"    {NUM_STAGES}",
                "AssertionError",
            ]
        ),
    ],
    ids=paste_id,
)
def test_a_triton_tile_with_no_stages_is_no_memory_shortfall(paste: str) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "crash"
    assert "kernel_tile_no_stages" in finding_ids(result)
    assert "not GPU memory" in result.verdict
    assert "upgrade" in result.verdict
    assert not {k for k, _ in knobs_of(result)} & MEMORY_KNOBS


def test_a_resnets_stage_assertion_is_not_the_triton_tile() -> None:
    result = diagnose_text("AssertionError: assert num_stages >= 1 and num_stages <= 4")
    assert "kernel_tile_no_stages" not in finding_ids(result)


DRAFT_KV_SAID = (
    "CUDA OOM at boot with --mem-fraction-static 0.80 (memory_pool.py, draft KV buffer)",
    "the OOM comes when the draft's kv pool is allocated",
    "CUDA out of memory: draft kv-cache of the EAGLE3 head",
)


@pytest.mark.parametrize("text", DRAFT_KV_SAID, ids=paste_id)
def test_the_drafts_kv_buffer_named_places_the_oom_in_the_draft(text: str) -> None:
    result = diagnose_text(text)
    assert result.outcome == "oom"
    assert result.phase is Phase.DRAFT


@pytest.mark.parametrize(
    "line",
    [
        "GLM-5.2 target + DSpark draft, `--tp-size 8 --dp-size 8 --enable-dp-attention`",
        "dp-attention on, DFLASH speculative decoding",
        "Kimi-K3 with a DFlash draft under DP attention",
    ],
    ids=paste_id,
)
def test_a_dflash_draft_named_with_dp_attention_names_its_budget(line: str) -> None:
    result = diagnose_text(f"{line}\nCUDA OOM at boot (draft KV buffer)")
    assert "the paste names a DFLASH/DSPARK draft under DP attention" in said_of(result)
    assert "attn_tp_size" in said_of(result)


def test_a_dflash_draft_alone_names_no_dp_attention_budget() -> None:
    result = diagnose_text("DFLASH draft on one GPU\nCUDA OOM at boot (draft KV buffer)")
    assert "DP attention" not in said_of(result)


DEVCOMM = "NCCL exception (nccl.cu:188): 3 (GIN: DevComm setup failed on all available backends)"


@pytest.mark.parametrize(
    "paste",
    [
        *(shape.format(s=DEVCOMM) for shape in PROSE_SHAPES),
        f"Exception: Capture cuda graph failed: {DEVCOMM}",
        "[2026-09-11 10:00:00 TP3] Scheduler hit an exception: Exception: Capture cuda graph "
        f"failed: {DEVCOMM}",
    ],
    ids=paste_id,
)
def test_deepeps_device_communicator_built_in_a_capture_is_no_memory_shortfall(
    paste: str,
) -> None:
    result = diagnose_text(paste)
    assert result.outcome == "crash"
    assert "deepep_devcomm_in_capture" in finding_ids(result)
    assert "not GPU memory" in result.verdict
    assert not {k for k, _ in knobs_of(result)} & MEMORY_KNOBS
