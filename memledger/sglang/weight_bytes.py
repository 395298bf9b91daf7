"""How many bytes a parameter of a checkpoint takes on the GPU, by the dtype or quantization a
model name or `--quantization` spells, and how a name spells its parameter count: what lets a
paste with no weight size (a model name, a --tp-size, an OOM text's capacity) say whether the
weights a rank holds fit the card.

A rank holds about parameters x bytes a parameter / (tp x pp) of the weights: SGLang's linear
layers are split over the tensor-parallel ranks (column/row parallel) and its embeddings are
vocab-parallel (v0.5.8 model_executor/model_runner.py:805 `load_model`; layers/linear.py,
layers/vocab_parallel_embedding.py), and pipeline stages hold disjoint layers. It is an estimate:
a quantized checkpoint keeps its embeddings, norms and often its attention in 16 bits, and its
scales add a little, so its bytes are somewhat above the format's width; a name's count is
rounded (`120b` for 116.8 billion).

Each `Width` is one spelling family of a format, with the bytes a parameter of it and its source:
the quantization method's name in SGLang's table (v0.5.8 layers/quantization/__init__.py:53-85)
or torch's dtype. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Width:
    """A format spelled in a model name or `--quantization`, and its bytes a parameter."""

    name: str
    regex: re.Pattern[str]
    """Searched in the name (case-insensitive), or matched whole against --quantization."""
    bytes_per_param: float
    source: str


_QUANT = "v0.5.8 layers/quantization/__init__.py"
_SEP = r"(?<![a-z0-9])"
_END = r"(?![a-z0-9])"

WIDTHS: tuple[Width, ...] = (
    Width(
        "4-bit",
        re.compile(
            _SEP + r"(?:nvfp4|mxfp4|fp4|int4|w4a16|w4a8|w4afp8|4bit|4-bit|awq|awq_marlin|gptq"
            r"|gptq_marlin|modelopt_fp4|petit_nvfp4|q4_k_m|q4_0|bnb-4bit)" + _END,
            re.IGNORECASE,
        ),
        0.5,
        f"4-bit weights: two a byte ({_QUANT}:58-70 modelopt_fp4, awq, gptq, w4afp8; :83 mxfp4)",
    ),
    Width(
        "8-bit",
        re.compile(
            _SEP + r"(?:fp8|float8|int8|w8a8|w8a8_int8|w8a8_fp8|8bit|8-bit|fbgemm_fp8"
            r"|modelopt_fp8|blockwise_int8|q8_0)" + _END,
            re.IGNORECASE,
        ),
        1.0,
        f"8-bit weights: one byte ({_QUANT}:54-60 fp8, blockwise_int8, modelopt_fp8, w8a8_int8, "
        "w8a8_fp8)",
    ),
    Width(
        "16-bit",
        re.compile(_SEP + r"(?:bf16|bfloat16|fp16|float16|half)" + _END, re.IGNORECASE),
        2.0,
        "torch.bfloat16 / float16 (a checkpoint's torch_dtype, SGLang's --dtype)",
    ),
    Width(
        "32-bit",
        re.compile(_SEP + r"(?:fp32|float32)" + _END, re.IGNORECASE),
        4.0,
        "torch.float32: four bytes",
    ),
)
"""In the order tried: a name that says `fp8` and `bf16` (`...-BF16-FP8`) is its quantization."""

UNNAMED_WIDTH = 2.0
"""A name that spells no format: a 16-bit checkpoint assumed (most released checkpoints' dtype,
SGLang's --dtype auto keeps it), which the estimate says."""

COUNT = re.compile(
    r"(?<![a-z0-9.])(?:(?P<experts>\d+)x)?(?P<count>\d+(?:\.\d+)?)(?P<unit>[bmt])(?![a-z0-9])",
    re.IGNORECASE,
)
"""A parameter count in a model name: `70B`, `0.6B`, `135M`, `1T`, `8x7B` (experts x each, an
upper bound: the experts share the attention). `A22B` (active parameters of an MoE, after the
total: `235B-A22B`) is not one: a letter precedes it."""
COUNT_UNITS = {"b": 10**9, "m": 10**6, "t": 10**12}
ACTIVE_ONLY = re.compile(r"(?<![a-z0-9])\d+e(?![a-z0-9])", re.IGNORECASE)
"""A name that counts its experts (`17B-128E`): its `17B` is the active parameters, not the
weights (Llama 4's naming): no estimate from it."""


@dataclass(frozen=True)
class NamedFamily:
    """A well-known model family whose names spell no parameter count (`DeepSeek-V3`,
    `Kimi-K2-Instruct`), with the total parameters its model card states and the format its own
    checkpoint ships in (None: 16-bit)."""

    name: str
    regex: re.Pattern[str]
    """Searched in a name's last part (case-insensitive)."""
    params: float
    """Total parameters, every expert (the weights a rank's share is of)."""
    architecture: str
    width: str | None
    """The `Width.name` of the released checkpoint's format where it is not 16-bit."""
    source: str


_HF = "https://huggingface.co"
NAMED_FAMILIES: tuple[NamedFamily, ...] = (
    NamedFamily(
        "DeepSeek-V3 / R1",
        re.compile(_SEP + r"deepseek-(?:v3(?:\.\d)?|r1)(?!.*distill)(?:-[a-z0-9.]+)*$", re.I),
        671e9,
        "MoE with MLA, 671B total / 37B activated, 61 layers (a 14B MTP module besides, loaded "
        "only as a NextN draft)",
        "8-bit",
        f"{_HF}/deepseek-ai/DeepSeek-V3 model card (deepseek-ai/DeepSeek-V3 README: '671B total "
        "parameters with 37B activated for each token'; 685B on the Hub with the MTP module); "
        "config.json quantization_config fp8 (memledger's model catalogue)",
    ),
    NamedFamily(
        "Kimi-K2",
        re.compile(_SEP + r"kimi-k2(?:\.\d)?(?:-[a-z0-9.]+)*$", re.IGNORECASE),
        1e12,
        "MoE with MLA (DeepSeek-V3's architecture), 1T total / 32B activated, 61 layers",
        "8-bit",
        "MoonshotAI/Kimi-K2@d778e270 README.md '2. Model Summary' (Total Parameters 1T, "
        f"Activated 32B, 61 layers); {_HF}/moonshotai/Kimi-K2-Instruct (block-fp8 weights)",
    ),
    NamedFamily(
        "GLM-4.5 / 4.6 / 4.7",
        re.compile(_SEP + r"glm-4\.[5-7](?!-air)(?:-[a-z0-9.]+)*$", re.IGNORECASE),
        355e9,
        "MoE with GQA, 355B total / 32B active (GLM-4.6 and 4.7 keep GLM-4.5's architecture; "
        "the Hub counts 357B with the MTP layer)",
        None,
        f"{_HF}/zai-org/GLM-4.5/blob/cbb2c7cfb52fa128a9660cb1a7a78e017899e115/README.md ('GLM-4.5 "
        f"has 355 billion total parameters with 32 billion active parameters'); {_HF}/zai-org/"
        "GLM-4.6 (GLM-4.5's architecture, a 200K context)",
    ),
    NamedFamily(
        "GLM-4.5-Air",
        re.compile(_SEP + r"glm-4\.5-air(?:-[a-z0-9.]+)*$", re.IGNORECASE),
        106e9,
        "MoE with GQA, 106B total / 12B active",
        None,
        f"{_HF}/zai-org/GLM-4.5/blob/cbb2c7cfb52fa128a9660cb1a7a78e017899e115/README.md "
        "('GLM-4.5-Air ... 106 billion total parameters and 12 billion active parameters')",
    ),
    NamedFamily(
        "MiniMax-M2",
        re.compile(_SEP + r"minimax-m2(?:\.\d)?(?:-[a-z0-9.]+)*$", re.IGNORECASE),
        230e9,
        "MoE with GQA, 230B total / 10B active",
        "8-bit",
        "SGLang's docs, basic_usage/minimax_m2 ('230 billion total parameters with 10 billion "
        f"active parameters', for M2, M2.1, M2.5); {_HF}/MiniMaxAI/MiniMax-M2 (fp8 weights)",
    ),
)
"""Families a name does not count; a name that spells a count (`Qwen3-Coder-480B-A35B`,
`gpt-oss-120b`) is read by COUNT first, and a name these do not match gets no estimate."""
