"""memledger lays out most text tables itself, exactly as tabulate would (render/tables.py).

`tabulate_layout` must print what `tabulate(rows, headers, style, disable_numparse=True,
colalign=align)` prints, wherever it does not hand the table back to tabulate; these tests
compare the two on random tables of the shapes the renderers build and on the edges of the rules.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Sequence

import pytest
from tabulate import tabulate

from memledger.render.tables import Table, tabulate_layout, text_table
from tests.conftest import SAMPLES

_WORDS = ["", " ", "a", "kv_cache", "  padded  ", "12.50", "-", "True", "None", "1,024", "x" * 30]
_WORDS += ["GiB…", "±0.01", "café", "file.log:12 (+3 lines)", "[1, 2]", "  -3.0", "0.10"]


def _tabulated(
    headers: list[str], rows: list[list[str]], align: Sequence[str] | None, style: str
) -> str:
    return tabulate(rows, headers=headers, tablefmt=style, disable_numparse=True, colalign=align)


def _random_table(rng: random.Random) -> tuple[list[str], list[list[str]], list[str] | None]:
    n_columns = rng.randint(1, 6)
    headers = [rng.choice(_WORDS) for _ in range(n_columns)] if rng.random() < 0.8 else []
    rows = [[rng.choice(_WORDS) for _ in range(n_columns)] for _ in range(rng.randint(0, 6))]
    align: list[str] | None = None
    if rng.random() < 0.7:
        align = [rng.choice(["left", "right"]) for _ in range(rng.randint(0, n_columns + 1))]
    return headers, rows, align


@pytest.mark.parametrize("style", ["simple", "plain"])
def test_the_layout_is_tabulates_on_random_tables(style: str) -> None:
    rng = random.Random(27)
    laid_out = 0
    for _ in range(3000):
        headers, rows, align = _random_table(rng)
        ours = tabulate_layout(headers, rows, align, style)
        if ours is None:
            continue
        laid_out += 1
        assert ours == _tabulated(headers, rows, align, style), (headers, rows, align)
    assert laid_out > 2500  # it lays tables out itself, not only hands them back


@pytest.mark.parametrize(
    ("headers", "rows", "align"),
    [
        (["a", "b"], [], ["right", "right"]),  # no rows: headers left, each 2 wider
        ([], [["x", "yy"], ["zzz", ""]], ["right"]),  # no headers: dashes above and below
        (["item", "GiB"], [["  kv  ", "1.00"], ["weights", "12.25"]], ["left", "right"]),
        (["h"], [[""], [""]], None),  # an empty column
        (["wide header here", "b"], [["1", "2"]], ["right", "left", "right"]),  # extra aligns
    ],
)
@pytest.mark.parametrize("style", ["simple", "plain"])
def test_the_layout_is_tabulates_on_the_edges(
    headers: list[str], rows: list[list[str]], align: Sequence[str] | None, style: str
) -> None:
    ours = tabulate_layout(headers, rows, align, style)
    assert ours is not None
    assert ours == _tabulated(headers, rows, align, style)


@pytest.mark.parametrize(
    ("headers", "rows", "align"),
    [
        (["a"], [["\x1b[31mred\x1b[0m"]], None),  # ANSI codes: tabulate counts visible width
        (["a"], [["two\nlines"]], None),  # a multi-line cell
        (["a", "b"], [["1"]], None),  # ragged rows
        ([], [], None),  # nothing
        (["a"], [["1"]], ["center"]),  # an alignment memledger never asks for
    ],
)
def test_what_tabulate_must_decide_is_handed_back(
    headers: list[str], rows: list[list[str]], align: list[str] | None
) -> None:
    assert tabulate_layout(headers, rows, align, "simple") is None


def test_text_table_prints_the_same_either_way() -> None:
    table = Table(["row", "GiB", "source"], [["weights", "1.00", "a.log:3"]], ["left", "right"])
    assert text_table(table) == _tabulated(table.headers, table.rows, table.align, "simple")
    assert text_table(table, numparse=True) == tabulate(table.rows, headers=table.headers)


def test_a_text_ledger_does_not_import_tabulate() -> None:
    code = (
        "import sys\n"
        "from memledger.api import ledger\n"
        "from memledger.render import render_ledger\n"
        f"text = render_ledger(ledger({str(SAMPLES / 'dp2.log')!r}))\n"
        "print('tabulate' in sys.modules, len(text) > 500)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
