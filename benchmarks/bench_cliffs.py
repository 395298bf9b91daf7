"""Benchmark: memory cliffs, one huge physical line of tqdm states joined by CR (16 MB, 40 MB).

A progress bar redrawn without a newline for hours writes one physical line of many megabytes:
`Capturing batches (bs=160 avail_mem=9.02 GB):  43%|...| 10/23 [...]\\r` repeated. The line sits
inside a TP2 startup (before `Capture cuda graph end`). memledger must stay under 100 MiB of RSS
whatever the input. Yardstick: `grep -cE` on the same file.

    python benchmarks/bench_cliffs.py                 # 16 MB and 40 MB lines
    python benchmarks/bench_cliffs.py --mb 4 --mb 16
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchcommon import (
    GREP_PATTERN,
    MEMLEDGER,
    STARTUP,
    pair,
    print_header,
    print_pair,
    workdir,
)

RSS_TARGET_MIB = 100.0
BATCH_SIZES = (160, 152, 144, 136, 128, 120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24, 16)


def tqdm_states(n_bytes: int) -> bytes:
    """About n_bytes of CR-joined tqdm states of a CUDA-graph capture progress bar."""
    states: list[str] = []
    total = len(BATCH_SIZES)
    for step, bs in enumerate(BATCH_SIZES):
        avail = 9.02 - step * 0.04
        pct = 100 * (step + 1) // total
        bar = "█" * (pct // 10) + " " * (10 - pct // 10)
        states.append(
            f"Capturing batches (bs={bs} avail_mem={avail:.2f} GB): {pct:3d}%|{bar}| "
            f"{step + 1}/{total} [00:{step:02d}<00:{total - step:02d},  2.41it/s]"
        )
    cycle = "\r".join(states).encode() + b"\r"
    repeats = max(1, n_bytes // len(cycle))
    return cycle * repeats


def build(path: Path, megabytes: int) -> Path:
    """STARTUP with one `megabytes` MB CR-joined line in place of its one-state tqdm line."""
    if path.exists():
        return path
    head, tail = STARTUP.split("Capturing batches", 1)
    tail = tail.split("\n", 1)[1]
    with path.open("wb") as out:
        out.write(head.encode())
        out.write(tqdm_states(megabytes * 1_000_000))
        out.write(b"\n")
        out.write(tail.encode())
    return path


def main() -> int:
    """Time each line length; exit 1 if a peak RSS reaches 100 MiB."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, action="append", help="line lengths (default 16, 40)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--record", type=Path, help="append each result as JSON to this file")
    args = parser.parse_args()
    here = workdir("cliffs")
    print_header()
    ok = True
    for megabytes in args.mb or [16, 40]:
        log = build(here / f"oneline-{megabytes}mb.log", megabytes)
        result = pair(
            f"one {megabytes} MB CR-joined line",
            [*MEMLEDGER, "parse", str(log), "--format", "json"],
            "grep -cE",
            ["grep", "-cE", GREP_PATTERN, str(log)],
            runs=args.runs,
        )
        print_pair(result, args.record)
        ok = ok and result.rss_mib < RSS_TARGET_MIB
    print(f"peak RSS target < {RSS_TARGET_MIB:.0f} MiB: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
