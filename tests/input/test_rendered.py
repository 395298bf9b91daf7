"""A traceback copied from a rendered page (memledger.input.wrappers.RENDERED): pasted without a
code fence, markdown shows `__init__` bold as `init` and drops each line's leading blanks, so a
copy of the page gives frames at column 0 with the dunder names' underscores gone. Synthetic
frames in CPython's traceback shape (`  File "PATH", line N, in NAME` and the code line); no real
log text."""

from __future__ import annotations

import io
import re

import pytest

from memledger.input.error_texts import FRAME_RE, known_shapes
from memledger.input.parsing import parse_log
from memledger.input.rewrap import short_joined
from memledger.input.wrappers import FUNCTION, MODULE, RENDERED, Rendered, unrendered_frame
from memledger.model.events import EventKind
from tests.conftest import diagnose_paste

_SITE = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
TRACEBACK = [
    "[2026-03-02 08:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    f'  File "{_SITE}/managers/scheduler.py", line 2990, in run_scheduler_process',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    f'  File "{_SITE}/managers/scheduler.py", line 310, in __init__',
    "    self.draft_worker = EAGLEWorker(",
    f'  File "{_SITE}/speculative/eagle_worker.py", line 113, in __init__',
    "    super().__init__(",
    f'  File "{_SITE}/managers/tp_worker.py", line 80, in __init__',
    "    self.model_runner = ModelRunner(",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.02 GiB is free.",
]

_STRONG = re.compile(r"(?<![\w*])__(?=\S)(.+?)(?<=\S)__(?![\w*])")


def rendered(line: str) -> str:
    """What a copy of the rendered page gives for a line pasted without a fence (CommonMark
    0.31: leading blanks dropped, `__x__` shown bold as x, runs of blanks shown as one)."""
    return re.sub(r"[ \t]+", " ", _STRONG.sub(r"\1", line.strip()))


def _frames(lines: list[str]) -> list[str]:
    parsed = parse_log(io.BytesIO(("\n".join(lines) + "\n").encode()), label="paste.txt")
    return [str(e.values["frames"]) for e in parsed.startup.events if e.kind is EventKind.TRACEBACK]


@pytest.mark.parametrize("row", RENDERED, ids=lambda r: f"{r.where}:{r.printed}")
def test_every_rendered_name_is_put_back_in_a_frame_a_page_showed(row: Rendered) -> None:
    assert row.source and row.where in (FUNCTION, MODULE)
    if row.where == MODULE:
        path, func = f"{_SITE}/x/{row.printed}.py", "run"
    else:
        path, func = f"{_SITE}/x/layer.py", row.printed
    printed = f'  File "{path}", line 12, in {func}'
    shown = rendered(printed)
    assert shown != printed.strip() and "__" not in shown
    assert unrendered_frame(shown) == printed.strip()
    assert FRAME_RE.match(unrendered_frame(shown)) is not None


def test_a_rendered_traceback_reads_as_the_printed_one() -> None:
    shown = [rendered(line) for line in TRACEBACK]
    assert shown[3].endswith(", in init") and not shown[3].startswith(" ")
    assert _frames(shown) == _frames(TRACEBACK)
    bare, copied = diagnose_paste(TRACEBACK), diagnose_paste(shown)
    assert bare.phase.value == "draft"  # the draft worker's constructor (failure_rules frames)
    assert (copied.outcome, copied.phase, copied.verdict) == (
        bare.outcome,
        bare.phase,
        bare.verdict,
    )


def test_a_frame_with_its_indentation_keeps_its_names() -> None:
    # a function named `init` (SGLang's KV senders have one, v0.5.8 disaggregation/common/
    # conn.py:219): printed so by Python, the frame is indented and read as printed
    frame = f'  File "{_SITE}/disaggregation/common/conn.py", line 219, in init'
    assert unrendered_frame(frame) == frame
    assert _frames([TRACEBACK[0], frame, "    self.init(1)", "RuntimeError: x"]) == [
        "srt/disaggregation/common/conn.py:219 init"
    ]


def test_a_rendered_frame_and_its_code_line_stay_two_lines() -> None:
    # the code line a page left at column 0 goes on in lower case, as a cut name's rest would
    frame = rendered(f'  File "{_SITE}/managers/scheduler.py", line 1196, in run_scheduler_process')
    lines = [frame, "scheduler.event_loop_normal()", "RuntimeError: CUDA error: out of memory"]
    assert short_joined(("\n".join(lines) + "\n").encode(), known_shapes) is None
    cut = [frame[:-4], frame[-4:], lines[2]]  # a terminal's cut in the name is joined
    assert short_joined(("\n".join(cut) + "\n").encode(), known_shapes) is not None
