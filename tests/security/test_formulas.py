"""F21: a user formula may not take the id of a row memledger reads from the log, nor of a
summary figure (review-security.md F21: `kv_pool` was merged into the logged KV row)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memledger.api import ledger
from memledger.errors import EXIT_OK, EXIT_USAGE
from memledger.formulas import load_formulas, parse_formulas
from memledger.formulas.reserved import is_engine_row_id, reserved_reason
from tests.conftest import SAMPLES, real_log_paths
from tests.security.helpers import run, write_log


def _formula(formula_id: str, expression: str = "1073741824") -> str:
    return (
        "[[formula]]\n"
        f'id = "{formula_id}"\n'
        'label = "x"\n'
        'interval = "memory_pool_end"\n'
        f'expression = "{expression}"\n'
        'text = "t"\n'
        'why = "w"\n'
    )


@pytest.mark.parametrize(
    ("formula_id", "reason"),
    [
        ("kv_pool", "reads from the log"),  # the review's reproduction
        ("usable", "summary figure"),  # the review's second entry
        ("cuda_graph", "reads from the log"),
        ("draft_extend_cuda_graph_static", "reads from the log"),
        ("kv_pool_swa", "reads from the log"),  # a KV line's label becomes a suffix
        ("all_reduce_buffers", "reads from the log"),  # sglang/rows.py LINE_ROWS
        ("draft_mamba_ssm_state", "reads from the log"),
        ("unexplained_pool", "reads from the log"),
        ("slots", "summary figure"),
    ],
)
def test_F21_a_formula_id_of_a_logged_row_or_summary_figure_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], formula_id: str, reason: str
) -> None:
    formulas = tmp_path / "dupid.toml"
    formulas.write_text("# user formulas\n" + _formula(formula_id), encoding="utf-8")
    code, out, err = run(capsys, "ledger", write_log(tmp_path), "--formulas", formulas)
    assert code == EXIT_USAGE and out == ""
    # one line, at the `id =` line of the entry (line 3: after the comment and the header)
    assert err.count("\n") == 1 and f"dupid.toml:3: formula id {formula_id!r}" in err
    assert reason in err and "Traceback" not in err


def test_F21_review_reproduction_no_longer_merges_into_the_logged_kv_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_log(tmp_path)
    code, out, _ = run(capsys, "ledger", base, "--explain", "kv_pool")
    assert code == EXIT_OK and "5.640 GiB" in out  # K 2.82 + V 2.82, the log's numbers only
    formulas = tmp_path / "dupid.toml"
    formulas.write_text(_formula("kv_pool") + "\n" + _formula("usable"), encoding="utf-8")
    code, out, err = run(capsys, "ledger", base, "--formulas", formulas, "--explain", "kv_pool")
    assert code == EXIT_USAGE and out == "" and "'kv_pool'" in err


def test_F21_free_ids_and_packaged_redefinitions_still_load() -> None:
    # a user file may redefine a packaged formula (req_to_token is also a summary key)
    packaged = {formula.id for formula in load_formulas(include_env=False)}
    assert "req_to_token" in packaged and reserved_reason("req_to_token") is not None
    (redefined,) = parse_formulas(_formula("req_to_token"), "user.toml")
    assert redefined.id == "req_to_token"
    (fresh,) = parse_formulas(_formula("my_fork_staging_pool"), "user.toml")
    assert fresh.id == "my_fork_staging_pool" and reserved_reason(fresh.id) is None
    for formula_id in packaged:  # the packaged set itself is never refused
        assert parse_formulas(_formula(formula_id), "user.toml")[0].id == formula_id


@pytest.mark.parametrize(
    "path", [*sorted(SAMPLES.glob("*.log")), *real_log_paths()], ids=lambda path: path.name
)
def test_F21_every_row_the_engine_writes_is_covered(path: Path) -> None:
    # The reserved names mirror the engine's ids: on every sample and real log, each row that
    # is not a packaged formula's is one a user formula could not take.
    packaged = {formula.id for formula in load_formulas(include_env=False)}
    built = ledger(path)
    engine_rows = [row.id for row in built.rows if row.id.split(".", 1)[0] not in packaged]
    assert engine_rows
    assert [row_id for row_id in engine_rows if not is_engine_row_id(row_id)] == []
