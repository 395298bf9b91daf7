"""Model dimensions from a Hugging Face `config.json`, for formulas that need them (`model.*`)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import field
from typing import Any

from memledger.config_files import parse_nested, read_config_text
from memledger.errors import ConfigError
from memledger.record import field_names, record, to_dict
from memledger.units import MAX_MAGNITUDE, NumberOutOfRange, checked_number

# config.json keys read as positive integers (name in config -> name in ModelDims).
_INT_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "vocab_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "v_head_dim",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "kv_lora_rank",
    "q_lora_rank",
    "num_nextn_predict_layers",
    "sliding_window",
)
_DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}
# Quantisation methods whose linear weights take one byte per element (block scales aside).
_ONE_BYTE_QUANT = {"fp8", "w8a8_fp8", "fbgemm_fp8", "modelopt_fp8", "w8a8_int8", "int8"}
_HALF_BYTE_QUANT = {"modelopt_fp4", "mxfp4", "nvfp4", "awq", "gptq", "w4a8", "w4afp8"}


@record
class ModelDims:
    """The model dimensions formulas may use; None where config.json does not say."""

    path: str
    architecture: str | None = None
    num_hidden_layers: int | None = None
    hidden_size: int | None = None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    v_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    num_nextn_predict_layers: int | None = None
    sliding_window: int | None = None
    mla_layers: int | None = None
    """Full-attention MLA layers: `linear_attn_config.full_attn_layers` when the model mixes
    linear attention in, else every layer when `kv_lora_rank` is set."""
    linear_attn_layers: int | None = None
    """Linear-attention (KDA/GDN) layers, from `linear_attn_config.kda_layers`."""
    linear_num_heads: int | None = None
    linear_head_dim: int | None = None
    conv_kernel_size: int | None = None
    dtype_bytes: int | float | None = None
    """Bytes per element of `torch_dtype`."""
    weight_bytes: int | float | None = None
    """Bytes per element of quantised linear weights (1 for fp8), else `dtype_bytes`."""
    quant_method: str | None = None
    extra: dict[str, int | float | str | bool] = field(default_factory=dict)
    """Every other scalar key of the config, so a user formula can reach it (`model.<key>`)."""
    catalogue: str | None = None
    """Set when no --model-config was given and these dimensions are the model catalogue's entry
    for the log's model path: which entry, the source it was copied from, and how it matched."""

    def as_variables(self) -> dict[str, int | float | str | bool]:
        """`model.<name>` -> value for the formula evaluator (unset names left out)."""
        names: dict[str, int | float | str | bool] = {
            f"model.{key}": value for key, value in self.extra.items()
        }
        for key, value in to_dict(self, exclude={"path", "extra", "catalogue"}).items():
            if value is not None:
                names[f"model.{key}"] = value
        return names


def load_model_config(path: str | os.PathLike[str]) -> ModelDims:
    """Read a Hugging Face config.json; ConfigError (file:line) when it is missing or malformed."""
    label = os.fspath(path)
    text = read_config_text(path, "model config", directory_hint="; pass its config.json")
    try:
        document = parse_nested(json.loads, text, label)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", path=label, line=exc.lineno) from None
    if not isinstance(document, dict):
        raise ConfigError(
            "model config must be a JSON object (a Hugging Face config.json)", path=label
        )
    return model_dims_from_dict(document, label=label, text=text)


def model_dims_from_dict(document: dict[str, Any], *, label: str, text: str = "") -> ModelDims:
    """ModelDims from a parsed config.json object (VLM `text_config` merged under top level)."""
    config = dict(document)
    text_config = config.get("text_config")
    if isinstance(text_config, dict):
        config = {**text_config, **{k: v for k, v in config.items() if k != "text_config"}}

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{key}: {message}", path=label, line=_line_of(text, key))

    fields: dict[str, Any] = {}
    for key in _INT_KEYS:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise fail(key, f"must be a non-negative integer, got {_shown(value)}")
        if value > MAX_MAGNITUDE:
            raise fail(key, f"out of range: {_shown(value)}")
        fields[key] = value
    architectures = config.get("architectures")
    if architectures is not None:
        if not isinstance(architectures, list) or not all(
            isinstance(a, str) for a in architectures
        ):
            raise fail("architectures", "must be a list of class names")
        fields["architecture"] = architectures[0] if architectures else None

    linear = config.get("linear_attn_config")
    if linear is not None:
        if not isinstance(linear, dict):
            raise fail("linear_attn_config", "must be an object")
        fields.update(_linear_dims(linear, fail))
    if "mla_layers" not in fields and fields.get("kv_lora_rank") is not None:
        fields["mla_layers"] = fields.get("num_hidden_layers")

    dtype = config.get("torch_dtype", config.get("dtype"))
    if dtype is not None:
        if not isinstance(dtype, str) or dtype.removeprefix("torch.") not in _DTYPE_BYTES:
            raise fail("torch_dtype", f"unknown dtype {dtype!r}")
        fields["dtype_bytes"] = _DTYPE_BYTES[dtype.removeprefix("torch.")]
    quant = config.get("quantization_config")
    if quant is not None:
        if not isinstance(quant, dict):
            raise fail("quantization_config", "must be an object")
        method = quant.get("quant_method")
        if method is not None and not isinstance(method, str):
            raise fail("quantization_config", "quant_method must be a string")
        fields["quant_method"] = method
        if method in _ONE_BYTE_QUANT:
            fields["weight_bytes"] = 1
        elif method in _HALF_BYTE_QUANT:
            fields["weight_bytes"] = 0.5
    if "weight_bytes" not in fields and "dtype_bytes" in fields:
        fields["weight_bytes"] = fields["dtype_bytes"]

    known = set(field_names(ModelDims))
    extra = {
        key: value
        for key, value in config.items()
        if key not in known and isinstance(value, int | float | str | bool)
    }
    for key, value in extra.items():  # model.* names reach formulas: bounded like log numbers
        try:
            checked_number(value)
        except NumberOutOfRange as exc:
            raise fail(key, str(exc)) from None
    return ModelDims(path=label, extra=extra, **fields)


def _linear_dims(linear: dict[str, Any], fail: Any) -> dict[str, Any]:
    """Layer counts and head shape of a hybrid linear-attention model (Kimi Linear style)."""
    fields: dict[str, Any] = {}
    for key, target in (("full_attn_layers", "mla_layers"), ("kda_layers", "linear_attn_layers")):
        layers = linear.get(key)
        if layers is None:
            continue
        if not isinstance(layers, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in layers
        ):
            raise fail(f"linear_attn_config.{key}", "must be a list of layer numbers")
        fields[target] = len(layers)
    for key, target in (
        ("num_heads", "linear_num_heads"),
        ("head_dim", "linear_head_dim"),
        ("short_conv_kernel_size", "conv_kernel_size"),
    ):
        value = linear.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise fail(f"linear_attn_config.{key}", f"must be a positive integer, got {value!r}")
        fields[target] = value
    return fields


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def _line_of(text: str, key: str) -> int | None:
    """The first line mentioning `"key"` (last dotted part), for file:line messages."""
    name = key.rsplit(".", 1)[-1]
    for number, line in enumerate(text.splitlines(), start=1):
        if re.search(rf'"{re.escape(name)}"\s*:', line):
            return number
    return None
