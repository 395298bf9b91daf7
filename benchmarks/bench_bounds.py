"""Issue 12 memory and time bounds: time and peak RSS of `memledger ledger` on hostile shapes, each
beside its yardstick (`grep -cE` over the same file) and at half size (time linear: ~2x).

    python benchmarks/bench_bounds.py                  # every case, 2 GiB single line
    python benchmarks/bench_bounds.py --gib-line 0.5 --case startups --case ranks

Shapes (shared/docs/review-security.md F6, F8, F9): a 2 MB server_args line of `<`; 100,000
startups (server_args + load begin each); the same without server_args lines (startups at rank-0
init lines); 10,000 and 100,000 ranks (two lines each); one line of `GB size ` of --gib-line GiB.
Goal: time linear in the input, peak RSS under 100 MiB. Inputs are generated under
$MEMLEDGER_BENCH_DIR (default /tmp/memledger-bench) and the big ones deleted after. Not a test:
the figures go to the report; exit 1 if a peak RSS reaches 100 MiB.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

from benchcommon import GREP_PATTERN, MEMLEDGER, pair, print_header, print_pair, workdir

RSS_TARGET_MIB = 100.0
TP0 = "[2025-02-04 05:21:40 TP0]"
BASE = f"""\
[2025-02-04 05:21:39] server_args=ServerArgs(model_path='/models/qwen', tp_size=1, dp_size=1, \
mem_fraction_static=0.88, max_running_requests=256, context_length=131072, page_size=1)
{TP0} Init torch distributed begin.
{TP0} Init torch distributed ends. mem usage=0.50 GB
{TP0} Load weight begin. avail mem=22.76 GB
{TP0} Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=8.37 GB, \
mem usage=14.00 GB.
{TP0} KV Cache is allocated. #tokens: 105531, K size: 2.82 GB, V size: 2.82 GB.
{TP0} Memory pool end. avail mem=2.68 GB
{TP0} Capture cuda graph begin. This can take up to several minutes. avail mem=2.60 GB
{TP0} Capture cuda graph end. Time elapsed: 1.79 s, mem usage=0.50 GB, avail mem=2.10 GB.
{TP0} max_total_num_tokens=105531, chunked_prefill_size=2048, max_prefill_tokens=16384, \
max_running_requests=256, context_len=131072
[2025-02-04 05:29:21] The server is fired up and ready to roll!
"""
"""The review's base.log: a complete single-GPU startup, 11 lines."""
SERVER_ARGS, REST = BASE.split("\n", 1)
LOAD = f"{TP0} Load weight begin. avail mem=22.76 GB\n"


def server_args_line(out: IO[str], scale: float) -> None:
    prefix = "[2025-02-04 05:21:39] server_args=ServerArgs(tp_size=1, x="
    out.write(prefix + "<" * int(2_000_000 * scale) + ")\n" + REST)


def startups(out: IO[str], scale: float) -> None:
    out.write((SERVER_ARGS + "\n" + LOAD) * int(100_000 * scale) + BASE)


def startups_without_server_args(out: IO[str], scale: float) -> None:
    out.write((f"{TP0} Init torch distributed begin.\n" + LOAD) * int(100_000 * scale) + REST)


def ranks(n: int) -> Callable[[IO[str], float], None]:
    def write(out: IO[str], scale: float) -> None:
        out.write(BASE)
        for rank in range(int(n * scale)):
            out.write(
                f"[2025-02-04 05:29:30 TP{rank}] Load weight begin. avail mem=22.76 GB\n"
                f"[2025-02-04 05:29:30 TP{rank}] Some unknown thing size=12 GB {'x' * 300}\n"
            )

    return write


def single_line(gib: float) -> Callable[[IO[str], float], None]:
    def write(out: IO[str], scale: float) -> None:
        out.write(BASE)
        chunk = "GB size " * (1 << 17)  # 1 MiB, no newline
        for _ in range(int(gib * scale * 1024)):
            out.write(chunk)

    return write


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib-line", type=float, default=2.0, help="single line size (GiB)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--case", action="append", help="only these cases (by key)")
    parser.add_argument("--no-half", action="store_true", help="skip the half-size runs")
    parser.add_argument("--record", type=Path, help="append each result as JSON to this file")
    args = parser.parse_args()
    cases: dict[str, tuple[str, Callable[[IO[str], float], None]]] = {
        "server_args": ("2 MB server_args line", server_args_line),
        "startups": ("100,000 startups", startups),
        "startups-no-args": ("100,000 startups, no server_args", startups_without_server_args),
        "ranks": ("10,000 ranks", ranks(10_000)),
        "ranks-100k": ("100,000 ranks", ranks(100_000)),
        "line": (f"{args.gib_line:g} GiB single line", single_line(args.gib_line)),
    }
    here = workdir("security")
    print_header()
    ok = True
    for key, (name, write) in cases.items():
        if args.case and key not in args.case:
            continue
        times: list[float] = []
        for scale in (1.0,) if args.no_half else (0.5, 1.0):
            path = here / f"{key}-{scale:g}.log"
            with path.open("w") as out:
                write(out, scale)
            try:
                label = name if scale == 1.0 else f"{name} (half)"
                result = pair(
                    label,
                    [*MEMLEDGER, "ledger", str(path)],
                    "grep -cE",
                    ["grep", "-cE", GREP_PATTERN, str(path)],
                    runs=args.runs,
                )
            finally:
                path.unlink()
            print_pair(result, args.record)
            times.append(result.memledger)
            ok = ok and result.rss_mib < RSS_TARGET_MIB
        if len(times) == 2:
            print(f"  {name}: full / half = {times[1] / times[0]:.2f}x (linear: about 2x)")
    print(f"peak RSS target < {RSS_TARGET_MIB:.0f} MiB: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
