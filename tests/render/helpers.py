"""A small hand-built ledger whose every figure is worked out by hand below, for renderer tests.

Usable = dist-init usage 0.50 + avail at load begin 9.50 = 10.00 GiB. Rows (GiB):
nccl_init 0.50 | weights_resident 5.00 (+ load peak 5.00, informational) | kv_pool 2.00 |
req_to_token 209 x 1048580 x 4 B = 876,612,880 B | unexplained of load_end->memory_pool_end
= 3.00 - 2.00 - 876,612,880 B | workspace residual 0.10 | cuda_graph 0.50 | runtime_headroom 0.90 |
draft_slot_map unknown. Fixed overhead = 10 - (2 + 876,612,880 B); the rows sum to 10.00 exactly.
"""

from __future__ import annotations

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
    SourceLine,
    summary_from_rows,
)
from memledger.record import validate
from memledger.units import GIB
from tests.check.helpers import summary_from_gib
from tests.conftest import make_ledger

LOG = "samples/tiny.log"
REQ_TO_TOKEN_BYTES = 209 * 1048580 * 4
HALF_ULP = GIB // 200  # ±0.005 GiB: two printed decimals
CENTI = GIB // 100  # 0.01 GiB in whole bytes; every figure below is a multiple, so sums are exact


def gib(hundredths: int) -> int:
    """Bytes of a GiB figure printed with two decimals (given in hundredths)."""
    return hundredths * CENTI


def _logged(
    row_id: str,
    group: RowGroup,
    hundredths: int,
    line: int,
    text: str,
    *,
    interval: str | None = None,
    in_partition: bool = True,
) -> Row:
    return Row(
        id=row_id,
        label=row_id.replace("_", " "),
        group=group,
        kind=RowKind.LOGGED,
        bytes=gib(hundredths),
        error_bytes=HALF_ULP,
        interval=interval,
        in_partition=in_partition,
        evidence=Evidence(sources=[SourceLine(path=LOG, line=line, text=text)]),
    )


def small_ledger() -> Ledger:
    """The ledger described in the module docstring."""
    pool_interval = validate(
        Interval,
        {
            "from": "load_end",
            "to": "memory_pool_end",
            "drop_bytes": gib(300),
            "logged_bytes": gib(200),
            "named_bytes": REQ_TO_TOKEN_BYTES,
            "error_bytes": 2 * HALF_ULP,
        },
    )
    pool_key = "load_end->memory_pool_end"
    rows = [
        _logged(
            "nccl_init",
            RowGroup.COMMUNICATION,
            50,
            5,
            "Init torch distributed ends. mem usage=0.50 GB",
        ),
        _logged(
            "weights_resident",
            RowGroup.WEIGHTS,
            500,
            20,
            "Load weight end. avail mem=4.50 GB",
            interval="load_begin->load_end",
        ),
        _logged(
            "weights_load_peak",
            RowGroup.WEIGHTS,
            500,
            20,
            "Load weight end. mem usage=5.00 GB",
            in_partition=False,
        ),
        _logged(
            "kv_pool",
            RowGroup.STATE_POOL,
            200,
            25,
            "KV Cache is allocated. KV size: 2.00 GB",
            interval=pool_key,
        ),
        Row(
            id="req_to_token",
            label="req_to_token pool",
            group=RowGroup.STATE_POOL,
            kind=RowKind.DERIVED,
            bytes=REQ_TO_TOKEN_BYTES,
            interval=pool_key,
            evidence=Evidence(
                formula="209 rows x 1048580 cols x 4 B",
                inputs={"rows": 209, "cols": 1048580, "bytes_per_entry": 4},
                sources=[SourceLine(path=LOG, line=3, text="server_args=ServerArgs(...)")],
            ),
        ),
        Row(
            id="unexplained_load_end__memory_pool_end",
            label="unexplained: load end -> memory pool end",
            group=RowGroup.UNEXPLAINED,
            kind=RowKind.RESIDUAL,
            bytes=gib(100) - REQ_TO_TOKEN_BYTES,
            error_bytes=2 * HALF_ULP,
            interval=pool_key,
        ),
        Row(
            id="workspace_memory_pool_end__capture_begin",
            label="workspace: memory pool end -> capture begin",
            group=RowGroup.WORKSPACE,
            kind=RowKind.RESIDUAL,
            bytes=gib(10),
            error_bytes=2 * HALF_ULP,
            interval="memory_pool_end->capture_begin",
        ),
        _logged(
            "cuda_graph",
            RowGroup.CUDA_GRAPH,
            50,
            50,
            "Capture cuda graph end. mem usage=0.50 GB",
            interval="capture_begin->capture_end",
        ),
        _logged("runtime_headroom", RowGroup.RUNTIME_HEADROOM, 90, 50, "avail mem=0.90 GB"),
        Row(
            id="draft_slot_map",
            label="draft slot map",
            group=RowGroup.STATE_POOL,
            kind=RowKind.UNKNOWN,
            bytes=None,
            evidence=Evidence(note="needs speculative_num_draft_tokens, not in server_args"),
        ),
    ]
    checkpoints = [
        Checkpoint(id="load_begin", avail_bytes=gib(950), error_bytes=HALF_ULP, line=10),
        Checkpoint(id="load_end", avail_bytes=gib(450), error_bytes=HALF_ULP, line=20),
        Checkpoint(id="memory_pool_end", avail_bytes=gib(150), error_bytes=HALF_ULP, line=30),
        Checkpoint(id="capture_begin", avail_bytes=gib(140), error_bytes=HALF_ULP, line=40),
        Checkpoint(id="capture_end", avail_bytes=gib(90), error_bytes=HALF_ULP, line=50),
    ]
    intervals = [
        validate(
            Interval,
            {
                "from": "load_begin",
                "to": "load_end",
                "drop_bytes": gib(500),
                "logged_bytes": gib(500),
                "named_bytes": 0,
                "error_bytes": 2 * HALF_ULP,
            },
        ),
        pool_interval,
        validate(
            Interval,
            {
                "from": "memory_pool_end",
                "to": "capture_begin",
                "drop_bytes": gib(10),
                "logged_bytes": 0,
                "named_bytes": 0,
                "error_bytes": 2 * HALF_ULP,
            },
        ),
        validate(
            Interval,
            {
                "from": "capture_begin",
                "to": "capture_end",
                "drop_bytes": gib(50),
                "logged_bytes": gib(50),
                "named_bytes": 0,
                "error_bytes": 2 * HALF_ULP,
            },
        ),
    ]
    return make_ledger(
        rows,
        path=LOG,
        checkpoints=checkpoints,
        intervals=intervals,
        summary=replace(
            summary_from_gib(
                {
                    "usable": 10.0,
                    "nccl_init": 0.5,
                    "weights_resident": 5.0,
                    "cuda_graph": 0.5,
                    "runtime_headroom": 0.9,
                    "slots": 209,
                    "mem_fraction_static": 0.88,
                    "kv_tokens_per_rank": 3_194_880,
                },
                rows,
            ),
            **{**summary_from_rows(rows), "usable": gib(1000)},
        ),
        usable_bytes=gib(1000),
        balance_error_bytes=0,
        tolerance_bytes=2 * HALF_ULP,
        parameters={"dp_size": 2},
        notes=["draft_slot_map: needs speculative_num_draft_tokens"],
    )


def markdown_tables(markdown: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts, via a CommonMark parser with GFM tables."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    tables: list[list[list[str]]] = []
    row: list[str] = []
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type == "inline" and tables and token.level >= 4:
            row.append(token.content)
        elif token.type == "tr_close":
            tables[-1].append(row)
    return tables
