"""Hostile-input fixtures of the security review (shared/docs/review-security.md): one base log
whose fields a test overrides, and an in-process CLI runner that returns (rc, stdout, stderr)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli

# The review's `mklog.py` template: a complete single-GPU startup, 11 lines.
BASE_LOG = """\
[2025-02-04 05:21:39] server_args=ServerArgs(model_path='{model}', served_model_name='qwen', \
tp_size=1, dp_size={dp}, mem_fraction_static={mfs}, max_running_requests=256, \
context_length=131072, page_size={page})
[2025-02-04 05:21:40 TP0] Init torch distributed begin.
[2025-02-04 05:21:40 TP0] Init torch distributed ends. mem usage=0.50 GB
[2025-02-04 05:21:40 TP0] Load weight begin. avail mem={avail} GB
[2025-02-04 05:29:17 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, \
avail mem=8.37 GB, mem usage=14.00 GB.
[2025-02-04 05:29:17 TP0] KV Cache is allocated. #tokens: {tokens}, K size: 2.82 GB, \
V size: 2.82 GB.
[2025-02-04 05:29:17 TP0] Memory pool end. avail mem=2.68 GB
[2025-02-04 05:29:18 TP0] Capture cuda graph begin. This can take up to several minutes. \
avail mem=2.60 GB
[2025-02-04 05:29:19 TP0] Capture cuda graph end. Time elapsed: 1.79 s, mem usage=0.50 GB, \
avail mem=2.10 GB.
[2025-02-04 05:29:20 TP0] max_total_num_tokens=105531, chunked_prefill_size=2048, \
max_prefill_tokens=16384, max_running_requests=256, context_len=131072
{extra}[2025-02-04 05:29:21] The server is fired up and ready to roll!
"""
DEFAULTS = {
    "model": "/models/qwen",
    "dp": "1",
    "mfs": "0.88",
    "page": "1",
    "avail": "22.76",
    "tokens": "105531",
    "extra": "",
}
HUGE = "1" + "0" * 400
"""A 401-digit integer: far beyond any float and any byte count."""


def log_text(**fields: str) -> str:
    return BASE_LOG.format(**{**DEFAULTS, **fields})


def write_log(tmp_path: Path, name: str = "base.log", **fields: str) -> Path:
    path = tmp_path / name
    path.write_text(log_text(**fields), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """The CLI in-process; a traceback would propagate and fail the test."""
    return run_cli(args, capsys)
