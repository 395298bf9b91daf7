"""Write every memledger output on the samples and the real-log corpus to a folder.

Run it before and after a change that must not change behaviour, then compare the folders:

    python tools/snapshot_outputs.py /tmp/before      # on the old commit
    python tools/snapshot_outputs.py /tmp/after       # on the new one
    diff -r /tmp/before /tmp/after

Each output is one file named after the command, its options and the log; the file holds the
exit code, stdout and stderr. The commands run in this process, one after another (a process per
command spends most of its time importing); `--subprocess` runs each in a process of its own.
The corpus is read from MEMLEDGER_REAL_LOGS (default ../shared/real-logs beside the checkout)
and, when present, the vLLM corpus beside it. Paths of the samples print as given, relative to
the checkout's root.
"""

from __future__ import annotations

import contextlib
import io
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


def run_here(args: list[str], folder: Path) -> None:
    from memledger.cli import main as memledger_main

    out, err = io.TextIOWrapper(io.BytesIO(), "utf-8"), io.TextIOWrapper(io.BytesIO(), "utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = memledger_main(args)
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8", "replace"))
    write(folder, args, code, texts[0], texts[1])


def write(folder: Path, args: list[str], code: int, stdout: str, stderr: str) -> None:
    name = "_".join(a.replace("/", "~") for a in args)[:200]
    (folder / name).write_text(f"exit {code}\n--- stdout\n{stdout}--- stderr\n{stderr}")


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
    write(folder, args, done.returncode, done.stdout, done.stderr)


def main() -> int:
    folder = Path(sys.argv[1]).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    todo = jobs()
    if "--subprocess" in sys.argv:
        with ThreadPoolExecutor(max_workers=int(os.environ.get("SNAPSHOT_JOBS", "2"))) as pool:
            list(pool.map(lambda job: run(job[1], folder), todo))
    else:
        os.chdir(ROOT)
        os.environ.update(COLUMNS="100", NO_COLOR="1", TERM="dumb")
        for _, args in todo:
            run_here(args, folder)
    print(f"{len(todo)} outputs written to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
