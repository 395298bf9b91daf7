"""Benchmark: one memledger process over a fleet of startup logs (1,000 and 10,000), memory flat.

A fleet is many pods of a few deployments: each log is one of three startups (a small TP2 one and
the project's two multi-rank Kimi K3 samples, 240 lines each) with its memory figures moved a
little (no two logs print the same memory lines). Times `memledger check LOG... --budget`
(and `memledger ledger LOG...` when that command takes many logs) beside `grep -cE` and a naive
Python line loop over the same files, and prints the per-log cost and the peak RSS; the RSS at the
largest fleet over the smallest says whether memory grows with the number of logs.

Targets (issue 14): 1,000 logs in under 10 s on two cores in one process; memory flat.

    python benchmarks/bench_fleet.py                      # 1,000 and 10,000 logs
    python benchmarks/bench_fleet.py --logs 1000 --runs 3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from benchcommon import (
    GREP_PATTERN,
    MEMLEDGER,
    NAIVE_LOOP,
    Pair,
    fleet_templates,
    pair,
    pairs,
    print_header,
    print_pair,
    varied_startup,
    workdir,
    write_if_missing,
)

TARGET_1000_SECONDS = 10.0
BUDGET = """\
version = 1
[[budget]]
item = "usable"
min = "1 GiB"
[[budget]]
item = "runtime_headroom"
min = "0 GiB"
level = "warn"
"""


def fleet(n_logs: int) -> list[Path]:
    """n_logs varied startup logs under the bench directory (built once, reused)."""
    here = workdir(f"fleet-{n_logs}")
    marker = here / ".complete"
    paths = [here / f"pod-{i:05d}.log" for i in range(n_logs)]
    if not marker.exists():
        templates = fleet_templates()
        for i, path in enumerate(paths):
            path.write_text(varied_startup(i, templates[i % len(templates)]), encoding="utf-8")
        marker.touch()
    return paths


def fleet_ledger_supported() -> bool:
    """Whether this memledger's `ledger` takes many logs (the fleet view)."""
    shown = subprocess.run([*MEMLEDGER, "ledger", "--help"], capture_output=True, text=True)
    return "LOG..." in shown.stdout


def main() -> int:
    """Time each fleet; exit 1 if 1,000 logs take 10 s or more, or RSS grows with the fleet."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--logs", type=int, action="append", help="fleet sizes (default 1000, 10000)"
    )
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--record", type=Path, help="append each result as JSON to this file")
    args = parser.parse_args()
    sizes = args.logs or [1000, 10000]
    budget = write_if_missing(workdir("fleet") / "budget.toml", BUDGET)
    with_ledger = fleet_ledger_supported()
    print_header()
    checks: dict[int, Pair] = {}
    for n_logs in sizes:
        files = [str(p) for p in fleet(n_logs)]
        check = [*MEMLEDGER, "check", *files, "--budget", str(budget), "--format", "json"]
        grep = ["grep", "-cE", GREP_PATTERN, *files]
        naive = [sys.executable, "-c", NAIVE_LOOP, GREP_PATTERN, *files]
        results = pairs(
            f"check {n_logs} logs",
            check,
            [("grep -cE", grep), ("naive python loop", naive)],
            runs=args.runs,
        )
        for result in results:
            print_pair(result, args.record)
        result = results[0]
        checks[n_logs] = result
        print(f"  check: {1000 * result.memledger / n_logs:.1f} ms per log")
        if with_ledger:
            ledger = [*MEMLEDGER, "ledger", *files, "--format", "json"]
            print_pair(
                pair(f"ledger {n_logs} logs", ledger, "grep -cE", grep, runs=args.runs), args.record
            )
    ok = True
    if 1000 in checks:
        ok = checks[1000].memledger < TARGET_1000_SECONDS
        print(
            f"check over 1,000 logs: {checks[1000].memledger:.1f} s "
            f"(target < {TARGET_1000_SECONDS:.0f} s)"
        )
    if len(checks) > 1:
        small, large = min(checks), max(checks)
        growth = checks[large].rss_mib / checks[small].rss_mib
        flat = growth < 1.25
        ok = ok and flat
        verdict = "flat" if flat else "GROWS with the number of logs"
        print(
            f"peak RSS {checks[small].rss_mib:.1f} MiB at {small} logs, "
            f"{checks[large].rss_mib:.1f} MiB at {large}: x{growth:.2f} ({verdict})"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
