"""`memledger diff LOG --against-release X`: one log's KV pool under another release's defaults,
checked on real logs against SGLang's budget arithmetic (P x mfs - (P - A)) done by hand here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memledger.api import against_release as api_against_release
from memledger.app.load import load_parsed
from memledger.app.options import LoadOptions
from memledger.compare.upgrade_against import against_release
from memledger.compare.upgrade_gpu import GPU_WINDOW_MIB, fraction_defaults_at, infer_gpu
from memledger.compare.upgrade_models import AgainstRelease
from memledger.errors import EXIT_OK, EXIT_USAGE
from memledger.record import to_dict, validate
from memledger.render.diff_release import verdict
from memledger.sglang.release_markers import VersionRange
from memledger.sglang.releases import version_code
from memledger.sizing import SizingInputs, base_settings, predict, sizing_inputs
from memledger.units import MIB
from tests.conftest import REAL_LOGS, require_real_logs, run_cli

GROK2 = REAL_LOGS / "single" / "022-grok2-tp8-h100-k8s-v0.5.2rc2.log"
"""Grok-2, TP 8 on H100 80GB HBM3, image v0.5.2rc2 (truth.jsonl); prints mfs 0.831."""
QWEN25 = REAL_LOGS / "single" / "012-qwen25-3b-tp1-notag-nohup-nocudagraph.log"
"""Qwen2.5-3B, TP 1, 0.5.9 line formats, mfs 0.836 printed (SGLang's default on an 80 GB GPU)."""
SMALL_GPU = REAL_LOGS / "single" / "020-qwen3-0.6b-tp1-notag-wsl-0.4.6.post2.log"
"""0.4.6.post2 on a small WSL GPU (3.23 GB free at start), mfs 0.88 (the TP table's)."""
H100_MIB = 81559


@pytest.fixture
def _real_logs() -> None:
    require_real_logs()


needs_real = pytest.mark.usefixtures("_real_logs")


def _inputs(path: Path) -> SizingInputs:
    return sizing_inputs(load_parsed(path, LoadOptions()), None)


def _row(answer: AgainstRelease, setting: str) -> dict[str, str]:
    found = next(s for s in answer.settings if s.setting == setting)
    return to_dict(found)


@needs_real
def test_grok2_at_046_takes_the_tp_table_default_and_the_budget_shrinks_by_hand() -> None:
    """0.5.2 on an 81,559 MiB H100, TP 8: 0.5.2's default (v0.5.2 server_args.py:466-494,
    reserve 9.5 + 8 / 2 GiB) is the printed 0.831; 0.4.6's is the TP table's 0.81 (v0.4.6
    server_args.py:225-235). The budget P x mfs - (P - A) loses (0.831 - 0.81) x P, so the pool
    loses that over the bytes per token."""
    inputs = _inputs(GROK2)
    answer = against_release(inputs, "0.4.6", log_release="0.5.2", gpu_memory_mib=H100_MIB)
    fraction = _row(answer, "mem_fraction_static")
    assert (fraction["logged"], fraction["log_default"], fraction["status"]) == (
        "0.831",
        "0.831",
        "default",
    )
    assert fraction["other_default"] == fraction["used"] == "0.810"
    assert answer.direction == "upgrade"
    assert [c.id for c in answer.defaults_crossed] == ["mfs_by_tp_to_gpu_class"]
    assert inputs.load_begin is not None and inputs.logged_tokens is not None
    cell = predict(inputs, base_settings(inputs)).cell_bytes
    assert cell is not None
    by_hand = (0.831 - 0.81) * inputs.load_begin.bytes / cell
    assert answer.delta_tokens is not None and answer.predicted_tokens is not None
    assert answer.delta_tokens == pytest.approx(by_hand, rel=0.01)
    assert answer.predicted_tokens + answer.delta_tokens == inputs.logged_tokens
    assert answer.low is not None and answer.high is not None
    assert answer.low < answer.predicted_tokens < answer.high
    assert answer.high - answer.low < 0.002 * answer.predicted_tokens


@needs_real
def test_grok2_gpu_inferred_from_p_and_the_printed_fraction() -> None:
    """Without --gpu-memory-mib the capacities above P whose 0.5.2 default is 0.831 stand in;
    the H100's 81,559 MiB is among them, and 0.4.6's default then depends on the capacity (the
    TP table up to 81,920 MiB, the 13 GiB or 48 GiB rule of 0.4.6 / 0.4.6.post2 above)."""
    inputs = _inputs(GROK2)
    assert inputs.load_begin is not None
    release = version_code("0.5.2")
    found = infer_gpu(inputs, VersionRange(first=release, last=release))
    assert found is not None and H100_MIB in found
    assert found.start >= inputs.load_begin.bytes / MIB
    assert found.stop - 1 <= inputs.load_begin.bytes / MIB + GPU_WINDOW_MIB + 1
    answer = against_release(inputs, "0.4.6", log_release="0.5.2")
    assert answer.gpu_source.startswith("inferred")
    fractions = sorted(c.mem_fraction_static for c in answer.candidates)
    g = found.stop - 1
    assert fractions == pytest.approx([0.81, (g - 13 * 1024) / g, 0.88])
    assert answer.low is not None and answer.high is not None
    assert answer.low <= min(c.tokens for c in answer.candidates)
    assert answer.high >= max(c.tokens for c in answer.candidates)
    assert answer.predicted_tokens == answer.candidates[0].tokens


@needs_real
def test_same_release_changes_nothing() -> None:
    inputs = _inputs(GROK2)
    answer = against_release(inputs, "0.5.2", log_release="0.5.2", gpu_memory_mib=H100_MIB)
    assert answer.direction == "same"
    assert answer.defaults_crossed == []
    assert answer.predicted_tokens == inputs.logged_tokens
    assert answer.delta_tokens == 0


@needs_real
def test_qwen25_pool_smaller_after_the_upgrade_from_052() -> None:
    """0.5.9 printed 0.836 (its default for this GPU); 0.5.2's bucket default for an 80 GB GPU
    at TP 1 is (G - 10 GiB) / G = 0.875: the pool was larger on 0.5.2."""
    inputs = _inputs(QWEN25)
    answer = against_release(inputs, "0.5.2")
    fraction = _row(answer, "mem_fraction_static")
    assert fraction["status"] == "default"
    assert fraction["logged"] == "0.836"
    assert answer.gpu_memory_mib is None  # a range was inferred
    assert answer.candidates == [] or all(c.tokens > 0 for c in answer.candidates)
    low_gpu = int(answer.gpu_source.split()[1].replace(",", ""))
    assert fraction["other_default"].startswith(f"{round((low_gpu - 10240) / low_gpu, 3):.3f}")
    assert answer.delta_tokens is not None and answer.delta_tokens < 0
    assert answer.predicted_tokens is not None and inputs.logged_tokens is not None
    assert answer.predicted_tokens > inputs.logged_tokens
    assert "mfs_gpu_class_to_formula" in [c.id for c in answer.defaults_crossed]


@needs_real
def test_a_set_fraction_is_kept() -> None:
    """On a GPU whose default is not the printed value, the value was given: kept, and the
    other release's pool differs only by its rules."""
    inputs = _inputs(QWEN25)
    answer = against_release(inputs, "0.5.8", gpu_memory_mib=81559)
    fraction = _row(answer, "mem_fraction_static")
    assert fraction["status"] == "set"
    assert fraction["used"] == "0.836"


@needs_real
def test_no_budget_means_no_start() -> None:
    """0.5.2's default on a GPU just above P (3.3 GB) leaves no KV budget for the weights: SGLang
    raises "Not enough memory" (v0.5.2 model_executor/model_runner.py:1316-1319)."""
    inputs = _inputs(SMALL_GPU)
    assert inputs.load_begin is not None
    gpu = int(inputs.load_begin.bytes / MIB) + 1
    answer = against_release(inputs, "0.5.2", gpu_memory_mib=gpu)
    assert answer.predicted_tokens == 0
    assert any("would not start" in note for note in answer.notes)


@needs_real
def test_cli_text_json_and_api_agree(capsys: pytest.CaptureFixture[str]) -> None:
    argv: list[str] = ["diff", str(GROK2), "--against-release", "0.4.6"]
    argv += ["--head-version", "0.5.2rc2", "--gpu-memory-mib", str(H100_MIB)]
    code, out, _ = run_cli(argv, capsys)
    assert code == EXIT_OK
    answer = api_against_release(GROK2, "0.4.6", log_release="0.5.2rc2", gpu_memory_mib=H100_MIB)
    assert answer.predicted_tokens is not None
    lines = out.splitlines()
    # The verdict is wrapped to the width (never cut): its lines read back as the one sentence.
    said = verdict(answer)
    assert said.startswith("KV tokens per rank 903,439 at 0.5.2 (given)")
    assert f"at 0.4.6 SGLang would size {answer.predicted_tokens:,}" in said
    head = [lines[0]]
    for line in lines[1:]:
        if not line.startswith("  "):
            break
        head.append(line.strip())
    assert " ".join(head) == said and len(head) > 1
    assert all(len(line) <= 100 for line in lines)
    code, out, _ = run_cli([*argv, "--format", "json"], capsys)
    assert code == EXIT_OK
    assert validate(AgainstRelease, json.loads(out)) == answer


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "Missing argument 'HEAD' (usage: memledger diff [OPTIONS] BASE HEAD, or"),
        (["--against-release", "0.4.6", "OTHER"], "takes one LOG, not BASE and HEAD"),
        (["--against-release", "0.4.6", "--base-rank", "1"], "--base-rank: only with two logs"),
        (["--against-release", "0.4.6", "--full"], "--full: only with two logs"),
        (["--against-release", "zero"], "--against-release: 'zero' is not a release"),
        (["--against-release", "0.4.6", "--format", "csv"], "unknown format 'csv'"),
    ],
)
@needs_real
def test_cli_refuses_what_one_log_cannot_use(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["diff", str(GROK2)]
    argv += [str(GROK2) if word == "OTHER" else word for word in extra]
    code, out, err = run_cli(argv, capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1


@needs_real
def test_pre_048_defaults_above_80_gib() -> None:
    """Above 80 GiB: 0.4.0 - 0.4.5 keep the TP table (v0.4.5 server_args.py:233-243, tp only);
    0.4.6 has two rules by post release (v0.4.6 server_args.py:225-238 and v0.4.6.post2
    :228-247), and so has 0.4.7 (v0.4.7 :253-283, v0.4.7.post1 :261-300). Grok-2 runs TP 8."""
    inputs = _inputs(GROK2)
    h200 = 143771

    def at(release: str) -> list[tuple[str, float]]:
        code = version_code(release)
        return fraction_defaults_at(inputs, VersionRange(first=code, last=code), h200)

    assert at("0.4.5") == [("", 0.81)]
    values = sorted(v for _, v in at("0.4.6"))
    assert values == pytest.approx(
        [(h200 - 18 * 1024) / h200, (h200 - 13 * 1024) / h200]  # 48 GiB rule, 13 GiB rule
    )
    assert {label for label, _ in at("0.4.6")} == {
        "0.4.6/0.4.6.post1",
        "0.4.6.post2/0.4.6.post3/0.4.6.post4/0.4.6.post5",
    }
    # code 0.4.7 is 0.4.7 (the 18 GiB rule) or 0.4.7.post1 (the buckets: 12 + 8 / 2 GiB below
    # 160 GiB, v0.4.7.post1 server_args.py:283-288)
    assert dict(at("0.4.7")) == {
        "0.4.7": pytest.approx((h200 - 18 * 1024) / h200),
        "0.4.7.post1": round((h200 - 16 * 1024) / h200, 3),
    }
    # from 0.4.8 the bucket rule: a 12 + 8 / 2 GiB reserve below 160 GiB (v0.4.8 :288-305)
    assert at("0.4.8") == [("", round((h200 - 16 * 1024) / h200, 3))]


@needs_real
def test_markdown_is_inert(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["diff", str(GROK2), "--against-release", "0.4.6", "--gpu-memory-mib", str(H100_MIB)]
    code, out, _ = run_cli([*argv, "--format", "markdown"], capsys)
    assert code == EXIT_OK
    assert out.startswith("## KV tokens per rank 903,439 at ")
    assert "| mem\\_fraction\\_static |" in out or "| mem_fraction_static |" in out
    assert "<" not in out.replace("&lt;", "")


@needs_real
def test_a_set_fraction_drops_the_default_changes_it_never_used() -> None:
    """Laguna on a GB10 (124,546 MiB) prints 0.85, not SGLang's default there: the changes of
    the default (piecewise reserve, speculative reserve, graph reserve) do not reach its pool and
    are left out of the list, named in a note; the rule changes (SWA split, draft KV) stay."""
    inputs = _inputs(REAL_LOGS / "single" / "005-laguna-int4-dflash-gb10-spark.log")
    answer = against_release(inputs, "0.5.8", gpu_memory_mib=124546)
    assert _row(answer, "mem_fraction_static")["status"] == "set"
    ids = [c.id for c in answer.defaults_crossed]
    assert all(c.effect != "mem_fraction_static" for c in answer.defaults_crossed)
    assert "draft_kv_in_budget" in ids and "swa_split_one_cell" in ids
    assert any("spec_reserve_4g" in note and "this log sets it" in note for note in answer.notes)
