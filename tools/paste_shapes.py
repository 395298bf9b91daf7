"""Does memledger read a log the same whatever shape it was pasted in? A battery of paste shapes.

Each input (a log or a pasted fragment) is turned into each SHAPES row, the way a tool or a
person passes a log on (a docker compose column, a Ray actor's tag, a markdown quote, HTML
escapes, a structured logger's JSON record, a console's hard wrap, a rendered page copied, a
Python string's repr, ...), and read with `memledger parse - --format json`. The shaped text
reads the "same facts" when that JSON equals the raw text's, line numbers, quoted texts and
notes aside (DROP). A PAIRS row makes its own pairs of (raw, shaped) fragments from an input
(short pastes: one memory line cut by a terminal).

    python tools/paste_shapes.py OUT.json sglang=DIR_OR_FILES... vllm=... devset=...
    python tools/paste_shapes.py --table OUT.json [BEFORE.json]     # one row per shape
    python tools/paste_shapes.py --show OUT.json SHAPE              # the inputs it misses
    python tools/paste_shapes.py --diff FILE SHAPE                   # one input's JSON diff

A group is `NAME=PATH` (a file, or a folder whose *.log / *.txt files are read, recursively);
`--shapes a,b` measures some rows only. Every command runs in this process (stdin replaced), so
the checkout measured is the one this file imports memledger from: run it with the checkout's
interpreter, or PYTHONPATH for an older tree. Nothing is written but OUT.json.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import html
import io
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Shape = Callable[[str, str], str]
"""A paste shape: (raw text, engine name) -> the text as pasted."""


def per_line(prefix: Callable[[int, str], str], blank: bool = False) -> Shape:
    """A column before every line (blank lines too when `blank`)."""

    def shape(text: str, engine: str) -> str:
        return "\n".join(
            prefix(i, line) if (line.strip() or blank) else line
            for i, line in enumerate(text.split("\n"))
        )

    return shape


def _fixed(column: str, blank: bool = False) -> Shape:
    def shape(text: str, engine: str) -> str:
        col = column.format(engine=engine)
        return per_line(lambda i, line: col + line, blank)(text, engine)

    return shape


def hard_wrap(width: int, end: str = "\n") -> Shape:
    """A terminal that copies what it shows: a newline wherever a line reached `width`."""

    def shape(text: str, engine: str) -> str:
        out: list[str] = []
        for line in text.split("\n"):
            out.extend(line[i : i + width] for i in range(0, len(line), width) or [0])
        return end.join(out)

    return shape


def _code_span(line: str) -> str:
    """CommonMark 0.31 §6.1: a code span's fence is a backtick run longer than any inside it,
    padded with a space when the text starts or ends with a backtick."""
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return fence + pad + line + pad + fence


def _json_record(keys: Callable[[str, int], dict[str, Any]]) -> Shape:
    def shape(text: str, engine: str) -> str:
        return "\n".join(
            json.dumps(keys(line, i)) for i, line in enumerate(text.split("\n")) if line.strip()
        )

    return shape


_TAGS = re.compile(r"</?[A-Za-z][\w\-]*(?:\s[^<>]*)?>")
_STRONG = re.compile(r"(?<![\w*])(\*\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])")


def _rendered(text: str, engine: str) -> str:
    """A log pasted without a code fence, as the rendered page shows it and a copy gives it back:
    CommonMark drops each line's indentation and a list item's bullet, folds blank runs, drops an
    HTML-like tag (`<module>`), turns `__x__` / `**x**` into bold x; GitHub's comments keep line
    breaks, and a CR is a line end. `#` headings lose the marks."""
    out: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = line.strip()
        line = re.sub(r"^(?:[-*+] |\d{1,9}[.)] |#{1,6} )", "", line)
        line = _TAGS.sub("", line)
        line = _STRONG.sub(r"\2", line)
        line = re.sub(r"[ \t]+", " ", line).strip()
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out)


def _short_pastes(text: str, width: int) -> list[str]:
    """Short pastes of an input's memory lines with no error text (`avail mem=`, `mem usage=`,
    `#tokens:`, a size in GB), longer than `width`: each alone, and each with the line before."""
    lines = [line for line in text.split("\n") if line.strip()]
    found: list[str] = []
    memory = re.compile(r"mem(?:ory)?[ _=]|GB\b|GiB\b|#tokens|max_total_num_tokens")
    error = re.compile(r"(?i)error|exception|out of memory|traceback|oom|fail")
    picks = [
        i
        for i, line in enumerate(lines)
        if len(line) > width and memory.search(line) and not error.search(line)
    ]
    step = max(1, len(picks) // 3)
    for i in picks[::step][:3]:
        found.append(lines[i] + "\n")
        if i:
            found.append(lines[i - 1] + "\n" + lines[i] + "\n")
    return found


def short_wrap(width: int) -> Callable[[str, str], list[tuple[str, str]]]:
    def pairs(text: str, engine: str) -> list[tuple[str, str]]:
        wrap = hard_wrap(width)
        return [(p, wrap(p, engine)) for p in _short_pastes(text, width)]

    return pairs


SHAPES: dict[str, tuple[Shape, str]] = {
    "bullet-code": (
        per_line(lambda i, line: "- " + _code_span(line)),
        "each line inline code in a list item (`` - `LINE` ``; a longer fence around a backtick)",
    ),
    "code-lines": (per_line(lambda i, line: _code_span(line)), "each line as inline code"),
    "compose": (_fixed("{engine}-1  | ", blank=True), "docker compose logs (`sglang-1  | `)"),
    "kubectl-prefix": (
        _fixed("[pod/{engine}-0/{engine}] ", blank=True),
        "kubectl logs --prefix (`[pod/sglang-0/sglang] `)",
    ),
    "ray-sglang-engine": (_fixed("(SGLangEngine pid=1234) "), "a Ray actor's tag"),
    "ray-enginecore": (_fixed("(EngineCore_DP0 pid=1234) "), "vLLM V1's engine-core tag"),
    "ray-vllm-worker": (_fixed("(VllmWorker rank=0 pid=1234) "), "vLLM's worker tag"),
    "ray-serve": (
        _fixed("(ServeReplica:default:LLMServer pid=1234) "),
        "a Ray Serve replica's tag (over vLLM's own `(EngineCore_DP0 pid=N)` where a line has one)",
    ),
    "ray-ip": (_fixed("(RayWorkerWrapper pid=1234, ip=10.0.0.1) "), "a Ray actor, multi-node"),
    "quote": (
        per_line(lambda i, line: ("> " + line) if line else ">", blank=True),
        "a markdown reply's quote (`> `)",
    ),
    "html-escaped": (lambda t, e: html.escape(t, quote=True), "a page's HTML source (`&gt;`)"),
    "crlf": (lambda t, e: t.replace("\n", "\r\n"), "CRLF line ends"),
    "ansi": (per_line(lambda i, line: "\x1b[32m" + line + "\x1b[0m"), "ANSI colours"),
    "jsonl-message": (
        _json_record(
            lambda line, i: (
                {"timestamp": f"2026-01-03T10:42:{i % 60:02d}Z", "level": "INFO"}
                | {"message": line}
            )
        ),
        "a structured logger's JSON lines (python-json-logger, `message` last)",
    ),
    "jsonl-message-first": (
        _json_record(lambda line, i: {"message": line, "severity": "INFO"}),
        "a JSON record with `message` first (Cloud Logging's structured payload)",
    ),
    "journald-json": (
        _json_record(
            lambda line, i: {"__CURSOR": f"s={i}", "_PID": "7", "MESSAGE": line} | {"PRIORITY": "6"}
        ),
        "journalctl -o json (`MESSAGE`)",
    ),
    "gutter": (
        per_line(lambda i, line: f"{i + 1:>4} | " + line, blank=True),
        "a viewer's line-number gutter (`  12 | `)",
    ),
    "win-console120": (hard_wrap(120, "\r\n"), "a Windows console's copy: cut at 120, CRLF"),
    "rendered-github": (_rendered, "a rendered GitHub page copied (no fence, bullets stripped)"),
    "py-repr": (lambda t, e: repr(t), "the log as a Python string's repr, on one line"),
    "py-repr-exception": (
        lambda t, e: "RuntimeError(" + repr(t) + ")\n",
        "a log inside an exception's repr (`\\n` escapes in one line)",
    ),
}
"""Every paste shape: (shape, where it comes from)."""


def _server_args(text: str) -> list[str]:
    """The input's first `server_args=` line (SGLang's ServerArgs repr, one line), alone."""
    line = next((line for line in text.split("\n") if "server_args=" in line), "")
    return [line + "\n"] if line else []


def args_wrap(width: int) -> Callable[[str, str], list[tuple[str, str]]]:
    def pairs(text: str, engine: str) -> list[tuple[str, str]]:
        wrap = hard_wrap(width)
        return [(p, wrap(p, engine)) for p in _server_args(text)]

    return pairs


PAIRS: dict[str, tuple[Callable[[str, str], list[tuple[str, str]]], str]] = {
    "short-wrap80": (short_wrap(80), "a memory line alone (or after one line) cut at 80"),
    "short-wrap120": (short_wrap(120), "a memory line alone (or after one line) cut at 120"),
    "args-wrap120": (args_wrap(120), "the server_args line alone, cut at 120"),
    "args-wrap80": (args_wrap(80), "the server_args line alone, cut at 80"),
}
"""Shapes of short pastes: (raw fragment, shaped fragment) pairs made from an input."""

DROP = {
    "line",
    "text",
    "path",
    "n_lines",
    "first_line",
    "last_line",
    "coverage",
    "notes",
    "invalid_utf8_bytes",
    "lines",
    "evidence",
}
"""Parse JSON keys that say where a fact was read, not what it is."""


def _run(args: list[str], data: str) -> tuple[int, str, str]:
    from memledger.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data.encode("utf-8", "surrogateescape")), "utf-8")
    code: Any = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as stop:
                code = stop.code
    finally:
        sys.stdin = old
    return int(code or 0), out.getvalue(), err.getvalue()


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in DROP and not k.endswith("_line")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def facts(data: str) -> str:
    """The parse JSON without where each fact was read (or the exit code and its message)."""
    code, out, err = _run(["parse", "-", "--format", "json"], data)
    try:
        return json.dumps(_strip(json.loads(out)), sort_keys=True, indent=0)
    except ValueError:
        return f"exit {code}: {err.strip()[:200]}"


def _inputs(groups: list[str]) -> Iterator[tuple[str, Path]]:
    for group in groups:
        name, _, where = group.partition("=")
        for part in where.split(","):
            path = Path(part)
            files = (
                sorted(p for p in path.rglob("*") if p.suffix in (".log", ".txt"))
                if path.is_dir()
                else [path]
            )
            for file in files:
                if file.name.lower() != "readme.txt":
                    yield name, file


def measure(out: str, groups: list[str], names: list[str]) -> None:
    os.environ.update(COLUMNS="100", NO_COLOR="1", TERM="dumb")
    results: dict[str, list[dict[str, Any]]] = {}
    for group, path in _inputs(groups):
        raw = path.read_bytes().decode("utf-8", "surrogateescape")
        engine = "vllm" if group.startswith("vllm") else "sglang"
        base = facts(raw) if any(n in SHAPES for n in names) else ""
        for name in names:
            start = time.process_time()
            if name in SHAPES:
                same = [facts(SHAPES[name][0](raw, engine)) == base]
            else:
                same = [facts(b) == facts(a) for a, b in PAIRS[name][0](raw, engine)]
            for k, ok in enumerate(same):
                label = path.name if name in SHAPES else f"{path.name}#{k}"
                took = round(time.process_time() - start, 2)
                results.setdefault(name, []).append(
                    {"group": group, "file": label, "same": ok, "cpu_s": took}
                    | ({"raw_unread": True} if base.startswith("exit ") else {})
                )
        print(group, path.name, file=sys.stderr, flush=True)
    Path(out).write_text(json.dumps(results, indent=0), encoding="utf-8")


def _cells(rows: list[dict[str, Any]], groups: list[str]) -> list[str]:
    cells = []
    for group in groups:
        mine = [r for r in rows if r["group"] == group]
        cells.append(f"{sum(r['same'] for r in mine)}/{len(mine)}" if mine else "-")
    return cells


def table(after: str, before: str | None) -> None:
    new = json.loads(Path(after).read_text(encoding="utf-8"))
    old = json.loads(Path(before).read_text(encoding="utf-8")) if before else {}
    groups = list(dict.fromkeys(r["group"] for rows in new.values() for r in rows))
    print("| shape | " + " | ".join(groups) + " | slowest CPU s |")
    print("|---" * (len(groups) + 2) + "|")
    for name, rows in new.items():
        cells = _cells(rows, groups)
        if name in old:
            cells = [f"{b} → {a}" for b, a in zip(_cells(old[name], groups), cells, strict=True)]
        print(f"| {name} | " + " | ".join(cells) + f" | {max(r['cpu_s'] for r in rows)} |")


def show(after: str, name: str) -> None:
    for row in json.loads(Path(after).read_text(encoding="utf-8"))[name]:
        if not row["same"]:
            print(row["group"], row["file"])


def diff(path: str, name: str) -> None:
    raw = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    engine = "vllm" if "vllm" in path else "sglang"
    pairs = [(raw, SHAPES[name][0](raw, engine))] if name in SHAPES else PAIRS[name][0](raw, engine)
    for a, b in pairs:
        lines = difflib.unified_diff(facts(a).splitlines(), facts(b).splitlines(), lineterm="")
        print("\n".join(list(lines)[:60]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--diff", action="store_true")
    ap.add_argument("--shapes", default="")
    ap.add_argument("args", nargs="+")
    opts = ap.parse_args()
    if opts.table:
        table(opts.args[0], opts.args[1] if len(opts.args) > 1 else None)
    elif opts.show:
        show(opts.args[0], opts.args[1])
    elif opts.diff:
        diff(opts.args[0], opts.args[1])
    else:
        names = opts.shapes.split(",") if opts.shapes else [*SHAPES, *PAIRS]
        measure(opts.args[0], opts.args[1:], names)


if __name__ == "__main__":
    main()
