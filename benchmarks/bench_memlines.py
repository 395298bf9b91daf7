"""Benchmark: memory-looking lines per second, against grep -cE and a naive Python line loop.

A server that logs its memory every second for days writes a log of a startup followed by up to
millions of memory lines. Three shapes, each after a small TP2 startup:
* `known`: a line of a kind memledger recognises (`Memory pool end. avail mem=...`), far past the
  kind's 2,000-event cap;
* `unknown`: a memory-looking line of no known kind (`KV cache pool: used 25.51%, avail mem=...`),
  counted in the coverage report;
* `mixed`: a capture-progress line (`Capturing batches (bs=.. avail_mem=..)`) and a KV line
  (`KV Cache is allocated. #tokens: ..`) in turn, every number varying, all rank 0.
Each runs on one core (taskset -c 0, yardsticks too). lines/s is the line count over memledger's
wall time less its time on the startup alone. Target (issue 14): >= 50,000 memory lines/s.

    python benchmarks/bench_memlines.py                  # 100,000 lines of each shape
    python benchmarks/bench_memlines.py --lines 1000000  # 11.6 days of one line a second
    python benchmarks/bench_memlines.py --shape mixed --lines 40000
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from benchcommon import (
    GREP_PATTERN,
    MEMLEDGER,
    NAIVE_LOOP,
    STARTUP,
    add_before_option,
    before_yardstick,
    pairs,
    pinned,
    print_header,
    print_pair,
    run,
    workdir,
    write_if_missing,
)

TARGET_LINES_PER_SECOND = 50_000
SHAPES = {
    "known": "[{stamp} TP0] Memory pool end. avail mem={gib:.2f} GB\n",
    "unknown": "[{stamp} TP0] KV cache pool: used {pct:.2f}%, avail mem={gib:.2f} GB\n",
    # a capture-progress line, then a KV line, and again (every number varies, all rank 0)
    "mixed": (
        "[{stamp} TP0] Capturing batches (bs={bs} avail_mem={gib:.2f} GB): {step}%|###| "
        "{step}/100 [00:{sec:02d}<00:00,  2.41it/s]\n"
        "[{stamp} TP0] KV Cache is allocated. #tokens: {tokens}, K size: {kv:.2f} GB, "
        "V size: {kv:.2f} GB\n"
    ),
}
LINES_PER_STEP = {"known": 1, "unknown": 1, "mixed": 2}


def build(path: Path, shape: str, n_lines: int) -> Path:
    """STARTUP, then `n_lines` lines of `shape`, one per second (skipped if already built)."""
    marker = path.with_suffix(".done")
    if marker.exists() and marker.read_text() == f"{shape} {n_lines}":
        return path
    template = SHAPES[shape]
    with path.open("w", encoding="utf-8") as out:
        out.write(STARTUP)
        for i in range(n_lines // LINES_PER_STEP[shape]):
            days, rest = divmod(i, 86400)
            hours, rest = divmod(rest, 3600)
            minutes, seconds = divmod(rest, 60)
            stamp = f"2026-11-{6 + days:02d} {hours:02d}:{minutes:02d}:{seconds:02d}"
            out.write(
                template.format(
                    stamp=stamp,
                    pct=(i * 7) % 10000 / 100,
                    gib=30 + i % 997 / 100,
                    bs=1 + i % 512,
                    step=i % 100,
                    sec=i % 60,
                    tokens=300_000 + (i * 13) % 9973,
                    kv=18 + i % 89 / 100,
                )
            )
    marker.write_text(f"{shape} {n_lines}")
    return path


def main() -> int:
    """Time both shapes; exit 1 if either is below the lines/s target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000, help="memory lines (default 100k)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--core", type=int, default=0, help="core to pin to (default 0)")
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append")
    parser.add_argument("--record", type=Path, help="append each result as JSON to this file")
    add_before_option(parser)
    args = parser.parse_args()
    here = workdir("memlines")
    small = write_if_missing(here / "startup.log", STARTUP)
    alone = [
        run(pinned([*MEMLEDGER, "parse", str(small), "--format", "json"], args.core))
        for _ in range(args.runs)
    ]
    base = statistics.median(r.wall for r in alone)
    base_cpu = statistics.median(r.cpu for r in alone)
    print(f"memledger parse on the startup alone: {base:.3f} s, cpu {base_cpu:.3f} s (subtracted)")
    before_base = 0.0
    if args.before is not None:
        command = [str(args.before), "-P", *MEMLEDGER[1:], "parse", str(small), "--format", "json"]
        before_base = statistics.median(
            run(pinned(command, args.core)).wall for _ in range(args.runs)
        )
        print(f"memledger before, on the startup alone: {before_base:.3f} s (subtracted)")
    print_header()
    ok = True
    for shape in args.shape or sorted(SHAPES):
        log = build(here / f"{shape}-{args.lines}.log", shape, args.lines)
        ours = pinned([*MEMLEDGER, "parse", str(log), "--format", "json"], args.core)
        results = pairs(
            f"{args.lines} {shape} lines",
            ours,
            [
                ("grep -cE", pinned(["grep", "-cE", GREP_PATTERN, str(log)], args.core)),
                (
                    "naive python loop",
                    pinned([sys.executable, "-c", NAIVE_LOOP, GREP_PATTERN, str(log)], args.core),
                ),
                *before_yardstick(args.before, ours),
            ],
            runs=args.runs,
        )
        for result in results:
            print_pair(result, args.record)
        if args.before is not None:
            before = results[-1].yardstick
            print(
                f"  {shape} before: {args.lines / max(before - before_base, 1e-9):,.0f} memory "
                f"lines/s on one core (end to end {args.lines / before:,.0f}/s)"
            )
        result = results[0]
        rate = args.lines / max(result.memledger - base, 1e-9)
        # cpu seconds too: on a shared core the wall time includes other processes' turns
        cpu_rate = args.lines / max(result.memledger_cpu - base_cpu, 1e-9)
        ok = ok and rate >= TARGET_LINES_PER_SECOND
        print(
            f"  {shape}: {rate:,.0f} memory lines/s on one core, {cpu_rate:,.0f}/s of cpu "
            f"(end to end {args.lines / result.memledger:,.0f}/s; "
            f"target {TARGET_LINES_PER_SECOND:,})"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
