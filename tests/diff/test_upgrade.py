"""`diff`'s explanation of a KV-token change: the default-change table, SGLang's mem_fraction_static
defaults at old releases, and the attribution on real logs (and on one pair derived by SGLang's own
arithmetic, labelled as such)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from memledger.app.diff import diff_of, run_diff
from memledger.app.load import load_parsed
from memledger.app.options import DiffOptions, DiffSide
from memledger.compare.upgrade import UpgradeContext
from memledger.compare.upgrade_releases import default_fraction, side_release
from memledger.errors import EXIT_OK
from memledger.sglang.default_changes import (
    CHANGES,
    changes_between,
)
from memledger.sglang.mfs_defaults import legacy_mem_fraction_static
from memledger.sglang.releases import version_code
from memledger.sglang.sizing_rules import RULE
from memledger.sizing import sizing_inputs
from memledger.sizing.result import TOLERANCE
from memledger.units import GIB
from tests.conftest import REAL_LOGS, require_real_logs

GROK2 = REAL_LOGS / "single" / "022-grok2-tp8-h100-k8s-v0.5.2rc2.log"
"""Grok-2, TP 8 on H100 80GB HBM3, image v0.5.2rc2 (truth.jsonl); prints mfs 0.831."""
H100_MIB = 81559
"""nvidia-smi's capacity of an H100 80GB HBM3 (the GPU the log's MoE config path names)."""
SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def _real_logs() -> None:
    """The corpus's one skip reason (a failure under CI=true), as every real-log test has."""
    require_real_logs()


needs_real = pytest.mark.usefixtures("_real_logs")


# --- the table ----------------------------------------------------------------------------------


def _release_key(text: str) -> tuple[int, int]:
    """(version code, post number): 0.4.7 < 0.4.7.post1 < 0.4.8, which a code alone cannot say."""
    post = re.search(r"\.post(\d+)$", text)
    return version_code(text), int(post.group(1)) if post else 0


def test_every_change_is_dated_and_cited_in_both_releases() -> None:
    for change in CHANGES:
        code = _release_key(change.release)
        assert code[0] > 0, change.id
        # each side cites a release (vX path:line): the old one before `release`, the new one at it
        cited = r"v(\d+\.\d+\.\d+(?:\.post\d+)?)\S* [\w/]+\.py:\d+"
        old = re.findall(cited, change.old_source)
        new = re.findall(cited, change.new_source)
        assert old and new, change.id
        assert all(_release_key(v) < code for v in old), change.id
        assert any(_release_key(v) >= code for v in new), change.id


def test_rule_backed_changes_sit_between_their_rules() -> None:
    """old_rule's last release < the change <= new_rule's first (sizing_rules ranges)."""
    backed = [c for c in CHANGES if c.old_rule or c.new_rule]
    assert len(backed) >= 7
    for change in backed:
        code = version_code(change.release)
        if change.old_rule:
            last = RULE[change.old_rule].releases.last
            assert last is not None and version_code(last) < code, change.id
            assert change.old_source == RULE[change.old_rule].source
        if change.new_rule:
            first = RULE[change.new_rule].releases.first
            assert first is not None and version_code(first) >= code, change.id


def test_changes_between_is_half_open_and_ordered() -> None:
    crossed = [c.id for c in changes_between(version_code("0.5.2"), version_code("0.5.10"))]
    assert "mfs_gpu_class_to_formula" in crossed  # 0.5.3
    assert "piecewise_graphs_on" in crossed and "spec_reserve_4g" in crossed  # 0.5.10
    assert "mfs_by_tp_to_gpu_class" not in crossed  # 0.4.7.post1: before base
    assert "mfs_graph_reserve" not in crossed  # 0.5.14: after head
    releases = [version_code(c.release) for c in changes_between(0, 1 << 40)]
    assert releases == sorted(releases)
    assert changes_between(version_code("0.5.10"), version_code("0.5.10")) == []


# --- SGLang's old mem_fraction_static defaults ---------------------------------------------------


def test_tp_table_before_0_4_8() -> None:
    # v0.4.6.post2 server_args.py:226-238 (v0.4.7 :253-265): 0.79 / 0.81 / 0.85 / 0.87 / 0.88
    # by tp x pp; code 0.4.7 is also 0.4.7.post1, whose bucket default (:261-300) differs
    release = version_code("0.4.6")
    assert (
        legacy_mem_fraction_static(
            version_code("0.4.7"), 24576, parallel=1, speculative=False, dp_attention=False
        )
        is None
    )
    values = [
        legacy_mem_fraction_static(
            release, 24576, parallel=n, speculative=False, dp_attention=False
        )
        for n in (1, 2, 4, 8, 16)
    ]
    assert values == [0.88, 0.87, 0.85, 0.81, 0.79]
    # above 80 GiB the 0.4.x adjustments (v0.4.7 server_args.py:266-282) are not modelled
    assert (
        legacy_mem_fraction_static(
            release, 143771, parallel=8, speculative=False, dp_attention=False
        )
        is None
    )


def test_gpu_class_reserve_0_4_8_to_0_5_2() -> None:
    # v0.5.2 server_args.py:473-474: H100 class reserve (9.5 + tp x pp / 2) GiB; :496 round to 3
    value = legacy_mem_fraction_static(
        version_code("0.5.2"), H100_MIB, parallel=8, speculative=False, dp_attention=False
    )
    assert value == round((H100_MIB - 13.5 * 1024) / H100_MIB, 3) == 0.831
    # :491-494: + 2 GiB speculative, + 4 GiB DP attention
    with_both = legacy_mem_fraction_static(
        version_code("0.4.8"), H100_MIB, parallel=8, speculative=True, dp_attention=True
    )
    assert with_both == round((H100_MIB - 19.5 * 1024) / H100_MIB, 3)
    # from 0.5.3 the formula of memledger.sizing.defaults holds: not this function's
    assert (
        legacy_mem_fraction_static(
            version_code("0.5.3"), H100_MIB, parallel=8, speculative=False, dp_attention=False
        )
        is None
    )


@needs_real
def test_the_grok2_log_prints_the_0_5_2_default_for_an_h100() -> None:
    """Independent check of the table: the log's printed 0.831 is v0.5.2's default for TP 8 on an
    81,559 MiB H100, and v0.5.3's formula (server_args.py:637-675) gives 0.818 for the same run:
    512 + 8192 x 1.5 + 512 x 2 (cuda_graph_max_bs 512, :603-606) + 8 / 8 x 1024 MiB reserved."""
    inputs = sizing_inputs(load_parsed(GROK2))
    assert inputs.knobs["mem_fraction_static"] == 0.831
    assert default_fraction(inputs, side_release(inputs, "0.5.2"), H100_MIB) == 0.831
    knobs = {**inputs.knobs, "cuda_graph_max_bs": 512}
    later = replace(inputs, knobs=knobs)
    reserved = 512 + 8192 * 1.5 + 512 * 2 + 8 / 8 * 1024
    expected = round((H100_MIB - reserved) / H100_MIB, 3)
    assert expected == 0.818
    assert default_fraction(later, side_release(later, "0.5.8"), H100_MIB) == expected


# --- attribution --------------------------------------------------------------------------------


def derive_upgraded_grok2(target: Path, new_fraction: float) -> int:
    """DERIVED, not measured: the Grok-2 log as the same run would print it with another
    mem_fraction_static, everything else equal. SGLang's own arithmetic only: tokens =
    (A - P x (1 - mfs)) // cell (v0.5.2 model_executor/model_runner.py:1123-1125), so the change
    is P x Δmfs / cell; the request table follows max_num_reqs (v0.5.2 model_runner.py:1252-1261)
    and every later free-memory reading moves by the pools' change. Returns the new token count."""
    text = GROK2.read_text()
    p_bytes, cell, tokens, context = 77.43 * GIB, 32768, 903439, 131072
    new_tokens = tokens + round(p_bytes * (new_fraction - 0.831) / cell)

    def requests(t: int) -> int:
        return min(max(int(t / context * 512), 2048), 4096)

    table = (requests(new_tokens) - requests(tokens)) * (context + 4) * 4
    shift = -((new_tokens - tokens) * cell + table) / GIB
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if line.startswith("[2025-09-11 10:24:10] server_args="):
            line = line.replace("mem_fraction_static=0.831", f"mem_fraction_static={new_fraction}")
            line = line.replace("cuda_graph_max_bs=None", "cuda_graph_max_bs=512")
        if "KV Cache is allocated" in line:
            size = (new_tokens + 1) * cell / 2 / GIB
            line = re.sub(
                r"#tokens: \d+, K size: [\d.]+ GB, V size: [\d.]+ GB",
                f"#tokens: {new_tokens}, K size: {size:.2f} GB, V size: {size:.2f} GB",
                line,
            )
        if number > 125:
            line = re.sub(
                r"(avail mem|available_gpu_mem)=([\d.]+) GB",
                lambda m: f"{m.group(1)}={float(m.group(2)) + shift:.2f} GB",
                line,
            )
            line = line.replace(
                f"max_total_num_tokens={tokens}", f"max_total_num_tokens={new_tokens}"
            )
            line = line.replace(
                f"max_running_requests={requests(tokens)}",
                f"max_running_requests={requests(new_tokens)}",
            )
        out.append(line)
    target.write_text("".join(out))
    return new_tokens


@needs_real
def test_upgrade_0_5_2_to_0_5_8_is_the_fraction_default(tmp_path: Path) -> None:
    head_log = tmp_path / "grok2-at-0.5.8.log"
    new_tokens = derive_upgraded_grok2(head_log, 0.818)
    diff = diff_of(
        DiffOptions(
            base=DiffSide(str(GROK2), version="0.5.2"),
            head=DiffSide(str(head_log), version="0.5.8"),
            gpu_memory_mib=H100_MIB,
        )
    )
    upgrade = diff.upgrade
    assert upgrade is not None and upgrade.available and upgrade.releases_differ
    assert upgrade.delta_tokens == new_tokens - 903439 == -32984
    shares = {s.id: s for s in upgrade.inputs}
    fraction = shares["mem_fraction_static"]
    assert (fraction.base, fraction.head) == ("0.831", "0.818")
    assert fraction.why == "SGLang's default at each release for a 81,559 MiB GPU"
    assert "mfs_gpu_class_to_formula" in fraction.defaults
    # the shares and the named remainder add up to the logged change exactly
    assert upgrade.unexplained_tokens is not None
    assert sum(s.tokens for s in upgrade.inputs) + upgrade.unexplained_tokens == -32984
    assert abs(fraction.tokens - -32984) <= 0.001 * 32984
    assert abs(upgrade.unexplained_tokens) <= 0.001 * 32984
    # cuda_graph_max_bs enters only the default's reserve: no token share of its own
    assert shares["server_args"].tokens == 0
    crossed = {c.id: c for c in upgrade.defaults_crossed}
    assert crossed["mfs_gpu_class_to_formula"].new_source == "v0.5.3 server_args.py:637-675"
    assert crossed["mfs_gpu_class_to_formula"].certain
    assert "chunked_prefill_mid_gpu" not in crossed  # 35-60 GiB GPUs only
    assert "spec_headroom_dropped" not in crossed  # no speculative decoding here

    text = run_diff(
        DiffOptions(
            base=DiffSide(str(GROK2), version="0.5.2"),
            head=DiffSide(str(head_log), version="0.5.8"),
            gpu_memory_mib=H100_MIB,
        )
    ).text
    lines = text.splitlines()
    start = lines.index("Why KV tokens per rank changed")
    assert lines[start + 1].startswith("  KV tokens per rank -3.6 % (-32,984): -3.6 % from")
    assert "mem_fraction_static 0.831 -> 0.818 default" in " ".join(lines[start + 1 : start + 3])
    assert all(len(line) <= 100 for line in lines)


@needs_real
def test_without_the_gpu_size_the_default_is_only_possible(tmp_path: Path) -> None:
    head_log = tmp_path / "grok2-at-0.5.8.log"
    derive_upgraded_grok2(head_log, 0.818)
    upgrade = diff_of(
        DiffOptions(
            base=DiffSide(str(GROK2), version="0.5.2"),
            head=DiffSide(str(head_log), version="0.5.8"),
        )
    ).upgrade
    assert upgrade is not None
    fraction = next(s for s in upgrade.inputs if s.id == "mem_fraction_static")
    assert fraction.why.startswith("server_args differ; the default changed in between")
    # without the GPU size every GPU class's entry may apply
    assert "chunked_prefill_mid_gpu" in {c.id for c in upgrade.defaults_crossed}


def test_samples_are_not_attributed_where_the_model_misses_the_logs() -> None:
    """The sizing model misses the synthetic fork samples by -13.8 % (dp16) and -6.5 % (dp2):
    shares of its change would balance but not be true, so none are given; the measured rows
    sized before the pool are still listed."""
    diff = diff_of(
        DiffOptions(
            base=DiffSide(str(SAMPLES / "dp16.log")), head=DiffSide(str(SAMPLES / "dp2.log"))
        )
    )
    upgrade = diff.upgrade
    assert upgrade is not None and not upgrade.available and upgrade.inputs == []
    # both samples date 0.5.19 .. 0.5.20 (their ReplaySSM `record_len=` line is 0.5.17+, v0.5.17
    # mem_cache/memory_pool.py:817; the formats end at 0.5.20): whether they differ is unknown
    assert upgrade.releases_differ is None and upgrade.defaults_crossed == []
    assert upgrade.delta_tokens == 2687424 - 3192320
    assert upgrade.base_predicted is not None and upgrade.head_predicted is not None
    for predicted, logged in ((upgrade.base_predicted, 3192320), (upgrade.head_predicted, 2687424)):
        assert abs(predicted - logged) > TOLERANCE * logged
    assert upgrade.reason is not None
    assert "misses base by -13.8 % and head by -6.5 %" in upgrade.reason
    assert "mem_fraction_static" in upgrade.server_args
    rows = {r.id: r for r in upgrade.rows_before_sizing}
    weights = next(r for r in diff.rows if r.id == "weights")
    assert rows["weights"].delta_bytes == weights.delta_bytes and rows["weights"].delta_bytes < 0
    assert rows["weights"].phase == "weights_load"
    assert all(r.id not in rows for r in diff.rows if r.group.value == "cuda_graph")


def test_same_log_twice_has_no_explanation_and_no_json_key(tmp_path: Path) -> None:
    log = str(SAMPLES / "dp16.log")
    options = DiffOptions(base=DiffSide(log), head=DiffSide(log, label="again"), fmt="json")
    assert diff_of(options).upgrade is None
    document = json.loads(run_diff(options).text)
    assert "upgrade" not in document
    text = run_diff(DiffOptions(base=DiffSide(log), head=DiffSide(log, label="again"))).text
    assert "Why KV tokens per rank changed" not in text


def test_saved_ledgers_say_why_there_is_no_attribution() -> None:
    from memledger.app.load import load_ledger
    from memledger.compare.compute import diff_ledgers

    base, head = load_ledger(str(SAMPLES / "dp16.log")), load_ledger(str(SAMPLES / "dp2.log"))
    upgrade = diff_ledgers(base, head, sizing=UpgradeContext()).upgrade
    assert upgrade is not None and not upgrade.available
    assert upgrade.reason is not None and "no sizing inputs" in upgrade.reason
    assert "mem_fraction_static" in upgrade.server_args


def test_bad_release_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from memledger.cli import main

    log = str(SAMPLES / "dp16.log")
    code = main(["diff", log, str(SAMPLES / "dp2.log"), "--head-version", "latest"])
    err = capsys.readouterr().err
    assert code == 2 and code != EXIT_OK
    assert err.count("\n") == 1 and "--head-version" in err and "0.5.10" in err


def test_gpu_class_reserve_is_dated_0_4_7_post1() -> None:
    """The bucket reserve arrived in 0.4.7.post1 (v0.4.7.post1 server_args.py:261-300; v0.4.7
    :253-282 still has the TP table), not 0.4.8: an upgrade from 0.4.6 to code 0.4.7 crosses
    it, one from 0.4.7 to 0.4.8 does not."""
    change = next(c for c in CHANGES if c.id == "mfs_by_tp_to_gpu_class")
    assert change.release == "0.4.7.post1"
    assert change.new_source.startswith("v0.4.7.post1 server_args.py:261-300")
    into = changes_between(version_code("0.4.6"), version_code("0.4.7"))
    assert "mfs_by_tp_to_gpu_class" in [c.id for c in into]
    past = changes_between(version_code("0.4.7"), version_code("0.4.8"))
    assert "mfs_by_tp_to_gpu_class" not in [c.id for c in past]
