"""The RL frameworks of memledger.sglang.frameworks name SGLang's settings in their own words:
a paste that shows the framework gets the lever under the framework's name. Synthetic lines in
each framework's shape (its module paths)."""

from __future__ import annotations

import re

import pytest

from memledger.diagnosis import Diagnosis
from memledger.sglang.frameworks import FRAMEWORKS, Framework, framework_of
from tests.conftest import diagnose_paste

READ_AT = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{7} [\w/.-]+\.(py|yaml|md):\d+")
"""`owner/repo@commit path:line`: where a framework's mapping was read."""
STARTUP = [
    "[2026-03-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=1, "
    "mem_fraction_static=0.85, max_running_requests=256, context_length=8192)",
    "[2026-03-01 10:00:01 TP0] Load weight begin. avail mem=78.50 GB",
    "[2026-03-01 10:00:05 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
    "avail mem=63.20 GB, mem usage=15.30 GB.",
    "[2026-03-01 10:00:06 TP0] KV Cache is allocated. #tokens: 900000, K size: 24.00 GB, "
    "V size: 24.00 GB",
    "[2026-03-01 10:00:06 TP0] Memory pool end. avail mem=11.80 GB",
    "[2026-03-01 10:00:20 TP0] Capture cuda graph end. Time elapsed: 10.00 s. mem usage=1.20 GB. "
    "avail mem=10.50 GB.",
    "[2026-03-01 10:00:21] The server is fired up and ready to roll!",
]


def _diagnose(text: str) -> Diagnosis:
    return diagnose_paste(text, label="paste.log")


@pytest.mark.parametrize(
    ("frame", "name", "knob"),
    [
        (
            "/opt/AReaL/areal/engine/sglang_remote.py",
            "AReaL",
            "sglang.mem_fraction_static",
        ),
        (
            "/usr/lib/python3/site-packages/areal/launcher/local.py",
            "AReaL",
            "sglang.mem_fraction_static",
        ),
        (
            "/opt/ROLL/roll/pipeline/rlvr/rlvr_pipeline.py",
            "ROLL",
            "actor_infer.strategy_args.strategy_config.mem_fraction_static",
        ),
        (
            "/usr/lib/python3/site-packages/roll/distributed/executor/worker.py",
            "ROLL",
            "actor_infer.strategy_args.strategy_config.mem_fraction_static",
        ),
    ],
)
def test_a_frameworks_oom_names_its_own_knob(frame: str, name: str, knob: str) -> None:
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{frame}", line 120, in run\n'
        "    self.step()\n"
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::worker.run() (pid=1, ip=10.0.0.1)\n"
    )
    result = _diagnose(text)
    assert result.outcome == "oom"
    assert f"(in {name}: lower {knob.rsplit('.', 1)[0]}." in result.verdict
    # the suggestion opens with the framework's setting too, one line of the list
    [share] = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert share.why.startswith(f"in {name}: lower {knob}; ")
    assert any(
        f.id == "embedded_in_framework" and f"--mem-fraction-static is {name}'s {knob}" in f.message
        for f in result.findings
    )


def test_every_framework_maps_the_share_and_is_found_by_its_words() -> None:
    for framework in FRAMEWORKS:
        assert "mem_fraction_static" in framework.knobs
        for word in framework.words:
            assert framework_of(f"x {word} y") is framework, (framework.name, word)


def test_an_oom_in_areals_trainer_is_the_trainers() -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.\n"
        "GPU 0 has a total capacity of 79.19 GiB of which 1.00 GiB is free.\n"
        '  File "/usr/lib/python3/site-packages/areal/engine/fsdp_engine.py", line 500, in '
        "train_batch\n"
        "    loss.backward()\n"
    )
    result = _diagnose(text)
    assert result.verdict.startswith(
        "OOM in AReaL's trainer (areal/engine/fsdp_engine.py), not in SGLang"
    )
    assert "sglang.mem_fraction_static" in result.verdict
    assert any(
        f.id == "trainer_oom" and "actor.mb_spec.max_tokens_per_mb" in f.message
        for f in result.findings
    )


def test_a_memory_saver_oom_with_a_frameworks_path_names_its_knob_in_the_suggestion() -> None:
    # torch_memory_saver's CUresult line under a Ray worker's prefix, and a warning that shows
    # the framework's checkout in a path (any line names the framework, not only frames)
    text = (
        "(WorkerDict pid=7) [torch_memory_saver.cpp] CUresult error  result=2 "
        "file=csrc/torch_memory_saver.cpp func=cu_mem_create line=103\n"
        "(WorkerDict pid=7) /home/u/verl/sglang/python/sglang/srt/utils.py:800: UserWarning: x\n"
    )
    result = _diagnose(text)
    assert result.outcome == "oom"
    [share] = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert share.why.startswith("in verl: lower actor_rollout_ref.rollout.gpu_memory_utilization; ")


@pytest.mark.parametrize("framework", FRAMEWORKS, ids=lambda f: f.name)
def test_every_framework_leads_with_its_own_setting_and_value(framework: Framework) -> None:
    """One function checks every framework row: its mapping is cited where it was read, and a
    serving OOM under a frame of its code, after SGLang's startup lines, is answered in its own
    words with SGLang's value (each framework hands the value over as is)."""
    assert READ_AT.search(framework.source), framework.source
    knob = framework.knobs["mem_fraction_static"]
    frame = f'  File "/opt/x{framework.words[0]}y/run.py", line 120, in generate'
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 12.00 GiB. GPU 0 has a "
        "total capacity of 79.19 GiB of which 2.00 GiB is free. Of the allocated memory 60.10 GiB "
        "is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated."
    )
    result = _diagnose(
        "\n".join([*STARTUP, "Traceback (most recent call last):", frame, "    x()", oom]) + "\n"
    )
    [share] = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    assert share.value is not None and 0 < float(share.value) < 0.85
    assert share.why.startswith(f"in {framework.name}: lower {knob} to {share.value}; ")
    assert f"(in {framework.name}: lower {knob} to {share.value})" in result.verdict
    [named] = [f for f in result.findings if f.id == "embedded_in_framework"]
    assert ("beside its trainer" in named.message) is framework.beside_trainer


@pytest.mark.parametrize(
    "framework", [f for f in FRAMEWORKS if f.trainer_words], ids=lambda f: f.name
)
def test_every_frameworks_trainer_frame_is_the_trainers(framework: Framework) -> None:
    """One function checks every trainer row: an OOM whose innermost frame is the trainer's
    code is the trainer's, with its levers and SGLang's share in the framework's words."""
    path = f"/opt{framework.words[0]}{framework.trainer_words[0]}"
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB.\n"
        "GPU 0 has a total capacity of 79.19 GiB of which 1.20 GiB is free.\n"
        f'  File "{path}", line 300, in train_step\n    loss.backward()\n'
    )
    result = _diagnose(text)
    assert result.verdict.startswith(f"OOM in {framework.name}'s trainer"), result.verdict
    assert framework.knobs["mem_fraction_static"] in result.verdict
    assert any(
        f.id == "trainer_oom" and framework.trainer_levers in f.message for f in result.findings
    )


KNOB_SAID = (
    "only raising gpu_memory_utilization to 0.7 made it go away",
    "`gpu-memory-utilization=0.5` in our launcher",
    "- the rollout's gpu_memory_utilization is 0.6",
    "vLLM calls it gpu_memory_utilization too; ours is 0.6",
)
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


@pytest.mark.parametrize("said", KNOB_SAID)
def test_the_fraction_named_as_frameworks_name_it_is_answered_in_that_name(said: str) -> None:
    """No framework named, but SGLang's share said as gpu_memory_utilization (what verl, SkyRL
    and RLinf call it): the lever says that name, an OOM's and a crash cause's alike."""
    for failure in (ILLEGAL, "torch.OutOfMemoryError: CUDA out of memory.\n"):
        result = _diagnose(f"{failure}{said}\n")
        [share] = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
        assert share.why.startswith("in an RL framework (named by its gpu_memory_utilization): ")
        assert "actor_rollout_ref.rollout.gpu_memory_utilization" in share.why


def test_a_named_framework_outranks_its_knob_name() -> None:
    text = (
        f"{ILLEGAL}gpu_memory_utilization is 0.6\n"
        '  File "/home/u/verl/verl/trainer/main_ppo.py", line 54, in main\n'
    )
    [share] = [s for s in _diagnose(text).suggestions if s.knob == "mem_fraction_static"]
    assert share.why.startswith("in verl: lower actor_rollout_ref.rollout.gpu_memory_utilization")


def test_a_crash_without_the_knobs_name_keeps_sglangs_words() -> None:
    [share] = [s for s in _diagnose(ILLEGAL).suggestions if s.knob == "mem_fraction_static"]
    assert not share.why.startswith("in ")
