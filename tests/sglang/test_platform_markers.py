"""Issue 10, words per platform: a ROCm or Ascend log whose server_args and OOM text do not say
the platform still gets its words, from a line only that platform's stack prints
(sglang.lines.PLATFORM_MARKERS); a CUDA log never does."""

from __future__ import annotations

from pathlib import Path

import pytest

from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from memledger.model.ledger import Ledger, Row, RowGroup
from memledger.sglang.lines import PLATFORM_MARKERS, platform_marker
from tests.conftest import SAMPLES, ledger_for, real_log, real_log_paths


def nccl(found: Ledger) -> Row:
    match = found.row("nccl_init")
    assert match is not None, [r.id for r in found.rows]
    return match


def headroom_notes(found: Ledger) -> str:
    rows = [r for r in found.rows if r.group is RowGroup.RUNTIME_HEADROOM]
    return " ".join(r.evidence.note or "" for r in rows)


@pytest.mark.parametrize(
    ("name", "collectives", "graph", "line"),
    [
        ("single/007", "RCCL", "HIP graph", 19),  # `[aiter] import [module_aiter_enum] ...`
        ("single/014", "RCCL", "HIP graph", 53),  # `Failed to import amdsmi with ...`
        ("single/015", "RCCL", "HIP graph", 39),
        ("complex/009", "RCCL", "HIP graph", 39),
        ("complex/019", "RCCL", "HIP graph", 20),  # `INFO: Please install aiter ...` (DCU)
        ("complex/023", "RCCL", "HIP graph", 2),
        ("complex/014", "HCCL", "NPU graph", 41),  # `HCCL DP prewarm start: rank=2`
    ],
)
def test_a_platform_only_line_gives_the_platform_words(
    name: str, collectives: str, graph: str, line: int | None
) -> None:
    found = ledger_for(name)
    row = nccl(found)
    assert row.id == "nccl_init" and collectives in row.label and "NCCL" not in row.label
    notes = headroom_notes(found)
    assert "CUDA graph" not in notes
    if "was captured" in notes:
        assert f"no {graph} was captured" in notes
    markers = [
        e for e in parse_log(real_log(name)).startup.events if e.kind is EventKind.PLATFORM_MARKER
    ]
    platform = "ascend" if collectives == "HCCL" else "rocm"
    assert markers and {e.values["platform"] for e in markers} == {platform}
    if line is not None:
        assert markers[0].line == line


@pytest.mark.parametrize("name", ["single/014", "complex/014"])
def test_the_no_graph_note_names_the_platforms_graph(name: str) -> None:
    notes = headroom_notes(ledger_for(name))
    assert "no HIP graph was captured" in notes or "no NPU graph was captured" in notes


@pytest.mark.parametrize("log", [SAMPLES / "dp16.log", "single/012"])
def test_a_cuda_log_keeps_the_cuda_words(log: Path | str) -> None:
    assert "NCCL" in nccl(ledger_for(log)).label
    path = real_log(log) if isinstance(log, str) else log
    kinds = {e.kind for e in parse_log(path).startup.events}
    assert EventKind.PLATFORM_MARKER not in kinds and EventKind.LOAD_BEGIN in kinds


def test_markers_only_in_rocm_and_ascend_real_logs() -> None:
    # each marker is specific: it occurs only in logs of its platform (by file name: MI355X,
    # R9700/RDNA4, Hygon DCU are ROCm; Ascend is Ascend), never in a CUDA log
    rocm_names = ("mi355x", "r9700", "rdna4", "hygon-dcu")
    for path in real_log_paths():
        with open(path, encoding="utf-8", errors="replace") as log:
            found = {m.platform for text in log if (m := platform_marker(text)) is not None}
        if found:
            expected = "ascend" if "ascend" in path.name else "rocm"
            assert found == {expected}, path.name
            assert expected == "ascend" or any(n in path.name for n in rocm_names), path.name


def test_marker_match_is_exact_text() -> None:
    assert platform_marker("INFO:aiter:import [module_aiter_enum]") is None  # needs `[aiter] `
    assert platform_marker("[2026-01-01 TP0] Failed to import pynvml with X") is None
    assert {m.platform for m in PLATFORM_MARKERS} == {"rocm", "ascend"}
