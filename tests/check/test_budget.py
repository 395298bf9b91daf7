"""Budget files: units, defaults, waivers, discovery, and config errors with file:line."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memledger.checking.budget import (
    discover_budget,
    edit_distance,
    item_kind,
    load_budget,
    parse_budget,
    parse_budget_size,
    typo_of,
)
from memledger.errors import EXIT_USAGE, ConfigError
from memledger.model.check import ItemKind, Level
from memledger.units import GIB, MIB
from tests.check.helpers import write

ISSUE_EXAMPLE = """\
version = 1

[[budget]]
item = "cuda_graph"            # any ledger row id or summary key
max = "8 GiB"
level = "fail"
message = "CUDA graphs ate the KV pool: see the graph bs list before raising this"

[[budget]]
item = "kv_tokens_per_instance"
min = 45_000_000

[[budget]]
item = "fixed_overhead"
max_increase = "0.5 GiB"
max_increase_pct = 5
logs = "decode-*.log"
waived_until = 2027-01-31
reason = "DCP rollout, tracked in #123"
"""


def test_issue_example_parses_to_bytes_and_counts() -> None:
    budget = parse_budget(ISSUE_EXAMPLE, path="memledger.toml")
    graph, tokens, overhead = budget.entries
    assert (graph.item, graph.kind, graph.max, graph.level) == (
        "cuda_graph",
        ItemKind.SIZE,
        8 * GIB,
        Level.FAIL,
    )
    assert graph.message is not None and graph.message.startswith("CUDA graphs")
    assert (tokens.kind, tokens.min, tokens.level) == (ItemKind.COUNT, 45_000_000, Level.FAIL)
    assert overhead.max_increase == GIB // 2
    assert overhead.max_increase_pct == 5.0
    assert overhead.logs == "decode-*.log"
    assert overhead.waived_until == date(2027, 1, 31)
    assert overhead.reason == "DCP rollout, tracked in #123"
    # Each entry remembers the line of its [[budget]] header (lines 3, 9 and 13 above).
    assert [entry.line for entry in budget.entries] == [3, 9, 13]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8 GiB", 8 * GIB),
        ("8GiB", 8 * GIB),
        ("8 GB", 8 * GIB),  # SGLang's GB is GiB
        ("0.5 GiB", GIB // 2),
        ("1196 MiB", 1196 * MIB),
        ("1196.0 MB", 1196 * MIB),
        ("627048448 bytes", 627_048_448),
        ("627_048_448 B", 627_048_448),
    ],
)
def test_size_units(text: str, expected: int) -> None:
    assert parse_budget_size(text) == expected


@pytest.mark.parametrize("text", ["8", "8 gib", "8 TB", "-1 GiB", "GiB", "8 GiB extra", ""])
def test_bad_sizes_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="unit|not a size"):
        parse_budget_size(text)


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["GiB", "MiB", "bytes"]))
def test_integer_sizes_are_exact(number: int, unit: str) -> None:
    scale = {"GiB": GIB, "MiB": MIB, "bytes": 1}[unit]
    assert parse_budget_size(f"{number} {unit}") == number * scale


def test_item_kinds_follow_the_summary_types() -> None:
    assert item_kind("cuda_graph") is ItemKind.SIZE
    assert item_kind("kv_tokens_per_instance") is ItemKind.COUNT
    assert item_kind("slots") is ItemKind.COUNT
    assert item_kind("mem_fraction_static") is ItemKind.COUNT
    assert item_kind("req_to_token") is ItemKind.SIZE  # a summary size and a row id


def test_defaults_apply_and_entries_override_them() -> None:
    budget = parse_budget(
        """\
version = 1
[defaults]
level = "warn"
max_increase_pct = 10
max_increase = "1 GiB"
message = "ask #inference-oncall"
tighten_headroom_pct = 40

[[budget]]
item = "cuda_graph"
max = "8 GiB"

[[budget]]
item = "fixed_overhead"
level = "fail"
max_increase_pct = 2

[[budget]]
item = "slots"
min = 24
"""
    )
    graph, overhead, slots = budget.entries
    assert (graph.level, graph.max_increase_pct, graph.max_increase) == (Level.WARN, 10.0, GIB)
    assert graph.message == "ask #inference-oncall"
    assert (overhead.level, overhead.max_increase_pct) == (Level.FAIL, 2.0)
    # A size default cannot apply to a count item; the percentage still does.
    assert (slots.max_increase, slots.max_increase_pct) == (None, 10.0)
    assert budget.tighten_headroom_pct == 40.0


def test_row_prefix_and_summary_prefix() -> None:
    budget = parse_budget(
        '[[budget]]\nitem = "row:my_fork_pool"\nmax = "1 GiB"\n'
        '[[budget]]\nitem = "summary.slots"\nmax = 300\n'
    )
    assert [entry.item for entry in budget.entries] == ["my_fork_pool", "slots"]


def test_waived_until_accepts_a_date_string() -> None:
    budget = parse_budget(
        '[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB"\n'
        'waived_until = "2027-01-31"\nreason = "tracked in #123"\n'
    )
    assert budget.entries[0].waived_until == date(2027, 1, 31)


# --- config errors: one line with file:line, exit code 2 --------------------------------------

MALFORMED = [
    # (text, line the error must point at, words the message must contain)
    ('version = 1\n[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB\n', 4, "malformed TOML"),
    ('[[budget]]\nitem = "cuda_grpah"\nmax = "8 GiB"\n', 2, "did you mean 'cuda_graph'"),
    ('[[budget]]\nitem = "cuda_graph"\nmax = "8 TB"\n', 3, "unknown unit 'TB'"),
    ('[[budget]]\nitem = "cuda_graph"\nmax = 8\n', 3, 'needs a unit: write "8 GiB"'),
    ('[[budget]]\nitem = "slots"\nmin = "24 GiB"\n', 3, "must be a plain number"),
    ('[[budget]]\nitem = "cuda_graph"\nmaximum = "8 GiB"\n', 3, "unknown key 'maximum'"),
    ('[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB"\nlevel = "error"\n', 4, "level must be"),
    ('[[budget]]\nitem = "cuda_graph"\n', 2, "sets no limit"),
    ('[[budget]]\nitem = "cuda_graph"\nmin = "9 GiB"\nmax = "8 GiB"\n', 3, "min above max"),
    (
        '[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB"\nwaived_until = 2027-01-31\n',
        4,
        "needs reason",
    ),
    (
        '[[budget]]\nitem = "cuda_graph"\nmax = "8 GiB"\nwaived_until = "soon"\nreason = "x"\n',
        4,
        "must be a date",
    ),
    ('version = 2\n[[budget]]\nitem = "slots"\nmax = 1\n', 1, "unsupported budget version"),
    ("checks = []\n", 1, "unknown key 'checks'"),
    (
        '[defaults]\nlevle = "warn"\n[[budget]]\nitem = "slots"\nmax = 1\n',
        2,
        "did you mean 'level'",
    ),
    (
        '[defaults]\nmax_increase = "1 parsec"\n[[budget]]\nitem = "cuda_graph"\nmax = "1 GiB"\n',
        2,
        "unknown unit",
    ),
    (
        '[[budget]]\nitem = "slots"\nmax = 300\n\n'
        '[[budget]]\nitem = "slots"\nmax_increase_pct = -1\n',
        7,
        "non-negative",
    ),
]


@pytest.mark.parametrize(("text", "line", "words"), MALFORMED)
def test_config_errors_name_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = write(tmp_path, "memledger.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_budget(path)
    error = caught.value
    assert error.exit_code == EXIT_USAGE
    assert (error.path, error.line) == (str(path), line)
    assert words in error.message
    assert error.one_line().startswith(f"{path}:{line}: ")
    assert "\n" not in error.one_line()


def test_empty_budget_is_an_error() -> None:
    with pytest.raises(ConfigError, match="no \\[\\[budget\\]\\] entries"):
        parse_budget("version = 1\n")


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="budget file not found") as caught:
        load_budget(tmp_path / "nope.toml")
    assert caught.value.exit_code == EXIT_USAGE


# --- discovery and pyproject ---------------------------------------------------------------------

PYPROJECT = """\
[project]
name = "my-serving"

[tool.memledger]
version = 1

[tool.memledger.defaults]
level = "warn"

[[tool.memledger.budget]]
item = "cuda_graph"
max = "8 GiB"

[[tool.memledger.budget]]
item = "slots"
min = "many"
"""


def test_discovery_prefers_memledger_toml(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", PYPROJECT)
    assert discover_budget(tmp_path) == tmp_path / "pyproject.toml"
    write(tmp_path, "memledger.toml", '[[budget]]\nitem = "slots"\nmax = 1\n')
    assert discover_budget(tmp_path) == tmp_path / "memledger.toml"


def test_discovery_ignores_pyproject_without_tool_table(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match="no budget file"):
        discover_budget(tmp_path)


def test_pyproject_tool_table_with_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "pyproject.toml", PYPROJECT)
    with pytest.raises(ConfigError) as caught:
        load_budget(path)
    # The second [[tool.memledger.budget]] starts at line 14; its `min` is on line 16.
    assert caught.value.line == 16
    fixed = write(tmp_path, "pyproject.toml", PYPROJECT.replace('"many"', "24"))
    budget = load_budget(fixed)
    assert [entry.level for entry in budget.entries] == [Level.WARN, Level.WARN]
    assert [entry.line for entry in budget.entries] == [10, 14]


# --- items: summary keys and formula ids are known; other row ids resolve per log -------------


def test_row_ids_are_accepted_and_resolved_per_log() -> None:
    budget = parse_budget(
        '[[budget]]\nitem = "weights"\nmax = "100 GiB"\n'
        '[[budget]]\nitem = "unexplained.memory_pool_end"\nmax = "1 GiB"\n'
        '[[budget]]\nitem = "draft_cuda_graph_largest_bucket"\nmax = "1 GiB"\n'
    )
    assert [entry.item for entry in budget.entries] == [
        "weights",
        "unexplained.memory_pool_end",
        "draft_cuda_graph_largest_bucket",  # 6 letters longer than a summary key: not a typo
    ]


@pytest.mark.parametrize(
    ("item", "meant"),
    [
        ("cuda_grpah", "cuda_graph"),  # transposition
        ("kv_pools", "kv_pool"),  # insertion
        ("slot", "slots"),  # deletion
        ("req_to_tokan", "req_to_token"),  # a formula's row id
    ],
)
def test_near_misses_of_known_items_are_typos(item: str, meant: str) -> None:
    with pytest.raises(ConfigError, match=f"did you mean '{meant}'"):
        parse_budget(f'[[budget]]\nitem = "{item}"\nmax = "1 GiB"\n')


def test_row_prefix_forces_a_row_id_and_bad_ids_are_rejected() -> None:
    budget = parse_budget('[[budget]]\nitem = "row:kv_pools"\nmax = "1 GiB"\n')
    assert budget.entries[0].item == "kv_pools"
    with pytest.raises(ConfigError, match="unknown item 'kv pool'"):
        parse_budget('[[budget]]\nitem = "kv pool"\nmax = "1 GiB"\n')
    with pytest.raises(ConfigError, match="unknown summary key 'cuda_graphs'"):
        parse_budget('[[budget]]\nitem = "summary.cuda_graphs"\nmax = "1 GiB"\n')


def test_edit_distance() -> None:
    assert edit_distance("cuda_grpah", "cuda_graph") == 1
    assert edit_distance("", "abc") == 3
    assert edit_distance("kitten", "sitting") == 3
    assert typo_of("weights", ["weights_resident", "slots"]) is None
