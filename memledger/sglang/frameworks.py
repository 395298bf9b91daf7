"""Frameworks that embed SGLang (RL trainers that run it beside the trainer on the same GPUs),
one `Framework` per project: how a paste shows it, and its own name for each SGLang setting, so
a lever reads in the words the reporter configures. They release and resume SGLang's memory
through torch_memory_saver between rollouts; the usual fix for an OOM there is a smaller SGLang
share, so the trainer's memory fits beside it.

## Adding a framework
Add a `Framework` with the words its tracebacks or commands carry (file paths, module names),
its knob names for SGLang's server args (`knobs`: server-arg name -> the framework's), and the
source of the mapping (the framework's file at a commit, or its docs); add its synthetic
traceback line to tests/diagnosis/test_framework_rows.py. A frame's path is kept as its last two
components (or what follows site-packages/: memledger.input.error_texts.short_path), so words
are package-rooted paths and file names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Framework:
    name: str
    words: tuple[str, ...]
    """Text only a paste from this framework holds (a path fragment, a module, a flag)."""
    knobs: Mapping[str, str]
    """SGLang server-arg name -> the framework's setting that sets it."""
    source: str
    trainer_words: tuple[str, ...] = ()
    """Path fragments of the trainer's own code: an OOM whose innermost frame is one is the
    trainer's, beside SGLang's share, not SGLang's."""
    trainer_levers: str = ""
    """What lowers the trainer's own memory, as the framework's maintainers answer, with source."""
    beside_trainer: bool = True
    """SGLang shares its GPUs with the framework's trainer (an RL framework), not alone."""


_PASSED_THROUGH = (
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
    "context_length",
    "chunked_prefill_size",
)
"""The memory settings a framework that forwards SGLang's server args hands over under its own
prefix or section."""


def _passed(prefix: str, args: tuple[str, ...] = _PASSED_THROUGH) -> dict[str, str]:
    """Each server arg under the framework's section (`prefix` + the arg's name)."""
    return {arg: prefix + arg for arg in args}


def _flags(args: tuple[str, ...] = _PASSED_THROUGH) -> dict[str, str]:
    """Each server arg as `--sglang-<arg>` (slime's and miles' argument groups)."""
    return {arg: "--sglang-" + arg.replace("_", "-") for arg in args}


_VERL_KWARGS = ("cuda_graph_max_bs", "context_length", "chunked_prefill_size")
_SLIME_TRAINER = ("ppo_utils.py", "megatron_utils/", "fsdp_utils/")

FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        "verl",
        (
            "/verl/",
            "verl.trainer",
            "verl.workers",
            "actor_rollout_ref",
            "main_ppo.py",
            "ray_trainer.py",
            "fsdp_workers.py",
            "megatron_workers.py",
            "async_sglang_server.py",
        ),
        {
            "mem_fraction_static": "actor_rollout_ref.rollout.gpu_memory_utilization",
            "tp_size": "actor_rollout_ref.rollout.tensor_model_parallel_size",
            "max_running_requests": "actor_rollout_ref.rollout.max_num_seqs",
            "disable_cuda_graph": "actor_rollout_ref.rollout.enforce_eager",
            **_passed("actor_rollout_ref.rollout.engine_kwargs.sglang.", _VERL_KWARGS),
        },
        "verl passes rollout.gpu_memory_utilization to SGLang as mem_fraction_static, as is "
        "(default 0.5), SGLang's tp_size as tensor_model_parallel_size x data_parallel_size and "
        "max_running_requests as max_num_seqs, disable_cuda_graph as enforce_eager; "
        "engine_kwargs.sglang goes through whole "
        "(verl-project/verl@1dda039 verl/workers/rollout/sglang_rollout/async_sglang_server.py:"
        "276, :313-329; verl/workers/config/rollout.py:185; "
        "https://github.com/verl-project/verl/pull/1491)",
        trainer_words=("dp_actor.py", "megatron_actor.py", "dp_critic.py", "megatron_critic.py"),
        trainer_levers=(
            "actor_rollout_ref.actor.fsdp_config.param_offload=True and optimizer_offload=True, "
            "a smaller ppo_micro_batch_size_per_gpu (https://github.com/verl-project/verl/issues/"
            "1014, /issues/3453)"
        ),
    ),
    Framework(
        "miles",
        (
            "miles/backends/",
            "miles/utils/",
            "miles/ray/",
            "miles/rollout/",
            "miles.backends",
            "miles.ray",
        ),
        {**_flags(), "tp_size": "--rollout-num-gpus-per-engine"},
        "miles (slime's fork) forwards every SGLang server arg set as --sglang-<arg>, as is, "
        "and makes tp_size --rollout-num-gpus-per-engine (radixark/miles@31f1ca9 "
        "miles/backends/sglang_utils/sglang_engine.py:710, :731, :809-810)",
        trainer_words=_SLIME_TRAINER,
        trainer_levers=(
            "a smaller --max-tokens-per-gpu (radixark/miles@31f1ca9 miles/utils/arguments.py:"
            "1153), the optimizer state in host RAM"
        ),
    ),
    Framework(
        "slime",
        ("/slime/", "slime.ray", "slime.backends", "--sglang-", "ppo_utils.py"),
        {**_flags(), "tp_size": "--rollout-num-gpus-per-engine"},
        "slime forwards every SGLang server arg as --sglang-<arg>, as is, and makes tp_size "
        "--rollout-num-gpus-per-engine / --sglang-pp-size (THUDM/slime@624b824 "
        "slime/backends/sglang_utils/sglang_engine.py:519-522, :581-582; arguments.py:96); its "
        "FAQ: 'this could be an OOM error. Consider reducing the value of "
        "--sglang-mem-fraction-static' (THUDM/slime docs, get_started/qa)",
        trainer_words=_SLIME_TRAINER,
        trainer_levers=(
            "a smaller --max-tokens-per-gpu (https://github.com/THUDM/slime/issues/1237), the "
            "optimizer state in host RAM: --optimizer-cpu-offload --overlap-cpu-optimizer-d2h-h2d "
            "--use-precision-aware-optimizer (https://github.com/skypilot-org/skypilot/pull/10269)"
        ),
    ),
    Framework(
        "AReaL",
        (
            # a frame keeps its last two components, or the part after site-packages/
            "areal/engine/",
            "areal/launcher/",
            "areal/api/",
            "areal.engine",
            "areal.launcher",
            "areal.api",
            "areal_sglang_server",
            "sglang_remote.py",
        ),
        {**_passed("sglang."), "tp_size": "rollout.backend (sglang:d<dp>t<tp>)"},
        "AReaL builds SGLang's command line from the `sglang.` section of its experiment config, "
        "as is (SGLangConfig, inclusionAI/AReaL@4aef98d areal/api/cli_args.py:1737-1775: "
        "mem_fraction_static 0.9, context_length 32768 and chunked_prefill_size -1 by default), "
        "the tensor-parallel size from rollout.backend, e.g. 'sglang:d2t2' "
        "(docs/en/best_practices/handling_oom.md:64)",
        trainer_words=("fsdp_engine.py", "megatron_engine.py", "ppo/actor.py"),
        trainer_levers=(
            "a smaller actor.mb_spec.max_tokens_per_mb, 'your main knob for controlling training "
            "memory' (not below max_length + max_new_tokens), or tensor parallelism in "
            "allocation_mode (https://inclusionai.github.io/AReaL/best_practices/"
            "handling_oom.html)"
        ),
    ),
    Framework(
        "ROLL",
        (
            "roll/distributed/",
            "roll/pipeline/",
            "roll.distributed",
            "roll.pipeline",
            "actor_infer.strategy_args",
            "rlvr_pipeline.py",
            "agentic_pipeline.py",
            "sglang_strategy.py",
            "[sglang][sglang_config]",
            "[sglang][local]",
        ),
        {
            **_passed("actor_infer.strategy_args.strategy_config."),
            "tp_size": "actor_infer.strategy_args.strategy_config.tensor_parallel_size",
        },
        "ROLL passes actor_infer.strategy_args.strategy_config to SGLang as is, its "
        "tensor_parallel_size as tp_size, and logs it as `[sglang][sglang_config]: {...}` "
        "(alibaba/ROLL@8eb27cc roll/distributed/strategy/sglang_strategy.py:76-77, :104-130); "
        "its guide: mem_fraction_static, 'Fraction of the free GPU memory used for static "
        "memory ... Decrease it if CUDA runs out of memory' (docs_roll/docs/User Guides/"
        "Configuration/config_guide.md:128)",
        trainer_words=("megatron_strategy.py", "fsdp2_strategy.py", "deepspeed_strategy.py"),
        trainer_levers=(
            "the fsdp2_train strategy with offload_policy: true, per_device_train_batch_size 1 "
            "with more gradient_accumulation_steps (alibaba/ROLL@8eb27cc docs_roll/docs/User "
            "Guides/Hardware Support/ascend_npu_rlvr.md:793-800)"
        ),
    ),
    Framework(
        "NeMo-RL",
        ("nemo_rl/", "nemo_rl.", "policy.generation.sglang_cfg"),
        {
            **_passed("policy.generation.sglang_cfg."),
            "tp_size": "policy.generation.sglang_cfg.tp_size",
        },
        "NeMo-RL passes policy.generation.sglang_cfg's keys to SGLang as is "
        "(NVIDIA-NeMo/RL@7ea279a nemo_rl/models/generation/sglang/sglang_worker.py:376, "
        ":408-437; examples/configs/grpo_math_1B_sglang.yaml:10-21: mem_fraction_static 0.6)",
        trainer_words=("dtensor_policy_worker", "megatron_policy_worker"),
        trainer_levers=(
            "a smaller policy.train_micro_batch_size, policy.dtensor_cfg.activation_checkpointing "
            "or cpu_offload (NVIDIA-NeMo/RL@7ea279a examples/configs/grpo_math_1B.yaml:133-146)"
        ),
    ),
    Framework(
        "SkyRL",
        ("skyrl_train/", "skyrl_train.", "skyrl-train/"),
        {
            "mem_fraction_static": "generator.gpu_memory_utilization",
            "tp_size": "generator.inference_engine_tensor_parallel_size",
            "max_running_requests": "generator.max_num_seqs",
            "max_prefill_tokens": "generator.max_num_batched_tokens",
            **_passed("generator.engine_init_kwargs.", _VERL_KWARGS),
        },
        "SkyRL's SGLang backend (skyrl-train, until https://github.com/NovaSky-AI/SkyRL/pull/"
        "1220) passes generator.gpu_memory_utilization as mem_fraction_static, as is (default "
        "0.8), max_num_seqs as max_running_requests, max_num_batched_tokens as "
        "max_prefill_tokens, engine_init_kwargs whole (NovaSky-AI/SkyRL@7554082 skyrl-train/"
        "skyrl_train/inference_engines/ray_wrapped_inference_engine.py:297-316; "
        "config/ppo_base_config.yaml:274, :293-294)",
    ),
    Framework(
        "RLinf",
        ("rlinf/", "rlinf."),
        {
            "mem_fraction_static": "rollout.gpu_memory_utilization",
            "tp_size": "rollout.tensor_parallel_size",
            "max_running_requests": "rollout.max_running_requests",
            "cuda_graph_max_bs": "rollout.cuda_graph_max_bs",
        },
        "RLinf passes rollout.gpu_memory_utilization as mem_fraction_static, as is, and caps "
        "cuda_graph_max_bs by rollout.max_running_requests (RLinf/RLinf@a3816b5 "
        "rlinf/workers/rollout/sglang/sglang_worker.py:165-189)",
    ),
    Framework(
        "LlamaFactory",
        ("llamafactory/", "llamafactory.", "llamafactory-cli"),
        {
            "mem_fraction_static": "sglang_mem_fraction",
            "context_length": "sglang_maxlen",
            "tp_size": "sglang_tp_size",
        },
        "LlamaFactory's sglang inference backend (infer_backend: sglang) launches SGLang with "
        "--context-length sglang_maxlen, --mem-fraction-static sglang_mem_fraction and --tp-size "
        "sglang_tp_size, as is (hiyouga/LLaMA-Factory@ff6d4d1 src/llamafactory/chat/"
        "sglang_engine.py:91-93; hparams/model_args.py:434-446): inference, no trainer beside it",
        beside_trainer=False,
    ),
)
"""Frameworks whose mapping is read from their source at the commit cited. Each hands its value to
SGLang unchanged, so SGLang's value is the framework's: a mem_fraction_static is SGLang's
fraction of the memory free when it starts (the budget rest = A - P x (1 - mfs)), whatever the
framework calls it (a `gpu_memory_utilization` reads like vLLM's fraction of the whole card, but
none of these converts it). verl's tp is SGLang's tp divided by the rollout's data_parallel_size.
Read and left out: OpenRLHF (OpenRLHF/OpenRLHF@3c3be62), TRL (huggingface/trl@f2cd577) and
EasyR1 (hiyouga/EasyR1@b44b311) run vLLM only."""

MEMORY_SAVER = Framework(
    "an RL framework (SGLang's memory saver)",
    ("torch_memory_saver", "cuMemCreate CUDA_ERROR"),
    {
        "mem_fraction_static": (
            "share of the GPU for SGLang (verl: actor_rollout_ref.rollout.gpu_memory_utilization; "
            "slime: --sglang-mem-fraction-static)"
        )
    },
    "SGLang's --enable-memory-saver, which RL frameworks set to release SGLang's weights and KV "
    "cache while the trainer runs and resume them after (v0.5.8 "
    "managers/scheduler_update_weights_mixin.py:121-154); their fix for its OOM is a smaller "
    "SGLang share so the trainer fits beside it",
)
"""A paste from SGLang run with --enable-memory-saver whose framework is not named."""

BY_ITS_KNOB = Framework(
    "an RL framework (named by its gpu_memory_utilization)",
    ("gpu_memory_utilization", "gpu-memory-utilization"),
    {
        "mem_fraction_static": (
            "gpu_memory_utilization (verl: actor_rollout_ref.rollout.gpu_memory_utilization; "
            "SkyRL: generator.gpu_memory_utilization; RLinf: rollout.gpu_memory_utilization)"
        )
    },
    "SGLang has no gpu_memory_utilization (vLLM's name for its share of the card); the "
    "frameworks that run SGLang under that name hand it over as mem_fraction_static, as is: "
    "verl, SkyRL and RLinf (their rows here)",
)
"""A paste that names SGLang's fraction by the name RL frameworks give it, the framework
itself unnamed."""
UNNAMED = (MEMORY_SAVER, BY_ITS_KNOB)
"""What stands for a framework the paste does not name: any framework it names comes first."""


FRAMEWORK_WORDS: tuple[str, ...] = tuple(
    dict.fromkeys(word for f in (*FRAMEWORKS, MEMORY_SAVER, BY_ITS_KNOB) for word in f.words)
)
"""Every word that names a framework (the error-text table's `framework_named` row)."""
BY_NAME: dict[str, Framework] = {f.name: f for f in (*FRAMEWORKS, MEMORY_SAVER, BY_ITS_KNOB)}


def framework_of(text: str) -> Framework | None:
    """The framework a paste's text shows, if any."""
    named = next((f for f in FRAMEWORKS if any(word in text for word in f.words)), None)
    if named is None:
        named = next(
            (f for f in (MEMORY_SAVER, BY_ITS_KNOB) if any(word in text for word in f.words)), None
        )
    return named


def trainer_frame(framework: Framework, paths: list[str]) -> str | None:
    """The innermost frame path of the framework's trainer code, if that is where it failed."""
    return next(
        (p for p in reversed(paths) if any(word in p for word in framework.trainer_words)), None
    )
