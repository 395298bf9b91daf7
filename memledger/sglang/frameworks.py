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


_PASSED_THROUGH = (
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
    "context_length",
    "chunked_prefill_size",
)
"""The memory settings slime, AReaL and ROLL hand to SGLang under a name of their own."""

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
        ),
        {"mem_fraction_static": "actor_rollout_ref.rollout.gpu_memory_utilization"},
        "verl passes rollout.gpu_memory_utilization to SGLang as mem_fraction_static "
        "(verl/workers/rollout/sglang_rollout/sglang_rollout.py, "
        "https://github.com/verl-project/verl/pull/1491)",
        trainer_words=("dp_actor.py", "megatron_actor.py", "dp_critic.py", "megatron_critic.py"),
        trainer_levers=(
            "actor_rollout_ref.actor.fsdp_config.param_offload=True and optimizer_offload=True, "
            "a smaller ppo_micro_batch_size_per_gpu (https://github.com/verl-project/verl/issues/"
            "1014, /issues/3453)"
        ),
    ),
    Framework(
        "slime",
        ("/slime/", "slime.ray", "slime.backends", "--sglang-", "ppo_utils.py"),
        {arg: "--sglang-" + arg.replace("_", "-") for arg in _PASSED_THROUGH},
        "slime forwards every SGLang server arg as --sglang-<arg>; its FAQ: 'this could be an "
        "OOM error. Consider reducing the value of --sglang-mem-fraction-static' "
        "(THUDM/slime docs, get_started/qa)",
        trainer_words=("ppo_utils.py", "megatron_utils/", "fsdp_utils/"),
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
        {arg: f"sglang.{arg}" for arg in _PASSED_THROUGH},
        "AReaL builds SGLang's command line from the `sglang.` section of its experiment config "
        "(SGLangConfig in areal/api/cli_args.py, inclusionAI/AReaL@56bad8b: mem_fraction_static "
        "0.9 and chunked_prefill_size -1 by default)",
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
        ),
        {arg: f"actor_infer.strategy_args.strategy_config.{arg}" for arg in _PASSED_THROUGH},
        "ROLL passes actor_infer.strategy_args.strategy_config to SGLang as is; its guide: "
        "mem_fraction_static, 'increase this value if KV cache building fails, decrease this "
        "value if CUDA memory is insufficient' "
        "(https://alibaba.github.io/ROLL/docs/User%20Guides/Configuration/sglang)",
    ),
)
"""Frameworks whose mapping is read from their source or docs."""

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


FRAMEWORK_WORDS: tuple[str, ...] = tuple(
    dict.fromkeys(word for f in (*FRAMEWORKS, MEMORY_SAVER) for word in f.words)
)
"""Every word that names a framework (the error-text table's `framework_named` row)."""
BY_NAME: dict[str, Framework] = {f.name: f for f in (*FRAMEWORKS, MEMORY_SAVER)}


def framework_of(text: str) -> Framework | None:
    """The framework a paste's text shows, if any."""
    named = next((f for f in FRAMEWORKS if any(word in text for word in f.words)), None)
    if named is None and any(word in text for word in MEMORY_SAVER.words):
        return MEMORY_SAVER
    return named


def trainer_frame(framework: Framework, paths: list[str]) -> str | None:
    """The innermost frame path of the framework's trainer code, if that is where it failed."""
    return next(
        (p for p in reversed(paths) if any(word in p for word in framework.trainer_words)), None
    )
