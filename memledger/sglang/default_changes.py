"""SGLang defaults that changed between releases and move the KV pool: data, one entry a change.

Each entry names the setting (a server_args name), the old and the new default in words, the
first release with the new default, and the source line in the last release with the old default
and in the first release with the new one (paths under `python/sglang/srt/` of each release's
wheel, `pip download sglang==X --no-deps`). Where a sizing rule of `sizing_rules` already holds
the change, the entry names the two rule ids instead of repeating their arithmetic.

SGLang's mem_fraction_static defaults before 0.5.3 are `memledger.sglang.legacy_defaults`
(re-exported here as `legacy_mem_fraction_static`; 0.5.3+ is `memledger.sizing.defaults`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# re-exported: the pre-0.5.3 default is one rule, shared with memledger.sizing.defaults
from memledger.sglang.release_markers import version_code
from memledger.sglang.sizing_rules import RULE


class Effect(StrEnum):
    """How a default reaches max_total_num_tokens."""

    FRACTION = "mem_fraction_static"
    """It changes the mem_fraction_static default (its reserve): the budget P x mfs - (P - A)."""
    CELL = "bytes_per_token"
    """It changes the bytes each KV token costs in SGLang's sizing."""
    TOKENS = "tokens"
    """It changes the token count after the division (headroom, caps, splits)."""
    SLACK = "slack"
    """It changes memory taken after the KV pool is sized (out of the slack): no token change."""


@dataclass(frozen=True)
class DefaultChange:
    """One default of SGLang's that changed at `release`."""

    id: str
    setting: str
    """The server_args name (or the sizing step) whose default changed."""
    title: str
    old: str
    new: str
    release: str
    """The first release with the new default."""
    old_source: str
    new_source: str
    effect: Effect
    applies: str = ""
    """When it applies (GPU class, model kind, feature), in words; empty: always."""
    old_rule: str | None = None
    new_rule: str | None = None
    """`sizing_rules` ids that hold the arithmetic on each side of the change."""
    gpu_mib: tuple[int, int] | None = None
    """The GPU capacities (MiB, from inclusive, to exclusive) it applies to; None: any."""
    needs: str = ""
    """A feature the log must use for it to apply (`FEATURES`); empty: every log."""
    unless: tuple[str, ...] = ()
    """Features (`FEATURES`) with which SGLang turns the new default off: not crossed then."""
    only_unset: bool = False
    """It applies only where the log leaves `setting` unset (None in server_args: a value the
    user gave is kept, so the changed default never reaches the pool)."""

    def fits_gpu(self, gpu_mib: int | None) -> bool:
        """Whether it applies to a GPU of `gpu_mib` MiB (unknown capacity: it may)."""
        return (
            gpu_mib is None or self.gpu_mib is None or self.gpu_mib[0] <= gpu_mib < self.gpu_mib[1]
        )


def _rule_source(rule_id: str) -> str:
    return RULE[rule_id].source


LARGE_GPU_MIB = (81920 + 1, 1 << 40)
"""Above 80 GiB (H20-3e, H200, B200, MI300X): SGLang's `gpu_mem > 81920` branches of 0.4.6."""
ABOVE_96_GIB = (96 * 1024 + 1, 1 << 40)
B200_CLASS_MIB = (180_000 + 1, 1 << 40)
"""SGLang's `gpu_mem > 180 * 1000` (v0.4.7 server_args.py:268)."""
SAME_CODE = "a version code cannot tell a .post release from its base: "


CHANGES: tuple[DefaultChange, ...] = (
    DefaultChange(
        id="mfs_large_gpu_reserve_13g",
        setting="mem_fraction_static",
        title="mem_fraction_static default above 80 GiB: a 13 GiB reserve instead of the TP table",
        old="0.88 / 0.87 / 0.85 / 0.81 / 0.79 for tp = 1 / 2 / 4 / 8 / 16, any GPU",
        new="(gpu - 13 GiB) / gpu on GPUs above 80 GiB (0.907 on a 143,771 MiB H200 at TP 8, "
        "was 0.81); the TP table up to 80 GiB",
        release="0.4.6",
        old_source="v0.4.5 server_args.py:232-243",
        new_source="v0.4.6 server_args.py:223-238",
        effect=Effect.FRACTION,
        applies="GPUs above 80 GiB; with bs-256 graphs (cuda_graph_bs_256_large_gpu) the 13 GiB "
        "left too little headroom at TP 8 (sglang PR #5893: OOM on H200)",
        gpu_mib=LARGE_GPU_MIB,
    ),
    DefaultChange(
        id="cuda_graph_bs_256_large_gpu",
        setting="cuda_graph_bs",
        title="CUDA graphs captured up to bs 256 on GPUs above 80 GiB",
        old="bs 1 .. 160 (AMD: .. 256)",
        new="bs 1 .. 256 above 80 GiB when dp_size is 1 (about 3 GB more graph memory on an "
        "H200 at TP 8, sglang PR #5893)",
        release="0.4.6",
        old_source="v0.4.5 model_executor/cuda_graph_runner.py:116-130",
        new_source="v0.4.6 model_executor/cuda_graph_runner.py:125-139",
        effect=Effect.SLACK,
        applies="GPUs above 80 GiB, no --cuda-graph-bs / --cuda-graph-max-bs; captured after the "
        "KV pool is sized: it takes headroom, not tokens",
        gpu_mib=LARGE_GPU_MIB,
        # `server_args.dp_size == 1` (v0.4.6 cuda_graph_runner.py:137-138, sglang PR #5634)
        unless=("dp_attention",),
    ),
    DefaultChange(
        id="mfs_large_gpu_reserve_18g",
        setting="mem_fraction_static",
        title="mem_fraction_static default above 96 GiB: an 18 GiB reserve (15 + 3 for graphs)",
        old="(gpu - 13 GiB) / gpu above 80 GiB",
        new="0.88 above 80 GiB; above 96 GiB min(0.88 + 48 GiB x 0.12 / gpu, (gpu - 18 GiB) / "
        "gpu) (0.872 on a 143,771 MiB H200)",
        release="0.4.6.post2",
        old_source="v0.4.6.post1 server_args.py:223-238",
        new_source="v0.4.6.post2 server_args.py:225-247",
        effect=Effect.FRACTION,
        applies=SAME_CODE + "0.4.6.post2 shares 0.4.6's code, so an upgrade across 0.4.6 "
        "may or may not cross it",
        gpu_mib=LARGE_GPU_MIB,
    ),
    DefaultChange(
        id="cuda_graph_bs_256_with_dp",
        setting="cuda_graph_bs",
        title="bs-256 CUDA graphs above 96 GiB, also with DP",
        old="bs .. 256 above 80 GiB only when dp_size is 1",
        new="bs .. 256 above 96 GiB, whatever dp_size",
        release="0.4.6.post2",
        old_source="v0.4.6.post1 model_executor/cuda_graph_runner.py:136-139",
        new_source="v0.4.6.post2 model_executor/cuda_graph_runner.py:139-142",
        effect=Effect.SLACK,
        applies=SAME_CODE + "0.4.6.post2 shares 0.4.6's code; captured after the KV pool is "
        "sized: it takes headroom, not tokens",
        gpu_mib=ABOVE_96_GIB,
    ),
    DefaultChange(
        id="mfs_b200_class_079",
        setting="mem_fraction_static",
        title="mem_fraction_static default 0.79 on CUDA GPUs above 180,000 MiB",
        old="the 96 GiB+ rule: min(0.88 + 48 GiB x 0.12 / gpu, (gpu - 18 GiB) / gpu)",
        new="0.79; and 18 -> 20 GiB reserve with speculative decoding on 96 GiB+ GPUs",
        release="0.4.7",
        old_source="v0.4.6.post2 server_args.py:239-247",
        new_source="v0.4.7 server_args.py:266-279",
        effect=Effect.FRACTION,
        applies="NVIDIA GPUs above 180,000 MiB (B200 class); replaced by the GPU-class reserve "
        "in 0.4.7.post1 (mfs_by_tp_to_gpu_class)",
        gpu_mib=B200_CLASS_MIB,
    ),
    DefaultChange(
        id="cuda_graph_bs_512_b200_class",
        setting="cuda_graph_bs",
        title="CUDA graphs captured up to bs 512 on GPUs above 180,000 MiB",
        old="bs .. 256 above 96 GiB",
        new="bs .. 512 above 180,000 MiB (chunked_prefill_size 16384 there)",
        release="0.4.7",
        old_source="v0.4.6.post2 model_executor/cuda_graph_runner.py:139-142",
        new_source="v0.4.7 model_executor/cuda_graph_runner.py:149-153",
        effect=Effect.SLACK,
        applies="captured after the KV pool is sized: it takes headroom, not tokens",
        gpu_mib=B200_CLASS_MIB,
    ),
    DefaultChange(
        id="mfs_by_tp_to_gpu_class",
        setting="mem_fraction_static",
        title="mem_fraction_static default: from the TP size to a reserve by GPU class",
        old="0.88 / 0.87 / 0.85 / 0.81 / 0.79 for tp x pp = 1 / 2 / 4 / 8 / 16 (<= 80 GiB GPUs)",
        new=(
            "(gpu - reserve) / gpu, reserve (2.8 + tp x pp / 10) GiB < 35 GiB, (9.5 + tp x pp / 2) "
            "GiB < 90 GiB, (12 + tp x pp / 2) GiB < 160 GiB, else 32 GiB; + 2 GiB speculative, "
            "+ 4 GiB DP attention"
        ),
        release="0.4.7.post1",
        old_source="v0.4.7 server_args.py:253-282",
        new_source="v0.4.7.post1 server_args.py:261-300 (v0.4.8 :274-315)",
        effect=Effect.FRACTION,
        applies="a version code cannot tell 0.4.7.post1 from 0.4.7 (0.4.7 still has the TP "
        "table): an upgrade from a 0.4.7 log is taken as already past it",
    ),
    DefaultChange(
        id="mfs_gpu_class_to_formula",
        setting="mem_fraction_static",
        title="mem_fraction_static default: reserve from chunked prefill, graphs and TP size",
        old="reserve by GPU class (see mfs_by_tp_to_gpu_class)",
        new=(
            "reserve = 512 MiB + max(chunked_prefill, 2048) x 1.5 + cuda_graph_max_bs x 2 + "
            "tp x pp / 8 GiB (>60 GiB GPU: at least 10 GiB)"
        ),
        release="0.5.3",
        old_source="v0.5.2 server_args.py:452-498",
        new_source="v0.5.3 server_args.py:637-675",
        effect=Effect.FRACTION,
        new_rule="mfs_default",
    ),
    DefaultChange(
        id="cuda_graph_max_bs_by_gpu",
        setting="cuda_graph_max_bs",
        title="cuda_graph_max_bs default set for every GPU class",
        old="unset >= 35 GiB (graphs captured up to bs 160; 256 on > 90 GiB GPUs)",
        new="32 / 160 (35-60 GiB, tp < 4 / >= 4), 256 / 512 (60-160 GiB), 512 (larger)",
        release="0.5.3",
        old_source=(
            "v0.5.2 server_args.py:520-527; v0.5.2 model_executor/cuda_graph_runner.py:169-190"
        ),
        new_source="v0.5.3 server_args.py:587-623",
        effect=Effect.FRACTION,
        applies="its x 2 MiB enters the mem_fraction_static reserve from 0.5.3; the graphs "
        "themselves come out of the slack",
        gpu_mib=(35 * 1024, 1 << 40),
    ),
    DefaultChange(
        id="cuda_graph_max_bs_small_gpu",
        setting="cuda_graph_max_bs",
        title="cuda_graph_max_bs default on 20-35 GiB GPUs with tp < 4",
        old="8 (<= 0.5.2), 16 (0.5.3 - 0.5.4)",
        new="24",
        release="0.5.5",
        old_source="v0.5.4 server_args.py:695",
        new_source="v0.5.5 server_args.py:717",
        effect=Effect.FRACTION,
        applies="20-35 GiB GPUs, tp < 4",
        gpu_mib=(20 * 1024, 35 * 1024),
    ),
    DefaultChange(
        id="chunked_prefill_mid_gpu",
        setting="chunked_prefill_size",
        title="chunked_prefill_size default on 35-60 GiB GPUs",
        old="8192",
        new="4096",
        release="0.5.3",
        old_source="v0.5.2 server_args.py:509-518",
        new_source="v0.5.3 server_args.py:587-591",
        effect=Effect.FRACTION,
        applies="35-60 GiB GPUs; x 1.5 MiB per token enters the mem_fraction_static reserve",
        gpu_mib=(35 * 1024, 60 * 1024),
    ),
    DefaultChange(
        id="piecewise_graphs_on",
        setting="disable_piecewise_cuda_graph",
        title="Piecewise (prefill) CUDA graphs on by default, reserved in mem_fraction_static",
        old="off (enable_piecewise_cuda_graph=False)",
        new="on (disable_piecewise_cuda_graph=False): reserve + #sizes x 8 MiB (MLA: 1.5 GiB)",
        release="0.5.10",
        old_source="v0.5.9 server_args.py:604, :1043-1046",
        new_source="v0.5.10 server_args.py:637, :1304-1311",
        effect=Effect.FRACTION,
        applies="where SGLang keeps them on (not AMD, NPU, multimodal, DP attention, pp > 1; "
        "0.5.10 also turns them off with speculative decoding, 0.5.11 no longer: v0.5.11 "
        "server_args.py:1194-1213)",
        # v0.5.10 server_args.py:1078-1139 (_handle_piecewise_cuda_graph): DP attention turns
        # them off in every release since
        unless=("dp_attention",),
    ),
    DefaultChange(
        id="spec_reserve_4g",
        setting="mem_fraction_static",
        title="Speculative decoding reserve in the mem_fraction_static default",
        old="2 GiB",
        new="4 GiB",
        release="0.5.10",
        old_source="v0.5.9 server_args.py:1057",
        new_source="v0.5.10 server_args.py:1322",
        effect=Effect.FRACTION,
        applies="speculative decoding other than STANDALONE and NGRAM",
        needs="speculative",
    ),
    DefaultChange(
        id="mfs_graph_reserve",
        setting="mem_fraction_static",
        title="mem_fraction_static default: graph reserve by PD role, no speculative reserve",
        old="rule mfs_default",
        new="rule mfs_default_graphs",
        release="0.5.14",
        old_source=_rule_source("mfs_default"),
        new_source=_rule_source("mfs_default_graphs"),
        effect=Effect.FRACTION,
        old_rule="mfs_default",
        new_rule="mfs_default_graphs",
    ),
    DefaultChange(
        id="spec_headroom_dropped",
        setting="speculative_algorithm",
        title="Speculative headroom no longer added to the KV tokens",
        old="T + R x steps x topk + R x draft_tokens + 100",
        new="T",
        release="0.5.7",
        old_source=_rule_source("spec_headroom"),
        new_source=_rule_source("draft_outside"),
        effect=Effect.TOKENS,
        applies="speculative decoding",
        old_rule="spec_headroom",
        new_rule="draft_outside",
        needs="speculative",
    ),
    DefaultChange(
        id="draft_kv_in_budget",
        setting="speculative_algorithm",
        title="Draft KV sized inside the budget (the target's tokens shrink)",
        old="draft pool outside the budget (out of the slack)",
        new="cell = target cell x (1 + draft layers / L)",
        release="0.5.14",
        old_source=_rule_source("draft_outside"),
        new_source=_rule_source("draft_in_cell"),
        effect=Effect.CELL,
        applies="speculative decoding with a draft KV pool",
        old_rule="draft_outside",
        new_rule="draft_in_cell",
        needs="speculative",
    ),
    DefaultChange(
        id="swa_split_memory",
        setting="swa_full_tokens_ratio",
        title="Hybrid SWA split by memory instead of by layer count",
        old="rule swa_split_layers",
        new="rule swa_split_memory",
        release="0.5.9",
        old_source=_rule_source("swa_split_layers"),
        new_source=_rule_source("swa_split_memory"),
        effect=Effect.CELL,
        applies="hybrid sliding-window models",
        old_rule="swa_split_layers",
        new_rule="swa_split_memory",
        needs="swa",
    ),
    DefaultChange(
        id="swa_split_one_cell",
        setting="swa_full_tokens_ratio",
        title="Hybrid SWA sized with one cell for both pools",
        old="rule swa_split_memory",
        new="rule swa_split",
        release="0.5.11",
        old_source=_rule_source("swa_split_memory"),
        new_source=_rule_source("swa_split"),
        effect=Effect.CELL,
        applies="hybrid sliding-window models",
        old_rule="swa_split_memory",
        new_rule="swa_split",
        needs="swa",
    ),
    DefaultChange(
        id="mamba_padding_slot",
        setting="max_mamba_cache_size",
        title="Mamba state taken with its padding slot and the ReplaySSM ring",
        old="rule mamba_first",
        new="rule mamba_padding_slot",
        release="0.5.20",
        old_source=_rule_source("mamba_first"),
        new_source=_rule_source("mamba_padding_slot"),
        effect=Effect.TOKENS,
        applies="hybrid Mamba / linear-attention models",
        old_rule="mamba_first",
        new_rule="mamba_padding_slot",
        needs="mamba",
    ),
    DefaultChange(
        id="max_running_requests_half_tokens",
        setting="max_running_requests",
        title="Default max_running_requests also capped at T // 2",
        old="min(max(int(T / context_len x 512), 2048), 4096)",
        new="the same, then min(., T // 2)",
        release="0.5.10",
        old_source="v0.5.8 model_executor/model_runner_kv_cache_mixin.py:252-265",
        new_source="v0.5.10 model_executor/model_runner_kv_cache_mixin.py:840-851",
        effect=Effect.SLACK,
        applies="without --max-running-requests (the request table, out of the slack)",
        only_unset=True,
    ),
    DefaultChange(
        id="req_to_token_per_dp",
        setting="max_running_requests",
        title="Request table per DP worker",
        old="rule req_to_token_global",
        new="rule req_to_token_per_dp",
        release="0.5.10",
        old_source=_rule_source("req_to_token_global"),
        new_source=_rule_source("req_to_token_per_dp"),
        effect=Effect.SLACK,
        applies="DP attention (the request table, out of the slack)",
        old_rule="req_to_token_global",
        new_rule="req_to_token_per_dp",
        needs="dp_attention",
    ),
)

PIECEWISE_DEFAULT_RELEASES = ("0.5.10", "0.5.13")
"""Releases whose server_args default `disable_piecewise_cuda_graph=False` feeds the
mem_fraction_static reserve (v0.5.10 server_args.py:637, :1304-1311; v0.5.13 :765); 0.5.14 sizes
prefill graphs by another rule (memledger.sglang.fraction_rules mfs_default_graphs)."""
PIECEWISE_SPECULATIVE_OFF = "0.5.10"
"""The one release whose _handle_piecewise_cuda_graph also turns them off with speculative
decoding (v0.5.10 server_args.py:1088-1090; gone in v0.5.11 :1194-1213)."""


FEATURES: tuple[str, ...] = ("speculative", "swa", "mamba", "dp_attention")
"""What a log can use that some changes need (memledger.compare.upgrade reads them off a log)."""

CHANGE: dict[str, DefaultChange] = {change.id: change for change in CHANGES}


def piecewise_on_by_default(release: int, used: set[str], knobs_pp: int) -> bool:
    """Whether SGLang's own default at release code `release` keeps piecewise graphs on for a
    log that does not print `disable_piecewise_cuda_graph` (a pasted command or fragment).
    The model's kind (multimodal, a model arch SGLang excludes) and the platform are not known
    from such a log: the caller says it assumed them."""
    first, last = (version_code(r) for r in PIECEWISE_DEFAULT_RELEASES)
    if not first <= release <= last or knobs_pp > 1:
        return False
    if used.intersection(CHANGE["piecewise_graphs_on"].unless):
        return False
    return not ("speculative" in used and release == version_code(PIECEWISE_SPECULATIVE_OFF))


def changes_between(low: int, high: int) -> list[DefaultChange]:
    """Entries whose new default starts after release `low` and by release `high` (codes from
    `version_code`): what an upgrade from `low` to `high` crosses, oldest first (a .postN
    release after its base)."""
    crossed = [c for c in CHANGES if low < version_code(c.release) <= high]
    return sorted(crossed, key=lambda c: (version_code(c.release), _post(c.release), c.id))


def _post(release: str) -> int:
    """0.4.6.post2 -> 2, 0.4.6 -> 0: the order inside one version code."""
    _, found, number = release.rpartition(".post")
    return int(number) if found and number.isdigit() else 0
