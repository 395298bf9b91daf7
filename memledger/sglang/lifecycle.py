"""SGLang's memory lifecycle, one `Stage` per phase in the order a worker runs them: what the
phase allocates, what bounds it, and which settings move it (with the direction that frees
memory there). Diagnose follows the phase of any evidence (a milestone line, a traceback frame,
an OOM text, a number the reporter typed) to its stage, and takes the levers of a shortfall from
it when the paste carries no numbers for a valued lever: the same table answers every family,
and "no knob helps" is said only where a stage has no lever.

Order (v0.5.8 model_executor/model_runner.py `initialize` :414: `init_torch_distributed` :693 ->
`load_model` :805 -> `init_memory_pool` (model_runner_kv_cache_mixin.py:252) ->
`init_attention_backend` :1596 / `kernel_warmup` :1688 -> `init_device_graphs` :1979); a
speculative draft worker (speculative/eagle_worker.py `__init__` :80) then runs its own dist
init, load and pools (`super().__init__` :140) and its attention backend and graphs (:200-201);
then the HTTP server's warmup (entrypoints/http_server.py:1496) and serving. Inside RL
frameworks SGLang's weights and KV cache are released and resumed between rollouts through
torch_memory_saver (managers/scheduler_update_weights_mixin.py:121 `release_memory_occupation`,
:154 `resume_memory_occupation`).

## Adding a stage or a lever
A lever (memledger.sglang.levers) is (knob, direction, what it changes there); the knob is
SGLang's server-arg name. An RL framework's name for a knob is `frameworks.FRAMEWORKS`, not a
lever here. Add a test in tests/diagnosis/test_lifecycle.py when a stage gains a lever.
"""

from __future__ import annotations

from dataclasses import dataclass

from memledger.model.events import EventKind
from memledger.sglang.failure_rules import Phase
from memledger.sglang.levers import Lever
from memledger.sglang.releases import ReleaseRange


@dataclass(frozen=True)
class Stage:
    phase: Phase
    worker: str
    """`target`, `draft` or `engine` (the serving engine as a whole)."""
    allocates: str
    bound: str
    """What bounds the phase's allocations."""
    levers: tuple[Lever, ...]
    """What lowers the phase's own demand."""
    source: str
    bound_levers: tuple[Lever, ...] = ()
    """What raises the bound (more memory for the phase) when the bound itself is short: zero
    free after the graphs is a serving stage whose bound is gone."""


_MFS_LOWER = Lever(
    "mem_fraction_static",
    "lower",
    "the KV pool is sized to rest = A - P x (1 - mfs) (v0.5.8 "
    "model_runner_kv_cache_mixin.py:138-140): lowering mfs by d leaves d x P more free after "
    "the pool for what comes after it",
)
_MFS_RAISE = Lever(
    "mem_fraction_static",
    "raise",
    "rest = A - P x (1 - mfs) was <= 0 after the weights: raising mfs by d gives the KV pool "
    "d x P (minimum viable 1 - A/P, v0.5.23 mem_cache/kv_cache_configurator.py:3044-3056)",
)
_TP_RAISE = Lever(
    "tp_size",
    "raise",
    "the weights are split over the tensor-parallel ranks: each rank holds about 1/tp of them",
)
_KV_CAP = Lever(
    "max_total_tokens",
    "lower",
    "caps the KV pool's tokens (v0.5.8 model_runner_kv_cache_mixin.py:299-305): the bytes of "
    "the tokens cut stay free after the pool",
)
KV_CAP_RAISE = Lever(
    "max_total_tokens",
    "raise",
    "the KV pool holds min(what the fraction's budget gives, --max-total-tokens) tokens (v0.5.8 "
    "model_executor/model_runner_kv_cache_mixin.py:299-306; v0.5.23 "
    "mem_cache/kv_cache_configurator.py:3096-3105): while the cap binds a higher fraction buys "
    "no token, a higher cap does (up to what the budget holds)",
)
_CONTEXT = Lever(
    "context_length",
    "lower",
    "the request table is rows x (context_len + 4) int32 and context-sized workspaces follow "
    "it (v0.5.8 mem_cache/memory_pool.py:136)",
)
_GRAPH_BS = Lever(
    "cuda_graph_max_bs",
    "lower",
    "graphs are captured largest batch first and their memory grows with it (v0.5.8 "
    "model_executor/cuda_graph_runner.py:485)",
    needs="the server_args line or the `Capture cuda graph bs` line",
    value="args.cuda_graph_max_bs // 2",
)
_NO_GRAPHS = Lever("disable_cuda_graph", "enable", "no graphs, no graph memory; decode is slower")
_RUNNING = Lever(
    "max_running_requests",
    "lower",
    "fewer requests a decode batch: less activation memory (SGLang's troubleshooting guide: "
    "decode OOM -> lower --max-running-requests)",
)
_CHUNK = Lever(
    "chunked_prefill_size",
    "lower",
    "a prefill chunk's activations scale with its tokens (troubleshooting guide: prefill OOM -> "
    "lower --chunked-prefill-size)",
    needs="the server_args line",
    value="max(args.chunked_prefill_size // 2, 256)",
)
_MAX_PREFILL = Lever(
    "max_prefill_tokens",
    "lower",
    "a prefill batch admits requests while their new tokens fit in --max-prefill-tokens, the "
    "first one whatever its length (v0.2.13 managers/tp_worker.py:369-374 and "
    "policy_scheduler.py:200; v0.4.6 managers/scheduler.py:1199-1204 and "
    "schedule_policy.py:464): a lower cap, fewer new tokens and smaller activations a batch",
)

HICACHE_SIZE_LOWER = Lever(
    "hicache_size",
    "lower",
    "--hicache-size is GB a rank (v0.5.8 mem_cache/memory_pool_host.py:151-152: host_size x 1e9 "
    "bytes over each rank's bytes a token): the host holds ranks x it, and SGLang allows a rank "
    "(available RAM - 10 GiB) / the ranks on the host (v0.5.23 mem_cache/pool_host/base.py:28, "
    ":84-108)",
)


@dataclass(frozen=True)
class HostFreeFigure:
    """What the `free` figure of HiCache's refusal (`Not enough host memory available.
    Requesting X GB but only have Y GB free`) is at some releases, and a rank's room by it."""

    releases: ReleaseRange
    figure: str
    room: str
    """A rank's room for its host pool in GB: a formula over `log.free_gb`, `log.ranks` (the
    ranks on the host) and `log.reserve_gb` (the 10 GiB SGLang keeps, in GB)."""
    source: str
    refused_below: bool = False
    """The figure can be above the request it refused (the reserve is not taken off it)."""


HOST_FREE_FIGURES: tuple[HostFreeFigure, ...] = (
    HostFreeFigure(
        ReleaseRange(last="0.4.9"),
        "the host's available RAM (the check took 10 GiB off, the text did not)",
        "(log.free_gb - log.reserve_gb) / log.ranks",
        "v0.4.9 mem_cache/memory_pool_host.py:70-81",
        refused_below=True,
    ),
    HostFreeFigure(
        ReleaseRange("0.4.10", "0.5.18"),
        "the host's available RAM less 10 GiB, which every rank of the host checks its own pool "
        "against",
        "log.free_gb / log.ranks",
        "v0.4.10 mem_cache/memory_pool_host.py:68-80; v0.5.8 :165-176; v0.5.18 "
        "mem_cache/pool_host/base.py:141-150",
    ),
    HostFreeFigure(
        ReleaseRange("0.5.19"),
        "a rank's share, (available RAM - 10 GiB) // the ranks on the host",
        "log.free_gb",
        "v0.5.19 mem_cache/pool_host/base.py:51-59, :175-181; v0.5.23 :84-108, :248-256",
    ),
)
"""The refusal's `free` figure by release (release codes do not tell a .post from its base)."""

HICACHE_RATIO_LOWER = Lever(
    "hicache_ratio",
    "lower",
    "without --hicache-size a rank's host pool is --hicache-ratio x its GPU pool's tokens (v0.5.8 "
    "mem_cache/memory_pool_host.py:153-154)",
)

REFUSAL_LEVERS: dict[str, tuple[Lever, ...]] = {
    # SGLang's own first advice for its SWA cap refusal: fewer requests
    "swa_cap": (
        Lever(
            "max_running_requests",
            "lower",
            "a radix-less hybrid SWA model's SWA pool holds the worst case of --max-running-"
            "requests requests, (window + eviction interval x draft tokens + a page + a decode "
            "step) x max_running_requests // attn dp, plus the prefill chunks in flight (v0.5.23 "
            "model_executor/pool_configurator.py:924-965), and the full KV pool gets what is left "
            "(:1005-1031); the cap grows about linearly with the requests: half of requests x "
            "available / cap leaves the full pool about half the budget",
            needs="the server_args line (max_running_requests)",
            value="floor(args.max_running_requests * log.available_gib / log.swa_cap_gib / 2)",
        ),
    ),
    # a DP worker's share of --max-running-requests rounds down to zero
    "max_running_zero": (
        Lever(
            "max_running_requests",
            "raise",
            "under DP attention each DP worker runs --max-running-requests // dp_size requests "
            "(v0.5.8 model_executor/model_runner.py:558-566; v0.5.23 mem_cache/"
            "kv_cache_configurator.py:3284), 0 below dp_size, which the worker asserts against "
            "(v0.5.8 managers/tp_worker.py:281): dp_size x the requests a worker should run",
            needs="the server_args line (max_running_requests, dp_size, enable_dp_attention)",
            value="args.dp_size if default(args.enable_dp_attention, 0) and "
            "default(args.max_running_requests, 0) < args.dp_size else 0",
        ),
    ),
}
"""The levers of SGLang's KV refusals whose own text or arithmetic names one besides the
fraction (by the kv_refusal event's `shape`), before the fraction's; a value of 0 (or not past
the setting in its direction) means the lever does not answer this paste."""

READY_ROOM_MIN_GIB = 10
READY_ROOM_KEEP_GIB = 8
READY_ROOM_SOURCE = (
    "sgl-project/sglang 21ff1af docs/advanced_features/hyperparameter_tuning.md:35-52"
)
"""SGLang's tuning guide reads `available_gpu_mem` on the summary line just before the server is
ready: 5-8 GB is right, 'too high (e.g., 10 - 20 GB), increase --mem-fraction-static to allocate
more memory to the KV cache' (:47-50); from READY_ROOM_MIN_GIB a ready startup is told the pool
can grow, down to READY_ROOM_KEEP_GIB (the top of 5-8 GB) left free."""
READY_ROOM = Lever(
    "mem_fraction_static",
    "raise",
    "the fraction is (weights + KV pool) / the GPU's memory (SGLang's tuning guide, "
    f"{READY_ROOM_SOURCE}; the pool's budget rest = A - P x (1 - mfs), v0.5.8 "
    "model_runner_kv_cache_mixin.py:138-140): d more moves d x P of the free memory into the KV "
    f"pool; d = (free - {READY_ROOM_KEEP_GIB} GiB) / P keeps the guide's {READY_ROOM_KEEP_GIB} "
    "GiB, rounded down to 0.01 (the guide's step), at most 0.95",
    needs="the server_args and `Load weight begin` lines",
    value=f"min(0.95, floor((args.mem_fraction_static + (log.free_gib - {READY_ROOM_KEEP_GIB}) "
    "/ log.p_gib) * 100) / 100)",
)
"""A ready startup's lever when more is free than the tuning guide keeps (never a failure's)."""

SERVING_NOTE_LEVERS: dict[str, tuple[str, tuple[Lever, ...]]] = {
    # a request longer than the smaller of the context length and the KV pool is refused
    "too_long": (
        "a request was refused as longer than the limit, the smaller of the context length and "
        "the KV pool",
        (
            Lever(
                "mem_fraction_static",
                "raise",
                "the longest request accepted is min(context_len - 1, max_total_num_tokens - 1) - "
                "5 (v0.5.8 managers/tp_worker.py:286-290): where the pool is the smaller, each "
                "0.01 more gives it 0.01 x P more tokens' room",
            ),
            Lever(
                "context_length",
                "raise",
                "where the context length is the smaller of the two, a longer one accepts the "
                "request (v0.5.8 managers/tp_worker.py:286-290)",
            ),
        ),
    ),
    # SGLang retracted running requests (freed their KV and queued them again: v0.5.8
    # managers/scheduler.py:2178-2215, managers/schedule_batch.py:1846 retract_decode)
    "retract": (
        "SGLang retracted requests as the KV pool filled (it paused them and went on: no crash); "
        "if often",
        (
            Lever(
                "schedule_conservativeness",
                "raise",
                "the scheduler admits a request only while the running ones' expected growth "
                "fits, new_token_ratio x their max_new_tokens, a ratio that starts at "
                "SGLANG_INIT_NEW_TOKEN_RATIO x --schedule-conservativeness (v0.5.8 "
                "managers/scheduler.py:789-793): a higher one admits fewer at once, so the pool "
                "fills less often (SGLang's hyperparameter tuning guide: frequent `KV cache pool "
                "is full. Retract requests.` -> e.g. 1.3; an occasional one is fine)",
            ),
            Lever(
                "mem_fraction_static",
                "raise",
                "the KV pool is sized to rest = A - P x (1 - mfs) (v0.5.8 "
                "model_runner_kv_cache_mixin.py:138-140): each 0.01 more gives it 0.01 x P, taken "
                "from the slack that graphs and activations use",
            ),
        ),
    ),
}
"""What SGLang's own serving lines (pool_exhausted events, by shape) call for when no failure
came: what they say and their levers."""

SERVING_BATCH_LEVERS: dict[str, tuple[Lever, ...]] = {
    "prefill": (_MAX_PREFILL, _CHUNK, _MFS_LOWER),
    "decode": (_RUNNING, _MFS_LOWER),
}
"""The levers of a serving OOM that follows a logged serving-batch line
(memledger.sglang.lines.SERVING_BATCH_HEADS), by its stage, in the order to try them: its numbers
(#new-token, #running-req) give their values."""
SERVING_BATCH_COUNT: dict[str, tuple[str, str]] = {
    "prefill": ("new_token", "new tokens went into the last prefill batch"),
    "decode": ("running_req", "requests ran in the last decode batch"),
}
"""The count of a serving-batch line that values its stage's levers: the event's value key
(`#new-token` of a prefill batch, `#running-req` of a decode batch: v0.2.13
managers/tp_worker.py:270-277, :419-427; v0.4.6 managers/scheduler.py:992-1047) and what it
counts."""

LIFECYCLE: tuple[Stage, ...] = (
    Stage(
        Phase.DIST_INIT,
        "target",
        "the CUDA context, NCCL/custom all-reduce buffers; then the per-rank balance check "
        "(min free over ranks vs 0.9 x this rank's)",
        "the free memory of the most occupied rank (world minimum)",
        (),
        "v0.5.8 model_executor/model_runner.py:693-803",
    ),
    Stage(
        Phase.LOAD,
        "target",
        "the target model's weights (plus loader staging)",
        "weight bytes a rank: parameters x dtype / tp",
        (_TP_RAISE, Lever("cpu_offload_gb", "raise", "that many GiB of weights stay in host RAM")),
        "v0.5.8 model_executor/model_runner.py:805",
    ),
    Stage(
        Phase.KV_SIZING,
        "target",
        "nothing: the KV budget rest = A - P x (1 - mfs) is computed",
        "A (free after the weights) and P (free before them)",
        (_MFS_RAISE, _TP_RAISE),
        "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:138-140, :299-331",
    ),
    Stage(
        Phase.MEMORY_POOL,
        "target",
        "the request table, the KV pool (and Mamba/SWA pools)",
        "rest, capped by --max-total-tokens",
        (_KV_CAP, _CONTEXT, _MFS_LOWER),
        "v0.5.8 model_executor/model_runner_kv_cache_mixin.py:252-647",
    ),
    Stage(
        Phase.AFTER_POOL,
        "target",
        "attention-backend workspaces (FlashInfer 384-512 MiB, AITER by context), cuBLAS, "
        "symmetric memory, kernel autotuning",
        "the slack P x (1 - mfs) left after the pool",
        (_MFS_LOWER, _CONTEXT, _KV_CAP),
        "v0.5.8 model_executor/model_runner.py:1587-1726",
    ),
    Stage(
        Phase.GRAPH_CAPTURE,
        "target",
        "CUDA graphs' private pool, largest batch first",
        "the slack after the pool and the workspaces",
        (_GRAPH_BS, _MFS_LOWER, _NO_GRAPHS),
        "v0.5.8 model_executor/model_runner.py:1979-2016",
    ),
    Stage(
        Phase.DRAFT,
        "draft",
        "the speculative draft's own dist init and balance check, weights, KV pool(s) (one a "
        "draft step in some releases) and graphs, after the target's graphs",
        "what the target left free: the draft's weights and pools are outside the target's "
        "budget before sglang PR #23862",
        (_MFS_LOWER, _KV_CAP, _GRAPH_BS),
        "v0.5.8 speculative/eagle_worker.py:80-201",
    ),
    Stage(
        Phase.WARMUP,
        "engine",
        "the warmup request's activations",
        "the slack after graphs",
        (_CHUNK, _MFS_LOWER),
        "v0.5.8 entrypoints/http_server.py:1496",
    ),
    Stage(
        Phase.SERVING,
        "engine",
        "activations of each batch, outside the KV pool",
        "the slack after graphs (SGLang's tuning guide: keep 5-8 GB)",
        (_RUNNING, _CHUNK, _MFS_LOWER),
        "v0.5.8 managers/scheduler.py run_batch; docs/references/troubleshooting.md",
        bound_levers=(_MFS_LOWER, _KV_CAP),
    ),
    Stage(
        Phase.RESUME,
        "engine",
        "the weights and KV cache SGLang released for training, re-created through "
        "torch_memory_saver (cuMemCreate)",
        "what the trainer left free on the same GPUs",
        (_MFS_LOWER,),
        "v0.5.8 managers/scheduler_update_weights_mixin.py:121-154",
    ),
)

STAGE: dict[Phase, Stage] = {stage.phase: stage for stage in LIFECYCLE}
MILESTONE_PHASE: dict[EventKind, Phase] = {
    EventKind.DIST_INIT_BEGIN: Phase.DIST_INIT,
    EventKind.DIST_INIT_END: Phase.LOAD,
    EventKind.MEMORY_BASELINE: Phase.LOAD,
    EventKind.LOAD_BEGIN: Phase.LOAD,
    EventKind.LOAD_END: Phase.MEMORY_POOL,
    EventKind.KV_ALLOCATED: Phase.MEMORY_POOL,
    EventKind.MAMBA_ALLOCATED: Phase.MEMORY_POOL,
    EventKind.SWA_POOL: Phase.MEMORY_POOL,
    EventKind.SWA_SPLIT: Phase.MEMORY_POOL,
    EventKind.MEMORY_POOL_END: Phase.AFTER_POOL,
    EventKind.ATTENTION_BACKEND_BEGIN: Phase.AFTER_POOL,
    EventKind.ATTENTION_BACKEND_END: Phase.AFTER_POOL,
    EventKind.SYMM_PREALLOC: Phase.AFTER_POOL,
    EventKind.CAPTURE_BEGIN: Phase.GRAPH_CAPTURE,
    EventKind.CAPTURE_BS: Phase.GRAPH_CAPTURE,
    EventKind.CAPTURE_PROGRESS: Phase.GRAPH_CAPTURE,
    EventKind.CAPTURE_END: Phase.GRAPH_CAPTURE,
    EventKind.SUMMARY: Phase.WARMUP,
}
"""The stage a worker is in once it has printed a milestone line of this kind, until the next
(the lines in the order of `LIFECYCLE`'s sources; the summary line precedes the warmup request)."""


DRAFT_START = frozenset(
    {EventKind.DIST_INIT_BEGIN, EventKind.DIST_INIT_END, EventKind.LOAD_BEGIN, EventKind.LOAD_END}
)
"""Milestones a worker prints when it starts: after a capture end they are the draft's."""
DRAFT_STEPS = frozenset(
    {Phase.DIST_INIT, Phase.LOAD, Phase.MEMORY_POOL, Phase.AFTER_POOL, Phase.GRAPH_CAPTURE}
)
"""The target's startup steps a draft worker runs again for itself."""

_AFTER_LOAD = LIFECYCLE[LIFECYCLE.index(STAGE[Phase.MEMORY_POOL]) :]
"""The stages from the KV pool on: everything after the weights."""


@dataclass(frozen=True)
class Mention:
    """What a paste's prose (or its settings) names that places a failure in a stage or explains
    it: the stage, the levers it adds, what it says, with the source."""

    name: str
    """The `mention` value of a reported event (memledger.sglang.errors, kind `reported`)."""
    phase: Phase | None
    """The stage it places a failure in when nothing else does."""
    says: str
    levers: tuple[Lever, ...] = ()
    moment: bool = False
    """It says when the failure came (`during warmup`, `under load`): it places the failure
    wherever it stands in the paste, not only in the sentence that says it failed, when nothing
    in the log places it."""
    alone: bool = False
    """What it says holds without a failure (SGLang's own warning, a question about a pool's
    size, memory that grows): a ready or cut-off log is answered with it too."""
    own_pool: bool = False
    """Its levers hold only for SGLang's own pool running out (its raise, or an OOM said in
    words), not for an allocator's OOM text, whose lever goes the other way."""
    levers_alone: bool = False
    """Its levers answer it without a failure too (a cap SGLang set, memory that grows); else
    they are a failure's (HiCache's transfer buffers) and a log with none names it without them."""
    answer: str = ""
    """What it comes to, in words: the verdict says it wherever the mention is named (with no
    failure to lead with, what the paste names is the news), before the mention's own levers.
    For a prescription that is no lever (wait, unset, pin, upgrade) or a mechanism to name."""
    in_budget: bool = False
    """What it names may be taken before SGLang sizes the KV pool, out of the budget the pool is
    sized from (a plug-in's per-request buffers): its levers answer SGLang's refusal too."""
    outside: bool = False
    """It names memory held outside SGLang's process (another process, a driver): with a failure
    its answer leads the verdict, ahead of any stage's levers, which only fit the pools around
    what it holds (SGLang sizes them on what is free when it starts: v0.5.8
    model_runner_kv_cache_mixin.py:136-144)."""
    grew: tuple[str, ...] = ()
    """It names the stage that grew into a failure of its `phase` (or one the paste does not
    place), which these knobs do not shrink (a lower fraction's d x P comes out of the KV pool
    instead): its levers lead the OOM's verdict and Suggestions where a valued lever of one of
    them would (a valued lever that shrinks the same stage, fewer requests, keeps its place)."""

    @property
    def subject(self) -> str:
        """What it names: `says` up to its first colon (a lever's or a verdict's lead words)."""
        return self.says.split(":")[0]


MENTIONS: tuple[Mention, ...] = (
    Mention(
        "draft_window",
        Phase.SERVING,
        "speculative decoding's draft-token window: the target verifies bs x "
        "--speculative-num-draft-tokens tokens a step, so the verify pass's activations and "
        "graphs grow with it (v0.5.8 model_executor/cuda_graph_runner.py:283-286); SGLang's own "
        "PD-decode reserve counts max(running requests x draft tokens, 2048) x 1.5 MiB for them "
        "(v0.5.23 arg_groups/memory_hook.py:297-311), out of the same free memory as the KV "
        "pool, so a lower --mem-fraction-static shrinks the pool the decode serves from, while a "
        "smaller window shrinks the workspace itself",
        (
            Lever(
                "speculative_num_draft_tokens",
                "lower",
                "each draft token less takes one token a running request off the verify pass "
                "(bs x num_draft_tokens, v0.5.8 model_executor/cuda_graph_runner.py:283-286); "
                "with EAGLE trees it is at most topk x num_steps + 1",
            ),
            Lever(
                "speculative_num_steps",
                "lower",
                "fewer draft steps, fewer draft tokens to verify (EAGLE: the tree's depth; v0.5.8 "
                "speculative/eagle_worker.py:80-201)",
            ),
            _GRAPH_BS,
        ),
        grew=("mem_fraction_static", "max_total_tokens"),
    ),
    Mention(
        "speculative",
        Phase.DRAFT,
        "speculative decoding: the draft worker's weights, KV pool(s) and graphs are allocated "
        "after the target's, outside the target's budget before sglang PR #23862 (v0.5.8 "
        "speculative/eagle_worker.py:80-201); for DeepSeek-V3/GLM-4.5-style MTP models without "
        "--speculative-draft-model-path the target's own checkpoint is the draft's (v0.5.8 "
        "server_args.py:2169-2181)",
        (
            _KV_CAP,
            _GRAPH_BS,
            Lever(
                "speculative_num_draft_tokens",
                "lower",
                "the target's verify pass runs num_draft_tokens tokens a request, so its graphs "
                "and activations are bs x num_draft_tokens tokens (v0.5.8 "
                "model_executor/cuda_graph_runner.py:283-286)",
            ),
        ),
        answer="the draft's weights, pools and graphs come on top of the target's (no "
        "--speculative-draft-model-path: an MTP model drafts from its own checkpoint)",
    ),
    Mention(
        "draft_startup",
        Phase.DRAFT,
        "the speculative draft worker's own startup: its dist init, weights, KV pool(s) and "
        "graphs after the target's graphs (v0.5.8 speculative/eagle_worker.py:80-201)",
        moment=True,
    ),
    Mention(
        "logprob",
        Phase.SERVING,
        "input logprobs: the logits of every prompt token from logprob_start_len on are kept "
        "(tokens x vocabulary, v0.5.8 layers/logits_processor.py:478-513), so long prompts with "
        "return_logprob and a small logprob_start_len need far more than the batch's activations",
        (
            Lever(
                "logprob_start_len",
                "raise",
                "a request setting: logprobs only for the tokens that need them (the new ones), "
                "or no return_logprob; SGLANG_ENABLE_LOGITS_PROCESSER_CHUNK=1 computes them "
                "2048 rows at a time (v0.5.8 environ.py:418, layers/logits_processor.py:273-275), "
                "off by default until v0.5.18 turns it on (SGLANG_ENABLE_LOGPROB_CHUNK, "
                "environ.py:1072-1074): upgrade, or set it; a lower fraction does not bound it",
            ),
        ),
        moment=True,
    ),
    Mention(
        "kv_cap",
        None,  # a cap on a pool, not a stage
        "--max-total-tokens, a cap on the KV pool's tokens: SGLang sizes the pool from the "
        "fraction's budget first and then keeps the smaller of that and the cap (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:299-306, the refusal at :327-331 comes "
        "after; v0.5.23 mem_cache/kv_cache_configurator.py:3042-3058 refuses before the cap at "
        ":3096-3105), so a cap never makes room a refused fraction lacks (raise the fraction; "
        "the cap keeps the pool small); and a pool capped at exactly what a batch needs runs out "
        "of tokens: with --page-size above 1 a request takes whole pages and each extend or "
        "decode step first frees a page a request more than its tokens (v0.5.8 "
        "mem_cache/common.py:264-267, :403-406), and a hybrid SWA model splits the cap between "
        "its two pools (model_runner_kv_cache_mixin.py:206-248): where SGLang's own pool ran "
        "out, raise --max-total-tokens above what the batch needs",
        (KV_CAP_RAISE,),
        own_pool=True,
        answer="applied after the fraction's budget, a cap keeps the pool small but makes no "
        "room a refused fraction lacks, and a pool capped at what a batch needs runs out of tokens",
    ),
    Mention(
        "per_request_rows",
        None,  # the tables are sized with the pool; a plug-in's buffer may be in the budget
        "memory with a row for each request SGLang may run: the request table is rows x "
        "(context_len + 4) int32 (v0.5.8 mem_cache/memory_pool.py:136), a hybrid model's Mamba "
        "slots and some attention workspaces (AITER's max_bs) follow the same count, and so do "
        "plug-ins' per-request buffers; with --max-running-requests unset the count is SGLang's "
        "estimate from the pool, min(max(tokens / context_len x 512, 2048), 4096) (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:257-265; v0.5.23 "
        "mem_cache/kv_cache_configurator.py:3119-3132 caps it at half the tokens), far more than "
        "a small pool serves: set --max-running-requests to what the pool serves",
        (
            Lever(
                "max_running_requests",
                "lower",
                "each per-request table and buffer holds that many rows, not SGLang's estimate of "
                "up to 4096 (v0.5.8 model_runner_kv_cache_mixin.py:257-265)",
            ),
        ),
        in_budget=True,
    ),
    Mention(
        "page_size",
        Phase.SERVING,
        "a paged KV cache: a request takes whole pages (v0.5.8 mem_cache/common.py:404-406), "
        "and the scheduler's token accounting has missed page rounding in some releases "
        "(sglang#4913, PR #7397), so a pool with tokens to spare can raise 'out of memory'; "
        "the retraction that makes room for the next decode counted tokens, not pages "
        "(v0.4.6.post5 managers/schedule_batch.py:1355-1374), so it could stop with fewer free "
        "pages than the next decode takes (v0.5.8 retracts until the pages fit, "
        "check_decode_mem :1826-1836)",
        (
            Lever(
                "page_size",
                "lower",
                "smaller pages waste less of each request's last page (1: no rounding)",
            ),
        ),
        alone=True,
        answer="a request takes whole pages, and some releases' scheduler counted tokens, not "
        "pages (sglang#4913, PR #7397), so 'out of memory' or a retraction can come with tokens "
        "to spare",
    ),
    Mention(
        "attention_workspace",
        Phase.AFTER_POOL,
        "the AITER attention backend's workspace: allocated as the backend starts, after the KV "
        "pool, max_bs x heads x ceil(context_len / 256) partitions x head_dim (v0.5.8 "
        "layers/attention/aiter_backend.py:157-167, v0.5.23 :556-566), so it grows with the "
        "context length and the request slots, outside the KV budget (sglang PR #20888 caps it by "
        "the KV capacity)",
        (
            _CONTEXT,
            Lever(
                "max_running_requests",
                "lower",
                "the workspace's max_bs: fewer request slots, a smaller workspace (v0.5.8 "
                "aiter_backend.py:157-167)",
            ),
        ),
    ),
    Mention(
        "autotune_batch",
        Phase.AFTER_POOL,
        "FlashInfer's autotune: a dummy forward at startup, after the KV pool, of a batch as "
        "large as the request slots (v0.5.8 model_executor/model_runner.py:1726-1735, "
        "req_to_token_pool.size; x the draft tokens under speculative decoding :1745-1755) or "
        "as the decode graphs' largest (v0.5.23 model_executor/runner/base_runner.py:279-284, "
        "decode_cuda_graph_runner.py:704-716); its logits are gathered over the DP ranks "
        "under DP attention (sglang PR #23796), all out of the slack after the pool",
        (
            Lever(
                "max_running_requests",
                "lower",
                "the autotune batch is the request slots, req_to_token_pool.size (v0.5.8 "
                "model_executor/model_runner.py:1733): fewer slots, a smaller dummy forward",
            ),
            Lever(
                "disable_flashinfer_autotune",
                "enable",
                "no autotune forward at startup (v0.5.8 server_args.py:441, "
                "model_runner.py:1699-1702); kernels keep their default configs",
            ),
            Lever(
                "cuda_graph_max_bs",
                "lower",
                "from v0.5.23 the autotune reuses the decode graphs' buffers of their largest "
                "batch (model_executor/runner/decode_cuda_graph_runner.py:704-716)",
            ),
        ),
    ),
    Mention(
        "indexer_logits",
        Phase.SERVING,
        "the sparse-attention indexer's scores (DeepSeek-V3.2's DSA, V4's C4 indexer): an fp32 "
        "[prefill-chunk tokens x context positions] logits tensor a layer, made by DeepGEMM "
        "outside --mem-fraction-static's budget, so it grows with the context and the chunk "
        "(v0.5.17 layers/attention/dsv4/indexer.py:726, :774-783 score all of a chunk's rows at "
        "once); a lower fraction only moves the wall; v0.5.23 splits the rows under a "
        "free-memory budget (dsv4/indexer.py:1083-1110, sglang PR #39095), as v0.5.8 did for "
        "V3.2 (layers/attention/nsa/nsa_indexer.py:540-547): upgrade",
        (
            Lever(
                "chunked_prefill_size",
                "lower",
                "the logits' rows are the prefill chunk's tokens (v0.5.17 "
                "layers/attention/dsv4/indexer.py:726): half the chunk, half the tensor",
            ),
        ),
        moment=True,
    ),
    Mention(
        "audio_decoder_stage",
        None,  # not SGLang's engine: its serving levers do not apply
        "a multi-stage pipeline's audio decoder stage (sglang-omni's vocoder, code2wav): it runs "
        "on the GPU beside SGLang's engine, which keeps its fraction of it (mem_fraction_static "
        "0.85 for S2-Pro: sgl-project/sglang-omni@2489a10 "
        "models/fishaudio_s2_pro/pipeline/stages.py:316-324), and its input is the codes the AR "
        "stage generated, up to that stage's max_new_tokens (2048 by default: "
        "models/fishaudio_s2_pro/runtime/s2pro_sglang_ar.py:305, :345), so a generation that never "
        "meets its end token hands it the longest input",
        (
            Lever(
                "max_new_tokens",
                "lower",
                "a request setting of the AR stage: the decoder stage's input and activations "
                "scale with the codes generated (a generation that stops at its end token stays "
                "below it)",
            ),
            _MFS_LOWER,
        ),
    ),
    Mention(
        "omni_component_load",
        Phase.AFTER_POOL,
        "a pipeline's own models on SGLang's GPU (sglang-omni's audio decoder, DAC codecs, "
        "code2wav): loaded outside SGLang's budget, which keeps its fraction of the whole card "
        "(mem_fraction_static 0.85 for S2-Pro: sgl-project/sglang-omni@2489a10 "
        "models/fishaudio_s2_pro/pipeline/stages.py:316-324), so what loads after the engine, the "
        "vocoder stage's codec (stages.py:372-379, _load_codec :72-97), gets only the card's "
        "(1 - mfs) less the engine's graphs; sglang-omni sets the fraction a stage with "
        "--mem-fraction-static or --talker-mem-fraction-static",
        (_MFS_LOWER,),
        moment=True,
    ),
    Mention(
        "diffusion_load",
        Phase.LOAD,
        "SGLang's diffusion runtime loading a pipeline's components (text encoders, the DiT, "
        "the VAE): each logged as `Loading <name> from <path>. avail mem: N GB` (v0.5.8 "
        "multimodal_gen/runtime/loader/component_loader.py:152) and resident in full on the GPU "
        "unless offloaded (--text-encoder-cpu-offload, --dit-cpu-offload, "
        "--dit-layerwise-offload: v0.5.8 multimodal_gen/runtime/server_args.py:285-289, on by "
        "default for some pipelines :370-385); there is no KV pool, so --mem-fraction-static sizes "
        "nothing; with --text-encoder-cpu-offload the encoder was still built on the GPU before "
        "FSDP moved it, until sglang PR #17064 built it on the CPU first: upgrade",
        (
            Lever(
                "text_encoder_cpu_offload",
                "enable",
                "the text encoders stay on the host between encodes (v0.5.8 "
                "multimodal_gen/runtime/server_args.py:287); before sglang PR #17064 the encoder "
                "was built on the GPU first: upgrade if loading it still runs out",
            ),
            Lever(
                "dit_cpu_offload",
                "enable",
                "the DiT's weights on the host, moved in for denoising (v0.5.8 "
                "multimodal_gen/runtime/server_args.py:285; --dit-layerwise-offload moves a "
                "layer at a time, :286)",
            ),
        ),
        moment=True,
    ),
    Mention(
        "diffusion_decode",
        None,  # SGLang's diffusion runtime: no KV pool, the LLM engine's levers do not apply
        "SGLang's diffusion runtime decoding the latents with the VAE, after denoising: its "
        "DecodingStage's working set grows with the resolution and "
        "frames, and the DiT and encoders may still hold their memory; --vae-tiling bounds it "
        "(on by default, v0.5.8 multimodal_gen/configs/pipeline_configs/base.py:168, enabled at "
        "runtime/pipelines_core/stages/decoding.py:143-147, where a VAE without enable_tiling "
        "skipped it silently until sglang PR #35353: upgrade); SGLang's own advice on a decode OOM "
        "is tiling, then freeing the finished components with --cpu-offload-components "
        "dit,text_encoder, then a smaller tile, resolution or frame count (v0.5.23 "
        "pipelines_core/stages/decoding.py:318-337); no KV pool, --mem-fraction-static sizes "
        "nothing here",
        (
            Lever(
                "vae_tiling",
                "enable",
                "the VAE decodes tile by tile, a tile's working set instead of the whole latent's "
                "(v0.5.8 multimodal_gen/runtime/pipelines_core/stages/decoding.py:143-147); a VAE "
                "that cannot tile ignored it before sglang PR #35353: upgrade",
            ),
            Lever(
                "dit_cpu_offload",
                "enable",
                "the DiT finished before the decode and can leave the GPU (v0.5.8 "
                "multimodal_gen/runtime/server_args.py:285; v0.5.23: --cpu-offload-components "
                "dit,text_encoder, server_args/server_args.py:453), then a lower resolution or "
                "frame count",
            ),
        ),
        moment=True,
    ),
    Mention(
        "diffusion_oom_advice",
        None,  # SGLang's diffusion runtime: no KV pool, the LLM engine's levers do not apply
        "SGLang's diffusion runtime's own advice on an out-of-memory: its `OOM detected. "
        "Possible solutions` block (v0.5.8 multimodal_gen/runtime/managers/gpu_worker.py:271-280, "
        "printed at :330; v0.5.23 :1750-1771) is about a pipeline's components, not a KV pool, so "
        "--mem-fraction-static sizes nothing; during loading offload a component or stream the "
        "DiT layer by layer (--dit-layerwise-offload; v0.5.23 --layerwise-offload-components); "
        "during a request lower the resolution or --num-frames, or spread the sequence over "
        "GPUs (sequence parallel, FSDP)",
        (
            Lever(
                "dit_layerwise_offload",
                "enable",
                "the DiT's layers stream onto the GPU one at a time (v0.5.8 "
                "multimodal_gen/runtime/server_args.py:286): SGLang's advice for an OOM while "
                "loading",
            ),
            Lever(
                "num_frames",
                "lower",
                "fewer frames (or a lower resolution), fewer tokens in the DiT's sequence: "
                "SGLang's advice for an OOM during a request (v0.5.8 "
                "multimodal_gen/runtime/managers/gpu_worker.py:276)",
            ),
        ),
    ),
    Mention(
        "dflash_dp_attention",
        None,
        "a DFLASH/DSPARK draft under DP attention: its KV pool is sharded at attn_tp_size "
        "(tp_size / dp_size), but the target's budget priced the draft's bytes a token at the "
        "global tp_size (v0.5.20 model_executor/model_runner_components/"
        "spec_aux_hidden_state.py:242-247), so the shared token count overshoots by up to dp "
        "times the draft's term and the draft's own pool runs out at startup (sglang#38202); "
        "v0.5.23 prices it at attn_tp_size (mem_cache/kv_cache_configurator.py:375-379, "
        "mem_cache/draft_kv_budget.py:14-47)",
        (_KV_CAP,),
    ),
    Mention(
        "deepep_normal_graphs",
        Phase.GRAPH_CAPTURE,
        "DeepEP's normal mode (--deepep-mode normal) with CUDA graphs on: its dispatch cannot be "
        "captured in a graph (sglang PR #5014), so before 0.4.6.post5 the capture failed "
        "whatever the memory (v0.4.6 server_args.py:301-312 left graphs on); from 0.4.6.post5 "
        "SGLang turns them off itself (`Cuda graph is disabled because deepep_mode=normal`, "
        "v0.4.6.post5 server_args.py:351-353, v0.5.8 :1987-1989): not a memory problem, and "
        "SGLang's capture advice (a lower --mem-fraction-static, --cuda-graph-max-bs) does not "
        "apply; --deepep-mode low_latency or auto keeps graphs",
        (
            Lever(
                "disable_cuda_graph",
                "enable",
                "DeepEP's normal mode runs outside graphs: what SGLang sets itself from "
                "0.4.6.post5 (server_args.py:351-353)",
            ),
        ),
        alone=True,
        levers_alone=True,  # a paste naming the pair has its fix without the failure shown
    ),
    Mention(
        "lora",
        Phase.LOAD,
        "LoRA adapters: with --enable-lora (or --lora-paths) the adapters' weights and the LoRA "
        "memory pool (max_loras_per_batch slots of max_lora_rank-wide A/B buffers per target "
        "module) are allocated right after the base weights and before KV sizing (v0.5.8 "
        "model_executor/model_runner.py:533-535 then :555; lora/mem_pool.py:52-100), so they "
        "count as weights: what they take is missing from the KV budget",
        (
            Lever(
                "max_loras_per_batch",
                "lower",
                "fewer LoRA slots: the LoRA pool is max_loras_per_batch x the per-slot A/B buffers",
            ),
            Lever(
                "max_lora_rank",
                "lower",
                "narrower LoRA buffers: each slot's A/B buffers are max_lora_rank wide",
            ),
        ),
    ),
    Mention(
        "kt_gpu_experts",
        None,  # the experts are weights, but a reporter's OOM may come at any stage after them
        "KTransformers' CPU/GPU expert split (--kt-weight-path set): each MoE layer keeps "
        "--kt-num-gpu-experts routed experts on the GPU as weights and runs the rest on the CPU "
        "(v0.5.8 server_args.py:4038, layers/moe/kt_ep_wrapper.py:85-94, :206-209); they load "
        "with the weights, before the KV pool is sized, so every expert kept on the GPU is "
        "missing from the KV budget and the slack after it",
        (
            Lever(
                "kt_num_gpu_experts",
                "lower",
                "fewer routed experts per MoE layer on the GPU (0: all on the CPU): their weights "
                "stay free for the KV pool and activations (v0.5.8 kt_ep_wrapper.py:206-209)",
            ),
            _KV_CAP,
        ),
    ),
    Mention(
        "ktransformers",
        None,  # the experts are weights, but a reporter's OOM may come at any stage after them
        "KTransformers' CPU experts: SGLang splits a MoE layer's routed experts between GPU and "
        "CPU only when --kt-weight-path is set (v0.5.8 layers/moe/kt_ep_wrapper.py:73-74 makes "
        "no KT config without it, fused_moe_triton/layer.py:250-270 then creates every local "
        "expert on the GPU; v0.5.23 kt_ep_wrapper.py:78, fused_moe_triton/layer.py:488-505): "
        "without it the whole MoE loads on the GPU with the weights; with it "
        "--kt-num-gpu-experts experts a layer stay there, before the KV pool is sized",
        (
            Lever(
                "kt_weight_path",
                "enable",
                "the CPU experts' weights: without it no expert runs on the CPU and every routed "
                "expert is a GPU weight (v0.5.8 kt_ep_wrapper.py:73-74)",
            ),
            Lever(
                "kt_num_gpu_experts",
                "lower",
                "with --kt-weight-path set: fewer routed experts per MoE layer on the GPU (0: all "
                "on the CPU; v0.5.8 kt_ep_wrapper.py:206-209)",
            ),
            _KV_CAP,
        ),
    ),
    Mention(
        "fraction_near_one",
        None,  # a setting, not a stage
        "a --mem-fraction-static of 0.97 or more: the weights and the KV pool take that share of "
        "the GPU, and CUDA graphs, a prefill chunk's activations and the attention workspaces "
        "share the rest, (1 - mfs) x P (v0.5.8 model_runner_kv_cache_mixin.py:138-140): 0.24 "
        "GiB of 24 at 0.99; SGLang's own default reserves 512 MiB + max(chunked prefill, 2048) "
        "x 1.5 MiB + the graphs' share + tp x pp / 8 GiB, at least 10 GiB on a GPU over 60 GiB "
        "(v0.5.8 server_args.py:988-1031; v0.5.23 arg_groups/memory_hook.py:296-325), so 0.97 "
        "is above its default on any GPU up to 288 GB: lower --mem-fraction-static to (P - that "
        "reserve) / P",
        (_MFS_LOWER,),
        alone=True,
        levers_alone=True,
    ),
    Mention(
        "too_big_for_gpu",
        Phase.LOAD,
        "the weights alone exceed one GPU: a rank holds parameters x dtype / tp of them (v0.5.8 "
        "model_executor/model_runner.py:805), so the load fails before any KV pool, whatever "
        "--mem-fraction-static says; more GPUs (tensor parallelism) or fewer bytes a parameter "
        "(a quantized checkpoint) is the way",
        (_TP_RAISE,),
        moment=True,
    ),
    Mention(
        "swa_pools",
        None,  # a pool's split, not a stage
        "a hybrid sliding-window (SWA) model's two KV pools: the per-layer token count T (the "
        "profiled budget, or --max-total-tokens where it caps it) is split so the full-attention "
        "layers hold T x layers / (r x swa_layers + full_layers) tokens and the SWA layers r times "
        "that, r = --swa-full-tokens-ratio (0.8 by default), each rounded down to pages (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:206-248, :296-305; server_args.py:325); "
        "with half the layers SWA the SWA pool holds about 0.89 T, so a --max-total-tokens set "
        "to exactly what a batch needs leaves the SWA pool short of it: a larger cap (the "
        "tokens needed / the SWA share) or an r nearer 1 gives it room",
    ),
    Mention(
        "loading",
        Phase.LOAD,
        "it failed while the weights were loading: the checkpoint's tensors, then each "
        "quantization method's post-processing, which repacks or re-lays weights out of "
        "transient copies (v0.5.8 model_loader/loader.py:672-681 process_weights_after_loading; "
        "on ROCm with AITER an fp8 MoE layer's experts are shuffled whole, "
        "layers/quantization/fp8.py:840-852), all before the KV pool is sized",
        moment=True,
    ),
    Mention(
        "capture",
        Phase.GRAPH_CAPTURE,
        "it failed while SGLang captured its CUDA graphs: the graphs' private pool, largest "
        "batch first, out of the slack after the KV pool (v0.5.8 "
        "model_executor/model_runner.py:1979-2016)",
        moment=True,
    ),
    Mention(
        "warmup",
        Phase.WARMUP,
        "it failed on the warmup request: its activations, out of the slack after the graphs "
        "(v0.5.8 entrypoints/http_server.py:1496)",
        moment=True,
    ),
    Mention(
        "mamba",
        Phase.MEMORY_POOL,
        "a hybrid model's Mamba state pool: one slot of conv and SSM state a request "
        "(mamba_cache_per_req bytes), allocated with the KV pool and taken out of its budget; "
        "with --max-mamba-cache-size set or the radix cache off it has max_mamba_cache_size "
        "slots, --max-running-requests or 512 by default (divided by --dp-size under DP "
        "attention), else --mamba-full-memory-ratio of the budget (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:168-204; its size is printed in `Mamba "
        "Cache is allocated. max_mamba_cache_size: N`, mem_cache/memory_pool.py:276, :286)",
        (
            Lever(
                "max_mamba_cache_size",
                "lower",
                "fewer Mamba slots: the pool is max_mamba_cache_size x mamba_cache_per_req (v0.5.8 "
                "model_runner_kv_cache_mixin.py:199-204)",
            ),
            Lever(
                "max_running_requests",
                "lower",
                "the Mamba pool's default size when --max-mamba-cache-size is unset and the radix "
                "cache is off (v0.5.8 model_runner_kv_cache_mixin.py:173-177)",
            ),
        ),
    ),
    Mention(
        "released",
        None,  # the trainer beside SGLang ran out, in no stage of SGLang's own
        "SGLang's release of its memory for a colocated trainer: it pauses only what "
        "torch_memory_saver allocated under its tags, kv_cache, weights and cuda_graph (v0.5.8 "
        "constants.py:2-10, "
        "managers/scheduler_update_weights_mixin.py:121-146); a pool made outside it stays on "
        "the GPU for the trainer to run into: a hybrid sliding-window (SWA) model's KV pools "
        "were (v0.5.8 mem_cache/swa_memory_pool.py:51 forces enable_memory_saver=False; "
        "v0.5.23 :45, :66-73 passes it on), so with an SWA model upgrade; what stays is at most "
        "SGLang's fraction of the GPU. The call returns once each DP group's first rank has "
        "replied (v0.5.8 managers/tokenizer_communicator_mixin.py:187-188 waits for dp_size "
        "replies; only pipeline rank 0 and attention-TP rank 0 send them, managers/scheduler.py:"
        "407-442); every other rank pauses on its own, with no barrier after the KV cache's "
        "pause (scheduler_update_weights_mixin.py:136-150; v0.5.23 "
        "managers/scheduler_components/weight_updater.py:337-381), so a trainer that allocates "
        "as soon as it returns can still meet memory a rank has not released yet: wait until "
        "every GPU shows it free",
        (_MFS_LOWER,),
        answer="it frees only what torch_memory_saver tagged (not a hybrid SWA model's KV pools "
        "in v0.5.8: upgrade) and returns before every rank has paused: wait until every GPU "
        "shows the memory free",
    ),
    Mention(
        "nccl_alloc",
        None,  # NCCL allocates at init and lazily at a group's first collective
        "NCCL's buffers: NCCL allocates them itself (cudaMalloc or cuMem; NCCL v2.21.5-1 "
        "src/include/alloc.h:161-206), outside PyTorch's caching allocator, so memory PyTorch "
        "holds reserved but unallocated is not free for NCCL: empty PyTorch's cache before the "
        "NCCL call (torch.cuda.empty_cache()) or keep a margin free beside it (a colocated "
        "trainer: torch_memory_saver's memory_margin_bytes, 4a43c97 entrypoint.py:108-112); in "
        "SGLang's own process NCCL's buffers come out of the (1 - mfs) x P that its pools leave "
        "(v0.5.8 model_runner_kv_cache_mixin.py:138-140)",
        (_MFS_LOWER,),
        answer="NCCL allocates outside PyTorch's caching allocator, so what PyTorch holds "
        "reserved is not free for it: empty PyTorch's cache before the NCCL call or keep a margin "
        "free beside it",
    ),
    Mention(
        "memory_saver_expandable",
        None,  # a setting of the process, in no stage
        "expandable_segments is not supported by torch_memory_saver: unset it "
        "(PYTORCH_CUDA_ALLOC_CONF) for SGLang's process. SGLang's release pauses only what "
        "torch_memory_saver allocated in its tagged regions (v0.5.8 "
        "managers/scheduler_update_weights_mixin.py:121-146); with expandable segments PyTorch "
        "maps memory outside them, so a pause frees nothing, and torch_memory_saver now refuses "
        "to run (torch_memory_saver 13d6461, its PR #25; 4a43c97 entrypoint.py:397-401)",
        alone=True,
        answer="unset it (PYTORCH_CUDA_ALLOC_CONF) for SGLang's process: under it a pause frees "
        "nothing",
    ),
    Mention(
        "release_frees_nothing_rocm72",
        None,  # between a rollout and a training step, in no stage of SGLang's startup
        "a release on ROCm 7.2: ROCr keeps the pages of a paused allocation mapped (it leaks the "
        "imported dma-buf fd), so hipMemUnmap and hipMemRelease free nothing while the address "
        "range stays reserved, and the resume after it runs out of memory "
        "(fzyzcjy/torch_memory_saver#83; the fix ROCm/rocm-systems#4363 is in no 7.2.x release: "
        "radixark/miles PR #1680)",
        alone=True,
        answer="no fraction frees it: ROCm 7.0 frees a pause's pages, or a ROCr rebuilt with the "
        "fix (radixark/miles PR #1680 ships libhsa-runtime64 so)",
    ),
    Mention(
        "release_frees_nothing",
        None,  # between a rollout and a training step, in no stage of SGLang's startup
        "a release that freed no memory: torch_memory_saver pauses only what it allocated in "
        "SGLang's tagged regions (v0.5.8 managers/scheduler_update_weights_mixin.py:121-146)",
        alone=True,
        answer="no fraction frees it: with PyTorch's expandable segments on "
        "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) the memory lies outside those "
        "regions: unset it for SGLang's process (fzyzcjy/torch_memory_saver#24; its PR #25 "
        "refuses it); on ROCm 7.2 ROCr keeps the pages mapped (fzyzcjy/torch_memory_saver#83)",
    ),
    Mention(
        "resume",
        Phase.RESUME,
        "an RL framework's cycle: SGLang's weights and KV cache are released for the trainer's "
        "step and re-created before the next rollout, then the new weights are loaded into them "
        "(v0.5.8 managers/scheduler_update_weights_mixin.py:121 release_memory_occupation, :154 "
        "resume_memory_occupation, :87 update_weights_from_tensor), so the trainer's memory and "
        "SGLang's share must fit the card together",
        moment=True,
    ),
    Mention(
        "dist_init",
        Phase.DIST_INIT,
        "distributed init: the CUDA context, NCCL's communicators and custom all-reduce buffers, "
        "then the per-rank balance check, before any weight (v0.5.8 "
        "model_executor/model_runner.py:693-803 init_torch_distributed): what another process "
        "holds on the card counts here",
        moment=True,
    ),
    Mention(
        "autotune",
        Phase.AFTER_POOL,
        "kernel tuning and compiling after the KV pool and before the graphs: FlashInfer's MoE "
        "autotune (v0.5.8 model_executor/model_runner.py:1688-1730 kernel_warmup) and DeepGEMM's "
        "JIT warmup, which lowers its own max_m when memory is short "
        "(layers/deep_gemm_wrapper/compile_utils.py:138-157), out of the slack P x (1 - mfs)",
        moment=True,
    ),
    Mention(
        "torch_compile",
        Phase.GRAPH_CAPTURE,
        "torch.compile: with --enable-torch-compile the graphs of batch sizes up to "
        "--torch-compile-max-bs are compiled as they are captured (v0.5.8 "
        "model_executor/cuda_graph_runner.py:212-216, :320), out of the same slack",
        (
            Lever(
                "torch_compile_max_bs",
                "lower",
                "fewer batch sizes compiled during capture (v0.5.8 cuda_graph_runner.py:212-216)",
            ),
        ),
        moment=True,
    ),
    Mention(
        "kv_allocation",
        Phase.MEMORY_POOL,
        "the KV cache's allocation: the request table and the KV pool, sized from the budget "
        "left after the weights (v0.5.8 model_executor/model_runner_kv_cache_mixin.py:252 "
        "init_memory_pool)",
        moment=True,
    ),
    Mention(
        "growing",
        Phase.SERVING,
        "GPU memory that grew while serving until it ran out, a leak (not the pools' size) that "
        "an upgrade fixes (v0.4.9.post6 leaked a VLM's memory with the fast image processor, "
        "sgl-project/sglang#9365): SGLang sizes its pools once at startup (the KV pool and the "
        "request table: v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:252; the graphs: "
        "model_executor/model_runner.py:1979-2016), so memory that keeps growing is held by "
        "something that does not release it, most often a vision model's images "
        "preprocessed on the GPU (fast image processors run on cuda: v0.5.8 "
        "multimodal/processors/base_processor.py:329-336) or tensors a request path keeps; a "
        "lower --mem-fraction-static only delays the OOM",
        (
            Lever(
                "disable_fast_image_processor",
                "enable",
                "images are preprocessed on the CPU, not on the GPU beside the pools (v0.4.6 "
                "managers/tokenizer_manager.py:188)",
            ),
        ),
        moment=True,
        alone=True,
        levers_alone=True,
    ),
    Mention(
        "hicache",
        None,
        "HiCache (--enable-hierarchical-cache): a host-RAM tier behind the GPU KV pool, "
        "--hicache-ratio x the GPU pool's tokens or --hicache-size GB a rank (v0.5.8 "
        "mem_cache/memory_pool_host.py:150-170), that keeps evicted prefixes in host RAM and "
        "loads them back; each rank pins its own host pool (every rank prints `Allocating X GB "
        "host memory`, :180), so a node holds the ranks x X, which before sglang PR #35540 no "
        "check summed (each rank compared its own pool with the host's available RAM; v0.5.23 "
        "mem_cache/pool_host/base.py:68-110 splits it by the ranks on the host); it does not "
        "enlarge the GPU KV pool (max_total_num_tokens is the GPU pool's); on the GPU it adds "
        "the transfers' working memory after the pool, which with --page-size 1 gathered each "
        "write's K/V into a flat GPU copy first (v0.4.6.post5 managers/cache_controller.py:"
        "188-194, :363-368; kernels copy pages directly in v0.5.8 "
        "managers/cache_controller.py:503-515)",
        (
            Lever(
                "page_size",
                "raise",
                "the write-through copies whole pages, no flat K/V gather on the GPU (v0.4.6.post5 "
                "managers/cache_controller.py:188-194)",
            ),
            _MFS_LOWER,
        ),
        alone=True,
        answer="each rank pins its own host pool (--hicache-size GB a rank, or --hicache-ratio x "
        "the GPU pool's tokens), so a node holds the ranks x that; the GPU KV pool stays as it is",
    ),
    Mention(
        "hicache_host",
        None,  # host RAM, not a GPU stage
        "HiCache's host pool is per rank, each rank on a host pinning its own --hicache-size GB "
        "of host RAM: the host holds the ranks x it (without --hicache-size each holds "
        "--hicache-ratio x its GPU pool's tokens) and every rank prints its own `Allocating X GB "
        "host memory` (v0.5.8 mem_cache/memory_pool_host.py:151-154, :164-181); v0.5.8 checks "
        "each rank's pool alone against the host's available RAM less 10 GiB (:164-176), v0.5.23 "
        "splits that allowance by the ranks on the host "
        "(mem_cache/pool_host/base.py:28, :84-108): a per-rank size whose ranks x size fits the "
        "host's available RAM",
        (HICACHE_SIZE_LOWER, HICACHE_RATIO_LOWER),
        alone=True,
        levers_alone=True,
    ),
    Mention(
        "hicache_guard_twice",
        None,  # host RAM, not a GPU stage
        "HiCache's host-pool guard counting pools twice: it divides what this rank reads as the "
        "host's available RAM, less 10 GiB, by the ranks on the host (v0.5.20 "
        "mem_cache/pool_host/base.py:32-59, v0.5.23 :68-108), but each rank reads it when it "
        "reaches the guard, so one that comes after its peers pinned their pools counts those "
        "twice: a false refusal of pools that fit, an engine bug (a reading taken once for the "
        "host's ranks fixes it), not a size to lower; until a release with the fix, a smaller "
        "--hicache-size gets past the guard",
        alone=True,
    ),
    Mention(
        "kv_held",
        Phase.SERVING,
        "finished requests' KV said to be kept: SGLang's `token usage` counts the KV tokens "
        "held by requests, max_total_num_tokens less the free slots and less what the radix "
        "cache can evict (v0.4.6 managers/scheduler.py:"
        "983-997; v0.5.8 managers/scheduler_runtime_checker_mixin.py:22-27); a finished request "
        "frees nothing at once: its KV goes into the radix (prefix) cache as evictable, for a "
        "later request with the same prefix, and is evicted when the pool needs room (v0.5.8 "
        "mem_cache/radix_cache.py:433-462); a pool near full under load is the running requests' "
        "(SGLang queues or retracts past it), and a real leak fails SGLang's own idle check "
        "(`memory leak detected!`, managers/scheduler_runtime_checker_mixin.py:243); "
        "--disable-radix-cache frees a finished request's KV at once, with no prefix reuse "
        "(mem_cache/chunk_cache.py:57-64)",
        alone=True,
        answer="a finished request's KV stays in the radix (prefix) cache as evictable until the "
        "pool needs room: not a leak (--disable-radix-cache frees it at once)",
    ),
    Mention(
        "double_counted",
        None,
        "memory said to be counted twice: SGLang's own arithmetic (a budget, a guard, a pool's "
        "overhead) charging something twice, not a GPU short of memory: the release that fixes "
        "the arithmetic removes it (upgrade), or a setting works around it (an explicit size "
        "where SGLang would derive one, a cap with room for what is counted twice)",
        alone=True,
        answer="SGLang's own arithmetic charging something twice, not a GPU short of memory: "
        "upgrade to the release that fixes it, or set the size SGLang would derive",
    ),
    Mention(
        "mamba_capped",
        None,
        "SGLang's cap of the running requests by the hybrid model's mamba state slots: each "
        "running request holds several slots (1, plus the radix cache's track buffers), so the "
        "cap is max_mamba_cache_size // slots a request and requests past it queue (v0.5.17 "
        "mem_cache/kv_cache_configurator.py:1734-1750, v0.5.23 :3134-3150); the slots are "
        "--max-mamba-cache-size, else --mamba-full-memory-ratio of the pool budget",
        (
            Lever(
                "mamba_full_memory_ratio",
                "raise",
                "a larger share of the pool budget for the mamba state slots (the KV pool gets "
                "the rest)",
            ),
            Lever(
                "max_mamba_cache_size",
                "raise",
                "more mamba state slots: the cap is max_mamba_cache_size // slots a request",
            ),
            Lever(
                "mamba_ssm_dtype",
                "enable",
                "bfloat16 state instead of float32 halves each slot's bytes (SGLang's own advice, "
                "v0.5.23 mem_cache/kv_cache_configurator.py:3141-3145)",
            ),
        ),
        alone=True,
        levers_alone=True,
    ),
    Mention(
        "pd_admission_cap",
        None,
        "a PD worker's admission bound: it refuses a request longer than its max_total_num_tokens "
        "(`Request ... exceeds the maximum number of tokens: N > M`, v0.5.8 "
        "disaggregation/prefill.py:212-218), and for a hybrid sliding-window (SWA) model the "
        "prefill and decode workers clamp that bound to the SWA pool's tokens, "
        "swa_max_total_num_tokens (v0.5.8 disaggregation/prefill.py:108-114, decode.py:243-248, "
        "a FIXME: the SWA pool held the whole prompt), so the SWA pool's size caps the input; "
        "it is --swa-full-tokens-ratio x the full pool's tokens (v0.5.8 "
        "model_executor/model_runner_kv_cache_mixin.py:222-243), and sglang PR #26607 stops "
        "capping DeepSeek-V4's PD prefill by it",
        (
            Lever(
                "swa_full_tokens_ratio",
                "raise",
                "a larger SWA pool: swa tokens = full tokens x the ratio (v0.5.8 "
                "model_runner_kv_cache_mixin.py:231-237)",
            ),
        ),
        alone=True,
        levers_alone=True,
    ),
    Mention(
        "shared_gpu",
        None,  # a placement of servers, in no stage
        "two servers on one GPU: each SGLang server sizes its pools from the free memory P it "
        "sees at its start, keeping (1 - mfs) x P outside them (v0.5.8 "
        "model_runner_kv_cache_mixin.py:138-140), so the one started first with the default "
        "fraction (0.88 when it cannot size one, v0.5.8 server_args.py:988-1031) leaves the next "
        "one only the rest: lower --mem-fraction-static of the one started first (or of each) "
        "until both fit",
        (_MFS_LOWER,),
        alone=True,
        levers_alone=True,
    ),
    Mention(
        "aiter_reserve",
        Phase.AFTER_POOL,
        "the aiter attention backend's long-context reserve: on ROCm with attention_backend "
        "aiter and a context over 8,192 tokens SGLang scales --mem-fraction-static by 0.85 (a "
        "value passed to it too) so the KV pool leaves room for aiter's buffers, which are made "
        "after the pool (v0.4.9 model_executor/model_runner.py:470-472; v0.5.5 "
        "server_args.py:1270-1272; v0.5.23 arg_groups/attention_hook.py:244-269, skipped for a "
        "given value under SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION=1): an OOM without it wants "
        "the fraction it would have used back",
        (
            Lever(
                "mem_fraction_static",
                "lower",
                "the reserve's own value, the fraction x 0.85, or unset "
                "SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION so SGLang applies it; the KV pool is "
                "sized to rest = A - P x (1 - mfs) (v0.5.8 model_runner_kv_cache_mixin.py:138-140)",
            ),
        ),
    ),
    Mention(
        "version_regression",
        None,  # a release, not a stage
        "a library's version as the cause (SGLang, sgl-kernel, FlashInfer, torch): the memory "
        "a release takes can change with it (kernels' workspaces, buffers, defaults: "
        "memledger.sglang.default_changes): pin the version that worked, or compare both "
        "versions' startup logs with `memledger diff`: a changed default has a knob, a "
        "regression has none",
        alone=True,
        answer="pin the version that worked, or compare both versions' startup logs with "
        "`memledger diff` (a changed default has a knob, a regression has none)",
    ),
    Mention(
        "other_process",
        None,
        "another process holds GPU memory (an orphan or earlier server): SGLang sized its pools "
        "on what was free when it started; free the GPU first (nvidia-smi lists who holds it)",
        answer="free the GPU first",
        outside=True,
    ),
    Mention(
        "wsl_driver",
        None,
        "WSL2, whose Windows display driver holds GPU memory outside the process: PyTorch's OOM "
        "text counts it as non-PyTorch memory and SGLang's free-memory readings do not show it "
        "held, so large contiguous allocations (a pool, a workspace) can fail with tens of GiB "
        "reported free (about 16 GiB held on an RTX PRO 6000 Blackwell: pytorch/pytorch#182286, "
        "microsoft/WSL#40401, sglang#24364); no SGLang setting frees it, and lower pools only "
        "fit around it: compare the OOM text's non-PyTorch memory with nvidia-smi, or run under "
        "native Linux",
        answer="run under native Linux (no SGLang setting frees what the driver holds; smaller "
        "pools only fit around it)",
        outside=True,
    ),
    Mention(
        "serving", Phase.SERVING, "the server was serving requests when it failed", moment=True
    ),
    Mention(
        "pool_size",
        None,  # a question about a size, no failure: it places nothing
        "the KV pool's size: SGLang sizes the pool last, from what the weights leave: rest = A - "
        "P x (1 - mfs) GiB (P free before loading, A after), in tokens of one token's KV bytes "
        "over the layers (v0.5.8 model_executor/model_runner_kv_cache_mixin.py:47-109, :136-144); "
        "a hybrid model's Mamba pool takes its share first (:142, :146-204), --max-total-tokens "
        "caps it (:299-305), a release's default --mem-fraction-static can differ, and HiCache's "
        "host pool is a second tier in host RAM that leaves it as it is",
        (
            Lever(
                "mem_fraction_static",
                "raise",
                "the pool gets rest = A - P x (1 - mfs) (v0.5.8 model_runner_kv_cache_mixin.py:"
                "138-140): each 0.01 more gives it 0.01 x P, taken from the slack that graphs and "
                "activations use",
            ),
            Lever(
                "tp_size",
                "raise",
                "each rank loads its share of the weights, so more ranks leave a larger A for "
                "each rank's pool",
            ),
        ),
    ),
)
"""Each mention once, by name."""
SETTING_MENTIONS: dict[str, tuple[tuple[str, tuple[object, ...]], ...]] = {
    "speculative": (("speculative_algorithm", ()),),
    # a PD decode instance serves only decode steps: its workspace is the verify pass's
    "draft_window": (("speculative_algorithm", ()), ("disaggregation_mode", ("decode",))),
    "kv_cap": (("max_total_tokens", ()),),
    "hicache": (("enable_hierarchical_cache", (True,)),),
    # KT's experts are split only with a weight path (v0.5.8 layers/moe/kt_ep_wrapper.py:73-74)
    "kt_gpu_experts": (("kt_weight_path", ()),),
    "dflash_dp_attention": (
        ("speculative_algorithm", ("DFLASH", "DSPARK")),
        ("enable_dp_attention", (True,)),
    ),
    "deepep_normal_graphs": (("deepep_mode", ("normal",)),),
}
"""Mentions the settings make without words: each setting and the values that make it (none
listed: any set value)."""
SUPERSEDED: dict[str, str] = {
    "ktransformers": "kt_gpu_experts",
    "hicache_host": "hicache_guard_twice",
}
"""A mention another one makes needless when both are named: KTransformers named with its weight
path is the split that is on (kt_gpu_experts), not the question whether it is; the host pools
said to be counted twice are the guard's defect, not a size to lower."""
FRAME_MENTIONS: dict[str, str] = {
    "srt/lora/": "lora",
    "layers/attention/aiter_backend": "attention_workspace",
}
"""Mentions the failing traceback's frames make: a frame in this file (fragment) names it. LoRA's
manager and pool (v0.5.8 lora/lora_manager.py:508 init_memory_pool, lora/mem_pool.py:202
init_buffers), the AITER backend's workspace (v0.5.8 layers/attention/aiter_backend.py:157-167)."""
SETTING_MENTION_FIXED = {"dflash_dp_attention": "0.5.23", "deepep_normal_graphs": "0.4.6.post5"}
"""The release from which a setting mention's defect is gone (the log's own release, when its
formats date it at or after this, makes none)."""
MENTION: dict[str, Mention] = {mention.name: mention for mention in MENTIONS}


def squeeze_levers() -> tuple[Lever, ...]:
    """What helps when raising the fraction runs out of memory after the pool and lowering it
    leaves no KV budget: no fraction fits, so the levers that shrink the weights a rank or what
    comes after the pool, once each: from serving back to the pool (the last consumers are the
    likeliest to give way), then the weights' (the fraction's own levers excluded)."""
    return _once((*reversed(_AFTER_LOAD), STAGE[Phase.LOAD]), skip="mem_fraction_static")


LEVER: dict[tuple[str, str], Lever] = {
    (lever.knob, lever.direction): lever
    for stage in reversed(LIFECYCLE)
    for lever in (*stage.levers, *stage.bound_levers)
}
"""Each stage's lever by (knob, direction): what a valued suggestion of diagnose says it moves."""
MEMORY_KNOBS = frozenset(
    {knob for knob, _ in LEVER}
    | {lever.knob for levers in SERVING_BATCH_LEVERS.values() for lever in levers}
    | {"cuda_graph_max_bs_decode"}  # the graph cap's name from 0.5.16 (failure_rules)
)
"""The knobs that trade memory: every stage's levers; a diagnosis without memory evidence
suggests none of them."""
NEEDS: dict[str, str] = {
    lever.knob: lever.needs for stage in LIFECYCLE for lever in stage.levers if lever.needs
}
"""What a lever's value needs from the paste, by knob (the fraction's: memledger.diagnosis)."""
BATCH_KNOBS: tuple[str, ...] = tuple(
    dict.fromkeys(
        lever.knob
        for lever in (*STAGE[Phase.SERVING].levers, *SERVING_BATCH_LEVERS["prefill"])
        if lever.knob != "mem_fraction_static"
    )
)
"""The serving stage's batch levers, in SGLang's troubleshooting guide's order."""


def levers_after_load() -> tuple[Lever, ...]:
    """The levers of an OOM whose phase is unknown but came after the weights: those of every
    stage from the pool on, once each, in lifecycle order."""
    return _once(_AFTER_LOAD)


def _once(stages: tuple[Stage, ...], *, skip: str = "") -> tuple[Lever, ...]:
    """The stages' levers in their order, each knob once (its first), but `skip`."""
    seen: dict[str, Lever] = {}
    for lever in (lever for stage in stages for lever in stage.levers if lever.knob != skip):
        seen.setdefault(lever.knob, lever)
    return tuple(seen.values())
