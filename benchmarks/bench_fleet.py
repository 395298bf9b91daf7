"""Benchmark: one memledger process over a fleet of startup logs (1,000 and 10,000), memory flat.

A fleet is many pods of a few deployments: each log is one of three startups (a small TP2 one and
the project's two multi-rank Kimi K3 samples, 240 lines each) with its memory figures moved a
little (no two logs print the same memory lines). Times `memledger check LOG... --budget B
--format json` (the full report) and `memledger ledger LOG...` (the fleet view) beside their
yardsticks over the same files, then both again given the fleet's folder (`check DIR`, `ledger
DIR`: memledger walks it; no 10,000 paths on the command line) beside `grep -rcE DIR`. The
yardsticks of the first two: a naive Python line loop (one regex), `grep -cE`, and a loop of
`memledger ledger LOG` calls (one process per log, as a shell loop does it; timed on a few logs
and extrapolated to the fleet). Prints the median and minimum wall, the cpu (user + sys, the
process and its workers), the ratio, the peak RSS (largest process) and the load average; the
RSS at the largest fleet over the smallest says whether memory grows with the number of logs.

Targets (issue 14): 1,000 logs in under 10 s on two cores in one process; memory flat.

    python benchmarks/bench_fleet.py                      # 1,000 and 10,000 logs, a few minutes
    python benchmarks/bench_fleet.py --logs 1000 --runs 3
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
    Pair,
    add_before_option,
    before_yardstick,
    fleet_templates,
    load_average,
    pairs,
    print_header,
    print_pair,
    run,
    varied_startup,
    workdir,
    write_if_missing,
)

TARGET_1000_SECONDS = 10.0
LOOP_SAMPLE = 6
"""`memledger ledger LOG` calls timed for the loop yardstick (spread over the fleet)."""
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


def ledger_loop(case: str, ours: list[Pair], files: list[str]) -> Pair:
    """The fleet as a loop of `memledger ledger LOG --format json` processes: LOOP_SAMPLE calls
    timed, their median wall (and cpu) times the number of logs, paired with `ours`."""
    step = max(1, len(files) // LOOP_SAMPLE)
    calls = [run([*MEMLEDGER, "ledger", path, "--format", "json"]) for path in files[::step]]
    calls = calls[:LOOP_SAMPLE]
    per_call = statistics.median(call.wall for call in calls)
    loop = per_call * len(files)
    mine = ours[0]
    return Pair(
        case=case,
        memledger=mine.memledger,
        memledger_min=mine.memledger_min,
        memledger_cpu=mine.memledger_cpu,
        yardstick_name=f"loop of ledger ({per_call:.2f}s x{len(files)})",
        yardstick=loop,
        ratio=mine.memledger / loop,
        ratio_min=mine.memledger_min / loop,
        rss_mib=mine.rss_mib,
        yardstick_rss_mib=max(call.rss_kib for call in calls) / 1024,
        load=load_average(),
        runs=len(calls),
    )


def timed(
    case: str,
    command: list[str],
    files: list[str],
    runs: int,
    record: Path | None,
    before: Path | None = None,
) -> Pair:
    """`command` beside the naive loop and grep over `files` (and `--before`'s memledger), then
    the extrapolated loop of `ledger` calls; every line printed; the first pair returned."""
    naive = [sys.executable, "-c", NAIVE_LOOP, GREP_PATTERN, *files]
    grep = ["grep", "-cE", GREP_PATTERN, *files]
    yardsticks = [("naive python loop", naive), ("grep -cE", grep)]
    results = pairs(case, command, [*yardsticks, *before_yardstick(before, command)], runs=runs)
    results.append(ledger_loop(case, results, files))
    for result in results:
        print_pair(result, record)
    return results[0]


def timed_folder(
    case: str, command: list[str], folder: Path, runs: int, record: Path | None
) -> Pair:
    """`command` over the fleet's folder (one argument, the walk in memledger) beside
    `grep -rcE` over the same folder; printed and returned."""
    grep = ["grep", "-rcE", GREP_PATTERN, str(folder)]
    [result] = pairs(case, command, [("grep -rcE DIR", grep)], runs=runs)
    print_pair(result, record)
    return result


def main() -> int:
    """Time each fleet; exit 1 if 1,000 logs take 10 s or more, or RSS grows with the fleet."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--logs", type=int, action="append", help="fleet sizes (default 1000, 10000)"
    )
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--record", type=Path, help="append each result as JSON to this file")
    parser.add_argument("--check-only", action="store_true", help="only `check LOG...`")
    add_before_option(parser)
    args = parser.parse_args()
    sizes = args.logs or [1000, 10000]
    budget = write_if_missing(workdir("fleet") / "budget.toml", BUDGET)
    print_header()
    checks: dict[int, Pair] = {}
    views: dict[int, Pair] = {}
    check_dirs: dict[int, Pair] = {}
    view_dirs: dict[int, Pair] = {}
    for n_logs in sizes:
        files = [str(p) for p in fleet(n_logs)]
        check = [*MEMLEDGER, "check", *files, "--budget", str(budget), "--format", "json"]
        checks[n_logs] = result = timed(
            f"check {n_logs} logs", check, files, args.runs, args.record, args.before
        )
        print(
            f"  check: {1000 * result.memledger / n_logs:.1f} ms per log wall, "
            f"{1000 * result.memledger_cpu / n_logs:.1f} ms cpu"
        )
        if args.check_only:
            continue
        view = [*MEMLEDGER, "ledger", *files, "--format", "json"]
        views[n_logs] = timed(f"ledger {n_logs} logs", view, files, args.runs, args.record)
        folder = Path(files[0]).parent  # the same logs as one argument: memledger walks it
        check = [*MEMLEDGER, "check", str(folder), "--budget", str(budget), "--format", "json"]
        check_dirs[n_logs] = timed_folder(
            f"check DIR {n_logs} logs", check, folder, args.runs, args.record
        )
        view = [*MEMLEDGER, "ledger", str(folder), "--format", "json"]
        view_dirs[n_logs] = timed_folder(
            f"ledger DIR {n_logs} logs", view, folder, args.runs, args.record
        )
    ok = True
    if 1000 in checks:
        ok = checks[1000].memledger_min < TARGET_1000_SECONDS
        print(
            f"check over 1,000 logs: {checks[1000].memledger_min:.1f} s (min wall; "
            f"target < {TARGET_1000_SECONDS:.0f} s)"
        )
    if len(checks) > 1 and not args.check_only:
        small, large = min(checks), max(checks)
        cases = (
            ("check", checks),
            ("ledger", views),
            ("check DIR", check_dirs),
            ("ledger DIR", view_dirs),
        )
        for name, results in cases:
            growth = results[large].rss_mib / results[small].rss_mib
            flat = growth < 1.25
            ok = ok and flat
            verdict = "flat" if flat else "GROWS with the number of logs"
            print(
                f"{name}: peak RSS {results[small].rss_mib:.1f} MiB at {small} logs, "
                f"{results[large].rss_mib:.1f} MiB at {large}: x{growth:.2f} ({verdict})"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
