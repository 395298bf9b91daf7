"""diagnose on logs as people paste them: no SGLang prefix, alignment and notes, another rank
only, a traceback alone. Every input is rewritten in the test from a real log of
../shared/real-logs (prefixes stripped, notes added, lines cut) plus an error text written from
PyTorch's shape; nothing of the corpus is copied into the repository."""

from __future__ import annotations

import re

import pytest

from memledger.diagnosis import Diagnosis
from memledger.sglang.lifecycle import MEMORY_KNOBS
from memledger.units import GIB, MIB
from tests.conftest import diagnose_paste
from tests.input.helpers import physical_lines, real_log

pytestmark = pytest.mark.real_logs

PREFIX = re.compile(r"^\[[^\]]*\] ")
OOM_TEXT = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU {gpu} has a "
    "total capacity of 19.67 GiB of which 812.00 MiB is free. Of the allocated memory 12.10 GiB "
    "is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but unallocated."
)


def _diagnose(lines: list[str]) -> Diagnosis:
    return diagnose_paste(lines)


def _rank_lines(name: str, tag: str) -> list[str]:
    """One rank's lines of a real log with the SGLang prefix stripped (a terminal copy)."""
    parts = [part for line in physical_lines(real_log(name)) for part in line.split("\r")]
    return [
        PREFIX.sub("", part)
        for part in parts
        if part.startswith("[") and f" {tag}]" in part.split("] ", 1)[0] + "]"
    ]


def _memory_lines(lines: list[str]) -> list[str]:
    keep = ("Load weight", "KV Cache", "Memory pool", "Capture cuda graph")
    return [line for line in lines if line.startswith(keep)]


def test_bare_lines_and_an_oom_in_capture() -> None:
    pasted = _memory_lines(_rank_lines("single/003", "TP0")) + [OOM_TEXT.format(gpu=0)]
    result = _diagnose(pasted)
    assert (result.outcome, result.phase.value) == ("oom", "graph_capture")
    assert result.shortfall_bytes == round(1.5 * GIB) - 812 * MIB
    (mfs,) = [s for s in result.suggestions if s.knob == "mem_fraction_static"]
    # no server_args in a paste: mfs is the one the pools imply; lowering it by
    # shortfall / P (P = 18.73 GiB, TP0 load begin) frees the bytes after the pool
    assert mfs.direction.value == "lower" and mfs.value is not None
    assert "18.73 GiB" in mfs.why
    assert result.verdict.startswith("OOM during CUDA-graph capture: 0.71 GiB short; lower")


def test_aligned_annotated_and_abridged_lines() -> None:
    lines = _memory_lines(_rank_lines("single/003", "TP0"))
    noted = []
    for line in lines:
        if line.startswith("Memory pool end"):
            line = line.replace("avail mem=", "avail mem=   ") + "   <- only this much left?"
        if line.startswith("Load weight end"):
            line = line.replace("type=Qwen3ForCausalLM, ", "... ")
        noted.append(line)
    result = _diagnose([*noted, "...", "   " + OOM_TEXT.format(gpu=0) + "   <- then this"])
    assert (result.outcome, result.phase.value) == ("oom", "graph_capture")
    slack = next(f for f in result.findings if f.id == "allocation_exceeds_slack")
    assert "6.44 GiB was free at Memory pool end" in slack.message


def test_another_ranks_lines_only() -> None:
    # TP1's lines of single/003, still prefixed: no rank 0 in the paste
    lines = [
        line
        for line in physical_lines(real_log("single/003"))
        if line.startswith("[") and " TP1]" in line and "Capturing" not in line
    ]
    lines.append(OOM_TEXT.format(gpu=1))
    result = _diagnose(lines)
    assert result.rank == "TP1"
    assert (result.outcome, result.phase.value) == ("oom", "graph_capture")
    mfs = next(s for s in result.suggestions if s.knob == "mem_fraction_static")
    assert "19.15 GiB" in mfs.why  # TP1's own load-begin avail, not TP0's 18.73


def test_a_pasted_traceback_alone_gets_no_memory_knob() -> None:
    lines = physical_lines(real_log("single/007"))
    start = next(i for i, line in enumerate(lines) if "Scheduler hit an exception" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("TypeError"))
    pasted = [PREFIX.sub("", lines[start])] + lines[start + 1 : end + 1]
    result = _diagnose(pasted)
    assert (result.outcome, result.phase.value) == ("crash", "graph_capture")
    assert not {s.knob for s in result.suggestions} & MEMORY_KNOBS
    assert result.verdict.endswith("not a memory problem")


def test_a_pasted_sglang_refusal_with_its_load_lines() -> None:
    lines = _memory_lines(_rank_lines("single/003", "TP0"))
    cut = next(i for i, line in enumerate(lines) if line.startswith("Load weight end"))
    refusal = (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.05"
    )
    result = _diagnose([*lines[: cut + 1], refusal])
    assert (result.outcome, result.phase.value) == ("oom", "kv_sizing")
    raised = result.suggestions[0]
    # minimum viable = 1 - A/P = 1 - 17.22/18.73 = 0.0806 -> the first 0.01 step above: 0.09
    assert (raised.knob, raised.direction.value, raised.value) == (
        "mem_fraction_static",
        "raise",
        0.09,
    )
