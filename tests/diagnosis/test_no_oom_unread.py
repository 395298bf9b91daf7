"""No OOM is left unread: a paste that holds an out-of-memory or refusal text of any family,
however it is spelled, gets a diagnosis (never exit 3), and a driver error that is no
out-of-memory says so. Every input is a synthetic line in its family's shape."""

from __future__ import annotations

import io
import re

import pytest

from memledger.diagnosis import Diagnosis
from memledger.diagnosis.model import FindingId
from memledger.input.parsing import parse_log
from memledger.render.diagnose import evidence_text, render_text
from memledger.sglang import lifecycle
from memledger.sglang.failure_rules import (
    BUDGET_SOURCES,
    MAX_REQ_INPUT_LEN_SOURCES,
    SUMMARY_LINE_SOURCES,
    Phase,
    nearest_source,
)
from memledger.sglang.releases import version_code
from tests.conftest import diagnose_paste


def _diagnose(text: str) -> Diagnosis:
    return diagnose_paste(text)


@pytest.mark.parametrize(
    "line",
    [
        "I keep getting CUDA out of memory when I send long prompts",
        "the server fails with out-of-memory errors at startup",
        "it ran out of GPU memory after a while",
        "with 0.9 it OOMs on the second request",
        "the decode worker OOMed",
        "启动的时候显存不足",
        "NPU out of memory",
        "HIP out of memory",
    ],
)
def test_an_out_of_memory_sentence_alone_is_an_oom(line: str) -> None:
    diagnosis = _diagnose(line + "\n")
    assert diagnosis.outcome == "oom"
    assert diagnosis.verdict.startswith("OOM during")
    assert diagnosis.suggestions, "the phase's levers, with their directions"
    assert all(s.direction for s in diagnosis.suggestions)


@pytest.mark.parametrize(
    "line",
    ["the room was out of milk", "a BOOM box", "3 out of 8 ranks started"],
)
def test_words_that_only_look_like_it_are_not(line: str) -> None:
    with pytest.raises(Exception, match="no SGLang log lines found"):
        _diagnose(line + "\n")


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (
            "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
            "func=resume line=214",
            "CUDA_ERROR_INVALID_VALUE",
        ),
        (
            "[torch_memory_saver.cpp] cudaError error: 700  file=csrc/core.cpp func=pause line=90",
            "CUDA_ERROR_ILLEGAL_ADDRESS",
        ),
    ],
)
def test_a_memory_saver_driver_error_other_than_2_is_not_an_oom(line: str, code: str) -> None:
    diagnosis = _diagnose(line + "\n")
    assert diagnosis.outcome == "crash"
    found = {f.id: f for f in diagnosis.findings}
    assert code in found["memory_saver_driver_error"].message
    assert "not for lack of memory" in diagnosis.verdict
    assert not diagnosis.suggestions


def test_the_memory_savers_own_frame_names_the_phase() -> None:
    line = (
        "[torch_memory_saver.cpp] CUresult error  result=1 file=csrc/torch_memory_saver.cpp "
        "func=resume line=214\n"
    )
    assert _diagnose(line).phase is Phase.RESUME


def test_result_2_stays_the_memory_savers_oom() -> None:
    line = (
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
        "func=cu_mem_create line=103 (5)\n"
    )
    assert _diagnose(line).outcome == "oom"


# ---- settings and mentions typed in prose (memledger.input.reported)


def test_a_fraction_that_ooms_above_and_is_refused_below_means_no_fraction_fits() -> None:
    diagnosis = _diagnose(
        "with speculative decoding, setting --mem-fraction-static to 0.86 gives CUDA out of "
        "memory. However, if I set it to 0.85, I receive the following error:\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    )
    assert diagnosis.phase is Phase.KV_SIZING
    assert "no fraction fits" in diagnosis.verdict
    assert "OOM at 0.86, refused at 0.85" in diagnosis.verdict
    assert FindingId.NO_FRACTION_FITS in {f.id for f in diagnosis.findings}
    knobs = [s.knob for s in diagnosis.suggestions]
    assert "mem_fraction_static" not in knobs  # no fraction is the answer
    assert knobs[:2] == ["max_total_tokens", "cuda_graph_max_bs"]  # the draft's levers first
    assert all(s.direction for s in diagnosis.suggestions)


def test_the_same_window_in_words_without_numbers() -> None:
    diagnosis = _diagnose(
        "raising mem_fraction_static gives out-of-memory errors; lowering it gives a negative "
        "value for self.max_total_num_tokens\n"
    )
    assert "no fraction fits" in diagnosis.verdict
    assert {"max_running_requests", "chunked_prefill_size"} <= {
        s.knob for s in diagnosis.suggestions
    }


def test_a_floor_typed_for_the_fraction_is_the_refusal() -> None:
    diagnosis = _diagnose(
        "mem-fraction-static < 0.8 can not start the service\n"
        "with a short context, mem_fraction_static must be > 0.83\n"
    )
    assert diagnosis.phase is Phase.KV_SIZING
    (fraction,) = [s for s in diagnosis.suggestions if s.knob == "mem_fraction_static"]
    assert fraction.direction.value == "raise" and fraction.value == 0.84
    assert "the paste says it starts only above 0.83" in fraction.why


def test_a_fraction_typed_as_where_the_oom_starts_is_a_ceiling_not_a_refusal() -> None:
    # `>= 0.5 always leads to OOM` bounds the fraction from above: no KV refusal was seen
    diagnosis = _diagnose(
        "with the base model as EAGLE draft, mem-fraction >= 0.5 always leads to OOM\n"
    )
    assert "no fraction fits" not in diagnosis.verdict
    assert diagnosis.phase is not Phase.KV_SIZING
    (fraction,) = [s for s in diagnosis.suggestions if s.knob == "mem_fraction_static"]
    assert fraction.direction.value == "lower"


@pytest.mark.parametrize(
    ("text", "knob", "phase"),
    [
        (
            "the server ran into OOM with return_logprob=True and logprob_start_len=0\n",
            "logprob_start_len",
            Phase.SERVING,
        ),
        (
            "the fourth draft pool: CUDA OOM while allocating 3.00 GiB\n",
            "max_total_tokens",
            Phase.DRAFT,
        ),
        (
            "the decode batch runs out of memory with a page size of 64\n",
            "page_size",
            Phase.SERVING,
        ),
    ],
)
def test_a_mention_places_the_failure_and_brings_its_lever(
    text: str, knob: str, phase: Phase
) -> None:
    diagnosis = _diagnose(text)
    assert diagnosis.phase is phase
    assert diagnosis.suggestions[0].knob == knob
    assert FindingId.REPORTED in {f.id for f in diagnosis.findings}


@pytest.mark.parametrize("header", [True, False], ids=["traceback", "frame alone"])
def test_an_attention_backends_constructor_frame_names_its_workspace(header: bool) -> None:
    # the AITER backend's workspace grows with the context (v0.5.8 aiter_backend.py:157-167):
    # the frame of its __init__ under a HIP OOM, with or without the traceback's head
    text = (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 9.00 GiB.\n"
        "GPU 0 has a total capacity of 191.98 GiB of which 2.00 GiB is free.\n"
        + ("Traceback (most recent call last):\n" if header else "")
        + '  File "/opt/sglang/python/sglang/srt/layers/attention/aiter_backend.py", line 201, '
        "in __init__\n"
    )
    diagnosis = _diagnose(text)
    assert diagnosis.phase is Phase.AFTER_POOL
    knobs = [s.knob for s in diagnosis.suggestions]
    assert knobs[:2] == ["context_length", "max_running_requests"]
    assert "attention backend's workspace" in diagnosis.verdict
    # a frame of the same file elsewhere (a forward while serving) names no workspace
    serving = _diagnose(text.replace("in __init__", "in forward_decode"))
    assert "workspace" not in serving.verdict


def test_another_process_named_in_prose_is_said_first() -> None:
    diagnosis = _diagnose(
        "the next test OOMs because the GPU is held by the orphaned server process\n"
    )
    assert "another process holds GPU memory" in diagnosis.verdict


def test_a_launch_command_line_is_not_prose() -> None:
    diagnosis = _diagnose(
        "OOM at startup\n"
        "python -m sglang.launch_server --model m --context-length 4096 --chat-template llama-3\n"
    )
    assert diagnosis.outcome == "oom"
    parsed = parse_log(io.BytesIO(b"python -m sglang.launch_server --context-length 4096\nOOM\n"))
    assert not [e for e in parsed.startup.events if e.kind.value == "reported"]


def test_a_load_oom_without_the_budget_still_has_the_weights_levers() -> None:
    diagnosis = _diagnose(
        '  File "/sgl/python/sglang/srt/models/llama.py", line 10, in __init__\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 226.00 MiB. GPU 0 has a "
        "total capacity of 15.58 GiB of which 71.25 MiB is free. Including non-PyTorch memory, "
        "this process has 13.94 GiB memory in use. Of the allocated memory 13.64 GiB is allocated "
        "by PyTorch, and 67.23 MiB is reserved by PyTorch but unallocated.\n"
    )
    assert diagnosis.phase is Phase.LOAD
    knobs = {s.knob: s.direction.value for s in diagnosis.suggestions}
    assert knobs == {"tp_size": "raise", "cpu_offload_gb": "raise"}
    assert "--mem-fraction-static" not in diagnosis.verdict  # it loads before the fraction counts


def test_a_framework_named_outside_any_frame_is_read() -> None:
    """verl named only in a warning's path (no traceback frame): its own knob, not the saver's."""
    diagnosis = _diagnose(
        "WARNING /data/me/verl/sglang/python/sglang/srt/utils.py:120: memory is tight\n"
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
        "func=cu_mem_create line=103 (5)\n"
    )
    assert "in verl: lower actor_rollout_ref.rollout.gpu_memory_utilization" in diagnosis.verdict


def test_an_unknown_phase_gets_no_try_flag() -> None:
    text = render_text(_diagnose("the decode worker OOMed\n"))
    assert "\ntry:" not in text


# ---- review m7: what a finding cites and how an error text is quoted


def test_evidence_names_each_file_once() -> None:
    assert evidence_text(["a.log:3", "a.log:9", "b.log:1", "c.log"]) == "a.log:3, 9, b.log:1, c.log"


def test_a_crash_is_quoted_whole_words_at_its_exception_line() -> None:
    diagnosis = _diagnose(
        "Traceback (most recent call last):\n"
        '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 10, in run\n'
        '  File "/sgl/python/sglang/srt/configs/model_config.py", line 20, in load\n'
        "OSError: /models/some-org/some-model-name does not appear to have a file named "
        "config.json. Checkout the hub for available files.\n"
    )
    assert "(line 4)" in diagnosis.verdict  # the exception's line, not the traceback's head (1)
    assert "config.json" in diagnosis.verdict  # the key word is not cut


def test_the_memory_savers_hip_oom_also_names_rocms_allocation_limit() -> None:
    diagnosis = _diagnose(
        "[torch_memory_saver.cpp] hipError_t error  result=2 file=csrc/torch_memory_saver_hip.cpp "
        "func=cu_mem_create line=103\n"
    )
    assert diagnosis.outcome == "oom"
    found = {f.id: f for f in diagnosis.findings}
    assert "chunk-wise" in found["memory_saver_hip_vmm"].message
    assert "(HIP runtime: torch_memory_saver)" in found[FindingId.OOM_MESSAGE].message
    assert "also: upgrade torch_memory_saver" in diagnosis.verdict


def test_a_runtime_text_without_a_device_names_none() -> None:
    line = (
        "[torch_memory_saver.cpp] CUresult error  result=2 file=csrc/torch_memory_saver.cpp "
        "func=cu_mem_create line=103 (5)\n"
    )
    (oom,) = [f for f in _diagnose(line).findings if f.id == FindingId.OOM_MESSAGE]
    assert "(runtime: torch_memory_saver)" in oom.message and "None" not in oom.message


def test_the_budget_is_cited_at_the_release_nearest_the_logs() -> None:
    # a 0.4.4 .. 0.4.6 log (single/020's formats): 0.4.6.post2's line, not v0.5.8's
    assert nearest_source(BUDGET_SOURCES, 4004, 4006) == (
        "v0.4.6.post2 model_executor/model_runner.py:736-739"
    )
    assert nearest_source(BUDGET_SOURCES, 4002, 4003).startswith("v0.4.1 ")
    assert nearest_source(BUDGET_SOURCES, 4006, 0).startswith("v0.4.6.post2 ")
    assert nearest_source(BUDGET_SOURCES, 5009, 5009).startswith("v0.5.8 ")
    assert nearest_source(BUDGET_SOURCES, 5023, 0).startswith("v0.5.23 ")
    assert nearest_source(BUDGET_SOURCES, 0, 0).startswith("v0.5.8 ")  # release unknown
    assert nearest_source(BUDGET_SOURCES, 3000, 3003).startswith("v0.4.1 ")  # none older


@pytest.mark.parametrize(
    "sources", [BUDGET_SOURCES, MAX_REQ_INPUT_LEN_SOURCES, SUMMARY_LINE_SOURCES]
)
def test_release_dated_sources_run_oldest_first_and_name_a_file_line(
    sources: tuple[tuple[str, str], ...],
) -> None:
    codes = [version_code(release) for release, _ in sources]
    assert codes == sorted(codes) and len(set(codes)) == len(codes) and all(codes)
    assert all(re.match(r"[a-z_/]+\.py:\d+", where) for _, where in sources)
    assert any(release == "0.5.8" for release, _ in sources)  # the unknown-release citation


def test_the_summary_line_and_the_request_limit_are_cited_at_the_logs_release() -> None:
    # review m7: a 0.4.6 log cited v0.5.8's scheduler; before 0.4.0 there was no "- 5"
    assert nearest_source(SUMMARY_LINE_SOURCES, 4006, 4006).startswith(
        "v0.4.6 managers/scheduler.py:"
    )
    assert nearest_source(SUMMARY_LINE_SOURCES, 3000, 3003).startswith("v0.3.0 managers/tp_worker")
    old = nearest_source(MAX_REQ_INPUT_LEN_SOURCES, 2013, 3005)
    assert old.endswith("max_total_num_tokens - 1)")
    assert nearest_source(MAX_REQ_INPUT_LEN_SOURCES, 5023, 0).endswith("kv_capacity - 1) - 5")


@pytest.mark.parametrize("stage", ["vocoder", "code2wav"])
def test_an_oom_after_a_pipelines_audio_decoder_stage_names_it(stage: str) -> None:
    # sglang-omni's stage loop line (pipeline/stage/runtime.py:264), then PyTorch's OOM text
    text = (
        "2026-01-05 10:00:00,126 [INFO] sglang_omni.pipeline.stage.runtime: Stage "
        f"{stage} received msg: DataReadyMessage\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 20.00 MiB is free.\n"
    )
    diagnosis = _diagnose(text)
    assert diagnosis.outcome == "oom"
    assert "audio decoder stage (sglang-omni's vocoder, code2wav)" in diagnosis.verdict
    assert [s.knob for s in diagnosis.suggestions][:2] == ["max_new_tokens", "mem_fraction_static"]
    # the thinker's stage is SGLang's own engine: no such mention
    other = _diagnose(text.replace(f"Stage {stage}", "Stage thinker"))
    assert "audio decoder" not in other.verdict


_DFLASH_DP = (
    "[2026-09-06 07:40:00] server_args=ServerArgs(model_path='/m/x', tp_size=2, dp_size=2, "
    "enable_dp_attention={dp}, speculative_algorithm='{spec}', mem_fraction_static=0.9)\n"
    "{baseline}"
    "[rank1]:[W906 07:46:05.0 CUDACachingAllocator.cpp:3933] memory allocation failed with OOM "
    "on device 1 while trying to allocate 4334813184 bytes (free: 3779919872, total: "
    "287431131136).\n"
)


@pytest.mark.parametrize(
    ("spec", "dp", "named"),
    [
        ("DSPARK", True, True),
        ("DFLASH", True, True),
        ("DFLASH", False, False),
        ("EAGLE", True, False),
    ],
)
def test_a_dflash_draft_under_dp_attention_is_named_by_its_settings(
    spec: str, dp: bool, named: bool
) -> None:
    diagnosis = _diagnose(_DFLASH_DP.format(spec=spec, dp=dp, baseline=""))
    messages = [f.message for f in diagnosis.findings if "attn_tp_size" in f.message]
    assert bool(messages) is named
    if named:
        assert "max_total_tokens" in [s.knob for s in diagnosis.suggestions]


def test_a_release_past_the_fix_is_not_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # `Memory baseline taken` dates a log at 0.5.21 or later (sglang.release_markers); with the
    # fix placed there, such a log makes no mention
    baseline = "[2026-09-06 07:40:05 DP1 TP1] Memory baseline taken. mem usage=0.50 GB\n"
    text = _DFLASH_DP.format(spec="DFLASH", dp=True, baseline=baseline)
    assert any("attn_tp_size" in f.message for f in _diagnose(text).findings)
    monkeypatch.setitem(lifecycle.SETTING_MENTION_FIXED, "dflash_dp_attention", "0.5.21")
    assert not any("attn_tp_size" in f.message for f in _diagnose(text).findings)
