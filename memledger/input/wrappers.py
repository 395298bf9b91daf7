"""What the tool a log came through puts before each of its lines: one table, one shape per row.

A log reaches memledger through docker compose, kubectl, journald, Ray, slurm, a terminal, an
editor or a GitHub comment, and each adds its own column before every line. The same log text
must give the same reading whatever wrapped it, so each column is peeled off a line's start
before the line is read (memledger.input.logical), and the scanner tells a serving-time line
behind such a column from two SGLang lines glued together (memledger.input.scan).

Three kinds of row: a COLUMN is peeled anywhere in a run of columns (`> sglang-1  | ...`); a
STAMP (a tool's timestamp or process tag) is peeled where a bare line starts too, after the
columns, and several may follow each other (`2025-...Z (WorkerDict pid=1) ...`); a SUFFIX is
what a tool appends (Ray's `[repeated 3x across cluster]`), cut from the line's end. The order
of the rows is the order the alternatives are tried. Tests: tests/input/test_wrappers.py (each row's
example, wrapped around synthetic SGLang lines).

Import-light (`re` only): the scanner's worker process imports it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Wrapper:
    """One shape a tool puts before each line."""

    name: str
    kind: str
    """COLUMN, STAMP or SUFFIX (the module docstring)."""
    pattern: str
    """Regex of the shape at the line's start (str; compiled for str and for bytes)."""
    example: str
    """A synthetic instance of the shape, as the tool prints it."""
    source: str
    """Where the shape comes from."""


COLUMN = "column"
STAMP = "stamp"
SUFFIX = "suffix"
RECORD = "record"

WRAPPERS: tuple[Wrapper, ...] = (
    Wrapper(
        "markdown quote",
        COLUMN,
        r"[ \t]{0,8}(?:>[ \t]?)+",
        "  > > ",
        "CommonMark 0.31 §5.1 block quotes (GitHub comments, e-mail replies; nested: `> > `; "
        "indented inside a list item: `  > `)",
    ),
    Wrapper(
        "comment marker",
        COLUMN,
        r"#[ \t]+",
        "#   ",
        "a line quoted in a shell script or YAML comment",
    ),
    Wrapper(
        "markdown list bullet",
        COLUMN,
        r"[-*+][ \t]+(?=\[)",
        "- ",
        "CommonMark 0.31 §5.2 list items (`- `, `* `, `+ `): log lines pasted as a list, before "
        "a `[` only (an SGLang prefix, a bracketed tag); a bare line keeps its bullet here "
        "(memledger.input.pasted drops it and keeps the line as pasted for evidence), and "
        "Python logging's `- name - LEVEL - ` is never one",
    ),
    Wrapper(
        "docker compose service column",
        COLUMN,
        r"[\w.\-]+[ \t]+\|[ \t]",
        "sglang-1  | ",
        "docker compose logs (compose v2 `NAME-N  | `, v1 `NAME_N | `; `--no-log-prefix` drops "
        "it): docs.docker.com/reference/cli/docker/compose/logs/",
    ),
    Wrapper(
        "kubectl logs --prefix",
        COLUMN,
        r"\[pod/[^\]\s]+\][ \t]",
        "[pod/sglang-0/sglang] ",
        "kubectl logs --prefix (`[pod/NAME/CONTAINER] `): "
        "kubernetes.io/docs/reference/kubectl/generated/kubectl_logs/",
    ),
    Wrapper(
        "line number and tab",
        COLUMN,
        r" {0,6}\d{1,7}\t",
        "    12\t",
        "`cat -n` (GNU coreutils: width 6, then a tab) and `nl`",
    ),
    Wrapper(
        "line-number gutter",
        COLUMN,
        r" {0,7}\d{1,7} (?:\||│) ",
        "  12 | ",
        "an editor's or viewer's line-number gutter copied with the text (`bat -n` prints "
        "`  12 │ `; web code viewers and editors `  12 | `)",
    ),
    Wrapper(
        "grep -n / srun --label",
        COLUMN,
        r"\d{1,7}[:-](?=[A-Za-z\[ ])",
        "12:",
        "`grep -n` (`N:` on a match, `N-` on context); slurm `srun --label` prefixes each line "
        "with its task rank and `: ` (slurm.schedmd.com/srun.html#OPT_label); never a number "
        "of the message (`88`, `12:00:00`, `4 GB`)",
    ),
    Wrapper(
        "CRI container log",
        STAMP,
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"
        r" (?:stdout|stderr) [FP] ",
        "2025-06-01T10:00:00.123456789Z stderr F ",
        "the CRI log format containerd and CRI-O write under /var/log/pods (`TIME STREAM TAG "
        "LOG`, tag F a full line, P a partial one): kubernetes/design-proposals-archive "
        "node/kubelet-cri-logging.md",
    ),
    Wrapper(
        "RFC 3339 timestamp",
        STAMP,
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})? ?",
        "2025-06-01T10:00:00.123456789Z ",
        "kubectl logs --timestamps and docker logs -t (RFC3339Nano); Python logging's "
        "`%(asctime)s` (`2025-06-01 10:00:00,123`)",
    ),
    Wrapper(
        "Python logging name and level",
        STAMP,
        r"- (?:[\w.<>\-]+ - )?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) - ",
        "- sglang - INFO - ",
        "Python logging `%(asctime)s - %(name)s - %(levelname)s - %(message)s` after its "
        "timestamp (as allenai/olmocr#105 wraps SGLang's lines)",
    ),
    Wrapper(
        "Ray worker prefix",
        STAMP,
        r"\([\w.\-]+ pid=\d+(?:, ip=[\d.]+)?\) ?",
        "(TaskRunner pid=1234, ip=10.0.0.1) ",
        "Ray's driver prefix for a worker's or actor's output (`(ActorName pid=N, ip=A)`, the ip "
        "on a multi-node cluster): docs.ray.io/en/latest/ray-observability/user-guides/"
        "configure-logging.html; verl's `(WorkerDict pid=N)`",
    ),
    Wrapper(
        "syslog-style timestamp",
        STAMP,
        r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? ",
        "Jun 01 10:00:00 ",
        "moreutils `ts` (default format `%b %d %H:%M:%S`, man ts(1)): a terminal's output piped "
        "through it; the RFC 3164 stamp without a host",
    ),
    Wrapper(
        "journald short",
        STAMP,
        r"(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? )?[\w.\-]+ [\w\-.@/]+\[\d+\]: ?",
        "Jun 01 10:00:00 host sglang[1234]: ",
        "journalctl -o short / short-precise (`Mon DD HH:MM:SS[.us] HOST IDENT[PID]: `; -o "
        "short-iso starts with an RFC 3339 stamp, the row above): man journalctl(1), --output",
    ),
)
"""Every shape, COLUMNs first (the order they are tried)."""

SUFFIXES: tuple[Wrapper, ...] = (
    Wrapper(
        "Ray log deduplication",
        SUFFIX,
        r" ?\[repeated \d{1,9}x across cluster\]$",
        " [repeated 3x across cluster]",
        "Ray's driver prints a line that several workers logged alike once, with this count "
        "after it (log deduplication, RAY_DEDUP_LOGS=1 by default): docs.ray.io/en/latest/"
        "ray-observability/user-guides/configure-logging.html",
    ),
)
"""What a tool puts after a line; each ends with SUFFIX_END (a cheap test before the regex)."""

RECORDS: tuple[Wrapper, ...] = (
    Wrapper(
        "docker json-file record",
        RECORD,
        r'\{"log"',
        '{"log"',
        'docker\'s default json-file logging driver (a line as `{"log":"LINE\\n","stream":'
        '"stderr","time":"..."}` in /var/lib/docker/containers/ID/ID-json.log): '
        "docs.docker.com/engine/logging/drivers/json-file/",
    ),
)
"""A line a tool stored inside a record of its own: the record is decoded, its line read."""
RECORD_START = '{"log"'

SUFFIX_END = "cluster]"


def _union(kind: str) -> str:
    return "|".join(w.pattern for w in WRAPPERS if w.kind == kind)


COLUMN_PATTERN = _union(COLUMN)
"""One COLUMN row, as a regex alternation."""
STAMP_PATTERN = rf"(?:{_union(STAMP)})+"
"""A run of STAMP rows."""

SUFFIX_PATTERN = "|".join(w.pattern for w in SUFFIXES)
"""One SUFFIX row, as a regex alternation (anchored at the line's end)."""
_SUFFIX_TEXT = re.compile(SUFFIX_PATTERN)
_SUFFIX_BYTES = re.compile(SUFFIX_PATTERN.encode())
_SUFFIX_END_BYTES = SUFFIX_END.encode()

MAX_COLUMNS = 4
"""Columns peeled per line (`> sglang-1  | 2025-...Z [...]` has three)."""

_PEEL_BYTES = re.compile(f"{COLUMN_PATTERN}|{STAMP_PATTERN}".encode()).match
ANSI_PATTERN = r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
"""ANSI escape sequences (ECMA-48 CSI, OSC and two-byte escapes): the colours a terminal, docker
compose's service column, Ray's worker prefix or a logger printed."""
_ANSI_BYTES = re.compile(ANSI_PATTERN.encode())


def unwrapped_bytes(raw: bytes) -> bytes:
    """A physical line without what a tool put around it: ANSI codes, a line end's CR, and up
    to MAX_COLUMNS wrapper columns at its start. For the scanner's slow path only (a line that
    looks glued): a line that needs none of it is returned as is."""
    if b"\x1b" in raw:
        raw = _ANSI_BYTES.sub(b"", raw)
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if raw.endswith(_SUFFIX_END_BYTES):
        raw = _SUFFIX_BYTES.sub(b"", raw, count=1)
    for _ in range(MAX_COLUMNS):
        column = _PEEL_BYTES(raw)
        if column is None or not column.end():
            break
        raw = raw[column.end() :]
    return raw


_PEEL_TEXT = re.compile(f"{COLUMN_PATTERN}|{STAMP_PATTERN}").match
_ANSI_TEXT = re.compile(ANSI_PATTERN)


def unwrapped_text(line: str) -> str:
    """`unwrapped_bytes` of a decoded line, and only what follows its last CR (a terminal shows
    the last state a CR redrew: a progress bar's states before a line are gone)."""
    line = unwrapped_record(line)
    if "\x1b" in line:
        line = _ANSI_TEXT.sub("", line)
    line = without_suffix(line.rstrip("\r"))
    line = line[line.rfind("\r") + 1 :]
    for _ in range(MAX_COLUMNS):
        column = _PEEL_TEXT(line)
        if column is None or not column.end():
            break
        line = line[column.end() :]
    return line


def without_suffix(text: str) -> str:
    """The line without what a tool put after it (a SUFFIX row)."""
    if text.endswith(SUFFIX_END):
        return _SUFFIX_TEXT.sub("", text, count=1)
    return text


def unwrapped_record(text: str) -> str:
    """The line a RECORDS row holds (`{"log":"LINE\n",...}` -> `LINE`), else the text as is
    (json.loads runs no code; a record too deep or no JSON is left as is)."""
    if not text.startswith(RECORD_START) or not text.rstrip().endswith("}"):
        return text
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return record["log"].rstrip("\n") if is_log_record(record) else text


def is_log_record(document: object) -> bool:
    """Whether a decoded JSON value is a RECORDS row's record (a `log` string in an object)."""
    return isinstance(document, dict) and isinstance(document.get("log"), str)
