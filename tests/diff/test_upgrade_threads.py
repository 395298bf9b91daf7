"""Real threads about an SGLang upgrade or a flag change that moved the KV pool, graphs or caused
an OOM, which memledger had not seen: the short fragment each quotes (with its URL), what the
thread found, and what `memledger diff FRAGMENT --against-release X` answers.

Each test below is one thread: (found) what the thread found; (before) memledger at 2f689a7;
(after) now.

- sglang PR #5893, H200 upgrade to 0.4.6. Found: 0.4.6 kept 13 GiB on >80 GiB GPUs while the
  graphs went to bs 256 (+~3 GB): OOM at TP 8; 0.4.6.post2 keeps 18 GiB. Before: disagree
  ("none for this GPU"). After: agree (both 0.4.6 changes and 0.4.6.post2's named, cited).
- sglang PR #5634, H200 at DP 8. Found: bs-256 capture with DP attention OOMs; bs 256 only
  without DP. Before: disagree (nothing crossed). After: agree (no bs 256 with DP at 0.4.6,
  with DP from 0.4.6.post2).
- sglang #10868 / PR #20063. Found: with DP attention the request table took the global
  max_running_requests; per DP since. Before: partly (the right change, plus piecewise graphs,
  which DP attention turns off, and the default max_running_requests cap, which a given
  --max-running-requests never meets). After: agree.
- sglang #29092, H100 Qwen3-32B. Found: the default is computed, 0.828, not the documented
  0.9. Before: disagree (0.835 at 0.5.10, equal to 0.5.9's while listing the piecewise change).
  After: partly (0.830 at 0.5.10; the thread ran a later main).

The other threads of the table (InferenceX #2128, sglang PR #13466, PR #35996, PR #38272,
PR #25199, #24453) are graded in the report: their fragments hold one side only or no log line.
"""

from __future__ import annotations

import io

from memledger.api import against_release
from memledger.compare.upgrade_models import AgainstRelease

H200_MIB = 143771
"""nvidia-smi's capacity of an H200 / H20-3e (141 GB), as sglang #6418 pastes it."""
H100_MIB = 81559

PR5893 = (
    "[2025-04-29 16:19:34 TP7] Capture cuda graph end. Time elapsed: 56.90 s. "
    "mem usage=6.22 GB. avail mem=5.61 GB.\n"
)
"""https://github.com/sgl-project/sglang/pull/5893 ("capture bs 256 with DeepGEMM")."""
PR5634 = (
    "SGL_ENABLE_JIT_DEEPGEMM=1 python3 -m sglang.launch_server --model /DeepSeek-V3 --tp 8 "
    "--trust-remote-code --enable-dp-attention --dp-size 8\n"
)
"""https://github.com/sgl-project/sglang/pull/5634 (the command that hung on H200: OOM)."""
ISSUE10868 = (
    "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --dp 8 "
    "--enable-dp-attention --max-running-requests 128\n"
)
"""https://github.com/sgl-project/sglang/issues/10868 (the flags it describes: DP attention with
--max-running-requests), fixed by https://github.com/sgl-project/sglang/pull/20063."""
ISSUE29092 = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B\n"
"""https://github.com/sgl-project/sglang/issues/29092 ("Qwen3 32 B ... 0.828 for H100")."""


def _answer(fragment: str, other: str, log: str, gpu: int) -> AgainstRelease:
    return against_release(io.StringIO(fragment), other, log_release=log, gpu_memory_mib=gpu)


def _ids(answer: AgainstRelease) -> list[str]:
    return [c.id for c in answer.defaults_crossed]


def _fraction(answer: AgainstRelease) -> tuple[str | None, str | None]:
    row = next(s for s in answer.settings if s.setting == "mem_fraction_static")
    return row.log_default, row.other_default


def test_pr5893_h200_upgrade_to_046_crosses_the_13_gib_reserve_and_bs256_graphs() -> None:
    answer = _answer(PR5893, "0.4.5", "0.4.6", H200_MIB)
    ids = _ids(answer)
    # v0.4.6 server_args.py:223-238 and cuda_graph_runner.py:125-139, then 0.4.6.post2's 18 GiB
    assert ids[:2] == ["cuda_graph_bs_256_large_gpu", "mfs_large_gpu_reserve_13g"]
    assert {"mfs_large_gpu_reserve_18g", "cuda_graph_bs_256_with_dp"} <= set(ids[2:])
    crossed = {c.id: c for c in answer.defaults_crossed}
    assert crossed["mfs_large_gpu_reserve_13g"].certain
    assert "v0.4.6 server_args.py:223-238" in crossed["mfs_large_gpu_reserve_13g"].new_source
    assert crossed["cuda_graph_bs_256_large_gpu"].effect == "slack"
    # the same upgrade on an 80 GiB H100 crosses none of them (`gpu_mem > 81920`)
    h100 = _ids(_answer(PR5893, "0.4.5", "0.4.6", H100_MIB))
    assert not {"mfs_large_gpu_reserve_13g", "cuda_graph_bs_256_large_gpu"} & set(h100)


def test_pr5634_dp_attention_gets_bs256_graphs_only_from_046_post2() -> None:
    answer = _answer(PR5634, "0.4.5", "0.4.6", H200_MIB)
    ids = _ids(answer)
    # v0.4.6 cuda_graph_runner.py:137-138 `dp_size == 1`; v0.4.6.post2 :139-142 any dp_size
    assert "cuda_graph_bs_256_large_gpu" not in ids
    assert "cuda_graph_bs_256_with_dp" in ids and "mfs_large_gpu_reserve_13g" in ids
    # --tp 8 read off the pasted command: 0.4.5's TP table gives 0.81 (v0.4.5 :232-243)
    assert _fraction(answer)[1] == "0.810"


def test_issue10868_dp_attention_crosses_the_per_dp_table_not_piecewise_graphs() -> None:
    ids = _ids(_answer(ISSUE10868, "0.5.9", "0.5.10", H200_MIB))
    assert "req_to_token_per_dp" in ids
    # v0.5.10 server_args.py:1091-1093: DP attention turns piecewise graphs off
    assert "piecewise_graphs_on" not in ids
    # --max-running-requests 128 is given: the changed default (min(., T // 2)) never applies
    assert "max_running_requests_half_tokens" not in ids
    unset = ISSUE10868.replace(" --max-running-requests 128", "")
    assert "max_running_requests_half_tokens" in _ids(_answer(unset, "0.5.9", "0.5.10", H200_MIB))


def test_issue29092_h100_default_at_0510_carries_the_piecewise_reserve() -> None:
    answer = _answer(ISSUE29092, "0.5.9", "0.5.10", H100_MIB)
    at_0510, at_059 = _fraction(answer)
    # 0.5.10: 512 + 8192 x 1.5 + 256 x 2 + 1024 / 8 + 58 prefill sizes x 8 = 13,904 MiB
    # (v0.5.10 server_args.py:1280-1311): (81,559 - 13,904) / 81,559 = 0.830; 0.5.9 has no
    # piecewise term: 13,440 MiB, 0.835. The thread's 0.828 is a later main's.
    assert (at_0510, at_059) == ("0.830", "0.835")
    assert "piecewise_graphs_on" in _ids(answer)
    # a pasted command that turns them off (v0.5.10 :1104-1105) keeps 0.5.9's reserve
    flag = " --moe-a2a-backend deepep\n"
    off = _answer(ISSUE29092.strip() + flag, "0.5.9", "0.5.10", H100_MIB)
    assert _fraction(off)[0] == "0.835"
