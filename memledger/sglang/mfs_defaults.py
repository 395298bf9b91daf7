"""SGLang's mem_fraction_static default, every release: the arithmetic, pure, in one place.

From 0.5.3 on, the reserve formula (`reserved_mib`, `mfs_from_reserved`: rules mfs_default and
mfs_default_graphs of memledger.sglang.fraction_rules, whose constants it applies). Before 0.5.3,
one rule release by release (`legacy_mem_fraction_static`). memledger.sizing.defaults reads a
log's inputs into them; memledger.compare (upgrades) and memledger.diagnosis call them too. Read
from each release's `python/sglang/srt/server_args.py` (`pip download sglang==X --no-deps`):

- 0.4.0 - 0.4.5: a step of tp alone, no GPU capacity (v0.4.1 :170-180, v0.4.5 :233-243).
- 0.4.6 - 0.4.7: the same step (of tp x pp from 0.4.6.post2, whose pp_size is new: tp x pp = tp
  before) for GPUs up to 80 GiB (v0.4.6 :224-235, v0.4.6.post2 :226-238, v0.4.7 :253-265);
  0.4.7 then scales it by 0.95 with speculative decoding (:281-283). Above 80 GiB each post
  release differs ((G - 13 GiB) / G in 0.4.6 - 0.4.6.post1 :236-238; 0.88, then above 96 GiB
  min(mfs + 48 GiB x (1 - mfs) / G, (G - 18 GiB) / G) in 0.4.6.post2 - 0.4.7 :239-247; 0.79
  above 180,000 MiB in 0.4.7 :268): not modelled.
- 0.4.7.post1 - 0.5.2: a reserve per capacity bucket, round((G - reserved) / G, 3)
  (v0.4.7.post1 :261-300, v0.4.8 :274-313, v0.5.2 :452-496).

A version code (`version_code`) cannot tell 0.4.7 from 0.4.7.post1, whose rules differ: at code
0.4.7 a value is given only where both rules agree.
"""

from __future__ import annotations

from memledger.sglang.fraction_rules import (
    MFS_ACTIVATION_MIB_PER_TOKEN,
    MFS_ACTIVATION_MIN_TOKENS,
    MFS_BASE_MIB,
    MFS_DEEPEP_MIB,
    MFS_DP_LARGE_BS,
    MFS_DP_LARGE_MIB_PER_BS,
    MFS_DP_MIB_PER_BS,
    MFS_GRAPH_MIB_PER_BS,
    MFS_LARGE_GPU_FLOOR_MIB,
    MFS_LARGE_GPU_MIB,
    MFS_SPEC_MIB_OLD,
    MFS_STANDALONE_MIB,
)
from memledger.sglang.releases import version_code

MFS_TP_TABLE: tuple[tuple[int, float], ...] = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87))
MFS_TP_SINGLE = 0.88
"""Rule mfs_default_tp: (tp (x pp) at least, default), one GPU 0.88 (v0.4.1 :170-180)."""
MFS_TP_MAX_GPU_MIB = 81920
"""Rule mfs_default_tp_80g: the step holds up to this capacity (v0.4.6 :225 `gpu_mem <= 81920`)."""
MFS_TP_SPEC_FACTOR = 0.95
"""0.4.7 only: x 0.95 with speculative decoding on GPUs up to 96 GiB (v0.4.7 :281-283)."""
MFS_BUCKET_RESERVE: tuple[tuple[int, float, float], ...] = (
    (35 * 1024, 2.8, 0.1),
    (90 * 1024, 9.5, 0.5),
    (160 * 1024, 12.0, 0.5),
)
"""Rule mfs_default_buckets: (capacity below MiB, base GiB, GiB per tp x pp); above: 32 GiB
(v0.4.8 server_args.py:288-305: the < 20 / < 35 and < 90 .. < 160 branches are equal)."""
MFS_BUCKET_LARGE_GIB = 32
MFS_BUCKET_SPEC_GIB = 2
MFS_BUCKET_STANDALONE_GIB = 6
"""STANDALONE speculative decoding reserves 6 GiB instead of 2 (v0.5.2 :486-492)."""
MFS_BUCKET_DP_ATTENTION_GIB = 4

FIRST_TP = version_code("0.4.0")
FIRST_TP_80G = version_code("0.4.6")
BOTH_AT = version_code("0.4.7")
"""0.4.7 (rule mfs_default_tp_80g) and 0.4.7.post1 (rule mfs_default_buckets) share this code."""
LAST_BUCKETS = version_code("0.5.2")


def tp_step(parallel: int) -> float:
    """0.79 / 0.81 / 0.85 / 0.87 / 0.88 by tp (x pp)."""
    return next((value for least, value in MFS_TP_TABLE if parallel >= least), MFS_TP_SINGLE)


def bucket_reserve_gib(
    gpu_mib: int, *, parallel: int, speculative: bool, dp_attention: bool, standalone: bool
) -> float:
    """Rule mfs_default_buckets' reserve (GiB) on a `gpu_mib` GPU."""
    gib = next(
        (fixed + per * parallel for below, fixed, per in MFS_BUCKET_RESERVE if gpu_mib < below),
        float(MFS_BUCKET_LARGE_GIB),
    )
    if standalone:
        gib += MFS_BUCKET_STANDALONE_GIB
    elif speculative:
        gib += MFS_BUCKET_SPEC_GIB
    if dp_attention:
        gib += MFS_BUCKET_DP_ATTENTION_GIB
    return gib


def legacy_rules(release: int) -> tuple[str, ...]:
    """The rule ids release code `release` may use (two at 0.4.7; none outside 0.4.0-0.5.2)."""
    if release < FIRST_TP or release > LAST_BUCKETS:
        return ()
    if release < FIRST_TP_80G:
        return ("mfs_default_tp",)
    if release < BOTH_AT:
        return ("mfs_default_tp_80g",)
    if release == BOTH_AT:
        return ("mfs_default_tp_80g", "mfs_default_buckets")
    return ("mfs_default_buckets",)


def legacy_mem_fraction_static(
    release: int,
    gpu_mib: int | None,
    *,
    parallel: int,
    speculative: bool,
    dp_attention: bool,
    standalone: bool = False,
) -> float | None:
    """SGLang's default at release code `release` (< 0.5.3) for a `gpu_mib` GPU and tp x pp =
    `parallel`; None where it is not modelled (before 0.4.0, above 80 GiB in 0.4.6 - 0.4.7, no
    capacity where one is needed, 0.4.7 where 0.4.7 and 0.4.7.post1 disagree) or from 0.5.3."""
    values: set[float] = set()
    for rule in legacy_rules(release):
        if rule == "mfs_default_tp":
            values.add(tp_step(parallel))
        elif gpu_mib is None or gpu_mib <= 0:
            return None
        elif rule == "mfs_default_tp_80g":
            if gpu_mib > MFS_TP_MAX_GPU_MIB:
                return None
            step = tp_step(parallel)
            values.add(step * MFS_TP_SPEC_FACTOR if speculative and release == BOTH_AT else step)
        else:
            gib = bucket_reserve_gib(
                gpu_mib,
                parallel=parallel,
                speculative=speculative,
                dp_attention=dp_attention,
                standalone=standalone,
            )
            values.add(round((gpu_mib - gib * 1024) / gpu_mib, 3))
    return values.pop() if len(values) == 1 else None


def mfs_from_reserved(gpu_mib: float, reserved: float) -> float:
    """mem_fraction_static = round((gpu - reserved) / gpu, 3), as SGLang rounds it."""
    return round((gpu_mib - reserved) / gpu_mib, 3)


def reserved_mib(
    gpu_mib: float,
    *,
    rule: str,
    activation_tokens: int,
    cuda_graph_max_bs: int,
    tp_size: int = 1,
    pp_size: int = 1,
    dp_size: int = 1,
    enable_dp_attention: bool = False,
    decode_graphs: bool = True,
    disaggregation_mode: str | None = None,
    prefill_graph_mib: float = 0.0,
    speculative_algorithm: str | None = None,
    speculative_mib: int = MFS_SPEC_MIB_OLD,
    deepep: bool = False,
) -> float:
    """The MiB SGLang keeps out of mem_fraction_static on a `gpu_mib` GPU (pure arithmetic).

    `rule` is `mfs_default` (0.5.3 - 0.5.13: v0.5.8 server_args.py:988-1031, v0.5.10
    :1280-1329) or `mfs_default_graphs` (0.5.14+: v0.5.16 server_args.py:4053-4210);
    `activation_tokens` is max(chunked_prefill (or max_prefill), 2048), the PD-decode form
    under the newer rule; `speculative_mib` the older rule's speculative reserve (2048 before
    0.5.10, 4096 from it)."""
    reserved = MFS_BASE_MIB + activation_tokens * MFS_ACTIVATION_MIB_PER_TOKEN
    reserved += tp_size * pp_size / 8 * 1024
    if decode_graphs or rule == "mfs_default":
        reserved += cuda_graph_max_bs * MFS_GRAPH_MIB_PER_BS
    if enable_dp_attention and (rule == "mfs_default" or disaggregation_mode != "prefill"):
        reserved += cuda_graph_max_bs * dp_size * MFS_DP_MIB_PER_BS
        if cuda_graph_max_bs > MFS_DP_LARGE_BS:
            reserved += cuda_graph_max_bs * dp_size * MFS_DP_LARGE_MIB_PER_BS
    reserved += prefill_graph_mib
    if gpu_mib > MFS_LARGE_GPU_MIB:
        reserved = max(reserved, MFS_LARGE_GPU_FLOOR_MIB)
    algo = (speculative_algorithm or "").upper()
    if rule == "mfs_default":
        if algo == "STANDALONE":
            reserved += MFS_STANDALONE_MIB
        elif algo and algo not in ("NGRAM", "NONE"):
            reserved += speculative_mib
    elif decode_graphs and deepep:
        reserved += MFS_DEEPEP_MIB
    return reserved


def prefill_activation_tokens(chunked_prefill_size: int, max_prefill_tokens: int) -> int:
    """max(chunked_prefill_size (max_prefill_tokens when chunking is off), 2048)."""
    tokens = chunked_prefill_size if chunked_prefill_size > 0 else max_prefill_tokens
    return max(tokens, MFS_ACTIVATION_MIN_TOKENS)


def default_mfs_by_v058_rule(
    gpu_mib: float,
    *,
    chunked_prefill_size: int,
    max_prefill_tokens: int,
    cuda_graph_max_bs: int,
    tp_size: int = 1,
    pp_size: int = 1,
    dp_size: int = 1,
    enable_dp_attention: bool = False,
    speculative_algorithm: str | None = None,
) -> float:
    """SGLang's default --mem-fraction-static by the v0.5.8 rule (server_args.py:988-1031),
    for a caller without a release range: no piecewise-graph term and no multimodal
    adjustment (both only lower it), the 2 GiB speculative reserve of that release."""
    reserved = reserved_mib(
        gpu_mib,
        rule="mfs_default",
        activation_tokens=prefill_activation_tokens(chunked_prefill_size, max_prefill_tokens),
        cuda_graph_max_bs=cuda_graph_max_bs,
        tp_size=tp_size,
        pp_size=pp_size,
        dp_size=dp_size,
        enable_dp_attention=enable_dp_attention,
        speculative_algorithm=speculative_algorithm,
    )
    return mfs_from_reserved(gpu_mib, reserved)
