"""SGLang defaults by release that the KV pool depends on besides mem_fraction_static: data.

- `PAGE_SIZE_RULES`: the page_size SGLang forces for an attention backend (the pool is floored
  to a multiple of it; the backend's workspace, taken before the pool, comes with it).
- `ATTENTION_DEFAULTS`: the attention backend SGLang picks on CUDA when none is given, by GPU
  architecture and attention kind (MHA or MLA).
- `LARGE_GPU_MFS_RULES`: the 0.4.6 - 0.4.7 mem_fraction_static rules above 80 GiB, which
  memledger.sglang.mfs_defaults leaves out (its step holds up to 80 GiB; 0.4.7.post1 has the
  capacity buckets already).

Each entry cites the source line at the releases it was read in (paths under
`python/sglang/srt/` of each release's wheel, `pip download sglang==X --no-deps`). Releases are
compared by `version_code`, which ignores `.postN`: where two post releases of one X.Y.Z differ
(0.4.6 and 0.4.6.post2), a lookup returns both candidates and the caller shows the range.
"""

from __future__ import annotations

from dataclasses import dataclass

from memledger.sglang.releases import ReleaseRange, version_code

GIB_MIB = 1024


@dataclass(frozen=True)
class PageSizeRule:
    """SGLang sets page_size to `page_size` for `backend` unless it is already one of `keeps`."""

    backend: str
    page_size: int
    releases: ReleaseRange
    source: str
    keeps: tuple[int, ...] = ()
    applies: str = ""


PAGE_SIZE_DEFAULT = 1
"""page_size when neither the user nor a backend sets it (v0.4.9 server_args.py:82 `page_size:
int = 1`; from 0.4.10 `None`, then 1: v0.4.10 server_args.py:85, :405-406)."""

PAGE_SIZE_RULES: tuple[PageSizeRule, ...] = (
    PageSizeRule(
        "flashmla",
        64,
        ReleaseRange("0.4.5", "0.4.5"),
        "v0.4.5 server_args.py:254-258",
        applies="--enable-flashmla (the flag before --attention-backend flashmla)",
    ),
    PageSizeRule(
        "flashmla", 64, ReleaseRange("0.4.6"), "v0.4.6 server_args.py:253-257; v0.5.10 :2331"
    ),
    PageSizeRule(
        "cutlass_mla", 128, ReleaseRange("0.4.7"), "v0.4.7 server_args.py:308-312; v0.5.10 :2340"
    ),
    PageSizeRule("ascend", 128, ReleaseRange("0.4.9"), "v0.4.9 server_args.py:392-396"),
    PageSizeRule(
        "trtllm_mla",
        64,
        ReleaseRange("0.5.1"),
        "v0.5.1 server_args.py:485-488; v0.5.10 :2352-2355",
        keeps=(32, 64),
    ),
    PageSizeRule(
        "trtllm_mha",
        64,
        ReleaseRange("0.5.1"),
        "v0.5.1 server_args.py:506-509; v0.5.10 :2392-2395",
        keeps=(16, 32, 64),
    ),
    PageSizeRule(
        "fa4",
        128,
        ReleaseRange("0.5.4"),
        "v0.5.4 server_args.py:1149-1150; v0.5.10 :2410-2412",
        applies="from 0.5.6 only for MHA models on SM100 (v0.5.6 server_args.py:1415)",
    ),
)


def page_size_rule(backend: str | None, release: int) -> PageSizeRule | None:
    """The rule forcing page_size for `backend` at `release` (a `version_code`), if any."""
    if not backend:
        return None
    return next(
        (
            rule
            for rule in PAGE_SIZE_RULES
            if rule.backend == backend and rule.releases.has(release)
        ),
        None,
    )


def default_page_size(backend: str | None, release: int, given: int | None = None) -> int:
    """The page_size SGLang runs with: `given` (None: not given) after the backend's rule."""
    rule = page_size_rule(backend, release)
    if rule is None:
        return PAGE_SIZE_DEFAULT if given is None else given
    if given is not None and given in rule.keeps:
        return given
    return rule.page_size


@dataclass(frozen=True)
class AttentionDefault:
    """The backend SGLang picks on CUDA for `kind` attention on `arch` GPUs, when none is given.

    `arch`: `hopper` (SM90 with CUDA >= 12.3), `blackwell` (SM100), `other`. The `flashinfer`
    picks fall back to triton where flashinfer is not installed."""

    kind: str
    arch: str
    backend: str
    releases: ReleaseRange
    source: str
    condition: str = ""


ARCHES: tuple[str, ...] = ("hopper", "blackwell", "other")

ATTENTION_DEFAULTS: tuple[AttentionDefault, ...] = (
    # MHA (Llama, Qwen, ...)
    AttentionDefault(
        "mha",
        "hopper",
        "flashinfer",
        ReleaseRange("0.4.0", "0.4.5"),
        "v0.4.5 model_runner.py:236-241",
    ),
    AttentionDefault(
        "mha",
        "hopper",
        "fa3",
        ReleaseRange("0.4.6"),
        "v0.4.6 model_runner.py:247-253; v0.5.6 server_args.py:1295-1299; v0.5.10 :2239-2243",
        condition="no speculative top-k > 1; until 0.5.6 also an FA3-default architecture",
    ),
    AttentionDefault(
        "mha",
        "blackwell",
        "flashinfer",
        ReleaseRange("0.4.0", "0.5.6"),
        "v0.4.6 model_runner.py:254-257",
    ),
    AttentionDefault(
        "mha",
        "blackwell",
        "trtllm_mha",
        ReleaseRange("0.5.7"),
        "v0.5.7 server_args.py:1517, :1542; v0.5.10 :2244-2252",
        condition="no speculative top-k > 1",
    ),
    AttentionDefault(
        "mha",
        "other",
        "flashinfer",
        ReleaseRange("0.4.0"),
        "v0.4.5 model_runner.py:239-241; v0.5.10 server_args.py:2258",
    ),
    # MLA (DeepSeek V2/V3, Kimi K2, ...)
    AttentionDefault(
        "mla", "hopper", "triton", ReleaseRange("0.4.0", "0.4.5"), "v0.4.5 model_runner.py:242-243"
    ),
    AttentionDefault(
        "mla",
        "hopper",
        "fa3",
        ReleaseRange("0.4.6"),
        "v0.4.6 model_runner.py:260-261; v0.5.10 server_args.py:2261-2262",
    ),
    AttentionDefault(
        "mla",
        "blackwell",
        "triton",
        ReleaseRange("0.4.0", "0.4.6"),
        "v0.4.6 model_runner.py:262-263",
    ),
    AttentionDefault(
        "mla",
        "blackwell",
        "flashinfer",
        ReleaseRange("0.4.7"),
        "v0.4.7 model_runner.py:340-341; v0.5.10 server_args.py:2263-2264",
    ),
    AttentionDefault(
        "mla",
        "other",
        "triton",
        ReleaseRange("0.4.0"),
        "v0.4.6 model_runner.py:262-263; v0.5.10 server_args.py:2275",
    ),
)


def default_attention(kind: str, arch: str, release: int) -> AttentionDefault | None:
    """SGLang's default attention backend entry for `kind` on `arch` at `release`."""
    return next(
        (
            entry
            for entry in ATTENTION_DEFAULTS
            if entry.kind == kind and entry.arch == arch and entry.releases.has(release)
        ),
        None,
    )


LARGE_GPU_FROM_MIB = 81920
"""Above this the TP table no longer decides (v0.4.6 server_args.py:225 `gpu_mem <= 81920`)."""
LARGE_GPU_SINGLE = 0.88
LARGE_GPU_BLEND_MIB = 48 * GIB_MIB
LARGE_GPU_BLEND_FROM_MIB = 96 * GIB_MIB
LARGE_GPU_RESERVE_MIB = 18 * GIB_MIB
LARGE_GPU_RESERVE_SPEC_MIB = 20 * GIB_MIB
LARGE_GPU_OLD_RESERVE_MIB = 13 * GIB_MIB
HUGE_GPU_FROM_MIB = 180 * 1000
HUGE_GPU_FRACTION = 0.79
SPEC_SCALE = 0.95


@dataclass(frozen=True)
class LargeGpuMfsRule:
    """A 0.4.x mem_fraction_static default for GPUs above 80 GiB (SGLang's MiB, torch's total)."""

    id: str
    releases: tuple[str, ...]
    """The exact releases (post releases included) that have it."""
    formula: str
    source: str
    bounds_mib: tuple[int, ...]
    """The capacities where the formula changes shape (each the first capacity of a shape)."""


LARGE_GPU_MFS_RULES: tuple[LargeGpuMfsRule, ...] = (
    LargeGpuMfsRule(
        "mfs_large_gpu_13g",
        ("0.4.6", "0.4.6.post1"),
        "G > 80 GiB: (G - 13 GiB) / G",
        "v0.4.6 server_args.py:225-238",
        (LARGE_GPU_FROM_MIB + 1,),
    ),
    LargeGpuMfsRule(
        "mfs_large_gpu_48g",
        ("0.4.6.post2", "0.4.6.post3", "0.4.6.post4", "0.4.6.post5"),
        "f = 0.88 above 80 GiB; G > 96 GiB: min(f + 48 GiB x (1 - f) / G, (G - 18 GiB) / G)",
        "v0.4.6.post2 server_args.py:228-247",
        (LARGE_GPU_FROM_MIB + 1, LARGE_GPU_BLEND_FROM_MIB + 1),
    ),
    LargeGpuMfsRule(
        "mfs_large_gpu_48g_spec",
        ("0.4.7",),
        "f = 0.88 above 80 GiB; G > 180,000 MiB (CUDA): 0.79; G > 96 GiB: min(f + 48 GiB x "
        "(1 - f) / G, (G - 18 GiB, 20 GiB speculative) / G); else speculative: f x 0.95",
        "v0.4.7 server_args.py:253-283",
        (LARGE_GPU_FROM_MIB + 1, LARGE_GPU_BLEND_FROM_MIB + 1, HUGE_GPU_FROM_MIB + 1),
    ),
)


def large_gpu_rules(release: int) -> list[LargeGpuMfsRule]:
    """The rules whose releases share `release`'s X.Y.Z (both, for 0.4.6 and its posts)."""
    return [
        rule
        for rule in LARGE_GPU_MFS_RULES
        if any(version_code(name) == release for name in rule.releases)
    ]


def large_gpu_fraction(
    rule: LargeGpuMfsRule, gpu_mib: int, table_value: float, *, speculative: bool
) -> float:
    """The default under `rule` (unrounded, as SGLang leaves it); `table_value` is the TP
    table's value, which the rule keeps at or below 80 GiB."""
    if rule.id == "mfs_large_gpu_13g":
        if gpu_mib <= LARGE_GPU_FROM_MIB:
            return table_value
        return (gpu_mib - LARGE_GPU_OLD_RESERVE_MIB) / gpu_mib
    base = table_value if gpu_mib <= LARGE_GPU_FROM_MIB else LARGE_GPU_SINGLE
    newest = rule.id == "mfs_large_gpu_48g_spec"
    if newest and gpu_mib > HUGE_GPU_FROM_MIB:
        return HUGE_GPU_FRACTION
    if gpu_mib > LARGE_GPU_BLEND_FROM_MIB:
        reserve = LARGE_GPU_RESERVE_SPEC_MIB if newest and speculative else LARGE_GPU_RESERVE_MIB
        return min(base + LARGE_GPU_BLEND_MIB * (1 - base) / gpu_mib, (gpu_mib - reserve) / gpu_mib)
    return base * SPEC_SCALE if newest and speculative else base
