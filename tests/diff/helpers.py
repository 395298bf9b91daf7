"""Hand-built ledgers for diff tests: rows given in hundredths of a GiB so every sum is exact.

`article_pair()` builds the seed article's two decks at the level the article states them
(per card, TP0; GiB): the figures each side differs by are the article's, the shared baselines
are arbitrary but equal on both sides, so every category delta follows from the article alone:

| row (group)                        | DP16 (base)   | DP2 (head)  | head - base |
|------------------------------------|---------------|-------------|-------------|
| weights_resident (weights)         | 95.56         | 94.19       | -1.37       |
| weight_staging (weight_staging)    | 1196 MiB      | 350 MiB     | -846 MiB    |
| draft_weights (draft_weights)      | 0.85          | 1.23        | +0.38       |
| draft_staging (draft_weights)      | 1288 MiB      | -           | removed     |
| nccl_init (communication)          | 2.00          | 2.65        | +0.65       |
| req_to_token, dcp_q_replica, ...   | see below     |             | +2.97 total |
| cuda_graph (cuda_graph)            | 8.00          | 13.90       | +5.90       |
| runtime_headroom                   | 10.00         | 14.00       | +4.00       |
| state pool rows                    | rest of 177.70 on each side |  |          |

Weights resident differ by 2.2 GiB including the target staging pool (article: "权重常驻只差
2.2 GiB"): -1.37 GiB - 846 MiB = -2.196 GiB; draft side: 0.85 + 1.258 vs 1.23 -> -0.88 GiB.
Workspace (interval residuals): DP16 0.15 + 0.13 + 0.36 + 0 = 0.64; DP2 0.82 + 0.83 + 1.58 + 0.39
= 3.62; difference 2.98 (article: 2.97, rounded per interval).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from markdown_it import MarkdownIt

from memledger.model.ledger import (
    Checkpoint,
    Evidence,
    Interval,
    Ledger,
    Row,
    RowGroup,
    RowKind,
    Summary,
    summary_from_rows,
)
from memledger.record import validate
from memledger.units import GIB, MIB
from tests.conftest import make_ledger

CENTI = GIB // 100
HALF_ULP = GIB // 200


def centi(hundredths: int) -> int:
    """Bytes of a figure given in hundredths of a GiB (multiples of CENTI, so sums are exact)."""
    return hundredths * CENTI


def row(
    row_id: str,
    group: RowGroup,
    byte_count: int | None,
    *,
    kind: RowKind = RowKind.LOGGED,
    in_partition: bool = True,
    error_bytes: int = HALF_ULP,
    note: str | None = None,
) -> Row:
    """A ledger row; bytes None makes it an unknown row."""
    return Row(
        id=row_id,
        label=row_id.replace("_", " "),
        group=group,
        kind=RowKind.UNKNOWN if byte_count is None else kind,
        bytes=byte_count,
        error_bytes=0 if byte_count is None else error_bytes,
        in_partition=in_partition,
        evidence=Evidence(note=note),
    )


def ledger(
    rows: Sequence[Row],
    *,
    path: str = "base.log",
    usable_bytes: int | None = None,
    parameters: Mapping[str, int | float | str | bool | None] | None = None,
    checkpoints: Sequence[Checkpoint] = (),
    intervals: Sequence[Interval] = (),
    summary: Summary | None = None,
    stopped_at: str | None = None,
    outcome: str = "ready",
) -> Ledger:
    """A ledger whose usable memory defaults to the sum of its partition rows; the summary's
    figures that are sums of rows are the rows' (as the engine writes them), the rest `summary`."""
    partition_sum = sum(r.bytes or 0 for r in rows if r.in_partition)
    summary = replace((summary or Summary()), **summary_from_rows(list(rows)))
    usable = partition_sum if usable_bytes is None else usable_bytes
    return make_ledger(
        rows,
        path=path,
        outcome=outcome,
        stopped_at=stopped_at,
        checkpoints=checkpoints,
        intervals=intervals,
        summary=replace(summary, usable=usable),
        usable_bytes=usable,
        balance_error_bytes=partition_sum - usable,
        parameters=dict(parameters or {}),
    )


def checkpoint(checkpoint_id: str, avail_hundredths: int, line: int) -> Checkpoint:
    """An avail reading printed with two decimals."""
    return Checkpoint(
        id=checkpoint_id, avail_bytes=centi(avail_hundredths), error_bytes=HALF_ULP, line=line
    )


def interval(frm: str, to: str, drop: int, logged: int, named: int = 0) -> Interval:
    """An interval with sizes in bytes."""
    return validate(
        Interval,
        {
            "from": frm,
            "to": to,
            "drop_bytes": drop,
            "logged_bytes": logged,
            "named_bytes": named,
            "error_bytes": 2 * HALF_ULP,
        },
    )


USABLE = centi(17770)

# Workspace rows per side (hundredths of a GiB): the article's interval residuals.
DP16_WORKSPACE = {"req_to_token": 13, "draft_pool_residual": 13, "attention_residual": 36}
DP2_WORKSPACE = {
    "req_to_token": 82,
    "draft_pool_residual": 83,
    "attention_residual": 58,
    "dcp_q_replica": 91,
    "draft_slot_map": 9,
    "graph_gap_residual": 39,
}
# DP16's load-end -> pool-end residual 0.15 = req_to_token 0.13 + 0.02 unexplained.
DP16_UNEXPLAINED = 2


def _side(
    *,
    path: str,
    weights: int,
    staging: int,
    draft_weights: int,
    draft_staging: int | None,
    nccl: int,
    workspace: dict[str, int],
    unexplained: int,
    graph: int,
    headroom: int,
    kv_share: tuple[int, int],
    parameters: dict[str, int | float | str | bool | None],
    summary: Summary,
) -> Ledger:
    fixed: list[Row] = [
        row("nccl_init", RowGroup.COMMUNICATION, centi(nccl)),
        row("weights_resident", RowGroup.WEIGHTS, centi(weights)),
        row("weight_staging", RowGroup.WEIGHT_STAGING, staging, error_bytes=0),
        row("draft_weights", RowGroup.DRAFT_WEIGHTS, centi(draft_weights)),
    ]
    if draft_staging is not None:
        fixed.append(row("draft_staging", RowGroup.DRAFT_WEIGHTS, draft_staging, error_bytes=0))
    fixed += [
        row(name, RowGroup.WORKSPACE, centi(value), kind=RowKind.DERIVED)
        for name, value in workspace.items()
    ]
    if unexplained:
        fixed.append(row("unexplained_pool", RowGroup.UNEXPLAINED, centi(unexplained)))
    fixed += [
        row("cuda_graph", RowGroup.CUDA_GRAPH, centi(graph)),
        row("runtime_headroom", RowGroup.RUNTIME_HEADROOM, centi(headroom)),
        row(
            "weights_load_peak",
            RowGroup.WEIGHTS,
            centi(weights + 5000),
            in_partition=False,
        ),
    ]
    fixed_bytes = sum(r.bytes or 0 for r in fixed if r.in_partition)
    state_bytes = USABLE - fixed_bytes
    kv_part, rest_part = kv_share
    kv_bytes = state_bytes * kv_part // (kv_part + rest_part)
    state = [
        row("kv_pool", RowGroup.STATE_POOL, kv_bytes),
        row("kda_state", RowGroup.STATE_POOL, state_bytes - kv_bytes),
    ]
    return ledger(
        fixed + state,
        path=path,
        usable_bytes=USABLE,
        parameters=parameters,
        summary=summary,
        checkpoints=[checkpoint("load_begin", 17500, 10), checkpoint("load_end", 3000, 20)],
        intervals=[interval("load_begin", "load_end", centi(14500), 0)],
    )


def article_pair() -> tuple[Ledger, Ledger]:
    """(DP16, DP2) ledgers with the article's per-card differences (see module docstring)."""
    dp16 = _side(
        path="samples/dp16.log",
        weights=9556,
        staging=2 * 627048448,
        draft_weights=85,
        draft_staging=1288 * MIB,
        nccl=200,
        workspace=DP16_WORKSPACE,
        unexplained=DP16_UNEXPLAINED,
        graph=800,
        headroom=1000,
        kv_share=(41, 21),
        parameters={
            "dp_size": 16,
            "dcp_size": 1,
            "mem_fraction_static": 0.88,
            "max_running_requests": 24,
            "disaggregation_decode_extra_slots": 8,
            "cuda_graph_max_bs": 24,
        },
        summary=Summary(slots=33, kv_tokens_per_instance=51_118_080, mem_fraction_static=0.88),
    )
    dp2 = _side(
        path="samples/dp2.log",
        weights=9419,
        staging=2 * 183500800,
        draft_weights=123,
        draft_staging=None,
        nccl=265,
        workspace=DP2_WORKSPACE,
        unexplained=0,
        graph=1390,
        headroom=1400,
        kv_share=(346, 100),
        parameters={
            "dp_size": 2,
            "dcp_size": 8,
            "mem_fraction_static": 0.83,
            "max_running_requests": 192,
            "disaggregation_decode_extra_slots": 16,
            "cuda_graph_max_bs": 192,
        },
        summary=Summary(slots=209, kv_tokens_per_instance=43_040_768, mem_fraction_static=0.83),
    )
    return dp16, dp2


# --- markdown checks (structure of a diff comment) ------------------------------------------------


def gfm_cell_count(line: str) -> int:
    """Cells of a GFM table line: split on pipes that are not backslash-escaped."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return len(re.split(r"(?<!\\)\|", inner))


def check_markdown(text: str, marker: str = "<!-- memledger -->") -> dict[str, int]:
    """Assert the comment is well formed; return counts of tables, details and mermaid blocks."""
    assert text.startswith(marker + "\n")
    parser = MarkdownIt("commonmark").enable("table")
    tokens = parser.parse(text)
    lines = text.splitlines()
    n_tables = 0
    for index, token in enumerate(tokens):
        if token.type != "table_open":
            continue
        n_tables += 1
        assert token.map is not None
        start, end = token.map
        source = lines[start:end]
        widths = {gfm_cell_count(line) for line in source}
        assert len(widths) == 1, f"inconsistent table columns at line {start + 1}: {widths}"
        # The parser agrees: every row has as many cells as the header.
        header_cells = 0
        row_cells: list[int] = []
        for inner in tokens[index + 1 :]:
            if inner.type == "table_close":
                break
            if inner.type == "tr_open":
                row_cells.append(0)
            if inner.type in ("th_open", "td_open"):
                row_cells[-1] += 1
            if inner.type == "th_open":
                header_cells += 1
        assert set(row_cells) == {header_cells} == widths
    html = "".join(t.content for t in tokens if t.type == "html_block")
    depth = 0
    for tag in re.findall(r"</?details>", html):
        depth += 1 if tag == "<details>" else -1
        assert depth >= 0, "a </details> closes nothing"
    assert depth == 0, "unclosed <details>"
    assert text.count("<details>") == html.count("<details>"), "a <details> tag is not HTML"
    return {
        "tables": n_tables,
        "details": html.count("<details>"),
        "mermaid": sum(1 for t in tokens if t.type == "fence" and t.info.strip() == "mermaid"),
    }
