"""Issue 12, "time and memory bounded by design": a hostile `server_args` line of 100,000
`key='value'` pairs keeps a bounded parameter map, always keeps what memledger reads, and says
how much it did not keep. (Timing and RSS are measured in benchmarks/bench_security.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memledger.input.server_args import (
    MAX_KEPT_PARAMS,
    MAX_VALUE_CHARS,
    READ_KEYS,
    is_read_key,
    parse_server_args,
)
from memledger.sglang.lifecycle import MEMORY_KNOBS
from memledger.sizing.inputs import KNOBS
from tests.security.helpers import log_text, run

PAIRS = 100_000
PACKAGE = Path(__file__).resolve().parents[2] / "memledger"


def _hostile(form: str) -> str:
    if form == "repr":
        body = ", ".join(f"k{i}='v{i}'" for i in range(PAIRS))
        # what memledger reads comes last: it must survive the bound
        return f"server_args=ServerArgs({body}, tp_size=4, attention_backend='fa3')"
    body = ", ".join(f"'k{i}': 'v{i}'" for i in range(PAIRS))
    return f"server_args={{{body}, 'tp_size': 4, 'attention_backend': 'fa3'}}"


@pytest.mark.parametrize("form", ["repr", "dict"])
def test_F06_100k_pair_server_args_keeps_a_bounded_map_and_counts_the_rest(form: str) -> None:
    not_kept: list[str] = []
    params = parse_server_args(_hostile(form), [], not_kept)
    assert len(params) == MAX_KEPT_PARAMS + 2
    assert params["k0"] == "v0" and params[f"k{MAX_KEPT_PARAMS - 1}"] == f"v{MAX_KEPT_PARAMS - 1}"
    assert f"k{MAX_KEPT_PARAMS}" not in params
    assert params["tp_size"] == 4 and params["attention_backend"] == "fa3"
    assert not_kept == [f"{PAIRS - MAX_KEPT_PARAMS:,} parameters beyond the first 512 not kept"]


def test_F06_long_values_are_cut_and_counted() -> None:
    not_kept: list[str] = []
    long = "x" * (3 * MAX_VALUE_CHARS)
    params = parse_server_args(f"server_args=ServerArgs(a='{long}', b='{long}', c=1)", [], not_kept)
    assert params["a"] == f"'{long}"[:MAX_VALUE_CHARS] and params["c"] == 1
    assert not_kept == [f"2 values cut at {MAX_VALUE_CHARS} characters"]


def test_F06_a_real_sized_server_args_line_reports_nothing_not_kept() -> None:
    not_kept: list[str] = []
    body = ", ".join(f"k{i}={i}" for i in range(MAX_KEPT_PARAMS))
    params = parse_server_args(f"server_args=ServerArgs({body})", [], not_kept)
    assert len(params) == MAX_KEPT_PARAMS and not_kept == []


def _names_read_in_the_source() -> set[str]:
    names: set[str] = set()
    calls = re.compile(
        r"""(?:args\.get\(|server_args\[|server_args\.get\(|\.param\(|int_param\(|unless_arg=)"""
        r"""["']([a-z_0-9]+)["']"""
    )
    for path in PACKAGE.rglob("*.py"):
        names.update(calls.findall(path.read_text(encoding="utf-8")))
    for path in PACKAGE.rglob("*.toml"):
        names.update(re.findall(r"\bargs\.([a-z_][a-z_0-9]*)", path.read_text(encoding="utf-8")))
    return names


def test_F06_every_parameter_memledger_reads_is_kept_whatever_its_position() -> None:
    read = _names_read_in_the_source() | set(KNOBS) | set(MEMORY_KNOBS)
    assert {"mem_fraction_static", "tp_size", "attention_backend"} <= read  # the scan found them
    assert sorted(name for name in read if not is_read_key(name)) == []
    assert READ_KEYS <= read  # no stale entry: each is read somewhere


def test_F06_what_was_not_kept_is_in_the_coverage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, rest = log_text().split("\n", 1)
    log = tmp_path / "hostile.log"
    log.write_text(first[: first.index("server_args=")] + _hostile("repr") + "\n" + rest)
    code, out, _ = run(capsys, "parse", log, "--format", "json")
    assert code == 0
    document = json.loads(out)
    assert document["server_args"]["tp_size"] == 4
    reasons = [entry["reason"] for entry in document["coverage"]["listed"]]
    assert f"server_args: {PAIRS - MAX_KEPT_PARAMS:,} parameters beyond the first 512" in (
        " ".join(reasons)
    )


def test_F06_the_ledger_notes_what_server_args_did_not_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, rest = log_text().split("\n", 1)
    log = tmp_path / "hostile.log"
    log.write_text(first[: first.index("server_args=")] + _hostile("dict") + "\n" + rest)
    code, out, _ = run(capsys, "ledger", log, "--format", "json")
    assert code == 0
    notes = json.loads(out)["notes"]
    expected = f"server_args: {PAIRS - MAX_KEPT_PARAMS:,} parameters beyond the first 512 not kept"
    assert [note for note in notes if note.startswith(expected)] != []
    # the line was read, so it is no grammar gap
    assert not any("matched no known line shape" in note for note in notes)
