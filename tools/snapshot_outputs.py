"""Write every memledger output on the samples and the real-log corpus to a folder.

Run it before and after a change that must not change behaviour, then compare the folders:

    python tools/snapshot_outputs.py /tmp/before      # on the old commit
    python tools/snapshot_outputs.py /tmp/after       # on the new one
    diff -r /tmp/before /tmp/after

Each output is one file named after the command, its options and the log; the file holds the
exit code, stdout and stderr. The corpus is read from MEMLEDGER_REAL_LOGS (default
../shared/real-logs beside the checkout) and, when present, the vLLM corpus beside it. Run it
from the checkout's root so that the sample paths print the same way every time.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ["samples/dp16.log", "samples/dp2.log"]
CONFIG = "samples/k3-config.json"
BUDGET = "samples/budget.toml"

ONE_LOG = [
    ("ledger", ["--format", "text"]),
    ("ledger", ["--format", "text", "--full"]),
    ("ledger", ["--format", "markdown"]),
    ("ledger", ["--format", "json"]),
    ("ledger", ["--format", "csv"]),
    ("diagnose", ["--format", "text"]),
    ("diagnose", ["--format", "markdown"]),
    ("diagnose", ["--format", "json"]),
    ("whatif", ["--format", "text"]),
    ("whatif", ["--format", "json"]),
    ("parse", ["--format", "json"]),
    ("check", ["--budget", BUDGET, "--format", "text"]),
    ("check", ["--budget", BUDGET, "--format", "json"]),
]
TWO_LOGS = [
    ("diff", ["--format", "text"]),
    ("diff", ["--format", "text", "--full"]),
    ("diff", ["--format", "markdown"]),
    ("diff", ["--format", "json"]),
    ("diff", ["--format", "csv"]),
]
LOG_SUFFIXES = {".log", ".txt", ".gz"}
CHECKS = ["text", "json", "junit", "github", "markdown"]


def corpus_logs() -> list[str]:
    base = Path(os.environ.get("MEMLEDGER_REAL_LOGS", ROOT.parent / "shared" / "real-logs"))
    logs: list[str] = []
    for folder in (base, base.parent / "real-logs-vllm"):
        if folder.is_dir():
            logs += sorted(
                str(p) for p in folder.rglob("*") if p.is_file() and p.suffix in LOG_SUFFIXES
            )
    return logs


def jobs() -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for log in SAMPLES + corpus_logs():
        for command, options in ONE_LOG:
            out.append((command, [command, log, *options]))
        extra = ["--model-config", CONFIG] if "samples/" in log else ["--explain", "kv_cache"]
        out.append(("ledger", ["ledger", log, *extra]))
    for command, options in TWO_LOGS:
        out.append((command, [command, *SAMPLES, "--model-config", CONFIG, *options]))
    out += [("check", ["check", *SAMPLES, "--budget", BUDGET, "--format", f]) for f in CHECKS]
    return out


def run(args: list[str], folder: Path) -> None:
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", TERM="dumb")
    done = subprocess.run(
        [sys.executable, "-m", "memledger", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    name = "_".join(a.replace("/", "~") for a in args)[:200]
    text = f"exit {done.returncode}\n--- stdout\n{done.stdout}--- stderr\n{done.stderr}"
    (folder / name).write_text(text)


def main() -> int:
    folder = Path(sys.argv[1])
    folder.mkdir(parents=True, exist_ok=True)
    todo = jobs()
    with ThreadPoolExecutor(max_workers=int(os.environ.get("SNAPSHOT_JOBS", "2"))) as pool:
        list(pool.map(lambda job: run(job[1], folder), todo))
    print(f"{len(todo)} outputs written to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
