"""memledger.sglang.backend_defaults: page_size by backend, the attention backend default by GPU
and the 0.4.x mem_fraction_static rules above 80 GiB, each checked against the line it cites
(read in the release's wheel: `pip download sglang==X --no-deps`, unzip)."""

from __future__ import annotations

import re

import pytest

from memledger.sglang.backend_defaults import (
    ARCHES,
    ATTENTION_DEFAULTS,
    LARGE_GPU_MFS_RULES,
    PAGE_SIZE_RULES,
    default_attention,
    default_page_size,
    large_gpu_fraction,
    large_gpu_rules,
    page_size_rule,
)
from memledger.sglang.releases import version_code

H200_MIB = 143771
"""nvidia-smi's capacity of an H200 (141 GB)."""
B200_MIB = 183359


def code(release: str) -> int:
    return version_code(release)


# --- page_size --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "release", "given", "expected"),
    [
        # v0.4.5 server_args.py:254-258: --enable-flashmla sets page_size = 64
        ("flashmla", "0.4.5", None, 64),
        # v0.4.4 has no such line (the flag came in 0.4.5): the server_args default 1
        ("flashmla", "0.4.4", None, 1),
        # v0.4.6 server_args.py:253-257 `attention_backend == "flashmla"` -> 64, whatever given
        ("flashmla", "0.4.6", 16, 64),
        # v0.4.7 server_args.py:308-312: cutlass_mla -> 128; absent in 0.4.6
        ("cutlass_mla", "0.4.7", None, 128),
        ("cutlass_mla", "0.4.6", None, 1),
        # v0.4.9 server_args.py:392-396: ascend -> 128; v0.4.8 has no ascend line
        ("ascend", "0.4.9", None, 128),
        ("ascend", "0.4.8", None, 1),
        # v0.5.1 server_args.py:485-488: trtllm_mla keeps 32 or 64, else 64
        ("trtllm_mla", "0.5.1", 32, 32),
        ("trtllm_mla", "0.5.10", 16, 64),
        ("trtllm_mla", "0.4.10", None, 1),
        # v0.5.1 server_args.py:506-509: trtllm_mha keeps 16, 32 or 64, else 64
        ("trtllm_mha", "0.5.1", 16, 16),
        ("trtllm_mha", "0.5.2", None, 64),
        # v0.5.4 server_args.py:1149-1150: fa4 -> 128 (not in 0.5.3)
        ("fa4", "0.5.4", None, 128),
        ("fa4", "0.5.3", None, 1),
        # v0.4.10 server_args.py:405-406: no backend rule -> 1, or what was given
        ("flashinfer", "0.5.10", None, 1),
        ("flashinfer", "0.5.10", 16, 16),
        ("fa3", "0.5.2", 32, 32),
    ],
)
def test_page_size_by_backend_and_release(
    backend: str, release: str, given: int | None, expected: int
) -> None:
    assert default_page_size(backend, code(release), given) == expected


def test_page_size_rules_cite_their_first_release() -> None:
    for rule in PAGE_SIZE_RULES:
        cited = re.findall(r"v(\d+\.\d+\.\d+)\S* server_args\.py:\d+", rule.source)
        assert cited, rule
        assert version_code(cited[0]) == (rule.releases.lo or 0), rule
        assert page_size_rule(rule.backend, (rule.releases.lo or 0)) == rule
        before = page_size_rule(rule.backend, (rule.releases.lo or 0) - 1)
        assert before is None or before.page_size == rule.page_size, rule


# --- the attention backend default ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "arch", "release", "expected"),
    [
        # v0.4.5 model_runner.py:236-243: flashinfer for MHA, triton for MLA, on every GPU
        ("mha", "hopper", "0.4.5", "flashinfer"),
        ("mla", "hopper", "0.4.5", "triton"),
        # v0.4.6 model_runner.py:247-253: FA3 on Hopper for MHA; :260-261 for MLA
        ("mha", "hopper", "0.4.6", "fa3"),
        ("mla", "hopper", "0.4.6", "fa3"),
        # v0.4.6 model_runner.py:262-263: MLA elsewhere triton; v0.4.7 :340-341 flashinfer on SM100
        ("mla", "blackwell", "0.4.6", "triton"),
        ("mla", "blackwell", "0.4.7", "flashinfer"),
        # v0.5.6 server_args.py:1295-1299 has no trtllm_mha branch; v0.5.7 :1517, :1542 has
        ("mha", "blackwell", "0.5.6", "flashinfer"),
        ("mha", "blackwell", "0.5.7", "trtllm_mha"),
        # v0.5.10 server_args.py:2239-2243 and :2258
        ("mha", "hopper", "0.5.10", "fa3"),
        ("mha", "other", "0.5.10", "flashinfer"),
        ("mla", "other", "0.5.10", "triton"),
    ],
)
def test_attention_default_by_gpu_and_release(
    kind: str, arch: str, release: str, expected: str
) -> None:
    entry = default_attention(kind, arch, code(release))
    assert entry is not None
    assert entry.backend == expected


def test_attention_defaults_cover_every_release_once() -> None:
    """At every release from 0.4.0 on, each (kind, arch) has exactly one entry."""
    releases = [f"0.4.{n}" for n in range(11)] + [f"0.5.{n}" for n in range(1, 24)]
    for kind in ("mha", "mla"):
        for arch in ARCHES:
            for release in releases:
                at = [
                    e
                    for e in ATTENTION_DEFAULTS
                    if e.kind == kind and e.arch == arch and e.releases.has(code(release))
                ]
                assert len(at) == 1, (kind, arch, release, at)


# --- mem_fraction_static above 80 GiB in 0.4.6 - 0.4.7 ----------------------------------------


def test_large_gpu_rules_by_release() -> None:
    # 0.4.6 and 0.4.6.post2 share a version code but not a rule: both are candidates
    assert [r.id for r in large_gpu_rules(code("0.4.6"))] == [
        "mfs_large_gpu_13g",
        "mfs_large_gpu_48g",
    ]
    assert [r.id for r in large_gpu_rules(code("0.4.7"))] == ["mfs_large_gpu_48g_spec"]
    # v0.4.5 server_args.py:233-243 has the TP table only; 0.4.8 replaced the rules by buckets
    assert large_gpu_rules(code("0.4.5")) == []
    assert large_gpu_rules(code("0.4.8")) == []
    assert {r.source.split()[0] for r in LARGE_GPU_MFS_RULES} == {
        "v0.4.6",
        "v0.4.6.post2",
        "v0.4.7",
    }


def test_large_gpu_fraction_13g() -> None:
    """v0.4.6 server_args.py:225-238: <= 81920 MiB the TP table, above (G - 13 GiB) / G."""
    rule = large_gpu_rules(code("0.4.6"))[0]
    assert large_gpu_fraction(rule, 81920, 0.81, speculative=False) == 0.81
    assert large_gpu_fraction(rule, H200_MIB, 0.81, speculative=False) == pytest.approx(
        (H200_MIB - 13 * 1024) / H200_MIB
    )


def test_large_gpu_fraction_48g() -> None:
    """v0.4.6.post2 server_args.py:228-247: 0.88 above 80 GiB; above 96 GiB
    min(f + 48 GiB (1 - f) / G, (G - 18 GiB) / G), speculative or not."""
    rule = large_gpu_rules(code("0.4.6"))[1]
    assert large_gpu_fraction(rule, 90 * 1024, 0.81, speculative=True) == 0.88
    blend = 0.88 + 48 * 1024 * 0.12 / H200_MIB
    reserve = (H200_MIB - 18 * 1024) / H200_MIB
    assert reserve < blend  # on an H200 the 18 GiB reserve decides
    assert large_gpu_fraction(rule, H200_MIB, 0.81, speculative=True) == pytest.approx(reserve)


def test_large_gpu_fraction_048_spec_and_huge() -> None:
    """v0.4.7 server_args.py:253-283: > 180,000 MiB 0.79; > 96 GiB a 20 GiB reserve with
    speculative decoding; 80 - 96 GiB 0.88 x 0.95 with it."""
    rule = large_gpu_rules(code("0.4.7"))[0]
    assert large_gpu_fraction(rule, B200_MIB, 0.81, speculative=False) == 0.79
    assert large_gpu_fraction(rule, H200_MIB, 0.81, speculative=True) == pytest.approx(
        (H200_MIB - 20 * 1024) / H200_MIB
    )
    assert large_gpu_fraction(rule, H200_MIB, 0.81, speculative=False) == pytest.approx(
        (H200_MIB - 18 * 1024) / H200_MIB
    )
    assert large_gpu_fraction(rule, 90 * 1024, 0.81, speculative=True) == pytest.approx(0.836)
    # at or below 80 GiB the TP table's value stands, x 0.95 with speculative decoding
    assert large_gpu_fraction(rule, 81920, 0.81, speculative=True) == pytest.approx(0.81 * 0.95)
