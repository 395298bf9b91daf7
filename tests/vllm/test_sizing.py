"""vLLM's KV arithmetic (memledger/sizing/vllm.py) rule by rule, on synthetic lines in the shape
of each release's, and the ledger and diagnosis built on it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memledger.app.diagnose import diagnosis_of
from memledger.app.load import load_any
from memledger.app.options import DiagnoseOptions, LoadOptions
from memledger.app.vllm import VllmRun
from memledger.errors import SelectionError
from memledger.sizing.vllm import Step
from memledger.vllm.sizing_rules import RULES

GIB = 1 << 30


def _run(lines: list[str], **options: object) -> VllmRun:
    data = ("\n".join(lines) + "\n").encode()
    loaded = load_any(io.BytesIO(data), LoadOptions(**options), label="x.log")  # type: ignore[arg-type]
    assert isinstance(loaded, VllmRun)
    return loaded


def _step(run: VllmRun, rule: str) -> Step:
    step = run.sizing.step(rule)
    assert step is not None, [s.rule for s in run.sizing.steps]
    return step


V0_ONE_LINE = [
    "INFO 12-02 10:00:00 model_runner.py:1077] Loading model weights took 13.2741 GB",
    "INFO 12-02 10:00:05 worker.py:232] Memory profiling results: total_gpu_memory=47.50GiB "
    "initial_memory_usage=31.07GiB peak_torch_memory=36.42GiB memory_usage_post_profile=31.12GiB "
    "non_torch_memory=0.48GiB kv_cache_size=4.90GiB gpu_memory_utilization=0.88",
    "INFO 12-02 10:00:05 gpu_executor.py:113] # GPU blocks: 2507, # CPU blocks: 2048",
    "INFO 12-02 10:00:05 gpu_executor.py:117] Maximum concurrency for 40960 tokens per "
    "request: 0.98x",
]
V0_PARTS = [
    "INFO 06-14 09:41:27 [worker.py:288] the current vLLM instance can use total_gpu_memory "
    "(47.54GiB) x gpu_memory_utilization (0.90) = 42.79GiB",
    "INFO 06-14 09:41:27 [worker.py:288] model weights take 6.84GiB; non_torch_memory takes "
    "0.21GiB; PyTorch activation peak memory takes 0.47GiB; the rest of the memory reserved for "
    "KV Cache is 35.27GiB.",
    "INFO 06-14 09:41:27 [executor_base.py:111] # cuda blocks: 22570, # CPU blocks: 1724",
    "INFO 06-14 09:41:27 [executor_base.py:116] Maximum concurrency for 16384 tokens per "
    "request: 22.04x",
]
V1_SUMMARY = [
    "(EngineCore_DP0 pid=1) INFO 11-04 13:22:05 [core.py:77] Initializing a V1 LLM engine "
    "(v0.10.2) with config: model='m', max_seq_len=4096,",
    "(EngineCore_DP0 pid=1) INFO 11-04 13:22:19 [gpu_model_runner.py:2397] Model loading took "
    "9.4312 GiB and 8.6 seconds",
    "(EngineCore_DP0 pid=1) INFO 11-04 13:22:30 [gpu_worker.py:301] Available KV cache memory: "
    "31.90 GiB",
    "(EngineCore_DP0 pid=1) INFO 11-04 13:22:31 [kv_cache_utils.py:871] GPU KV cache size: "
    "261,312 tokens",
    "(EngineCore_DP0 pid=1) INFO 11-04 13:22:31 [kv_cache_utils.py:875] Maximum concurrency for "
    "4,096 tokens per request: 63.80x",
    "(EngineCore_DP0 pid=1) INFO 11-04 13:22:39 [gpu_model_runner.py:3127] Graph capturing "
    "finished in 8 secs, took 1.13 GiB",
    "(EngineCore_DP0 pid=1) INFO 11-04 13:22:39 [gpu_worker.py:396] Free memory on device "
    "(46.91/47.54 GiB) on startup. Desired GPU memory utilization is (0.9, 42.79 GiB). Actual "
    "usage is 9.43 GiB for weight, 1.41 GiB for peak activation, 0.05 GiB for non-torch memory, "
    "and 1.13 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with "
    "`--kv-cache-memory=32877454557` to fit into requested memory, or "
    "`--kv-cache-memory=37305565839` to fully utilize gpu memory. Current kv cache memory in use "
    "is 34252364595 bytes.",
]


def test_rule_usable() -> None:
    step = _step(_run(V0_PARTS), "usable")
    assert step.matches and step.value == pytest.approx(47.54 * 0.9 * GIB)


def test_rule_budget_peak() -> None:
    step = _step(_run(V0_ONE_LINE), "budget_peak")
    assert step.matches  # 47.50 x 0.88 - 36.42 - 0.48 = 4.900 against 4.90
    assert step.value / GIB == pytest.approx(4.900, abs=0.001)


def test_rule_budget_v0() -> None:
    step = _step(_run(V0_PARTS), "budget_v0")
    assert step.matches and step.value / GIB == pytest.approx(35.27, abs=0.01)


def test_rule_budget_v1() -> None:
    step = _step(_run(V1_SUMMARY), "budget_v1")
    assert step.matches and step.value / GIB == pytest.approx(31.90, abs=0.02)


def test_rule_budget_graph() -> None:
    lines = [
        "INFO 09-01 10:00:00 [core.py:124] Initializing a V1 LLM engine (v0.29.0) with config: "
        "model='m',",
        "INFO 09-01 10:00:01 [gpu_model_runner.py:6895] Estimated CUDA graph memory: 0.50 GiB "
        "total",
        "INFO 09-01 10:00:02 [gpu_worker.py:839] Free memory on device (78.66/79.19 GiB) on "
        "startup. Desired GPU memory utilization is (0.9, 71.27 GiB). Actual usage is 14.15 GiB "
        "for consumed memory (weights + non-torch), 2.47 GiB for peak activation, and 0.60 GiB for "
        "CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory="
        "57613340672` (53.66 GiB) to fit into requested memory, or `--kv-cache-memory=65553250304`"
        " (61.05 GiB) to fully utilize gpu memory. Current kv cache memory in use is 54.65 GiB.",
    ]
    run = _run(lines)
    assert run.sizing.era == "V1" and run.log.version == "0.29.0"
    suggestion = _step(run, "suggestion_graph_twice")
    assert suggestion.logged == 57613340672
    (finding,) = [f for f in run.diagnosis.findings if f.id == "kv_cache_memory_suggestion"]
    assert "twice" in finding.message and "58,150,211,584" in finding.message


def test_rule_kv_bytes_given() -> None:
    run = _run(
        [
            "(EngineCore pid=3) INFO 02-09 13:26:50 [gpu_worker.py:497] Initial free memory 44.73 "
            "GiB, reserved 6.50 GiB memory for KV Cache as specified by kv_cache_memory_bytes "
            "config and skipped memory profiling."
        ]
    )
    assert any("kv_bytes_given" in reason for reason in run.sizing.not_made)


def test_rule_blocks_v0() -> None:
    # bytes per block from the CPU swap blocks: 4 GiB / 2048 = 2 MiB; 4.90 GiB / 2 MiB = 2508
    step = _step(_run(V0_ONE_LINE), "blocks_v0")
    assert step.matches and step.logged == 2507 and step.value == 2508


def test_rule_blocks_v1(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "architectures": ["MistralForCausalLM"],
                "num_hidden_layers": 32,
                "num_key_value_heads": 8,
                "num_attention_heads": 32,
                "hidden_size": 4096,
                "torch_dtype": "float16",
            }
        )
    )
    run = _run(V1_SUMMARY, model_config=config)
    tokens = next(s for s in run.sizing.steps if s.rule == "tokens" and "blocks x" in s.arithmetic)
    # 34,252,364,595 B in use / 2 MiB per 16-token block = 16,332 blocks = 261,312 tokens
    assert tokens.value == 261_312 and tokens.logged == 261_312


def test_rule_tokens() -> None:
    run = _run(
        [
            "INFO 03-30 20:11:09 [kv_cache_utils.py:1093] GPU KV cache size: 81,808 tokens",
            "INFO 03-30 20:11:31 [loggers.py:152] Engine 000: vllm cache_config_info with "
            "initialization after num_gpu_blocks is: 5113",
        ]
    )
    assert _step(run, "tokens").matches


def test_rule_concurrency_v0() -> None:
    step = _step(_run(V0_PARTS), "concurrency_v0")
    assert step.matches and step.value == pytest.approx(22570 * 16 / 16384)


def test_rule_concurrency_v1() -> None:
    step = _step(_run(V1_SUMMARY), "concurrency_v1")
    assert step.matches and step.value == pytest.approx(261312 / 4096, rel=1e-3)


def test_rule_max_len_v0() -> None:
    lines = [
        *V0_ONE_LINE,
        "The model's max seq len (40960) is larger than the maximum number of tokens that can be "
        "stored in KV cache (40112). Try increasing `gpu_memory_utilization`",
    ]
    run = _run(lines)
    assert _step(run, "max_len_v0").matches
    assert run.diagnosis.phase.value == "kv_sizing"
    values = {s.knob: s.value for s in run.diagnosis.suggestions}
    # 848 tokens short = 53 blocks of 2 MiB = 0.10 GiB; 0.88 + 0.10/47.50 -> 0.89
    assert values["max_model_len"] == 40112 and values["gpu_memory_utilization"] == 0.89


def test_rule_max_len_v1() -> None:
    run = _run(
        [
            "ValueError: To serve at least one request with the models's max seq len (180000), "
            "(9.87 GiB KV cache is needed, which is larger than the available KV cache memory "
            "(5.59 GiB). Based on the available memory, the estimated maximum model length is "
            "101936. Try increasing `gpu_memory_utilization`"
        ]
    )
    step = _step(run, "max_len_v1")
    assert step.matches and step.value == pytest.approx(180000 * 5.59 / 9.87)
    assert run.diagnosis.shortfall_bytes == round(9.87 * GIB) - round(5.59 * GIB)


def test_rule_free_check() -> None:
    path_lines = [
        "ERROR 03-22 10:48:06 [core.py:519] ValueError: Free memory on device (29.87/44.52 GiB) "
        "on startup is less than desired GPU memory utilization (0.95, 42.29 GiB). Decrease GPU "
        "memory utilization or reduce GPU memory used by other processes."
    ]
    run = _run(path_lines)
    assert run.diagnosis.phase.value == "device_check"
    (suggestion,) = run.diagnosis.suggestions
    assert suggestion.knob == "gpu_memory_utilization" and suggestion.value == 0.67
    assert run.ledger.usable_bytes is not None
    assert abs(run.ledger.balance_error_bytes) <= run.ledger.tolerance_bytes


def test_rule_suggestion() -> None:
    run = _run(V1_SUMMARY)
    step = _step(run, "suggestion")
    assert step.matches and step.logged == 32877454557
    (finding,) = [f for f in run.diagnosis.findings if f.id == "kv_cache_memory_suggestion"]
    assert "right for this release" in finding.message


def test_rule_suggestion_graph_twice() -> None:
    test_rule_budget_graph()


def test_every_rule_has_a_test() -> None:
    names = set(globals())
    missing = [rule.id for rule in RULES if f"test_rule_{rule.id}" not in names]
    assert not missing


def test_v1_ledger_balances_with_every_row_placed() -> None:
    ledger = _run(V1_SUMMARY).ledger
    assert ledger.engine == "vllm" and ledger.usable_bytes == round(47.54 * GIB)
    assert abs(ledger.balance_error_bytes) <= ledger.tolerance_bytes
    inside = {r.id for r in ledger.rows if r.in_budget}
    assert inside == {"weights", "non_torch", "activation_peak", "kv_pool", "residual"}
    assert {r.id for r in ledger.rows if r.in_budget is False} >= {"cuda_graph", "runtime_headroom"}


def test_diagnose_cli_reads_a_vllm_oom_in_graph_capture(tmp_path: Path) -> None:
    log = tmp_path / "oom.log"
    log.write_text(
        "(VllmWorker rank=3 pid=1) ERROR 06-05 06:18:13 [multiproc_executor.py:470]     with "
        "torch.cuda.graph(cudagraph, pool=self.graph_pool):\n"
        "(VllmWorker rank=3 pid=1) ERROR 06-05 06:18:13 [multiproc_executor.py:470] "
        "RuntimeError: CUDA error: out of memory\n"
    )
    diagnosis = diagnosis_of(DiagnoseOptions(log=log))
    assert (diagnosis.outcome, diagnosis.phase.value) == ("oom", "graph_capture")
    assert {s.knob for s in diagnosis.suggestions} == {
        "gpu_memory_utilization",
        "enforce_eager",
        "max_num_seqs",
    }


def test_a_budget_near_the_whole_gpu_is_a_warning() -> None:
    run = _run(
        [
            "INFO 09-17 14:02:38 [worker.py:271] the current vLLM instance can use "
            "total_gpu_memory (47.54GiB) x gpu_memory_utilization (0.99) = 47.06GiB",
            "INFO 09-17 14:02:38 [worker.py:271] model weights take 40.12GiB; non_torch_memory "
            "takes 0.31GiB; PyTorch activation peak memory takes 0.85GiB; the rest of the memory "
            "reserved for KV Cache is 5.78GiB.",
        ]
    )
    (finding,) = run.diagnosis.findings
    assert finding.id == "thin_headroom" and finding.bytes == run.ledger["runtime_headroom"].bytes
    headroom = run.ledger["runtime_headroom"].bytes
    assert headroom is not None and headroom < GIB // 2


def test_rank_selection() -> None:
    lines = [
        "(Worker_TP0 pid=1) INFO 10-06 15:57:53 [gpu_worker.py:298] Available KV cache memory: "
        "2.31 GiB",
        "(Worker_TP1 pid=2) INFO 10-06 15:57:53 [gpu_worker.py:298] Available KV cache memory: "
        "2.41 GiB",
    ]
    assert _run(lines).facts["kv_cache_gib"].value == 2.31
    assert _run(lines, rank="TP1").facts["kv_cache_gib"].value == 2.41
    with pytest.raises(SelectionError, match="TP7"):
        _run(lines, rank="TP7")
