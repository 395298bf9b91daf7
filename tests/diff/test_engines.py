"""`memledger diff sglang.log vllm.log`: rows align by group and the KV difference is explained
by what each engine's budget covers (synthetic vLLM lines; the packaged SGLang sample)."""

from __future__ import annotations

import json
from pathlib import Path

from memledger.app.diff import diff_of, run_diff
from memledger.app.options import DiffOptions, DiffSide
from tests.conftest import PROJECT_ROOT
from tests.vllm.test_sizing import V0_ONE_LINE

VLLM = V0_ONE_LINE  # a V0 startup: weights, the profiling line, blocks, concurrency


def _vllm(tmp_path: Path) -> Path:
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(VLLM) + "\n")
    return path


def test_cross_engine_diff_explains_the_budgets(tmp_path: Path) -> None:
    sglang = PROJECT_ROOT / "samples" / "dp2.log"
    diff = diff_of(DiffOptions(base=DiffSide(sglang), head=DiffSide(_vllm(tmp_path))))
    assert diff.upgrade is None and diff.engines is not None
    assert (diff.engines.base.engine, diff.engines.head.engine) == ("sglang", "vllm")
    text = "\n".join(diff.engines.lines)
    assert "mem_fraction_static" in text and "gpu_memory_utilization 0.88" in text
    assert "activation peak 23.15 GiB" in text  # 36.42 peak - 13.27 weights, held out of KV
    # rows align by meaning: each side's KV row lands in the state-pool group
    assert any(g.id == "state_pool" and g.base_bytes and g.head_bytes for g in diff.groups)
    document = json.loads(
        run_diff(
            DiffOptions(base=DiffSide(sglang), head=DiffSide(_vllm(tmp_path)), fmt="json")
        ).text
    )
    assert document["engines"]["head"]["fraction"] == 0.88 and "upgrade" not in document


def test_one_engine_diff_has_no_engine_section() -> None:
    sample = PROJECT_ROOT / "samples" / "dp2.log"
    diff = diff_of(DiffOptions(base=DiffSide(sample), head=DiffSide(sample)))
    assert diff.engines is None
    document = json.loads(
        run_diff(DiffOptions(base=DiffSide(sample), head=DiffSide(sample), fmt="json")).text
    )
    assert "engines" not in document
