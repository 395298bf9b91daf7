"""Causes outside SGLang's arithmetic that a paste shows: another process in nvidia-smi's process
table, WSL2's driver named beside a stage's own levers, and the OOM text's private-pool memory
(in English or retold in Chinese), which places an OOM after the weights and no further.

Synthetic lines in each family's shape; no thread text.
"""

from __future__ import annotations

import pytest

from memledger.render.diagnose import render_text
from memledger.sglang.env_reports import held_by_others, report_evidence
from tests.conftest import diagnose_paste

BORDER, RULE = "+" + "-" * 89 + "+", "|" + "=" * 89 + "|"
SMI_HEAD = [
    BORDER,
    "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |",
    "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
]
GPU0 = [
    "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |",
    "| N/A   35C    P0             70W /  700W |   22215MiB /  81559MiB |      0%      Default |",
]
GPU1 = [
    "|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |",
    "| N/A   33C    P0             69W /  700W |       4MiB /  81559MiB |      0%      Default |",
]
PROCS = [
    "| Processes:                                                                              |",
    "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
    RULE,
]


def _proc(gpu: int, pid: int, name: str, mib: int, *, mig: bool = True) -> str:
    """A process row as nvidia-smi prints it (GI and CI columns from driver 450 on)."""
    cols = (
        f"|    {gpu}   N/A  N/A  {pid:>9}      C   " if mig else f"|    {gpu}  {pid:>9}      C   "
    )
    return f"{cols}{name:<40} {mib:>6}MiB |"


def _table(*rows: str) -> list[str]:
    return [*SMI_HEAD, *GPU0, *GPU1, *PROCS, *rows]


def _held(lines: list[str]) -> list[tuple[int, int, tuple[str, ...]]]:
    read = [(i, dict(found[1])) for i, line in enumerate(lines) if (found := report_evidence(line))]
    return [(h.gpu, h.mib, tuple(p[0] for p in h.processes)) for h in held_by_others(read)]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # another program: counted whatever this server's rows are
        (
            [_proc(0, 12345, "/usr/local/bin/ollama", 22206)],
            [(0, 22206, ("/usr/local/bin/ollama",))],
        ),
        # the same before driver 450 (no GI/CI columns)
        ([_proc(0, 777, "Xvfb", 3000, mig=False)], [(0, 3000, ("Xvfb",))]),
        # SGLang's scheduler and a second one on the same GPU: one is another server's
        (
            [
                _proc(0, 10, "sglang::scheduler_TP0", 70000),
                _proc(0, 11, "sglang::scheduler_TP0", 9000),
                _proc(1, 12, "sglang::scheduler_TP1", 70000),
            ],
            [(0, 9000, ("sglang::scheduler_TP0",))],
        ),
        # the scheduler beside a Python process (its own front end may use the GPU): not counted
        ([_proc(0, 10, "sglang::scheduler_TP0", 70000), _proc(0, 9, "python3", 900)], []),
        # no scheduler listed: the largest interpreter is taken as this server, the rest not
        (
            [_proc(0, 20, "/usr/bin/python3", 60000), _proc(0, 21, "python", 12000)],
            [(0, 12000, ("python",))],
        ),
        # a Ray trainer beside SGLang (RL colocation)
        (
            [_proc(1, 30, "sglang::scheduler_TP1", 40000), _proc(1, 31, "ray::WorkerDict", 30000)],
            [(1, 30000, ("ray::WorkerDict",))],
        ),
    ],
)
def test_the_process_table_counts_what_is_not_this_server(
    rows: list[str], expected: list[tuple[int, int, tuple[str, ...]]]
) -> None:
    assert _held(_table(*rows)) == expected


LOAD_OOM = [
    "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2.5-72B-Instruct', "
    "tp_size=2, mem_fraction_static=0.88)",
    "[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=56.90 GB",
    "[2025-06-01 10:01:05 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 643, in load_model',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 512.00 MiB is free.",
]
OLLAMA = _table(_proc(0, 12345, "/usr/local/bin/ollama", 22206))


def _shapes(lines: list[str]) -> list[str]:
    """The paste as typed, with CRLF ends (a Windows console), and indented (a Markdown list)."""
    text = "\n".join(lines) + "\n"
    return [text, text.replace("\n", "\r\n"), "".join(f"    {line}\n" for line in lines)]


@pytest.mark.parametrize("paste", _shapes(LOAD_OOM + OLLAMA) + _shapes(OLLAMA + LOAD_OOM))
def test_a_load_oom_beside_another_process_leads_with_it(paste: str) -> None:
    result = diagnose_paste(paste)
    assert result.phase.value == "load"
    assert result.verdict.startswith(
        "OOM during weight loading: 0.50 GiB short; 21.69 GiB of the GPU is held by another "
        "process: free it; else raise --tp-size"
    )
    (held,) = [f for f in result.findings if f.id == "other_processes"]
    assert held.bytes == 22206 * 2**20
    assert "/usr/local/bin/ollama (pid 12345) with 21.69 GiB on GPU 0" in held.message
    assert "CUDA_VISIBLE_DEVICES" in held.message
    assert "--mem-fraction-static" not in held.message  # the weights load before any fraction


def test_an_oom_said_in_words_beside_another_process_gives_the_fractions_step() -> None:
    paste = ["SGLang crashed with CUDA out of memory after a while.", *OLLAMA]
    result = diagnose_paste(paste)
    assert result.verdict.startswith(
        "OOM during an unknown phase; 21.69 GiB of the GPU is held by another process: free it, "
        "or lower --mem-fraction-static by as much"
    )
    (held,) = [f for f in result.findings if f.id == "other_processes"]
    # P is not in the paste: at least 21.69 / 79.65 (the memory row's total), rounded up
    assert "lower --mem-fraction-static by at least 0.28 (21.69 GiB / the GPU's 79.65 GiB)" in (
        held.message
    )


READY = [
    "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2.5-7B-Instruct', "
    "tp_size=1, mem_fraction_static=0.88)",
    "[2025-06-01 10:00:05] Load weight begin. avail mem=57.40 GB",
    "[2025-06-01 10:00:35] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail "
    "mem=43.10 GB, mem usage=14.30 GB.",
    "[2025-06-01 10:00:36] KV Cache is allocated. #tokens: 644000, K size: 17.20 GB, V size: "
    "17.20 GB",
    "[2025-06-01 10:00:36] Memory pool end. avail mem=8.40 GB",
    "[2025-06-01 10:00:55] The server is fired up and ready to roll!",
]


def test_a_ready_pool_beside_another_process_says_what_the_pool_lost() -> None:
    result = diagnose_paste(READY + OLLAMA)
    assert result.outcome == "ready"
    assert result.verdict.endswith(
        "; but 21.69 GiB of the GPU is held by another process (nvidia-smi lists it): free it or "
        "run on another GPU (CUDA_VISIBLE_DEVICES)"
    )
    (held,) = [f for f in result.findings if f.id == "other_processes"]
    assert held.severity.value == "warning"
    assert "the KV pool is about mfs 0.88 x 21.69 GiB = 19.08 GiB smaller" in held.message


def test_a_balance_check_beside_another_process_names_it_without_a_fraction() -> None:
    crash = [
        "[2025-06-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)",
        "[2025-06-01 10:00:05 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 620, in '
        "init_torch_distributed",
        "ValueError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
        "processes. min_per_gpu_memory=56.12, local_gpu_memory=78.90, local_gpu_memory * "
        "0.9=71.01",
    ]
    result = diagnose_paste(crash + OLLAMA)
    assert (result.outcome, result.phase.value) == ("crash", "dist_init")
    assert "21.69 GiB of the GPU is held by another process (nvidia-smi lists it)" in result.verdict
    (held,) = [f for f in result.findings if f.id == "other_processes"]
    assert "--mem-fraction-static" not in held.message


def test_a_table_of_this_server_alone_says_nothing() -> None:
    table = _table(_proc(0, 10, "sglang::scheduler_TP0", 70000), _proc(0, 11, "Xorg", 40))
    result = diagnose_paste(READY + table)
    assert not [f for f in result.findings if f.id == "other_processes"]
    assert "another process" not in result.verdict


MAMBA_OOM = [
    "SGLang 0.5.10 cannot allocate the Mamba pool of a hybrid model under WSL2 Ubuntu 22.04.",
    '  File "/env/lib/python3.10/site-packages/sglang/srt/mem_cache/memory_pool.py", line 499, in '
    "_init_mamba_pool",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 18.56 GiB.",
]


def test_memory_held_outside_the_process_leads_over_a_stages_levers() -> None:
    # an environment cause that explains the shortfall leads (Mention.outside); the Mamba pool's
    # levers follow it, the frame places the OOM in the pools
    result = diagnose_paste(MAMBA_OOM)
    assert result.phase.value == "memory_pool"
    wsl, mamba = result.verdict.find("WSL2, whose"), result.verdict.find("Mamba state pool")
    assert 0 < wsl < mamba
    assert "run under native Linux" in result.verdict
    other = [MAMBA_OOM[0].replace("under WSL2", "while an orphan process still held memory")]
    result = diagnose_paste(other + MAMBA_OOM[1:])
    assert result.verdict.find("another process holds GPU memory") < result.verdict.find("Mamba")


PRIVATE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a total "
    "capacity of 95.00 GiB of which 380.31 MiB is free. Of the allocated memory 85.71 GiB is "
    "allocated by PyTorch, with 1.33 GiB allocated in private pools (e.g., CUDA Graphs), and "
    "240.17 MiB is reserved by PyTorch but unallocated."
)
PRIVATE_ZH = (
    "错误日志显示,GPU7尝试分配448MB内存失败,而此时该GPU上仅有380.31MB空闲内存。PyTorch已分配了"
    "85.71GB内存,其中1.33GB用于CUDA Graphs等私有池,240.17MB为预留但未分配的内存。"
)


@pytest.mark.parametrize("text", [PRIVATE, PRIVATE_ZH, "部署时CUDA内存不足。\n" + PRIVATE_ZH])
def test_private_pool_memory_places_an_oom_after_the_weights_and_no_further(text: str) -> None:
    result = diagnose_paste(text)
    assert (result.outcome, result.phase.value) == ("oom", "unknown")
    assert result.verdict.startswith(
        "OOM during an unknown phase after the weights: 0.07 GiB short"
    )
    assert "during loading no fraction helps" not in render_text(result)
    assert result.suggestions[0].knob == "mem_fraction_static"
    knobs = {s.knob for s in result.suggestions}
    assert {"cuda_graph_max_bs", "max_running_requests", "chunked_prefill_size"} <= knobs
    assert "in graph capture also lower --cuda-graph-max-bs" in result.verdict
    assert not [f for f in result.findings if f.id == "host_memory"]  # CUDA内存 is the GPU's


def test_a_load_frame_still_places_a_private_pool_oom() -> None:
    frame = (
        '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 643, in load_model'
    )
    result = diagnose_paste([frame, PRIVATE])
    assert result.phase.value == "load"
    assert not [f for f in result.findings if f.id == "phase_from_graphs"]


@pytest.mark.parametrize(
    "said",
    [
        "Our plug-in keeps a rolling buffer sized by max_running_requests for every layer.",
        "The cache adapter allocates one row per concurrent request before the pool.",
    ],
)
def test_a_refusal_beside_memory_with_a_row_per_request_names_its_lever(said: str) -> None:
    # what a plug-in sizes by the running-request count may come out of the KV budget before
    # SGLang sizes the pool (Mention.in_budget): fewer requests give it back, after the refusal's
    # own lever (a fraction typed too low is the other way the budget runs out)
    refusal = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    result = diagnose_paste([said, refusal])
    assert result.phase.value == "kv_sizing"
    assert result.verdict.startswith("SGLang refused to size the KV cache; raise --mem-fraction")
    assert result.verdict.endswith(
        "; memory with a row for each request SGLang may run: lower --max-running-requests"
    )
    assert [s.knob for s in result.suggestions][:2] == [
        "mem_fraction_static",
        "max_running_requests",
    ]
    # without the words, the refusal's own lever alone
    assert diagnose_paste([refusal]).suggestions[0].knob == "mem_fraction_static"
