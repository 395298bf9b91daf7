"""vLLM's line table on synthetic lines in each wording's shape: what each reads, behind every
prefix vLLM (or a paste) puts before it, and which engine a text is."""

from __future__ import annotations

import io
import json

import pytest

from memledger.app.diagnose import diagnosis_of
from memledger.app.load import load_any, load_ledger
from memledger.app.options import DiagnoseOptions
from memledger.app.vllm import VllmRun
from memledger.errors import InputError
from memledger.input.engine_detect import SGLANG, VLLM, detect_engine
from memledger.input.vllm_facts import startup_facts
from memledger.input.vllm_reader import rank_tag, read_vllm
from memledger.input.wrappers import RECORDS, WRAPPERS, Record
from memledger.vllm.errors import ERRORS
from memledger.vllm.lines import LINES

# (line, kind, facts it must give): one or more per wording of lines.LINES / errors.ERRORS
EXAMPLES: list[tuple[str, str, dict[str, float | int | str]]] = [
    (
        "INFO 03-14 11:22:33 model_runner.py:741] Loading model weights took 5.8127 GB",
        "weights",
        {"weights_gib": 5.8127},
    ),
    (
        "(EngineCore_DP0 pid=7) INFO 12-01 19:07:21 [gpu_model_runner.py:2397] Model loading took "
        "9.4312 GiB and 8.611203 seconds",
        "weights",
        {"weights_gib": 9.4312},
    ),
    (
        "INFO 05-02 09:14:27 [gpu_model_runner.py:3911] Model loading took 47.19 GiB memory and "
        "21.604418 seconds",
        "weights",
        {"weights_gib": 47.19},
    ),
    (
        "Memory profiling results: total_gpu_memory=47.54GiB initial_memory_usage=31.07GiB "
        "peak_torch_memory=36.42GiB memory_usage_post_profile=31.12GiB non_torch_memory=0.48GiB "
        "kv_cache_size=5.87GiB gpu_memory_utilization=0.88",
        "profile",
        {
            "total_gpu_gib": 47.54,
            "peak_torch_memory_gib": 36.42,
            "kv_cache_gib": 5.87,
            "gpu_memory_utilization": 0.88,
        },
    ),
    (
        "INFO 07-08 16:40:12 worker.py:238] the current vLLM instance can use total_gpu_memory "
        "(39.39GiB) x gpu_memory_utilization (0.85) = 33.48GiB",
        "usable",
        {"total_gpu_gib": 39.39, "gpu_memory_utilization": 0.85, "usable_gib": 33.48},
    ),
    (
        "(VllmWorkerProcess pid=9) INFO 09-17 14:02:38 [worker.py:271] model weights "
        "take 40.12GiB; "
        "non_torch_memory takes 0.31GiB; PyTorch activation peak memory takes 0.85GiB; the rest of "
        "the memory reserved for KV Cache is 5.78GiB.",
        "breakdown",
        {
            "weights_gib": 40.12,
            "non_torch_gib": 0.31,
            "activation_peak_gib": 0.85,
            "kv_cache_gib": 5.78,
        },
    ),
    (
        "INFO 06-21 08:05:41 [executor_base.py:117] # cuda blocks: 24617, # CPU blocks: 1638",
        "blocks",
        {"gpu_blocks": 24617, "cpu_blocks": 1638},
    ),
    (
        "INFO 04-17 22:48:05 kv_cache_utils.py:402] # GPU blocks: 2764",
        "blocks",
        {"gpu_blocks": 2764},
    ),
    (
        "(EngineCore pid=1) INFO 07-06 22:52:09 [gpu_worker.py:508] Available KV cache memory: "
        "-2.14 GiB",
        "kv_available",
        {"kv_cache_gib": -2.14},
    ),
    (
        "INFO 02-09 13:26:50 [gpu_worker.py:497] Initial free memory 44.73 GiB, reserved 6.50 GiB "
        "memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory "
        "profiling.",
        "kv_reserved",
        {"initial_free_gib": 44.73, "kv_cache_gib": 6.5},
    ),
    (
        "INFO 11-05 07:33:48 [kv_cache_utils.py:871] GPU KV cache size: 61,904 tokens",
        "kv_tokens",
        {"kv_tokens": 61904},
    ),
    (
        "INFO 11-05 07:33:48 [kv_cache_utils.py:875] Maximum concurrency for 16,384 tokens per "
        "request: 3.78x",
        "concurrency",
        {"max_model_len": 16384, "max_concurrency": 3.78},
    ),
    (
        "INFO 09-01 10:00:00 [kv_cache_utils.py:2033] GPU KV cache size: 150,745 tokens, Maximum "
        "concurrency for 124,000 tokens per request: 1.22x",
        "concurrency",
        {"kv_tokens": 150745, "max_model_len": 124000, "max_concurrency": 1.22},
    ),
    (
        "(APIServer pid=4) INFO 10-06 15:58:17 [loggers.py:147] Engine 000: vllm cache_config_info "
        "with initialization after num_gpu_blocks is: 5113",
        "num_gpu_blocks",
        {"num_gpu_blocks": 5113},
    ),
    (
        "INFO 12-01 19:07:36 [gpu_model_runner.py:3012] Encoder cache will be initialized with a "
        "budget of 8192 tokens, and profiled with 3 image items",
        "encoder_budget",
        {"encoder_cache_budget": 8192},
    ),
    (
        "INFO 10-19 05:51:02 model_runner.py:1322] Capturing the model for CUDA graphs. This may "
        "lead to unexpected consequences",
        "graph_begin",
        {},
    ),
    (
        "INFO 10-19 05:51:24 model_runner.py:1441] Graph capturing finished in 22 secs.",
        "graph_done",
        {"graph_secs": 22.0},
    ),
    (
        "INFO 12-01 19:07:52 [gpu_model_runner.py:3127] Graph capturing finished in 8 secs, took "
        "1.13 GiB",
        "graph_done",
        {"graph_gib": 1.13},
    ),
    (
        "(Worker_PP1_TP0 pid=2) INFO 08-31 15:25:48 [gpu_model_runner.py:6798] Estimated "
        "CUDA graph "
        "memory: 0.58 GiB total",
        "graph_estimate",
        {"graph_estimate_gib": 0.58},
    ),
    (
        "INFO 09-01 10:00:00 [gpu_worker.py:641] CUDA graph memory profiling is enabled (default "
        "since v0.21.0). The current --gpu-memory-utilization=0.8000 is equivalent to "
        "--gpu-memory-utilization=0.7580 without CUDA graph memory profiling. To maintain the same "
        "effective KV cache size as before, increase --gpu-memory-utilization to 0.8420. To "
        "disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.",
        "graph_profiling",
        {"gpu_memory_utilization": 0.8, "suggested_gpu_memory_utilization": 0.842},
    ),
    (
        "WARNING 08-31 15:25:47 [gpu_worker.py:595] CUDA graph memory profiling is disabled "
        "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, ... increasing "
        "--gpu-memory-utilization from 0.9350 to 0.9595.",
        "graph_profiling_off",
        {"gpu_memory_utilization": 0.935, "suggested_gpu_memory_utilization": 0.9595},
    ),
    (
        "INFO 12-01 19:07:52 [gpu_worker.py:396] Free memory on device (46.91/47.54 GiB) on "
        "startup. Desired GPU memory utilization is (0.85, 40.41 GiB). Actual usage is "
        "9.62 GiB for "
        "weight, 1.41 GiB for peak activation, 0.05 GiB for non-torch memory, and 1.13 GiB for "
        "CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory="
        "30868914176` to fit into requested memory, or `--kv-cache-memory=37325504512` to fully "
        "utilize gpu memory. Current kv cache memory in use is 31925829632 bytes.",
        "summary",
        {
            "free_gib": 46.91,
            "requested_gib": 40.41,
            "suggested_kv_cache_memory_bytes": 30868914176,
            "kv_cache_memory_in_use_bytes": 31925829632,
        },
    ),
    (
        "INFO 09-01 10:00:00 [gpu_worker.py:839] Free memory on device (78.66/79.19 GiB) on "
        "startup. Desired GPU memory utilization is (0.9, 71.27 GiB). Actual usage is "
        "14.15 GiB for "
        "consumed memory (weights + non-torch), 2.64 GiB for peak activation, and 0.67 GiB for "
        "CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory="
        "57613340672` (53.66 GiB) to fit into requested memory, or `--kv-cache-memory=65553250304` "
        "(61.05 GiB) to fully utilize gpu memory. Current kv cache memory in use is 54.48 GiB.",
        "summary",
        {
            "consumed_gib": 14.15,
            "suggested_kv_cache_memory_bytes": 57613340672,
            "kv_cache_gib": 54.48,
        },
    ),
    (
        "(EngineCore_DP0 pid=3) INFO 09-23 18:12:05 [core.py:76] Initializing a V1 LLM engine "
        "(v0.10.2) with config: model='m', max_seq_len=4096, tensor_parallel_size=2,",
        "config",
        {"version": "0.10.2"},
    ),
    (
        "INFO 12-13 19:54:18 worker.py:243] available_kv_cache_memory    53.29GiB",
        "profile_table",
        {"kv_cache_gib": 53.29},
    ),
    (
        "INFO 12-13 19:54:18 worker.py:243] PyTorch activation peak memory    2.64GiB",
        "profile_table",
        {"activation_peak_gib": 2.64},
    ),
    (
        "INFO 09-01 10:00:00 [gpu_model_runner.py:6769] Profiling CUDA graph memory: "
        "PIECEWISE=41 (largest=384), FULL=25 (largest=192)",
        "graph_sizes",
        {"graph_modes": "PIECEWISE=41 (largest=384), FULL=25 (largest=192)"},
    ),
    # failure texts
    (
        "ERROR 08-27 03:44:19 engine.py:371] ValueError: No available memory for the cache blocks. "
        "Try increasing `gpu_memory_utilization` when initializing the engine.",
        "no_cache_memory",
        {},
    ),
    (
        "The model's max seq len (40960) is larger than the maximum number of tokens that can be "
        "stored in KV cache (31712). Try increasing `gpu_memory_utilization`",
        "max_seq_len_v0",
        {"max_model_len": 40960, "kv_tokens": 31712},
    ),
    (
        "ERROR 01-23 17:09:45 [core.py:1142] ValueError: To serve at least one request with the "
        "models's max seq len (65536), (6.25 GiB KV cache is needed, which is larger than the "
        "available KV cache memory (5.5 GiB). Based on the available memory, the estimated maximum "
        "model length is 57664. Try increasing",
        "max_seq_len_v1",
        {
            "max_model_len": 65536,
            "kv_needed_gib": 6.25,
            "kv_cache_gib": 5.5,
            "estimated_max_model_len": 57664,
        },
    ),
    (
        "ERROR 06-30 13:53:19 [core.py:515] ValueError: Free memory on device cuda:0 (1.53/22.05 "
        "GiB) on startup is less than desired GPU memory utilization (0.9, 19.84 GiB). "
        "Decrease GPU "
        "memory utilization",
        "free_memory",
        {"free_gib": 1.53, "total_gpu_gib": 22.05, "requested_gib": 19.84},
    ),
    (
        "Error initializing vLLM engine: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 0 "
        "has a total capacty of 44.35 GiB of which 53.38 MiB is free. Process 1 has 44.28 GiB "
        "memory in use. Of the allocated memory 37.38 GiB is allocated by PyTorch, and",
        "torch_oom",
        {
            "oom_tried_to_allocate_mib": 112.0,
            "oom_free_mib": 53.38,
            "oom_allocated_by_pytorch_gib": 37.38,
        },
    ),
    (
        "(VllmWorker rank=3 pid=1) ERROR 06-05 06:18:13 [multiproc_executor.py:470] RuntimeError: "
        "CUDA error: out of memory",
        "cuda_error_oom",
        {},
    ),
    (
        "(EngineCore_0 pid=5) ERROR 08-20 18:04:22 [core.py:700] EngineCore failed to start.",
        "engine_failed",
        {},
    ),
]


@pytest.mark.parametrize("line, kind, facts", EXAMPLES, ids=[e[1] for e in EXAMPLES])
def test_example_line(line: str, kind: str, facts: dict[str, float | int | str]) -> None:
    log = read_vllm([line], "x.log")
    readings = [r for s in log.startups for r in s.readings]
    assert kind in [r.kind for r in readings]
    got = {k: v for r in readings for k, v in r.facts.items()}
    for name, value in facts.items():
        assert got[name] == pytest.approx(value) if not isinstance(value, str) else got[name]


def test_every_wording_has_an_example() -> None:
    kinds = {kind for _, kind, _ in EXAMPLES}
    assert {spec.kind for spec in LINES} <= kinds
    assert {error.id for error in ERRORS} <= kinds


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "vllm-1  | ",
        "  | [2025-03-10T15:07:20Z] ",
        "2031-02-03 04:05:06.789 [Error] (Process) (EngineCore pid=31337) ",
        "2031-02-03T04:05:06,789 [INFO ] W-9000-toy_1.0-stdout MODEL_LOG - ",
        "^[[0;36m(EngineCore_DP0 pid=4242)^[[0;0m ",
        "\x1b[0;36m(EngineCore_DP0 pid=4242)\x1b[0;0m ",
        "▎ ",
        "> ",
        "(ServeReplica:default:LLMServer pid=17) (EngineCore_DP0 pid=4242) ",
    ],
)
def test_prefixes_are_ignored(prefix: str) -> None:
    line = prefix + "INFO 11-05 07:33:48 [gpu_worker.py:301] Available KV cache memory: 7.25 GiB"
    log = read_vllm([line], "x.log")
    assert log.startups[0].of("kv_available")[0].facts == {"kv_cache_gib": 7.25}


@pytest.mark.parametrize("row", RECORDS, ids=lambda row: row.name)
def test_a_line_inside_a_json_record_reads_as_the_line(row: Record) -> None:
    line = "INFO 11-05 07:33:48 [gpu_worker.py:301] # GPU blocks: 1381"
    record = row.example.replace("[TP0] x", json.dumps(line)[1:-1])
    for text in (line, record):
        (startup,) = read_vllm([text], "x.log").startups
        assert [r.facts for r in startup.readings] == [{"gpu_blocks": 1381}], text


@pytest.mark.parametrize("quote", ["- `{}`", "* `` {} ``", "`{}`"])
def test_a_line_in_inline_code_reads_as_the_line(quote: str) -> None:
    # a wording anchored at the line's end, and a message vLLM broke over lines
    lines = [
        "(EngineCore_DP0 pid=1) INFO 11-05 07:33:48 [kv_cache_utils.py:1] # GPU blocks: 1381",
        "(EngineCore_DP0 pid=1) INFO 11-05 07:33:48 [x.py:1] Available KV cache memory: 7.25 GiB",
    ]
    quoted = [quote.format(line) for line in lines]
    log, bare = read_vllm(quoted, "x.log"), read_vllm(lines, "x.log")
    facts = [r.facts for r in log.startups[0].readings]
    assert facts == [r.facts for r in bare.startups[0].readings]
    assert {"gpu_blocks": 1381} in facts


def test_the_file_line_tag_is_never_read() -> None:
    # the same sentence behind any [file.py:N] reads the same
    lines = [
        f"INFO 11-05 07:33:48 [{name}] Available KV cache memory: 7.25 GiB"
        for name in ("gpu_worker.py:276", "gpu_worker.py:642", "worker.py", "x.py:1")
    ]
    for line in lines:
        (startup,) = read_vllm([line], "x.log").startups
        assert [r.facts for r in startup.readings] == [{"kv_cache_gib": 7.25}]


@pytest.mark.parametrize(
    "text, tag",
    [
        ("(VllmWorker rank=3 pid=1090) ERROR", "rank3"),
        ("(Worker_TP1 pid=5) INFO", "TP1"),
        ("(Worker_PP1_TP3 pid=5) INFO", "PP1_TP3"),
        ("(Worker_DP1_TP1_EP3 pid=5) INFO", "DP1_TP1_EP3"),
        ("(VllmWorkerProcess pid=90) INFO", "pid 90"),
        ("(EngineCore_DP0 pid=1) INFO", ""),
        ("(EngineCore_DP1 pid=1) INFO", "DP1"),
        ("INFO 11-05 07:33:48 [x.py:1]", ""),
        # a Ray actor's or a launcher's tag before the process's own: the inner one is the rank
        ("(RayWorkerWrapper pid=9) (Worker_TP1 pid=5) INFO", "TP1"),
        ("(VllmWorker rank=0 pid=8)  (VllmWorker rank=2 pid=5) INFO", "rank2"),
    ],
)
def test_rank_tags(text: str, tag: str) -> None:
    assert rank_tag(text) == tag


def test_rank_zero_wins_over_the_first_rank() -> None:
    lines = [
        "(Worker_TP1 pid=2) INFO 10-06 15:57:17 [x.py:1] Model loading took 9.0000 GiB and 1 s",
        "(Worker_TP0 pid=1) INFO 10-06 15:57:17 [x.py:1] Model loading took 8.0000 GiB and 1 s",
    ]
    log = read_vllm(lines, "x.log")
    assert startup_facts(log, log.startups[0])["weights_gib"].value == 8.0
    assert startup_facts(log, log.startups[0], rank="TP1")["weights_gib"].value == 9.0


def test_a_message_broken_over_lines_is_joined() -> None:
    lines = [
        "▎ ValueError: To serve at least one request with the model's max seq len (98304),",
        "▎ 12.75 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(11.5 GiB).",
        "▎ Based on the available memory, the estimated maximum model length is 88672.",
    ]
    log = read_vllm(lines, "x.log")
    (error,) = log.startups[0].of("max_seq_len_v1")
    assert error.facts["estimated_max_model_len"] == 88672
    assert error.facts["kv_cache_gib"] == 11.5


def test_a_contradicting_reading_starts_the_next_startup() -> None:
    lines = [
        "Available KV cache memory: 11.25 GiB",
        "GPU KV cache size: 245,824 tokens",
        "ValueError: To serve at least one request with the models's max seq len (180000), "
        "(9.87 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(5.59 GiB).",
    ]
    log = read_vllm(lines, "x.log")
    assert len(log.startups) == 2
    assert log.startups[1].outcome == "error"


SGLANG_LINES = [
    "[2026-01-30 20:54:50 TP0] Load weight begin. avail mem=77.91 GB",
    "[2026-01-30 20:54:55 TP0] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB",
]
VLLM_LINES = [
    "(EngineCore_DP0 pid=1) INFO 11-05 07:33:48 [gpu_worker.py:301] Available KV cache memory: "
    "7.25 GiB",
    "(EngineCore_DP0 pid=1) INFO 11-05 07:33:48 [kv_cache_utils.py:871] GPU KV cache size: "
    "61,904 tokens",
]


def test_detection() -> None:
    assert detect_engine(SGLANG_LINES).engine == SGLANG
    assert detect_engine(VLLM_LINES).engine == VLLM
    assert detect_engine(["just some notes", "about a server"]).engine is None


def test_a_vllm_log_is_read_as_vllm_end_to_end() -> None:
    data = ("\n".join(VLLM_LINES) + "\n").encode()
    loaded = load_any(io.BytesIO(data), label="paste.log")
    assert isinstance(loaded, VllmRun)
    ledger = load_ledger(io.BytesIO(data))
    assert ledger.engine == "vllm" and ledger.row("kv_pool") is not None
    assert diagnosis_of(DiagnoseOptions(log=io.BytesIO(data))).outcome == "truncated"


def test_neither_engine_is_one_line_error(tmp_path: pytest.TempPathFactory) -> None:
    with pytest.raises(InputError, match="no vLLM log lines either"):
        load_any(io.BytesIO(b"just some notes\nabout a server\n"), label="notes.txt")


@pytest.mark.parametrize(
    "column", [row.example for row in WRAPPERS if row.name != "grep -n / srun --label"] + ["0: "]
)
def test_a_message_broken_over_lines_is_joined_behind_a_column(column: str) -> None:
    # each physical line behind what a tool or a paste put before it (memledger.input.wrappers);
    # `grep -n`'s `12:` before a digit is never peeled (`12:12.75` may be a time), srun's `0: ` is
    lines = [
        column + "ERROR 01-23 17:09:45 [core.py:1142] ValueError: To serve at least one request "
        "with the model's max seq len (98304),",
        column + "12.75 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(11.5 GiB).",
        column + "Based on the available memory, the estimated maximum model length is 88672.",
    ]
    log = read_vllm(lines, "x.log")
    (error,) = log.startups[0].of("max_seq_len_v1")
    assert error.facts["estimated_max_model_len"] == 88672
    assert error.facts["kv_cache_gib"] == 11.5


PROFILE = (
    "INFO 11-05 07:33:48 [worker.py:1] Memory profiling results: total_gpu_memory=31.40GiB "
    "initial_memory_usage=12.10GiB peak_torch_memory=14.20GiB memory_usage_post_profile=12.30GiB "
    "non_torch_memory=0.25GiB kv_cache_size=9.70GiB gpu_memory_utilization=0.85"
)
WEIGHTS = "(Worker_TP1 pid=5) INFO 11-05 07:33:48 [x.py:1] Model loading took 9.0000 GiB and 1 s"


@pytest.mark.parametrize("width", [60, 70, 80])
@pytest.mark.parametrize("line", [PROFILE, WEIGHTS])
def test_a_line_a_terminal_cut_reads_as_the_whole_line(width: int, line: str) -> None:
    # a short paste shows no width: the cut is told by what the join reads (a header cut in two
    # too: the process tag stays the line's)
    pieces = [line[i : i + width] for i in range(0, len(line), width)]
    whole = read_vllm([line, "INFO 11-05 07:33:49 [x.py:2] # GPU blocks: 7"], "x.log")
    cut = read_vllm([*pieces, "INFO 11-05 07:33:49 [x.py:2] # GPU blocks: 7"], "x.log")
    assert len(pieces) >= 2
    read = [(r.kind, r.facts, r.tag) for r in cut.startups[0].readings]
    assert read == [(r.kind, r.facts, r.tag) for r in whole.startups[0].readings]
    assert cut.startups[0].readings[-1].line == len(pieces) + 1  # later lines keep their number


@pytest.mark.parametrize(
    "rest",
    [
        '  File "/vllm/worker.py", line 1, in load',  # a record of its own
        "INFO 11-05 07:33:49 [x.py:2] # GPU blocks: 7",
        "e_post_profile=12.30GiB",  # reads nothing more after a line that was whole
    ],
)
def test_a_whole_line_is_never_joined_to_the_next(rest: str) -> None:
    lines = [PROFILE, rest]
    log = read_vllm(lines, "x.log")
    assert (
        log.startups[0].readings[0].facts
        == read_vllm([PROFILE], "x.log").startups[0].readings[0].facts
    )
    assert log.n_lines == 2
