"""`memledger whatif`, `memledger.whatif` and the `sizing` key of `ledger --format json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memledger
from memledger.errors import EXIT_OK, EXIT_USAGE
from memledger.model.sizing import SETTING_NAMES
from memledger.record import json_schema
from memledger.units import GIB
from tests.conftest import PROJECT_ROOT, SAMPLES, real_log_paths, run_cli

DP16 = SAMPLES / "dp16.log"
K3_CONFIG = PROJECT_ROOT / "samples" / "k3-config.json"
CONTRACT = (
    "predicted_max_total_num_tokens",
    "logged_max_total_num_tokens",
    "min_mem_fraction_static",
    "slack_bytes",
    "bytes_per_token",
    "mismatch",
)


def _log(fragment: str) -> Path:
    return next(p for p in real_log_paths() if fragment in p.as_posix())


def test_text_verdict_first_and_fits_100_columns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        ["whatif", DP16, "--set", "disaggregation_decode_extra_slots=2"], capsys
    )
    assert (code, err) == (EXIT_OK, "")
    assert out.splitlines()[0] == "KV tokens per rank 3,192,320 -> 3,491,392 +299,072 (+9.37 %)"
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "anchored" in out and "modelled" in out


def test_json_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["whatif", DP16, "--set", "mem_fraction_static=0.9", "--format", "json"], capsys
    )
    assert code == EXIT_OK
    answer = json.loads(out)
    rows = {row["name"]: row for row in answer["rows"]}
    slack = rows["slack P x (1 - mfs)"]
    assert slack["delta"] == pytest.approx(-0.02 * 176.08 * GIB, rel=1e-3)
    assert rows["KV pool"]["delta"] == pytest.approx(0.02 * 176.08 * GIB, rel=2e-3)
    code, out, _ = run_cli(["whatif", DP16, "--format", "markdown"], capsys)
    assert code == EXIT_OK
    assert "| figure | measured | what-if |" in out


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("nosuch=1", "unknown setting 'nosuch'"),
        ("page_size", "--set needs NAME=VALUE"),
        ("mem_fraction_static=high", "mem_fraction_static needs a number"),
        ("mem_fraction_static=1.5", "between 0 and 1"),
        ("page_size=0", "page_size must be at least 1"),
    ],
)
def test_bad_settings_are_usage_errors(
    capsys: pytest.CaptureFixture[str], pair: str, message: str
) -> None:
    code, out, err = run_cli(["whatif", DP16, "--set", pair], capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_api_keywords_and_mapping() -> None:
    answer = memledger.whatif(DP16, {"disaggregation_decode_extra_slots": 2})
    same = memledger.whatif(DP16, disaggregation_decode_extra_slots=2)
    assert answer == same
    row = answer.row("KV tokens per instance")
    assert row is not None and row.predicted == 51_077_120 + 16 * 299_072


@pytest.mark.real_logs
def test_api_assertion_from_the_issue() -> None:
    """'with 0.85 we would still have >= N KV tokens': Kimi-K2.5 (single/007) at mfs 0.85."""
    answer = memledger.whatif(_log("single/007"), mem_fraction_static=0.85)
    row = answer.row("KV tokens per instance")
    assert row is not None and row.predicted is not None
    # 0.85 - 0.826 of P = 283.53 GiB more budget at 70,272 B/token
    gained = (0.85 - 0.8260405859375) * 283.53 * GIB / 70_272
    assert row.predicted - 2_454_421 == pytest.approx(gained, rel=0.002)
    assert row.predicted >= 2_500_000


@pytest.mark.real_logs
@pytest.mark.parametrize("name", SETTING_NAMES)
def test_every_knob_answers_or_says_it_is_not_modelled(name: str) -> None:
    """Each knob on a log it applies to moves a figure, or a note says what is left out."""
    values: dict[str, str] = {
        "mem_fraction_static": "0.80",
        "max_running_requests": "16",
        "disaggregation_decode_extra_slots": "2",
        "context_length": "65536",
        "cuda_graph_max_bs": "64",
        "kv_cache_dtype": "fp8_e4m3",
        "max_total_tokens": "100000",
        "page_size": "64",
        "gpu_memory_mib": "16384",
    }
    log = {
        "max_running_requests": DP16,
        "disaggregation_decode_extra_slots": DP16,
        "gpu_memory_mib": _log("single/013"),
    }.get(name, _log("single/012"))
    answer = memledger.whatif(log, {name: values[name]})
    moved = [row for row in answer.rows if row.delta not in (None, 0)]
    assert moved or answer.notes, name
    if name == "max_total_tokens":
        assert answer.row("KV tokens per rank").predicted == 100_000  # type: ignore[union-attr]
    if name == "kv_cache_dtype":
        row = answer.row("KV tokens per rank")
        assert row is not None and row.delta_pct == pytest.approx(100, abs=0.1)
    if name == "cuda_graph_max_bs":
        assert any("not modelled" in note for note in answer.notes)
    if name == "gpu_memory_mib":
        assert answer.missing is None
        assert any(t.kind == "inferred" for t in answer.arithmetic)


@pytest.mark.real_logs
def test_ledger_json_carries_the_sizing_contract(capsys: pytest.CaptureFixture[str]) -> None:
    for path in [*real_log_paths(), DP16]:
        code, out, _ = run_cli(["ledger", path, "--format", "json"], capsys)
        assert code == EXIT_OK
        sizing = json.loads(out)["sizing"]
        assert all(key in sizing for key in CONTRACT), path.name
        predicted = sizing["predicted_max_total_num_tokens"]
        assert predicted is None or isinstance(predicted, int)
        assert sizing["mismatch"] is None or isinstance(sizing["mismatch"], str)
        if predicted is None:
            assert sizing["mismatch"], f"{path.name}: no prediction and no reason"


def test_ledger_text_shows_the_sizing_section(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["ledger", DP16, "--model-config", K3_CONFIG], capsys)
    assert code == EXIT_OK
    # The short view keeps the sizing verdict; the arithmetic is in the full tables.
    assert "\nKV sizing (SGLang 0.5.19 .. 0.5.20): no match, predicted" in out
    code, out, _ = run_cli(["ledger", DP16, "--model-config", K3_CONFIG, "--full"], capsys)
    assert code == EXIT_OK
    section = out[out.index("KV sizing (SGLang") :]
    assert section.startswith("KV sizing (SGLang 0.5.19 .. 0.5.20): no match")
    assert "bytes/token (--model-config)" in section and "13,824 B" in section
    assert "minimum viable mfs = 1 - A/P" in section
    assert "exceed SGLang's budget by 7.16" in " ".join(section.split())


def test_saved_ledger_round_trip_keeps_sizing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "dp16.json"
    code, _, _ = run_cli(["ledger", DP16, "--format", "json", "-o", saved], capsys)
    assert code == EXIT_OK
    again = memledger.ledger(saved)
    assert again.sizing is not None
    assert again.sizing == memledger.ledger(DP16).sizing


def test_whatif_refuses_a_saved_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "dp16.json"
    run_cli(["ledger", DP16, "--format", "json", "-o", saved], capsys)
    code, out, err = run_cli(["whatif", saved], capsys)
    assert code != EXIT_OK and out == ""
    assert "saved ledger" in err


def test_schema_whatif_describes_what_whatif_json_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memledger.sizing.whatif import WhatIf

    code, out, _ = run_cli(["schema", "whatif"], capsys)
    assert code == EXIT_OK
    schema = json.loads(out)
    # the model's schema, named ($schema, $id) and open to added fields
    # (tests/render/test_schemas.py)
    assert schema["properties"] == json_schema(WhatIf, mode="serialization")["properties"]
    code, out, _ = run_cli(
        ["whatif", DP16, "--set", "disaggregation_decode_extra_slots=2", "--format", "json"],
        capsys,
    )
    answer = json.loads(out)
    assert answer["schema_version"] == 1 and schema["$id"] == "urn:memledger:schema:whatif:v1"
    assert set(answer) == set(schema["properties"])
    row_properties = set(schema["$defs"]["WhatIfRow"]["properties"])
    assert all(set(row) == row_properties for row in answer["rows"])
    term_properties = set(schema["$defs"]["Term"]["properties"])
    assert all(set(term) == term_properties for term in answer["arithmetic"])


def test_markdown_sizing_footnote_is_a_list_of_its_parts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reason, the notes and each rule citation are separate items, not one paragraph."""
    code, out, _ = run_cli(["ledger", DP16, "--format", "markdown"], capsys)
    assert code == EXIT_OK
    section = out[out.index("### KV sizing") :]
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert items[0].startswith("- Why: predicted 2,752,960 vs logged 3,192,320")
    assert any(item.startswith("- rule budget: v0.4.1") for item in items)
    assert any(item.startswith("- minimum viable mfs:") for item in items)
    # a wrapped part is one item: the rule citation keeps its second half
    budget = next(item for item in items if item.startswith("- rule budget:"))
    assert budget.endswith("v0.5.23 :3007/3038")
    code, out, _ = run_cli(["whatif", DP16, "--format", "markdown"], capsys)
    assert "- anchored = measured + (model(new) - model(log's settings))" in out
