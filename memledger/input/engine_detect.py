"""Which engine wrote a log: SGLang, vLLM, or neither (the evidence counted line by line).

SGLang's lines carry its prefix (`[2025-06-01 12:00:00 TP0] `) and its memory wording
(`avail mem=`, `KV Cache is allocated`, `ServerArgs(`); vLLM's carry its logger header
(`INFO 06-01 12:00:00 [gpu_worker.py:298] `, `worker.py:241] ` before 2025), its process tags
(`(EngineCore_DP0 pid=N)`, `(VllmWorkerProcess pid=N)`) or one of its memory or failure texts
(`memledger.vllm.lines`, `memledger.vllm.errors`). The engine with more evidence lines wins; a
log with SGLang evidence and none of vLLM's stays SGLang (every SGLang path is unchanged).
Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memledger.input.vllm_reader import looks_like_vllm

SGLANG = "sglang"
VLLM = "vllm"

_SGLANG_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: (?:DP|TP|PP|EP|CP)\d+)*\] ")
_SGLANG_WORDS = (
    "avail mem=",
    "KV Cache is allocated",
    "ServerArgs(",
    "sglang.launch_server",
    "sglang/srt/",
    "Capture cuda graph",
    "mem_fraction_static",
)
_SGLANG_NAMED = re.compile(r"\bsglang\b", re.IGNORECASE)
"""SGLang named in a line (prose, a flag, a path): a reporter's sentence that names both engines
is no vLLM log."""
_VLLM_HEADER = re.compile(
    r"(?:INFO|WARNING|ERROR|DEBUG)\s+\d\d-\d\d \d\d:\d\d:\d\d (?:\[[\w.]{1,80}(?::\d+)?\]|"
    r"[\w.]{1,80}\.py:\d+\])"
)
_VLLM_WORDS = ("vllm/", "vllm serve", "VLLM_")
_VLLM_MODULE = re.compile(r"\bvllm\.[A-Za-z_]")
"""vLLM's own text: a module path (`vllm.engine.llm_engine`), a file path, its CLI, its
environment variables. Not its name: a reporter's `vLLM works with the same model` or `switched
from vLLM` is prose around a paste, and a paste holding nothing of vLLM's log is not a vLLM log
(the SGLang path reads its failure text)."""
_MAX_LINES = 200_000
"""Lines looked at (a startup's evidence is at its start; a long serving log is not read whole)."""


@dataclass(frozen=True)
class Detection:
    """The engine (`sglang`, `vllm` or None) and the evidence behind it."""

    engine: str | None
    sglang_lines: int
    vllm_lines: int
    first_vllm_line: int | None = None

    def describe(self) -> str:
        if self.engine is None:
            return "neither an SGLang nor a vLLM log (no line of either engine's shapes)"
        return (
            f"{'SGLang' if self.engine == SGLANG else 'vLLM'} log ({self.sglang_lines} SGLang-"
            f"shaped line(s), {self.vllm_lines} vLLM-shaped line(s))"
        )


def detect_engine(lines: Iterable[str]) -> Detection:
    """Count each engine's evidence lines in `lines` (at most `_MAX_LINES` of them)."""
    sglang = vllm = 0
    first: int | None = None
    for number, line in enumerate(lines, start=1):
        if number > _MAX_LINES:
            break
        text = line[:4096]
        if (
            _SGLANG_PREFIX.search(text)
            or any(w in text for w in _SGLANG_WORDS)
            or _SGLANG_NAMED.search(text)
        ):
            sglang += 1
            continue
        if (
            _VLLM_HEADER.search(text)
            or any(w in text for w in _VLLM_WORDS)
            or _VLLM_MODULE.search(text)
            or looks_like_vllm(text)
        ):
            vllm += 1
            if first is None:
                first = number
    if sglang == 0 and vllm == 0:
        return Detection(None, 0, 0)
    engine = VLLM if vllm > sglang else SGLANG
    return Detection(engine, sglang, vllm, first)
