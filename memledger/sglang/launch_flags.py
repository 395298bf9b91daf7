"""How an SGLang launch command names the ServerArgs fields (SGLang knowledge, as data).

`python -m sglang.launch_server ARGS` and `sglang serve ARGS` both parse ARGS with
`ServerArgs.add_cli_args` (v0.5.9 sglang/srt/server_args.py:2890) in an
`argparse.ArgumentParser()` (server_args.py:5579, `prepare_server_args`), so:
* a flag's field is its first long name with dashes as underscores, except the six parallel
  sizes that `from_cli_args` renames (server_args.py:5069-5075) and the options given a `dest`;
* argparse's default `allow_abbrev=True` accepts a unique prefix: at every release `--tp` is
  only `--tp-size` and `--dp` only `--dp-size`; `--pp` depends on the release
  (RELEASE_ABBREVIATIONS);
* a `store_true` flag (93 at 0.5.9, e.g. `--enable-dp-attention`) takes no value.
"""

from __future__ import annotations

from dataclasses import dataclass

from memledger.sglang.releases import version_code

COMMAND_MARKERS: tuple[str, ...] = (
    "sglang.launch_server",
    "sglang serve",
    '"sglang", "serve"',  # an exec-form list: Kubernetes `command: ["sglang", "serve"]`
)
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


@dataclass(frozen=True)
class Abbreviation:
    """A flag prefix whose meaning depends on the release: argparse (allow_abbrev) reads it as
    `long_flag` while that is the only flag starting so, and refuses it once another does."""

    flag: str
    """The prefix as parse_arguments keys it (`pp` for `--pp`)."""
    long_flag: str
    field: str
    unique_first: str
    unique_last: str
    rivals: str
    """The other flags that make it ambiguous after `unique_last`, with the release of each."""

    @property
    def unique_codes(self) -> tuple[int, int]:
        return version_code(self.unique_first), version_code(self.unique_last)

    @property
    def unique_text(self) -> str:
        return f"{self.unique_first} .. {self.unique_last}"


RELEASE_ABBREVIATIONS: tuple[Abbreviation, ...] = (
    # srt/server_args.py: `--pp-size` (with `--pipeline-parallel-size`) first at v0.4.6.post2
    # :655-656 (not at v0.4.6.post1); the only `--pp` flag through v0.5.3; v0.5.4 adds
    # `--pp-max-micro-batch-size`, v0.5.9 `--pp-async-batch-depth` (and v0.5.16's dataclass
    # fields pp_max_micro_batch_size / pp_async_batch_depth, server_args.py:902-913), parsed by
    # an `argparse.ArgumentParser()` with allow_abbrev (v0.5.9 :5579, v0.5.16 :8199), which
    # exits with "ambiguous option: --pp could match ...". Post releases share a code, so
    # 0.4.6.x is not told apart: the unique range starts at 0.4.7.
    Abbreviation(
        flag="pp",
        long_flag="pp-size",
        field="pp_size",
        unique_first="0.4.7",
        unique_last="0.5.3",
        rivals="--pp-size, --pp-max-micro-batch-size from 0.5.4, --pp-async-batch-depth from 0.5.9",
    ),
)
"""Release-dependent abbreviations of a pasted command's flags."""
