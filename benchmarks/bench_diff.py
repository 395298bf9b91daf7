"""Benchmark: `diff_ledgers` and the capped markdown renderer on two large synthetic ledgers.

Two ledgers of N rows each (long labels, every row moved), about 3.5 MB of JSON each at the
default N. Times the diff, the uncapped markdown and the capped (60,000-character) markdown, which
re-renders the largest tables a few times while it cuts their middle.

    python benchmarks/bench_diff.py              # 12,000 rows per ledger
    python benchmarks/bench_diff.py --rows 50000
"""

from __future__ import annotations

import argparse
import time

from memledger.compare.compute import diff_ledgers
from memledger.model.ledger import Evidence, Ledger, LedgerSource, Row, RowGroup, RowKind, Summary
from memledger.record import to_json
from memledger.render.diff_markdown import DEFAULT_MAX_CHARS, render_diff_markdown
from memledger.units import GIB

CENTI = GIB // 100


def synthetic_ledger(n_rows: int, shift: int, path: str) -> Ledger:
    """A ledger of n_rows derived rows spread over every group."""
    rows = [
        Row(
            id=f"layer_{i:05d}_buffer",
            label=f"layer {i} activation buffer | staging ring for expert shard {i % 97}",
            group=list(RowGroup)[i % len(RowGroup)],
            kind=RowKind.DERIVED,
            bytes=CENTI * (100 + (i % 50) + shift * (i % 7 + 1)),
            error_bytes=GIB // 200,
            evidence=Evidence(),
        )
        for i in range(n_rows)
    ]
    return Ledger(
        source=LedgerSource(path=path, startup=0, n_startups=1, rank="TP0"),
        outcome="ready",
        checkpoints=[],
        intervals=[],
        rows=rows,
        summary=Summary(),
        usable_bytes=sum(r.bytes or 0 for r in rows),
    )


def main() -> None:
    """Build, diff, render; print sizes and wall times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12_000)
    args = parser.parse_args()
    base = synthetic_ledger(args.rows, 0, "big-base.log")
    head = synthetic_ledger(args.rows, 1, "big-head.log")
    print(f"ledger JSON: {len(to_json(base)):,} chars each, {args.rows:,} rows")
    started = time.perf_counter()
    diff = diff_ledgers(base, head)
    print(f"diff_ledgers: {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    full = render_diff_markdown(diff, max_chars=10**12)
    print(f"markdown, uncapped: {len(full):,} chars in {time.perf_counter() - started:.2f} s")
    started = time.perf_counter()
    capped = render_diff_markdown(diff)
    elapsed = time.perf_counter() - started
    print(f"markdown, capped at {DEFAULT_MAX_CHARS:,}: {len(capped):,} chars in {elapsed:.2f} s")


if __name__ == "__main__":
    main()
