"""Shared pieces of the benchmarks: timing a process, pairing it with its yardstick, inputs.

Every benchmark runs memledger as a user does (a fresh `python -m memledger ...` process) beside a
yardstick (grep, a bare interpreter, a naive line loop), alternating the two (A/B/A/B) so that the
machine's load hits both alike, and prints the medians, the median of the paired ratios, the peak
RSS and the load average at the time. Generated inputs go under a temp directory (default
/tmp/memledger-bench, reused between runs); nothing generated is ever written into the project.
"""

# ruff: noqa: E501  (the synthetic startup keeps SGLang's long lines verbatim)

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

MEMLEDGER: list[str] = [sys.executable, "-m", "memledger"]
BENCH_DIR = Path(os.environ.get("MEMLEDGER_BENCH_DIR", "/tmp/memledger-bench"))
GREP_PATTERN = "avail mem|mem usage|KV Cache is allocated|Capture|max_total_num_tokens|server_args"
NAIVE_LOOP = (
    "import re, sys\n"
    "pat = re.compile(sys.argv[1].encode())\n"
    "n = 0\n"
    "for path in sys.argv[2:]:\n"
    "    with (open(path, 'rb') if path != '-' else sys.stdin.buffer) as f:\n"
    "        for line in f:\n"
    "            if pat.search(line):\n"
    "                n += 1\n"
    "print(n)\n"
)
"""The naive yardstick: a Python loop over the lines with one regex (bytes)."""
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""Children may write .pyc files, as an installed wheel has them: an editable install run with
PYTHONDONTWRITEBYTECODE=1 would otherwise compile memledger's modules from source every run."""


@dataclass(frozen=True)
class Run:
    """One finished process: wall and cpu seconds, exit code, peak RSS (KiB, largest process)."""

    wall: float
    cpu: float
    code: int
    rss_kib: int


Command = Sequence[str] | str
"""An argv, or a shell command line (a pipeline) when a str."""


def run(
    command: Command,
    *,
    stdin_path: Path | None = None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run a command to completion with stdout into a real file; its wall, cpu and peak RSS.

    stdout goes to a file, not /dev/null: GNU grep stops at the first match when it writes to
    /dev/null. Peak RSS comes from wait4: the maximum over the child and the descendants it waited
    for (memledger's scan worker, a shell's pipeline members).
    """
    argv = ["sh", "-c", command] if isinstance(command, str) else list(command)
    if env is None:
        env = CHILD_ENV
    with tempfile.TemporaryFile() as sink:
        stdin = stdin_path.open("rb") if stdin_path is not None else subprocess.DEVNULL
        try:
            start = time.perf_counter()
            process = subprocess.Popen(
                argv, stdin=stdin, stdout=sink, stderr=subprocess.PIPE, env=env
            )
            assert process.stderr is not None
            err = process.stderr.read()
            _pid, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
        finally:
            if stdin_path is not None and not isinstance(stdin, int):
                stdin.close()
    code = os.waitstatus_to_exitcode(status)
    process.returncode = code
    if code not in (0, 1):
        message = err.decode(errors="replace").strip()[:400]
        print(f"  warning: exit {code} from {' '.join(argv)[:160]}: {message}", file=sys.stderr)
    return Run(wall, usage.ru_utime + usage.ru_stime, code, usage.ru_maxrss)


def add_before_option(parser: argparse.ArgumentParser) -> None:
    """`--before PYTHON`: time another memledger (an older checkout's interpreter) beside this one."""
    parser.add_argument(
        "--before",
        type=Path,
        metavar="PYTHON",
        help="also run each memledger command with this interpreter (an older checkout's venv) "
        "as one more yardstick, alternating with the others: before and after in one run",
    )


def before_yardstick(before: Path | None, command: Sequence[str]) -> list[tuple[str, Command]]:
    """The yardstick list entry for `--before`: `command` (a MEMLEDGER argv, maybe pinned) run
    with the older interpreter; empty without `--before`."""
    if before is None:
        return []
    argv = list(command)
    at = argv.index(MEMLEDGER[0])
    # -P: the working directory is not put on sys.path (a checkout there is not the one timed)
    argv[at : at + 1] = [str(before), "-P"]
    return [("memledger before", argv)]


def pinned(command: Sequence[str], core: int | None) -> list[str]:
    """The command run on one core (taskset -c CORE) when `core` is given."""
    if core is None:
        return list(command)
    if shutil.which("taskset") is None:
        raise SystemExit("taskset not found (util-linux): cannot pin to one core")
    return ["taskset", "-c", str(core), *command]


@dataclass(frozen=True)
class Pair:
    """memledger against its yardstick over N alternating runs."""

    case: str
    memledger: float
    """median wall seconds"""
    memledger_min: float
    memledger_cpu: float
    yardstick_name: str
    yardstick: float
    ratio: float
    """median of the paired ratios memledger / yardstick"""
    ratio_min: float
    rss_mib: float
    """memledger's peak RSS (largest process)"""
    yardstick_rss_mib: float
    load: str
    """load averages (1, 5, 15 min) when the pair started"""
    runs: int


def load_average() -> str:
    """The 1/5/15-minute load averages, as `uptime` prints them."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def pair(
    case: str,
    memledger: Command,
    yardstick_name: str,
    yardstick: Command,
    *,
    runs: int = 3,
    env: dict[str, str] | None = None,
) -> Pair:
    """Alternate memledger and its yardstick `runs` times each; medians, paired ratio, peak RSS."""
    return pairs(case, memledger, [(yardstick_name, yardstick)], runs=runs, env=env)[0]


def pairs(
    case: str,
    memledger: Command,
    yardsticks: Sequence[tuple[str, Command]],
    *,
    runs: int = 3,
    env: dict[str, str] | None = None,
) -> list[Pair]:
    """One memledger run per round, each yardstick after it (A/B/C, A/B/C): one Pair each."""
    load = load_average()
    ours: list[Run] = []
    theirs: list[list[Run]] = [[] for _ in yardsticks]
    for _ in range(runs):
        ours.append(run(memledger, env=env))
        for mine, (_name, command) in zip(theirs, yardsticks, strict=True):
            mine.append(run(command))
    results: list[Pair] = []
    for (name, _command), their_runs in zip(yardsticks, theirs, strict=True):
        ratios = [a.wall / b.wall for a, b in zip(ours, their_runs, strict=True) if b.wall > 0]
        results.append(
            Pair(
                case=case,
                memledger=statistics.median(r.wall for r in ours),
                memledger_min=min(r.wall for r in ours),
                memledger_cpu=statistics.median(r.cpu for r in ours),
                yardstick_name=name,
                yardstick=statistics.median(r.wall for r in their_runs),
                ratio=statistics.median(ratios) if ratios else float("inf"),
                ratio_min=min(ratios) if ratios else float("inf"),
                rss_mib=max(r.rss_kib for r in ours) / 1024,
                yardstick_rss_mib=max(r.rss_kib for r in their_runs) / 1024,
                load=load,
                runs=runs,
            )
        )
    return results


HEADER = (
    f"{'case':<34} {'memledger':>10} {'(min)':>8} {'cpu':>7}  {'yardstick':<22} {'time':>8} "
    f"{'ratio':>7} {'peak RSS':>9}  load"
)


def print_header() -> None:
    """The column titles of `print_pair`."""
    print(HEADER)
    print("-" * len(HEADER))


def print_pair(result: Pair, record: Path | None = None) -> None:
    """One table line; appended as JSON to `record` when given (for before/after tables)."""
    print(
        f"{result.case:<34} {result.memledger:>9.3f}s {result.memledger_min:>7.3f}s "
        f"{result.memledger_cpu:>6.2f}s  {result.yardstick_name:<22} {result.yardstick:>7.3f}s "
        f"{result.ratio:>6.2f}x {result.rss_mib:>6.1f}MiB  {result.load}",
        flush=True,
    )
    if record is not None:
        with record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(result)) + "\n")


def workdir(name: str) -> Path:
    """A directory for generated inputs, under BENCH_DIR (never inside the project)."""
    path = BENCH_DIR / name
    path.mkdir(parents=True, exist_ok=True)
    return path


# A realistic TP2 startup, as SGLang 0.5.x prints it (shapes from samples/ and the real logs).
STARTUP = """\
[2026-11-05 10:12:00] server_args=ServerArgs(model_path='org/model-32b', tokenizer_path='org/model-32b', tp_size=2, dp_size=1, mem_fraction_static=0.85, chunked_prefill_size=8192, max_running_requests=None, cuda_graph_max_bs=160, page_size=1, kv_cache_dtype='auto', disable_cuda_graph=False)
[2026-11-05 10:12:05 TP0] Init torch distributed begin.
[2026-11-05 10:12:05 TP1] Init torch distributed begin.
[2026-11-05 10:12:07 TP0] Init torch distributed ends. mem usage=0.38 GB
[2026-11-05 10:12:07 TP1] Init torch distributed ends. mem usage=0.38 GB
[2026-11-05 10:12:07 TP0] Load weight begin. avail mem=78.41 GB
[2026-11-05 10:12:07 TP1] Load weight begin. avail mem=78.44 GB
Loading safetensors checkpoint shards: 100% Completed | 17/17 [00:41<00:00,  2.41s/it]
[2026-11-05 10:12:49 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=47.63 GB, mem usage=30.78 GB.
[2026-11-05 10:12:49 TP1] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=47.66 GB, mem usage=30.78 GB.
[2026-11-05 10:12:50 TP0] KV Cache is allocated. #tokens: 302811, K size: 18.48 GB, V size: 18.48 GB
[2026-11-05 10:12:50 TP1] KV Cache is allocated. #tokens: 302811, K size: 18.48 GB, V size: 18.48 GB
[2026-11-05 10:12:50 TP0] Memory pool end. avail mem=9.83 GB
[2026-11-05 10:12:50 TP1] Memory pool end. avail mem=9.86 GB
[2026-11-05 10:12:51 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=9.21 GB
[2026-11-05 10:12:51 TP0] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160]
Capturing batches (bs=160 avail_mem=9.02 GB): 100%|██████████| 23/23 [00:09<00:00,  2.41it/s]
[2026-11-05 10:13:01 TP0] Capture cuda graph end. Time elapsed: 9.61 s. mem usage=1.12 GB. avail mem=8.09 GB.
[2026-11-05 10:13:01 TP0] max_total_num_tokens=302811, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=32768, available_gpu_mem=7.94 GB
[2026-11-05 10:13:03] INFO:     Started server process [4711]
[2026-11-05 10:13:03] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-11-05 10:13:05] The server is fired up and ready to roll!
"""


SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def fleet_templates() -> list[str]:
    """Startup logs a fleet is varied from: STARTUP and the project's two Kimi K3 samples."""
    texts = [STARTUP]
    texts += [(SAMPLES / name).read_text(encoding="utf-8") for name in ("dp2.log", "dp16.log")]
    return texts


def varied_startup(seed: int, template: str = STARTUP) -> str:
    """A startup log with its memory figures moved a little, as pods of one deployment differ.

    Only the last printed digit of each `avail mem` changes (GPUs of one SKU differ by a few MB),
    so every log still balances, but no two logs print the same memory lines.
    """
    rng = random.Random(seed)
    out: list[str] = []
    for line in template.splitlines(keepends=True):
        marker = "avail mem="
        at = line.find(marker)
        while at >= 0:
            start = at + len(marker)
            end = line.index(" GB", start)
            number = line[start:end]
            digit = str(rng.randrange(10))
            line = line[:start] + number[:-1] + digit + line[end:]
            at = line.find(marker, end)
        out.append(line.replace("[4711]", f"[{4000 + seed % 5000}]"))
    return "".join(out)


def write_if_missing(path: Path, text: str) -> Path:
    """Write `text` to `path` unless it already holds exactly that (inputs are reused)."""
    data = text.encode()
    if not path.exists() or path.stat().st_size != len(data) or path.read_bytes() != data:
        path.write_bytes(data)
    return path
