"""How an SGLang launch command names the ServerArgs fields (SGLang knowledge, as data).

`python -m sglang.launch_server ARGS` and `sglang serve ARGS` both parse ARGS with
`ServerArgs.add_cli_args` (v0.5.9 sglang/srt/server_args.py:2890) in an
`argparse.ArgumentParser()` (server_args.py:5579, `prepare_server_args`), so:
* a flag's field is its first long name with dashes as underscores, except the six parallel
  sizes that `from_cli_args` renames (server_args.py:5069-5075) and the options given a `dest`;
* argparse's default `allow_abbrev=True` accepts a unique prefix: at 0.5.9 `--tp` is only
  `--tp-size` and `--dp` only `--dp-size` (`--pp` is ambiguous there: three flags start so);
* a `store_true` flag (93 at 0.5.9, e.g. `--enable-dp-attention`) takes no value.
"""

from __future__ import annotations

COMMAND_MARKERS: tuple[str, ...] = ("sglang.launch_server", "sglang serve")
"""A line holding one of these starts a launch command (docker/`$ ` prefixes before it)."""

FLAG_FIELDS: dict[str, str] = {
    # other names of one option (v0.5.9 server_args.py line of its add_argument)
    "model": "model_path",  # :2893
    "tensor_parallel_size": "tp_size",  # :3301, renamed at :5070
    "tp": "tp_size",  # abbreviation of --tp-size (argparse allow_abbrev)
    "attention_context_parallel_size": "attn_cp_size",  # :3308, :5072
    "moe_data_parallel_size": "moe_dp_size",  # :3315, :5073
    "pipeline_parallel_size": "pp_size",  # :3322, :5071
    "data_parallel_size": "dp_size",  # :3704, :5074
    "dp": "dp_size",  # abbreviation of --dp-size (argparse allow_abbrev)
    "nccl_init_addr": "dist_init_addr",  # :3731
    "fp8_gemm_backend": "fp8_gemm_runner_backend",  # :3885 dest=
    "fp4_gemm_backend": "fp4_gemm_runner_backend",  # :3902 dest=
    "speculative_draft_model": "speculative_draft_model_path",  # :3930
    "expert_parallel_size": "ep_size",  # :4077, :5075
    "ep": "ep_size",  # :4077
}
"""Flag name (dashes as underscores, without `--`) -> ServerArgs field, where they differ."""

NUMERIC_FIELDS: frozenset[str] = frozenset(
    {
        "tp_size", "dp_size", "pp_size", "ep_size", "attn_cp_size", "moe_dp_size",
        "mem_fraction_static", "context_length", "max_running_requests", "max_total_tokens",
        "chunked_prefill_size", "max_prefill_tokens", "cuda_graph_max_bs", "page_size",
    }
)  # fmt: skip
"""Fields memledger reads as numbers: such a flag without a value is not taken as `True`."""

SGLANG_REWRITES: dict[tuple[str, str], str | None] = {
    # ServerArgs.__post_init__ rewrites these flag values before printing server_args, so a
    # command saying the left side agrees with a server_args line saying the right side.
    ("speculative_algorithm", "NEXTN"): "EAGLE",  # v0.5.9 server_args.py:2352-2353
    ("speculative_draft_model_quantization", "unquant"): None,  # v0.5.9 server_args.py:884-885
}
"""(field, value on the command line) -> the value SGLang prints in server_args for it."""
