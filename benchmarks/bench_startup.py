"""Benchmark: start-up of every command on a small startup log, against a bare interpreter.

What a user feels each time they run memledger on one startup log (or CI runs it per PR):
`python -m memledger CMD small.log` end to end, beside `python -c pass` (the floor any Python CLI
pays). Target (issue 14): `ledger` on a small log under 0.3 s.

    python benchmarks/bench_startup.py
    python benchmarks/bench_startup.py --runs 10 --log ../shared/real-logs/single/017-*.log
    python benchmarks/bench_startup.py --record /tmp/startup.jsonl   # JSON lines for tables
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchcommon import (
    MEMLEDGER,
    STARTUP,
    add_before_option,
    before_yardstick,
    pairs,
    print_header,
    print_pair,
    workdir,
    write_if_missing,
)

TARGET_LEDGER_SECONDS = 0.3


def main() -> int:
    """Time each command against the bare interpreter; exit 1 if `ledger` misses its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--log", type=Path, help="small log to use (default: a generated one)")
    parser.add_argument("--record", type=Path, help="append each result as JSON to this file")
    parser.add_argument("--only", action="append", help="only these cases (e.g. 'ledger (text)')")
    add_before_option(parser)
    args = parser.parse_args()
    here = workdir("startup")
    log = args.log or write_if_missing(here / "small.log", STARTUP)
    budget = write_if_missing(
        here / "budget.toml", 'version = 1\n[[budget]]\nitem = "usable"\nmin = "1 GiB"\n'
    )
    bare = [sys.executable, "-c", "pass"]
    cases: list[tuple[str, list[str]]] = [
        ("--version", [*MEMLEDGER, "--version"]),
        ("parse (text)", [*MEMLEDGER, "parse", str(log)]),
        ("parse --format json", [*MEMLEDGER, "parse", str(log), "--format", "json"]),
        ("ledger (text)", [*MEMLEDGER, "ledger", str(log)]),
        # no stored line shapes, no grammar tables: what the first run after an upgrade pays
        (
            "ledger, cold caches",
            ["env", "MEMLEDGER_NO_GRAMMAR_CACHE=1", *MEMLEDGER, "ledger", str(log)],
        ),
        ("ledger --format json", [*MEMLEDGER, "ledger", str(log), "--format", "json"]),
        ("diff log log", [*MEMLEDGER, "diff", str(log), str(log)]),
        ("check --budget", [*MEMLEDGER, "check", str(log), "--budget", str(budget)]),
        ("schema ledger", [*MEMLEDGER, "schema", "ledger"]),
    ]
    print(f"small log: {log} ({log.stat().st_size} bytes); yardstick: python -c pass")
    print_header()
    ledger_time = 0.0
    for name, command in cases:
        if args.only and name not in args.only:
            continue
        yardsticks = [("python -c pass", bare), *before_yardstick(args.before, command)]
        results = pairs(name, command, yardsticks, runs=args.runs)
        for result in results:
            print_pair(result, args.record)
        if name == "ledger (text)":
            ledger_time = results[0].memledger
    verdict = "meets" if ledger_time < TARGET_LEDGER_SECONDS else "misses"
    print(
        f"ledger on a small log: {ledger_time:.3f} s, {verdict} the {TARGET_LEDGER_SECONDS} s goal"
    )
    return 0 if ledger_time < TARGET_LEDGER_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
