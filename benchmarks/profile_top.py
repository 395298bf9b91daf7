"""Profile one memledger command in-process and print its top functions (self and cumulative).

cProfile overstates call-heavy code (a per-line loop, Lark's parser); use the benchmarks for
wall times and this for *which* functions. Output goes to /dev/null unless --show-output.

    python benchmarks/profile_top.py -- ledger samples/dp2.log
    python benchmarks/profile_top.py --top 25 --sort cumulative -- check a.log b.log --budget b.toml
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import sys
import time


def main() -> int:
    """Run `memledger ARGS...` under cProfile; print the top entries."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--sort", choices=("tottime", "cumulative"), default="tottime")
    parser.add_argument("--show-output", action="store_true")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- then memledger's arguments")
    args = parser.parse_args()
    argv = [a for a in args.argv if a != "--"] if args.argv[:1] == ["--"] else args.argv
    profile = cProfile.Profile()
    sink = io.StringIO()
    started = time.perf_counter()
    with open(os.devnull, "w") as devnull:
        redirect = (
            contextlib.nullcontext() if args.show_output else contextlib.redirect_stdout(devnull)
        )
        with redirect:
            profile.enable()
            from memledger.cli import main as cli_main  # imports are part of what is profiled

            code = cli_main(argv)
            profile.disable()
    elapsed = time.perf_counter() - started
    stats = pstats.Stats(profile, stream=sink)
    total = sum(entry[2] for entry in stats.stats.values())  # type: ignore[attr-defined]
    print(f"memledger {' '.join(argv)[:120]}: exit {code}, {elapsed:.3f} s profiled")
    print(f"{'tottime':>8} {'share':>6} {'cumtime':>8} {'calls':>9}  function")
    rows = sorted(
        stats.stats.items(),  # type: ignore[attr-defined]
        key=lambda item: item[1][2 if args.sort == "tottime" else 3],
        reverse=True,
    )
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in rows[: args.top]:
        where = filename.split("site-packages/")[-1]
        if where.startswith(os.getcwd() + os.sep):
            where = os.path.relpath(where)
        print(
            f"{tottime:8.3f} {100 * tottime / total:5.1f}% {cumtime:8.3f} {calls:9d}  "
            f"{where}:{line}({name})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
