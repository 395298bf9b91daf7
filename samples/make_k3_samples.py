"""Write samples/dp16.log and samples/dp2.log: the seed article's two Kimi K3 decode deployments.

Node-0 startup logs (8 local ranks interleaved) reconstructed from the memory section of the
article (`../shared/seeds/000_f7cc2df0065878e9.txt`, `显存：固定开销决定状态池有多大`), in SGLang
0.5.20 formats plus the weight-sharding fork's lines. Nothing here is copied from a real log.

Run from the project root: `python samples/make_k3_samples.py` (deterministic output).

How rank 0's numbers were chosen (GiB; every avail reading printed with two decimals):
* usable 177.70 on both = dist-init usage (1.60 / 2.25, DP16 = DP2 - 0.65) + load-begin avail.
* target load peak 145.20 / 109.91 (DP2's usage is the unrounded difference, so it prints 0.01
  above its own avail drop: a realistic balance error); released after load 47.70 / 14.60; the
  FlatAGStagingPool capacities are the article's (627048448 / 183500800 B per buffer, x 2).
* draft weights 0.85 / 1.23; DP16's draft staging pool 1288.0 MiB (2 x 675282944 B).
* KDA state (conv 2.35 + SSM 13.81 = the article's 16.16 GiB) and ReplaySSM rings (16 records
  x 69 KDA layers x 96 heads x 128 of d/k/rawv/rawk bf16, g fp32, beta fp32) for 33 slots =
  24 + 8 + 1; DP2 has 12 heads per card and 209 = 192 + 16 + 1 slots: 0.64 / 0.08 GiB a slot.
* MLA KV 41.10 / 34.60 GiB at 24 layers x 576 B (fp8) per token, page 64: 3.19 M / 2.69 M tokens.
* draft KV = slots_per_req x slots x bytes per slot: 4753 x 33 x 10240 B / 7997 x 209 x 1280 B.
* interval residuals 0.15 / 0.82 (target pool: req_to_token), 0.13 / 0.83 (draft pool),
  0.36 / 1.58 (attention backend -> capture), 0 / 0.39 (target graph end -> draft graph).
* graphs: static 0.17 / 1.33, largest bucket 7.19 / 10.24, totals 8.08 / 13.96;
  runtime headroom 4.00 / 7.99.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIB = 1 << 30
MLA_BYTES_PER_TOKEN = 24 * 576  # 24 MLA layers x (kv_lora_rank 512 + rope 64) x 1 B (fp8)
PAGE = 64
CONTEXT = 1048576


def kv_tokens(kv_gib: float) -> int:
    """The largest page-aligned #tokens whose pool ((#tokens + page) rows) prints as kv_gib."""
    tokens = int(kv_gib * GIB / MLA_BYTES_PER_TOKEN) // PAGE * PAGE
    while round((tokens + PAGE) * MLA_BYTES_PER_TOKEN / GIB, 2) > kv_gib:
        tokens -= PAGE
    return tokens


@dataclass
class Deployment:
    """Rank 0's numbers of one deployment and the text that differs between the two."""

    name: str
    start: datetime
    tags: list[str]
    server_args: str
    nccl: float
    load_begin: float
    load_end: float
    load_usage: float
    requant_weights: int
    target_capacity: int
    target_staging_mib: float
    draft_begin: float
    draft_end: float
    draft_usage: float
    draft_sharded: int
    draft_capacity: int | None
    mamba_slots: int
    conv: float
    ssm: float
    replay: dict[str, float]
    kv_gib: float
    pool_end: float
    reclaimed: float
    slots_per_req: int
    multiplier: int
    draft_tokens: int
    draft_kv: float
    draft_pool_end: float
    capture_begin: float
    target_bs: list[int]
    target_progress: list[float]
    target_usage: float
    target_end: float
    draft_capture_begin: float
    draft_progress: list[float]
    draft_capture_usage: float
    draft_capture_end: float
    summary_avail: float
    max_running_requests: int
    all_reduce_lines: int
    hoisted: bool
    rank_offsets: list[float] = field(default_factory=list)


def server_args(**overrides: object) -> str:
    args: dict[str, object] = {
        "model_path": "/models/Kimi-K3-FP8",
        "tokenizer_path": "/models/Kimi-K3-FP8",
        "trust_remote_code": True,
        "served_model_name": "kimi-k3",
        "host": "0.0.0.0",
        "port": 30000,
        "device": "cuda",
        "dtype": "auto",
        "quantization": "fp8",
        "kv_cache_dtype": "fp8_e4m3",
        "load_format": "auto",
        "mem_fraction_static": 0.88,
        "max_running_requests": 384,
        "max_total_tokens": None,
        "chunked_prefill_size": 8192,
        "max_prefill_tokens": 16384,
        "context_length": CONTEXT,
        "page_size": PAGE,
        "schedule_policy": "fcfs",
        "tp_size": 16,
        "dp_size": 16,
        "ep_size": 16,
        "pp_size": 1,
        "nnodes": 2,
        "node_rank": 0,
        "dist_init_addr": "k3-decode-0:20000",
        "enable_dp_attention": True,
        "enable_dp_lm_head": False,
        "dcp_size": 1,
        "dcp_replicate_q_proj": False,
        "moe_a2a_backend": "deepep",
        "deepep_mode": "low_latency",
        "moe_runner_backend": "deep_gemm",
        "disable_radix_cache": True,
        "disable_custom_all_reduce": False,
        "disable_cuda_graph": False,
        "cuda_graph_max_bs": 24,
        "cuda_graph_bs": [1, 2, 4, 8, 16, 24],
        "disaggregation_mode": "decode",
        "disaggregation_transfer_backend": "mooncake",
        "disaggregation_decode_extra_slots": 8,
        "speculative_algorithm": "DSPARK",
        "speculative_draft_model_path": "/models/Kimi-K3-DSpark",
        "speculative_num_steps": 1,
        "speculative_num_draft_tokens": 5,
        "speculative_dspark_block_size": 4,
        "attention_backend": "tokenspeed_mla",
        "watchdog_timeout": 900,
        "log_level": "info",
    }
    args.update(overrides)
    return "server_args=" + repr(args)


def replay_parts(heads_per_card: int, slots: int) -> dict[str, float]:
    """ReplaySSM ring sizes (GiB, 3 decimals): 16 records x 69 KDA layers per slot."""
    per_slot_layer_record = {
        "d": heads_per_card * 128 * 2,
        "k": heads_per_card * 128 * 2,
        "g": heads_per_card * 128 * 4,
        "rawv": heads_per_card * 128 * 2,
        "rawk": heads_per_card * 128 * 2,
        "beta": heads_per_card * 4,
    }
    return {
        key: round(size * 16 * 69 * slots / GIB, 3) for key, size in per_slot_layer_record.items()
    }


def descending(first: float, last: float, count: int) -> list[float]:
    """`count` avail readings from first down to last, evenly (two decimals)."""
    if count == 1:
        return [first]
    step = (first - last) / (count - 1)
    return [round(first - step * index, 2) for index in range(count)]


DP16 = Deployment(
    name="dp16",
    start=datetime(2026, 11, 5, 10, 9, 41),
    tags=[f"DP{rank} TP{rank} EP{rank}" for rank in range(8)],
    server_args=server_args(),
    nccl=1.60,
    load_begin=176.10,
    load_end=30.90,
    load_usage=145.20,
    requant_weights=276,
    target_capacity=627048448,
    target_staging_mib=1196.0,
    draft_begin=78.60,
    draft_end=77.75,
    draft_usage=0.85,
    draft_sharded=5,
    draft_capacity=675282944,
    mamba_slots=32,
    conv=2.35,
    ssm=13.81,
    replay=replay_parts(96, 33),
    kv_gib=41.10,
    pool_end=14.07,
    reclaimed=16.37,
    slots_per_req=4753,
    multiplier=3,
    draft_tokens=4753 * 33,
    draft_kv=1.50,
    draft_pool_end=12.44,
    capture_begin=12.08,
    target_bs=[1, 2, 4, 8, 16, 24],
    target_progress=[11.91, 4.72, 4.56, 4.46, 4.39, 4.34],
    target_usage=7.78,
    target_end=4.30,
    draft_capture_begin=4.30,
    draft_progress=[4.26, 4.14, 4.08, 4.05, 4.03, 4.02],
    draft_capture_usage=0.30,
    draft_capture_end=4.00,
    summary_avail=3.97,
    max_running_requests=24,
    all_reduce_lines=0,
    hoisted=True,
    rank_offsets=[0.0, 0.02, -0.01, 0.03, 0.0, -0.02, 0.01, 0.04],
)

DP2_BS = [8, 16, 24, 32, 40, 48, 56, 64, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160]
DP2_BS += [168, 176, 184, 192]

DP2 = Deployment(
    name="dp2",
    start=datetime(2026, 11, 5, 14, 31, 7),
    tags=[f"DP0 TP{rank} EP{rank}" for rank in range(8)],
    server_args=server_args(
        mem_fraction_static=0.83,
        dp_size=2,
        enable_dp_lm_head=True,
        dcp_size=8,
        dcp_replicate_q_proj=True,
        cuda_graph_max_bs=192,
        cuda_graph_bs=DP2_BS,
        disaggregation_decode_extra_slots=16,
    ),
    nccl=2.25,
    load_begin=175.45,
    load_end=65.55,
    load_usage=109.91,
    requant_weights=92,
    target_capacity=183500800,
    target_staging_mib=350.0,
    draft_begin=80.15,
    draft_end=78.92,
    draft_usage=1.23,
    draft_sharded=0,
    draft_capacity=None,
    mamba_slots=208,
    conv=1.86,
    ssm=10.93,
    replay=replay_parts(12, 209),
    kv_gib=34.60,
    pool_end=26.74,
    reclaimed=1.11,
    slots_per_req=7997,
    multiplier=4,
    draft_tokens=7997 * 209,
    draft_kv=1.99,
    draft_pool_end=23.92,
    capture_begin=22.34,
    target_bs=DP2_BS,
    target_progress=[21.01, *descending(10.77, 9.41, len(DP2_BS) - 1)],
    target_usage=12.96,
    target_end=9.38,
    draft_capture_begin=8.99,
    draft_progress=descending(8.93, 8.05, len(DP2_BS)),
    draft_capture_usage=1.00,
    draft_capture_end=7.99,
    summary_avail=7.96,
    max_running_requests=192,
    all_reduce_lines=2,
    hoisted=False,
    rank_offsets=[0.0, -0.01, 0.02, 0.01, -0.02, 0.03, 0.0, 0.01],
)


class Writer:
    """Collects log lines with timestamps; interleaves the 8 ranks like a shared stderr."""

    def __init__(self, deployment: Deployment) -> None:
        self.d = deployment
        self.now = deployment.start
        self.lines: list[str] = []
        self.random = random.Random(deployment.name)

    def stamp(self) -> str:
        return self.now.strftime("%Y-%m-%d %H:%M:%S")

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def plain(self, text: str) -> None:
        self.lines.append(text)

    def main(self, text: str) -> None:
        self.lines.append(f"[{self.stamp()}] {text}")

    def rank0(self, text: str) -> None:
        self.lines.append(f"[{self.stamp()} {self.d.tags[0]}] {text}")

    def ranks(self, make: object, spread: float = 0.0) -> None:
        """One line per rank (rank order shuffled); make(rank, offset) -> text."""
        order = list(range(8))
        self.random.shuffle(order)
        for rank in order:
            offset = self.d.rank_offsets[rank]
            assert callable(make)
            self.lines.append(f"[{self.stamp()} {self.d.tags[rank]}] {make(rank, offset)}")
            if spread:
                self.tick(self.random.uniform(0, spread))


def clock(seconds: float) -> str:
    """tqdm's mm:ss."""
    whole = max(0, int(round(seconds)))
    return f"{whole // 60:02d}:{whole % 60:02d}"


def gb(value: float) -> str:
    return f"{value:.2f} GB"


def bar(label: str, total: int, states: list[tuple[str, int]], seconds: float) -> str:
    """A tqdm bar rewritten with CR; each state (description, done) as SGLang's stderr shows it."""
    parts = [f"  0%|          | 0/{total} [00:00<?, ?it/s]"]
    for description, done in states:
        percent = int(100 * done / total)
        filled = "█" * (10 * done // total)
        elapsed = seconds * done / total
        rate = f"{elapsed / done:.2f}s/it" if done else "?it/s"
        counts = f"{done}/{total} [{clock(elapsed)}<{clock(seconds - elapsed)}, {rate}]"
        parts.append(f"{label}{description}: {percent:3d}%|{filled:<10}| {counts}")
    return "\r".join(parts)


def loading_bar(total: int, done_states: tuple[int, ...], seconds: float) -> str:
    """SGLang's weight-loading bar (custom tqdm format), CR-updated on one physical line."""
    parts = []
    for done in done_states:
        elapsed = seconds * done / total
        rate = f"{elapsed / done:5.2f}s/it" if done else "?it/s"
        remaining = clock(seconds - elapsed) if done else "?"
        parts.append(
            f"Loading safetensors checkpoint shards: {int(100 * done / total):3d}% Completed "
            f"| {done}/{total} [{clock(elapsed)}<{remaining}, {rate}]"
        )
    return "\r".join(parts)


def capture_bar(bs: list[int], avails: list[float], seconds: float) -> str:
    order = sorted(bs, reverse=True)
    states: list[tuple[str, int]] = []
    for done, (size, avail) in enumerate(zip(order, avails, strict=True)):
        description = f" (bs={size} avail_mem={avail:.2f} GB)"
        states.append((description, done))
        states.append((description, done + 1))
    return bar("Capturing batches", len(order), states, seconds)


def write(deployment: Deployment) -> str:
    d = deployment
    w = Writer(d)
    w.main(d.server_args)
    w.tick(2)
    w.main(
        "WARNING server_args.py:1502: DP attention is enabled. The chunked prefill size is "
        "adjusted to 8192 to avoid MoE kernel issues."
    )
    w.main("Using default HuggingFace chat template with detected content format: string")
    w.tick(9)
    w.ranks(lambda rank, _: "Init torch distributed begin.")
    w.plain("NCCL version 2.27.7+cuda12.9")
    w.tick(6)
    for rank in range(8):
        w.plain(
            f"[W{w.now:%m%d %H:%M:%S}.{118273829 + rank * 7919} ProcessGroupNCCL.cpp:981] Warning: "
            "TORCH_NCCL_AVOID_RECORD_STREAMS is the default now, this environment variable is "
            "thus deprecated. (function operator())"
        )
    for rank in range(8):
        w.plain(
            f"[Gloo] Rank {rank} is connected to 15 peer ranks. Expected number of connected "
            "peer ranks is : 15"
        )
    w.tick(3)
    for _ in range(d.all_reduce_lines):
        w.ranks(
            lambda rank, _: (
                "All Reduce config: symmetric_memory = 28.01 MB, local_buffer = 8.00 MB, "
                "multicast = True"
            )
        )
        w.tick(1)
    w.ranks(
        lambda rank, offset: (
            f"Init torch distributed ends. elapsed={14.8 + rank * 0.03:.2f} s, "
            f"mem usage={d.nccl - (0.01 if rank in (3, 6) else 0.0):.2f} GB"
        )
    )
    w.tick(1)
    w.ranks(lambda rank, o: f"Load weight begin. avail mem={gb(d.load_begin + o)}")
    w.rank0("Using model weights format ['*.safetensors']")
    w.ranks(lambda rank, _: "Weight sharding: 92 weight-sharded layers (layers 1-92, group size 8)")
    load_seconds = 412.37 if d.name == "dp16" else 318.52
    w.plain(loading_bar(64, (0, 9, 21, 33, 46, 58, 64), load_seconds - 20))
    w.tick(load_seconds - 22)
    w.ranks(
        lambda rank, _: (
            f"requant-then-shard: {d.requant_weights} block-FP8 weights kept full through "
            "post-load, sharded after requant"
        ),
        spread=0.4,
    )
    w.ranks(
        lambda rank, _: (
            f"FlatAGStagingPool allocated: role=target, buffers=2, capacity={d.target_capacity}, "
            f"total={d.target_staging_mib:.1f} MiB"
        )
    )
    w.tick(3)
    w.ranks(
        lambda rank, o: (
            f"Load weight end. elapsed={load_seconds + rank * 0.11:.2f} s, type=KimiK3ForCausalLM, "
            f"quant=fp8, fmt=e4m3, avail mem={gb(d.load_end + o)}, mem usage={d.load_usage:.2f} GB."
        ),
        spread=0.3,
    )
    w.tick(4)
    w.ranks(lambda rank, o: f"Load weight begin. avail mem={gb(d.draft_begin + o)}")
    w.ranks(lambda rank, _: f"DFlash draft: {d.draft_sharded} weight-sharded layers")
    w.plain(loading_bar(2, (0, 1, 2), 8.9))
    w.tick(10)
    w.ranks(
        lambda rank, o: (
            f"Load weight end. elapsed={9.84 + rank * 0.05:.2f} s, type=KimiK3DSparkDraftModel, "
            f"avail mem={gb(d.draft_end + o)}, mem usage={d.draft_usage:.2f} GB."
        )
    )
    if d.draft_capacity is not None:
        total_mib = 2 * d.draft_capacity / (1 << 20)
        w.ranks(
            lambda rank, _: (
                f"FlatAGStagingPool allocated: role=draft, buffers=2, "
                f"capacity={d.draft_capacity}, total={total_mib:.1f} MiB"
            )
        )
    w.tick(2)
    w.ranks(
        lambda rank, _: (
            f"Mamba Cache is allocated. max_mamba_cache_size: {d.mamba_slots}, "
            f"conv_state size: {d.conv:.2f}GB, ssm_state size: {d.ssm:.2f}GB "
        )
    )
    replay = ", ".join(f"{key}={value:.3f}GB" for key, value in d.replay.items())
    w.ranks(
        lambda rank, _: f"GDN ReplaySSM ring buffers allocated (record_len=16, fold=1): {replay}"
    )
    tokens = kv_tokens(d.kv_gib)
    assert round((tokens + PAGE) * MLA_BYTES_PER_TOKEN / GIB, 2) == d.kv_gib
    w.ranks(
        lambda rank, _: (
            f"KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: {tokens}, "
            f"KV size: {d.kv_gib:.2f} GB"
        )
    )
    w.tick(1)
    w.ranks(lambda rank, o: f"Memory pool end. avail mem={gb(d.pool_end + o)}")
    w.ranks(
        lambda rank, _: (
            f"DSpark SWA draft: reclaimed {d.reclaimed:.2f} GiB vs proportional draft KV"
        )
    )
    w.ranks(
        lambda rank, _: (
            f"DSpark draft SWA slot map: slots_per_req={d.slots_per_req}, multiplier={d.multiplier}"
        )
    )
    w.ranks(
        lambda rank, _: (
            f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {d.draft_tokens}, "
            f"KV size: {d.draft_kv:.2f} GB"
        )
    )
    w.ranks(lambda rank, o: f"Memory pool end. avail mem={gb(d.draft_pool_end + o)}")
    w.tick(1)
    for _role in ("target", "draft"):
        w.ranks(
            lambda rank, o: f"Init attention backend begin. avail mem={gb(d.draft_pool_end + o)}"
        )
        w.ranks(
            lambda rank, o: (
                f"Init attention backend end. elapsed=0.0{3 + rank % 2} s, "
                f"avail mem={gb(d.draft_pool_end + o)}"
            )
        )
    w.tick(6 if d.name == "dp16" else 11)
    bs_text = ", ".join(str(size) for size in d.target_bs)
    w.ranks(
        lambda rank, o: (
            "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=5, "
            f"bs=[{bs_text}], avail mem={gb(d.capture_begin + o)}"
        )
    )
    target_seconds = 21.33 if d.name == "dp16" else 68.71
    w.plain(capture_bar(d.target_bs, d.target_progress, target_seconds))
    w.tick(target_seconds)
    w.ranks(
        lambda rank, o: (
            f"Capture target verify CUDA graph end. elapsed={target_seconds + rank * 0.07:.2f} s, "
            f"mem usage={d.target_usage:.2f} GB, avail mem={gb(d.target_end + o)}."
        )
    )
    if d.hoisted:
        w.rank0("draft hoisted 1/5 layer AG(s) out of CUDA graph")
    w.tick(1)
    w.rank0(
        "Capture draft decode CUDA graph begin. backend=full, num_tokens_per_req=4, "
        f"bs=[{bs_text}], avail mem={gb(d.draft_capture_begin)}"
    )
    draft_seconds = 4.12 if d.name == "dp16" else 17.45
    w.plain(capture_bar(d.target_bs, d.draft_progress, draft_seconds))
    w.tick(draft_seconds)
    w.rank0(
        f"Capture draft decode CUDA graph end. elapsed={draft_seconds:.2f} s, "
        f"mem usage={d.draft_capture_usage:.2f} GB, avail mem={gb(d.draft_capture_end)}."
    )
    w.rank0(
        f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        f"max_running_requests={d.max_running_requests}, context_len={CONTEXT}, "
        f"available_gpu_mem={gb(d.summary_avail)}"
    )
    w.tick(3)
    w.main("INFO:     Started server process [182733]")
    w.main("INFO:     Waiting for application startup.")
    w.main("INFO:     Application startup complete.")
    w.main("INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
    w.tick(2)
    w.main("The server is fired up and ready to roll!")
    return "\n".join(w.lines) + "\n"


def main() -> None:
    for deployment in (DP16, DP2):
        (HERE / f"{deployment.name}.log").write_text(write(deployment), encoding="utf-8")


if __name__ == "__main__":
    main()
