"""Security review F11: a serving-time line glued to another SGLang line drops only itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from memledger.input.facts import facts_of
from memledger.input.parsing import parse_log
from memledger.model.events import EventKind
from tests.input.helpers import physical_lines, real_log, truth_facts
from tests.security.helpers import log_text, run, write_log

pytestmark = pytest.mark.real_logs

NAME = "single/022-grok2-tp8-h100-k8s-v0.5.2rc2"
DECODE = "[2025-02-04 05:29:16 TP0] Decode batch. #running-req: 1, #token: 5, token usage: 0.00"


def _glued(tmp_path: Path, before: str, after: str = "") -> tuple[Path, int]:
    lines = physical_lines(real_log(NAME))
    at = next(i for i, line in enumerate(lines) if "KV Cache is allocated" in line)
    lines[at] = before + lines[at] + after
    target = tmp_path / "glued.log"
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target, at + 1


def test_a_startup_line_after_a_glued_decode_line_is_read(tmp_path: Path) -> None:
    glued, _ = _glued(tmp_path, DECODE)
    truth = truth_facts(real_log(NAME))
    facts = facts_of(parse_log(glued))
    assert (facts["kv_tokens"], facts["k_size"], facts["kv_size"]) == (
        truth["kv_tokens"],
        truth["k_size"],
        truth["kv_size"],
    )


def test_an_oom_line_glued_to_a_decode_line_decides_the_outcome(tmp_path: Path) -> None:
    oom = (
        "[2025-02-04 05:29:20 TP0] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB "
    )
    glued, line = _glued(tmp_path, "", "\n" + oom + DECODE)
    parsed = parse_log(glued)
    assert parsed.startup.outcome == "oom" and parsed.startup.outcome_line == line + 1


def test_a_decode_line_alone_is_still_skipped(tmp_path: Path) -> None:
    glued, line = _glued(tmp_path, "", "\n" + DECODE + ", 3.00 GB")
    parsed = parse_log(glued)
    # read only as the serving batch it is (the last one before the next candidate line), its
    # size never as a memory reading
    kinds = {event.kind for event in parsed.startup.events if event.line == line + 1}
    assert kinds == {EventKind.SERVING_BATCH}
    assert all(u.line != line + 1 for u in parsed.startup.unrecognised)


# --- A decode-batch line glued to a memory line drops only itself.


def test_a_glued_decode_batch_drops_only_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decode = "[2025-02-04 05:29:16 TP0] Decode batch. #running-req: 1, #token: 5"
    lines = log_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "KV Cache is allocated" in line)
    lines[at] = decode + lines[at]  # the review's glued.log
    glued = tmp_path / "glued.log"
    glued.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, "ledger", glued, "--explain", "kv_pool")
    assert code == 0 and "5.640 GiB" in out and "logged" in out
    oom = (
        "[2025-02-04 05:29:20 TP0] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB "
    )
    hidden = write_log(tmp_path, "oomhide.log", extra=oom + decode + "\n")  # the review's file
    code, out, _ = run(capsys, "parse", hidden)
    assert code == 0 and "outcome:   oom (line 11" in out
