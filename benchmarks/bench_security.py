"""Issue 12's bounds, measured: time and peak RSS of `memledger ledger` on hostile shapes.

    python benchmarks/bench_security.py [--gib-line 2]   # inputs are generated under /tmp

Shapes (from shared/docs/review-security.md): a 2 MB server_args line of `<`; 100,000 startups
(server_args + load begin each); 10,000 ranks (two lines each); one line of `GB size ` of
--gib-line GiB; server_args lines of `key='value<i>'` pairs (repr and dict forms) of --pairs-mb
MB each. Goal: linear time, peak RSS under 100 MiB. Not a test: figures go to the report.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE = Path(__file__).resolve().parent.parent / "tests" / "security_helpers.py"


def _base_log() -> str:
    sys.path.insert(0, str(BASE.parent.parent))
    from tests.security.helpers import log_text

    return log_text()


def _pairs_line(form: str, size: int) -> str:
    """`key='value<i>'` pairs up to `size` characters: every parameter a distinct name."""
    parts: list[str] = []
    total = 0
    while total < size:
        i = len(parts)
        parts.append(f"k{i}='v{i}'" if form == "repr" else f"'k{i}': 'v{i}'")
        total += len(parts[-1]) + 2
    body = ", ".join(parts)
    text = f"ServerArgs({body})" if form == "repr" else f"{{{body}}}"
    return f"[2026-01-01 00:00:00] server_args={text}\n"


def _write_inputs(
    directory: Path, gib_line: float, pairs_mb: tuple[float, ...] = (2,)
) -> dict[str, Path]:
    base = _base_log()
    first, rest = base.split("\n", 1)
    paths = {
        "2 MB server_args line": directory / "server_args_2mb.log",
        "100,000 startups": directory / "startups.log",
        "10,000 ranks": directory / "ranks.log",
        f"{gib_line:g} GiB single line": directory / "one_line.log",
    }
    for megabytes in pairs_mb:
        for form in ("repr", "dict"):
            path = directory / f"pairs_{form}_{megabytes:g}mb.log"
            path.write_text(_pairs_line(form, int(megabytes * 1_000_000)))
            paths[f"{megabytes:g} MB pairs ({form})"] = path
    prefix = "[2025-02-04 05:21:39] server_args=ServerArgs(tp_size=1, x="
    paths["2 MB server_args line"].write_text(prefix + "<" * 2_000_000 + ")\n" + rest)
    with paths["100,000 startups"].open("w") as out:
        load = "[2025-02-04 05:21:40 TP0] Load weight begin. avail mem=22.76 GB\n"
        out.write((first + "\n" + load) * 100_000 + base)
    with paths["10,000 ranks"].open("w") as out:
        out.write(base)
        for rank in range(10_000):
            out.write(
                f"[2025-02-04 05:29:30 TP{rank}] Load weight begin. avail mem=22.76 GB\n"
                f"[2025-02-04 05:29:30 TP{rank}] Some unknown thing size=12 GB {'x' * 300}\n"
            )
    with paths[f"{gib_line:g} GiB single line"].open("w") as out:
        out.write(base)
        chunk = "GB size " * (1 << 17)  # 1 MiB
        for _ in range(int(gib_line * 1024)):
            out.write(chunk)
    return paths


def _measure(path: Path) -> tuple[float, int, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memledger", "ledger", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    elapsed = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, peak_kib, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib-line", type=float, default=2.0)
    parser.add_argument("--pairs-mb", type=float, nargs="*", default=[2.0])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        for name, path in _write_inputs(
            Path(directory), args.gib_line, tuple(args.pairs_mb)
        ).items():
            # ru_maxrss of children is the largest so far: run each shape in a fresh process
            code = (
                "import sys; sys.path.insert(0, sys.argv[2]); "
                "from benchmarks.bench_security import _measure; from pathlib import Path; "
                "print(*_measure(Path(sys.argv[1])))"
            )
            repo = str(Path(__file__).resolve().parent.parent)
            out = subprocess.run(
                [sys.executable, "-c", code, str(path), repo], capture_output=True, text=True
            ).stdout.split()
            elapsed, peak, rc = float(out[0]), int(out[1]), int(out[2])
            size = path.stat().st_size / (1 << 20)
            print(
                f"{name:26} {size:9.1f} MiB  rc={rc}  {elapsed:7.2f} s  {peak / 1024:7.1f} MiB RSS"
            )


if __name__ == "__main__":
    main()
