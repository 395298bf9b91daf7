"""Ledger rows of big deployments checked against SGLang's source at the log's release.

Each rule's source is cited where the rule lives (memledger/data/formulas.toml,
memledger/engine/kv_inferred.py) and again in the test that pins it.
"""

from __future__ import annotations

from pathlib import Path

from memledger import api
from memledger.model.events import EventKind
from memledger.model.ledger import Ledger, Row, RowKind
from memledger.record import to_json
from tests.conftest import REAL_LOGS, require_real_logs
from tests.engine.helpers import Log, ledger_of

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DP2 = SAMPLES / "dp2.log"
K3_CONFIG = SAMPLES / "k3-config.json"
DSV4_LOG = "014-ascend-dsv4-flash-w4a8-dp4-tp4-ep4-fork-fragment.log"
PREPARED = "dcp_replicate_q_proj: prepared full-head Q weights for {n} MLA layers"


def _row(ledger: Ledger, row_id: str) -> Row:
    return next(r for r in ledger.rows if r.id == row_id)


def _dp2_with_prepared_line(tmp_path: Path, layers: int) -> Path:
    """The DP2 x DCP8 sample with SGLang's own count of gathered layers printed by TP0 right
    before its first capture (v0.5.20 model_executor/model_runner.py:1038-1039 calls
    _prepare_replicated_q_proj at the end of init_attention_backends; :1076-1079 logs it)."""
    out: list[str] = []
    done = False
    for line in DP2.read_text(encoding="utf-8").splitlines(keepends=True):
        if not done and "TP0 EP0] Capture" in line and "begin" in line:
            stamp = line.split("]", 1)[0]
            out.append(f"{stamp}] {PREPARED.format(n=layers)}\n")
            done = True
        out.append(line)
    assert done
    path = tmp_path / "dp2-prepared.log"
    path.write_text("".join(out), encoding="utf-8")
    return path


def test_dcp_q_replica_without_the_line_is_every_mla_layer_at_the_weight_dtype() -> None:
    # The samples' fork prints no `prepared` line and gathers its FP8 q_b_proj: 24 layers x
    # (96 x 192 x 1536 x 1 B + 96 x 128 x 512 x 2 B) = 0.91 GiB (the seed article's figure).
    ledger = api.ledger(DP2, model_config=K3_CONFIG)
    replica = _row(ledger, "dcp_q_replica")
    assert replica.kind == RowKind.DERIVED
    assert replica.bytes == 24 * (96 * 192 * 1536 * 1 + 96 * 128 * 512 * 2)


def test_dcp_q_replica_is_zero_when_sglang_says_it_prepared_no_layer(tmp_path: Path) -> None:
    # v0.5.20 model_runner.py:1057-1069: a quantized q_b_proj is skipped with a warning and the
    # layer keeps its per-layer Q all-gather; :1076-1079 then logs 0 layers. No bytes are held,
    # and no model config is needed to say so.
    path = _dp2_with_prepared_line(tmp_path, 0)
    for model_config in (K3_CONFIG, None):
        ledger = api.ledger(path, model_config=model_config)
        replica = _row(ledger, "dcp_q_replica")
        assert replica.kind == RowKind.DERIVED and replica.bytes == 0
        assert replica.evidence.inputs["layers"] == 0
        assert any(PREPARED.format(n=0) in s.text for s in replica.evidence.sources)
    # The 0.91 GiB the fork's rule would have carved stays in the interval's residual.
    before = api.ledger(DP2, model_config=K3_CONFIG)
    unexplained = {r.id: r.bytes for r in ledger.rows if r.id.startswith("unexplained.")}
    earlier = {r.id: r.bytes for r in before.rows if r.id.startswith("unexplained.")}
    gained = sum(b or 0 for b in unexplained.values()) - sum(b or 0 for b in earlier.values())
    assert gained == 24 * (96 * 192 * 1536 * 1 + 96 * 128 * 512 * 2)


def test_dcp_q_replica_layers_gathered_before_0_5_23_are_16_bit(tmp_path: Path) -> None:
    # 0.5.17-0.5.22 gather only a bf16/fp16 q_b_proj (v0.5.20 model_runner.py:1060-1064), so a
    # prepared layer holds 2 B an element whatever the checkpoint's quantization says; the
    # sample's formats bound its release below at 0.5.20.
    ledger = api.ledger(_dp2_with_prepared_line(tmp_path, 24), model_config=K3_CONFIG)
    replica = _row(ledger, "dcp_q_replica")
    assert replica.evidence.inputs["q_bytes"] == 2
    assert replica.bytes == 24 * (96 * 192 * 1536 * 2 + 96 * 128 * 512 * 2)


def test_dsv4_pools_are_sglangs_full_tokens_times_bytes_per_full_token() -> None:
    # complex/014 prints SGLang's own DSV4 cost model: `bytes_per_full_token=7705.45` (v0.5.16
    # model_executor/pool_configurator.py:816-824, the per-full-token bytes of :672-712) and the
    # pools built for 32,768 full tokens (the second `DSV4 pool sizes` line, :766-784, capped by
    # max_num_reqs=1 x context 32,768). 32,768 x 7705.45 B = 252,497,986 B (0.235 GiB); the
    # interval drop is 0.21 GiB, so -0.03 stays unexplained (SGLang's model says more than
    # the NPU fork's pools took), where the row used to be the drop itself ("inferred").
    require_real_logs()
    ledger = api.ledger(REAL_LOGS / "complex" / DSV4_LOG)
    pool = _row(ledger, "kv_pool")
    assert pool.kind == RowKind.DERIVED
    assert pool.bytes == round(32_768 * 7705.45)
    assert pool.evidence.inputs == {"full_tokens": 32_768, "bytes_per_full_token": 7705.45}
    assert [s.line for s in pool.evidence.sources] == [19, 26]
    # The first sizing (full=852,992, swa=85,248) shows the unfloored SWA share; the pools' SWA
    # was floored to 3,200 pages' tokens (:714-724): that shortfall is the row's error.
    kept = (3_200 / 32_768) / (85_248 / 852_992)
    assert pool.error_bytes == round(pool.bytes * (1 - kept))
    unexplained = _row(ledger, "unexplained.memory_pool_end")
    assert unexplained.bytes is not None and unexplained.bytes < 0


ASCEND_DEEPEP_LOG = "004-ascend-qwen3-480b-dp4-tp16-ep16-deepep-2node.log"


def test_ascend_deepep_is_the_tp_groups_hccl_window_sized_by_the_printed_hccl_buffsize() -> None:
    # complex/004 (Ascend, --moe-a2a-backend deepep) prints its launcher's environment bare
    # before SGLang's first line: `ENV_VAR HCCL_BUFFSIZE:2100` (line 212). Ascend's deep_ep
    # allocates no buffer of its own and dispatches through the TP group's HCCL communicator
    # (v0.5.8 layers/moe/fused_moe_triton/layer.py:97), whose window is 2 x HCCL_BUFFSIZE MB
    # (CANN's HCCL_BUFFSIZE reference); dist init printed 0.00 GB, so it is first built in the
    # largest bucket's warmup and is carved out of it.
    require_real_logs()
    before = 9.12  # GiB: the bucket as logged
    ledger = api.ledger(REAL_LOGS / "complex" / ASCEND_DEEPEP_LOG)
    window = _row(ledger, "deepep_hccl_window")
    assert window.kind == RowKind.DERIVED and window.bytes == 2 * 2100 * 2**20
    assert any(s.line == 212 and "HCCL_BUFFSIZE:2100" in s.text for s in window.evidence.sources)
    bucket = _row(ledger, "cuda_graph_largest_bucket")
    assert bucket.bytes is not None
    assert abs(bucket.bytes + window.bytes - before * 2**30) <= 0.006 * 2**30
    assert bucket.evidence.note is not None and "deepep_hccl_window" in bucket.evidence.note


def test_ascend_deepep_without_hccl_buffsize_is_a_named_unknown_row() -> None:
    # The same log without its launcher lines: the window is not guessed at HCCL's default.
    require_real_logs()
    text = (REAL_LOGS / "complex" / ASCEND_DEEPEP_LOG).read_text(encoding="utf-8")
    kept = "".join(line for line in text.splitlines(keepends=True) if "ENV_VAR" not in line)
    ledger = api.ledger(api.load_text(kept))
    window = _row(ledger, "deepep_hccl_window")
    assert window.kind == RowKind.UNKNOWN and window.bytes is None and not window.in_partition
    assert window.evidence.note is not None and "HCCL_BUFFSIZE" in window.evidence.note
    bucket = _row(ledger, "cuda_graph_largest_bucket")
    assert bucket.evidence.note is not None and "needs HCCL_BUFFSIZE" in bucket.evidence.note


def test_env_lines_keep_only_memory_variables_and_join_the_next_startup() -> None:
    # A launcher's bare `ENV_VAR NAME:value` / `Setting ENV_VAR NAME=value` lines before SGLang's
    # first prefixed line are read (sglang.lines ENV_VAR_HEADS); only the variables memledger
    # uses are kept (ENV_VAR_NAMES), so a token in the environment is never stored or shown.
    text = (
        "ENV_VAR HF_TOKEN:hf_secret\n"
        "Setting ENV_VAR HCCL_BUFFSIZE=650\n"
        "[2026-01-04 04:28:40] server_args=ServerArgs(device='npu', tp_size=1)\n"
        "[2026-01-04 04:28:43 TP0] Load weight begin. avail mem=60.78 GB\n"
    )
    parsed = api.load_text(text)
    env = [e for e in parsed.startup.events if e.kind.value == "env_var"]
    assert [(e.line, e.values) for e in env] == [(2, {"HCCL_BUFFSIZE": 650})]
    assert "hf_secret" not in to_json(parsed)


def test_dp_workers_of_a_fragment_without_server_args_come_from_the_rank_tags() -> None:
    # complex/014 is a DP4 x TP4 DP-attention fragment with no server_args line: SGLang tags each
    # DP worker's lines ` DP{dp_rank}` (v0.5.10 managers/scheduler.py:3535-3537), and the log
    # shows DP0-DP3. Each DP group has its own pool (seed 004: an attention group holds only its
    # own requests' KV), so the instance holds 4 x 32,768 tokens, not 32,768 as with dp_size 1.
    require_real_logs()
    ledger = api.ledger(REAL_LOGS / "complex" / DSV4_LOG)
    assert ledger.parameters["ledger.dp_size"] == 4
    assert ledger.summary.kv_tokens_per_rank == 32_768
    assert ledger.summary.kv_tokens_per_instance == 4 * 32_768
    assert any("dp_size 4 from the rank tags" in note for note in ledger.notes)
    # One DP worker's tag alone (a router-launched server, SGLANG_DP_RANK) is not a DP server.
    one = "".join(
        line
        for line in (REAL_LOGS / "complex" / DSV4_LOG)
        .read_text(encoding="utf-8")
        .splitlines(keepends=True)
        if "DP0 TP0 EP0]" in line
    )
    alone = api.ledger(api.load_text(one))
    assert alone.parameters["ledger.dp_size"] == 1
    assert alone.summary.kv_tokens_per_instance == 32_768


def _dcp_summary_only(baseline: bool) -> Ledger:
    """A DCP8 startup whose only token count is the summary line's (no KV #tokens)."""
    log = Log()
    if baseline:  # the 0.5.21+ line (release_markers: v0.5.21 distributed/bootstrap.py:204)
        log.add(EventKind.MEMORY_BASELINE, "Memory baseline taken. mem usage=0.50 GB", usage=0.50)
    log.add(EventKind.LOAD_BEGIN, avail=70.00)
    log.add(EventKind.LOAD_END, values={"type": "DeepseekV3ForCausalLM"}, avail=30.00, usage=40.00)
    log.add(EventKind.MEMORY_POOL_END, avail=10.00)
    log.add(EventKind.SUMMARY, values={"max_total_num_tokens": 800_000, "max_running_requests": 8})
    return ledger_of(log, server_args={"dcp_size": 8, "tp_size": 8})


def test_summary_tokens_are_logical_under_dcp_from_0_5_21() -> None:
    # v0.5.21 managers/tp_worker.py:552 prints logical_max_total_num_tokens: the per-rank rows x
    # attn_dcp_size (model_executor/model_runner.py:1395-1401, mem_cache/kv_cache_configurator.py
    # :319-328); v0.5.20 tp_worker.py:549-552 printed the per-rank rows. Per rank is 100,000, a
    # DP group 800,000, not 6.4 M.
    new = _dcp_summary_only(baseline=True)
    assert new.summary.kv_tokens_per_rank == 100_000
    assert new.summary.kv_tokens_per_dp_group == 800_000
    assert any("logical capacity" in note for note in new.notes)
    old = _dcp_summary_only(baseline=False)  # release not known to be 0.5.21+: as printed
    assert old.summary.kv_tokens_per_rank == 800_000
