"""Benchmark: `memledger parse` on a long-running server log vs `grep -cE` on the same file.

Builds a synthetic log (a realistic TP2 startup followed by hundreds of MB of `Decode batch` /
`Prefill batch` / access lines, as a server writes during days of serving) in a temp directory,
then times both commands and measures the parser's peak RSS from the child's own rusage (the
larger of the parser and its scan worker: wait4 reports the maximum over waited-for processes).

Targets (issue 2): parse wall time <= 3x grep's, peak RSS < 100 MiB.

    python benchmarks/bench_parse.py            # ~300 MB, the built-in scanner
    MEMLEDGER_PREFILTER=grep python benchmarks/bench_parse.py   # the grep pipeline
    python benchmarks/bench_parse.py --size-mb 50 --keep
"""

# ruff: noqa: E501  (the synthetic startup keeps SGLang's long lines verbatim)

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GREP_PATTERN = "avail mem|mem usage|KV Cache is allocated|Capture|max_total_num_tokens|server_args"

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


def build_log(path: Path, size_mb: int) -> None:
    """Write the startup, then serving lines until the file reaches `size_mb` MiB."""
    target = size_mb << 20
    block_lines = []
    for i in range(2000):
        minute, second = divmod(i, 60)
        stamp = f"2026-11-05 1{minute % 10}:{minute:02d}:{second:02d}"
        running = 8 + i % 57
        block_lines.append(
            f"[{stamp} TP0] Decode batch. #running-req: {running}, #token: {running * 911}, "
            f"token usage: {running / 330:.2f}, cuda graph: True, "
            f"gen throughput (token/s): {1000 + i % 917}.{i % 100:02d}, #queue-req: 0, \n"
        )
        if i % 20 == 0:
            block_lines.append(
                f"[{stamp} TP0] Prefill batch. #new-seq: 1, #new-token: {256 + i % 700}, "
                f"#cached-token: {i % 4000}, token usage: 0.{i % 90:02d}, #running-req: {running}, "
                f"#queue-req: 0, \n"
            )
            block_lines.append(
                f'[{stamp}] INFO:     127.0.0.1:{40000 + i} - "POST /generate HTTP/1.1" 200 OK\n'
            )
    block = "".join(block_lines).encode()
    with path.open("wb") as out:
        out.write(STARTUP.encode())
        written = len(STARTUP)
        while written < target:
            out.write(block)
            written += len(block)


def timed(command: list[str]) -> tuple[float, int, int]:
    """Run a command; (wall seconds, exit code, peak RSS in KiB of that child)."""
    # stdout goes to a real file: GNU grep stops at the first match when it writes to /dev/null
    with tempfile.TemporaryFile() as sink:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE)
        _pid, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.stderr is not None:
        err = process.stderr.read().decode(errors="replace").strip()
        if err and process.returncode not in (0, 1):
            print(f"  stderr: {err[:300]}", file=sys.stderr)
    return elapsed, process.returncode, usage.ru_maxrss


def main() -> int:
    """Build the log, time both commands, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=300, help="log size in MiB (default 300)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (best taken)")
    parser.add_argument("--keep", action="store_true", help="keep the generated log")
    args = parser.parse_args()
    if shutil.which("grep") is None:
        print("grep not found", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="memledger-bench-"))
    log = workdir / "server.log"
    try:
        start = time.perf_counter()
        build_log(log, args.size_mb)
        size = log.stat().st_size
        print(f"log: {log} ({size / 2**20:.0f} MiB, built in {time.perf_counter() - start:.1f} s)")
        grep_cmd = ["grep", "-cE", GREP_PATTERN, str(log)]
        parse_cmd = [sys.executable, "-m", "memledger", "parse", str(log), "--format", "json"]
        grep_runs = [timed(grep_cmd) for _ in range(args.repeat)]
        parse_runs = [timed(parse_cmd) for _ in range(args.repeat)]
        if any(code != 0 for _, code, _ in parse_runs):
            print("memledger parse failed", file=sys.stderr)
            return 1
        grep_time = min(t for t, _, _ in grep_runs)
        parse_time = min(t for t, _, _ in parse_runs)
        peak_kib = max(rss for _, _, rss in parse_runs)
        ratio = parse_time / grep_time
        print(f"grep -cE:        {grep_time:.2f} s (best of {args.repeat})")
        print(f"memledger parse: {parse_time:.2f} s (best of {args.repeat})")
        print(f"ratio:           {ratio:.2f}x (target <= 3x)")
        print(f"peak RSS:        {peak_kib / 1024:.1f} MiB (target < 100 MiB)")
        return 0 if ratio <= 3 and peak_kib < 100 * 1024 else 1
    finally:
        if args.keep:
            print(f"kept {log}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
