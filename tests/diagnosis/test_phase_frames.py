"""The traceback-frame table (memledger.sglang.failure_rules.PHASE_FRAMES): one shared function
checks every row on a synthetic traceback in the shape SGLang prints, ending in a CUDA OOM whose
text also shows a small CUDA-graph private pool (issue 24, family 7: a frame that places the
failure outranks that figure). Whole tracebacks check how the rows combine."""

from __future__ import annotations

import re

import pytest

from memledger.sglang.failure_rules import PHASE_FRAMES, Phase, PhaseFrame
from memledger.sglang.lifecycle import STAGE
from tests.conftest import diagnose_paste

SOURCE = re.compile(
    r"^(v\d+\.\d+\.\d+(\.post\d+)?|[\w.-]+/[\w.-]+@[0-9a-f]{7}) [\w/.]+\.py:\d+"
    r"(, [\w/.]+\.py:\d+)*$"
)
"""SGLang's `vX path:line`, or an embedding framework's `owner/repo@commit path:line`."""
PREFIX = "/usr/local/lib/python3.10/dist-packages/sglang/srt/"
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
    "capacity of 79.19 GiB of which 300.00 MiB is free. Of the allocated memory 77.00 GiB is "
    "allocated by PyTorch, with 24.00 MiB allocated in private pools (e.g., CUDA Graphs), and "
    "20.00 MiB is reserved by PyTorch but unallocated.\n"
)


def _file(path: str) -> str:
    """Where the frame's file is installed: SGLang's under its package, a framework's own."""
    return path if path.startswith("/") else PREFIX + path


def _traceback(frames: list[tuple[str, str]]) -> str:
    lines = [
        f'  File "{_file(path)}", line {100 + i}, in {function}\n    out = step(x)\n'
        for i, (path, function) in enumerate(frames)
    ]
    torch = (
        '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/_device.py", line 104, in '
        "__torch_function__\n    return func(*args, **kwargs)\n"
    )
    return "Traceback (most recent call last):\n" + "".join(lines) + torch + OOM


def _cited_path(row: PhaseFrame) -> str:
    """The cited file: SGLang's relative to srt/, a framework's under /opt/<repo>/."""
    path = row.source.split(" ", 1)[1].split(":", 1)[0]
    return f"/opt/{path}" if "@" in row.source else path


@pytest.mark.parametrize("row", PHASE_FRAMES, ids=lambda r: f"{r.function}@{r.fragment}")
def test_every_frame_row_names_its_phase(row: PhaseFrame) -> None:
    """One function checks every row: a cited source at a release whose file the row's fragment
    matches, a phase of the lifecycle, and a paste whose only SGLang frame is the row's function
    in its cited file is diagnosed in the row's phase; the OOM text's private-pool figure is read
    as serving only where the frame says serving too."""
    assert SOURCE.match(row.source), row.source
    path = _cited_path(row)
    assert row.fragment in "srt/" + path, (row.fragment, path)
    assert row.phase in STAGE
    frame = f'  File "{_file(path)}", line 120, in {row.function}\n    out = step(x)\n'
    # the frame in its traceback, and pasted after the OOM text (a second fragment)
    for text in (_traceback([(path, row.function)]), OOM + frame):
        result = diagnose_paste(text)
        assert (result.outcome, result.phase) == ("oom", row.phase)
        graphs = [f for f in result.findings if f.id == "phase_from_graphs"]
        assert not graphs or row.phase is Phase.SERVING


def test_no_row_is_shadowed_by_an_earlier_one() -> None:
    """A frame takes the first row it matches: a later row that an earlier one always catches
    (same function, the earlier fragment inside the later one's) would never be used."""
    for i, later in enumerate(PHASE_FRAMES):
        for earlier in PHASE_FRAMES[:i]:
            assert not (
                earlier.function == later.function and earlier.fragment in later.fragment
            ), (earlier, later)


_TARGET = [
    ("managers/scheduler.py", "__init__"),
    ("managers/tp_worker.py", "__init__"),
    ("model_executor/model_runner.py", "__init__"),
    ("model_executor/model_runner.py", "initialize"),
]
_DRAFT = [
    ("managers/scheduler.py", "__init__"),
    ("speculative/eagle_worker.py", "__init__"),
    ("managers/tp_worker.py", "__init__"),
    ("model_executor/model_runner.py", "__init__"),
]
_MODEL = [("models/llama.py", "forward"), ("layers/logits_processor.py", "forward")]


@pytest.mark.parametrize(
    ("frames", "phase"),
    [
        (
            [
                *_TARGET,
                ("model_executor/model_runner.py", "load_model"),
                ("layers/quantization/fp8.py", "process_weights_after_loading"),
                ("layers/moe/fused_moe_triton/fused_moe.py", "fused_experts"),
            ],
            Phase.LOAD,
        ),
        (
            [
                *_TARGET,
                ("model_executor/model_runner.py", "init_device_graphs"),
                ("model_executor/cuda_graph_runner.py", "capture_one_batch_size"),
                ("model_executor/cuda_graph_runner.py", "run_once"),
                *_MODEL,
            ],
            Phase.GRAPH_CAPTURE,
        ),
        ([*_DRAFT, ("model_executor/model_runner.py", "load_model")], Phase.DRAFT),
        ([*_DRAFT, ("model_executor/model_runner.py", "init_torch_distributed")], Phase.DRAFT),
        (
            [
                ("managers/scheduler.py", "init_memory_pools"),
                ("speculative/eagle_worker_v2.py", "alloc_memory_pool"),
                ("model_executor/model_runner.py", "alloc_memory_pool"),
            ],
            Phase.DRAFT,
        ),
        (
            [
                ("managers/scheduler.py", "event_loop_overlap"),
                ("managers/scheduler.py", "run_batch"),
                ("managers/tp_worker.py", "forward_batch_generation"),
                ("model_executor/model_runner.py", "forward_extend"),
                *_MODEL,
            ],
            Phase.SERVING,
        ),
        (
            [
                ("managers/scheduler.py", "event_loop_normal"),
                ("managers/scheduler.py", "process_input_requests"),
                ("managers/scheduler_update_weights_mixin.py", "resume_memory_occupation"),
            ],
            Phase.RESUME,
        ),
    ],
    ids=["post-load", "capture", "draft-load", "draft-dist", "draft-pool", "serving", "resume"],
)
def test_a_whole_traceback_takes_its_innermost_startup_step(
    frames: list[tuple[str, str]], phase: Phase
) -> None:
    """The innermost startup frame names the phase; serving-loop frames around or inside it do
    not; a draft worker's frame around a target step makes it the draft's startup."""
    assert diagnose_paste(_traceback(frames)).phase is phase
