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

A copy also puts characters in place of the log's (a web page's no-break spaces, a chat's
zero-width spaces, smart quotes, a Chinese input method's full-width colon, HTML escapes): the
LOOKALIKES table, one row per character, read as the log's before anything else reads the bytes
(memledger.input.reader). A rendered page shows a traceback pasted without a code fence as
markdown, with `__init__` bold as `init`: the RENDERED table puts such names back in a frame that
lost its indentation (memledger.input.logical).

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
    """COLUMN, STAMP, SUFFIX or ENCLOSURE (the module docstring)."""
    pattern: str
    """Regex of the shape at the line's start (str; compiled for str and for bytes)."""
    example: str
    """A synthetic instance of the shape, as the tool prints it."""
    source: str
    """Where the shape comes from."""
    chance: bool = False
    """Text also starts so by chance (`28-w8a8`, a number and a dash): a line holding it starts
    a record of its own only where the line before it holds one too (memledger.input.rewrap)."""


COLUMN = "column"
STAMP = "stamp"
SUFFIX = "suffix"
ENCLOSURE = "enclosure"

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
        r" {0,3}(?:[-*+]|•)(?:[ \t]+(?=\[)|[ \t](?!(?:[\w.<>\-]+ - )?"
        r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) - ))",
        "- ",
        "CommonMark 0.31 §5.2 list items (`- `, `* `, `+ `, up to three spaces in when nested; "
        "`• ` from a rich-text copy): log lines pasted as a list, a bullet before every line "
        "of a log or a traceback. Before a "
        "`[` (an SGLang prefix) the blanks go with it; before a bare line one blank only, so a "
        "traceback's indentation stays (`-   File ...` is `  File ...`). Python logging's "
        "`- name - LEVEL - ` is never one",
    ),
    Wrapper(
        "markdown ordered list item",
        COLUMN,
        r" {0,3}\d{1,9}[.)](?:[ \t]+(?=\[)|[ \t])",
        "12. ",
        "CommonMark 0.31 §5.2 ordered list items (`1. `, `1) `: one to nine digits): log lines "
        "pasted as a numbered list; blanks as the bullet's (one before a bare line)",
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
        chance=True,
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
        "timestamp column",
        STAMP,
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?[ \t]+\|[ \t]"
        r"(?:(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)[ \t]*\|[ \t]"
        r"(?:[\w.<>\-]+:[\w.<>\-]+:\d+ - )?)?",
        "2025-06-01 10:00:00.123 | INFO     | runner:main:42 - ",
        "a timestamp and ` | ` before each line: loguru's default format (`{time:YYYY-MM-DD "
        "HH:mm:ss.SSS} | {level: <8} | {name}:{function}:{line} - {message}`, loguru "
        "_defaults.py LOGURU_FORMAT), as a launcher that logs a child server's output through "
        "loguru writes it, or with its level and place left out (`{time} | {message}`); a log "
        "viewer's time column copied with the line",
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
        r"\((?:[\w.:\-]+ )?(?:rank=\d+ )?pid=\d+(?:, ip=[\d.]+)?\) ?",
        "(TaskRunner pid=1234, ip=10.0.0.1) ",
        "Ray's driver prefix for a worker's or actor's output (`(ActorName pid=N, ip=A)`, the ip "
        "on a multi-node cluster; a task's or an older Ray's without a name, `(pid=N)`; a Ray "
        "Serve replica's `(ServeReplica:APP:DEPLOYMENT pid=N)`): "
        "docs.ray.io/en/latest/ray-observability/user-guides/configure-logging.html; verl's "
        "`(WorkerDict pid=N)`; a process tag of the same shape with a rank, `(VllmWorker rank=0 "
        "pid=N)` (vLLM's multiprocessing workers, read as vLLM's by memledger.input.vllm_reader)",
    ),
    Wrapper(
        "chat timestamp",
        STAMP,
        r"\[\d{1,2}:\d{2}(?::\d{2})? ?[AaPp]\.?[Mm]\.?\][ \t]?|\[\d{1,2}:\d{2}\][ \t]?",
        "[10:42 AM] ",
        "a chat client's time before a message, copied with each line (Slack's and Teams' `10:42 "
        "AM`, Discord's `[10:42 AM]`, a 24-hour `[10:42]`); never with seconds unless AM/PM "
        "follows: `[10:42:11]` is an SGLang prefix whose date a user cut (input.logical)",
    ),
    Wrapper(
        "GitHub Actions log command",
        STAMP,
        r"##\[(?:group|endgroup|section|command|error|warning|notice|debug)\]",
        "##[error]",
        "a GitHub Actions job log as its raw log shows it: `##[group]Run ...` and `##[endgroup]` "
        "around a step's output, `##[error]` / `##[warning]` before an annotated line, after "
        "the runner's timestamp (the workflow commands `::group::`, `::error::`: docs.github.com"
        "/actions/reference/workflows-and-actions/workflow-commands)",
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


@dataclass(frozen=True, slots=True)
class Record:
    """A JSON object a tool or a logger writes per line, one of whose keys holds the line."""

    name: str
    key: str
    """The key whose string is the line the engine printed."""
    example: str
    """A synthetic record (around `[TP0] x`), as the tool writes it."""
    source: str
    """Where the shape comes from."""


RECORDS: tuple[Record, ...] = (
    Record(
        "docker json-file record",
        "log",
        '{"log":"[TP0] x\\n","stream":"stderr","time":"2026-03-02T08:00:00.1Z"}',
        'docker\'s default json-file logging driver (a line as `{"log":"LINE\\n","stream":'
        '"stderr","time":"..."}` in /var/lib/docker/containers/ID/ID-json.log): '
        "docs.docker.com/engine/logging/drivers/json-file/; Fluent Bit's and Fluentd's `log` key",
    ),
    Record(
        "structured logger message",
        "message",
        '{"asctime": "2026-03-02 08:00:00", "levelname": "INFO", "message": "[TP0] x"}',
        "a JSON formatter on Python's logging (python-json-logger's JsonFormatter puts the "
        "record's message under `message`), and Google Cloud Logging's structured `message` "
        "(cloud.google.com/logging/docs/structured-logging): a launcher that logs the server's "
        "output as JSON lines",
    ),
    Record(
        "journald JSON",
        "MESSAGE",
        '{"__CURSOR": "s=1", "_PID": "7", "PRIORITY": "6", "MESSAGE": "[TP0] x"}',
        "journalctl -o json / json-pretty's one object per entry, the line under `MESSAGE` "
        "(man journalctl(1), --output; systemd.journal-fields(7))",
    ),
    Record(
        "Cloud Logging text payload",
        "textPayload",
        '{"textPayload": "[TP0] x", "resource": {"type": "k8s_container"}, "severity": "INFO"}',
        "a container's line as Google Cloud Logging exports it (LogEntry.textPayload: "
        "cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry)",
    ),
    Record(
        "msg key",
        "msg",
        '{"level": "info", "ts": 1767340800.1, "msg": "[TP0] x"}',
        "JSON loggers that name the message `msg` (Go's log/slog JSONHandler and zap, Node's "
        "pino, a log shipper re-emitting a container's line)",
    ),
)
"""A line a tool stored inside a record of its own (one JSON object per line): the record is
decoded, the first of these keys that holds a string is the line read (so a record holding
both `log` and `message` gives its `log`)."""
RECORD_START = "{"

ENCLOSURES: tuple[Wrapper, ...] = (
    Wrapper(
        "markdown inline code",
        ENCLOSURE,
        r"(?P<fence>`{1,8})(?!`)(?P<inner>.+?)(?<!`)(?P=fence)[ \t]*",
        "`[2026-01-03 10:42:11 TP0] KV Cache is allocated. #tokens: 1024`",
        "CommonMark 0.31 §6.1 code spans: each line of a log quoted as inline code, most often "
        "one per list item (`` - `LINE` ``), as a chat or an issue form renders it; only a "
        "whole line is one (a sentence that quotes a flag keeps its backticks). A line that "
        "holds a backtick is fenced by a longer run, and then padded with a space on each "
        "side, which the span drops (``` `` LINE ` WITH ONE `` ```)",
    ),
)
"""What a paste put around a whole line (after its columns): the line is its `inner` group. A
row's pattern is matched against the whole rest of the line."""

SUFFIX_END = "cluster]"


@dataclass(frozen=True, slots=True)
class Lookalike:
    """A character a copy put in place of the one the log printed."""

    name: str
    text: str
    """What the paste holds."""
    plain: str
    """What the log printed (empty: nothing, the character was added)."""
    source: str
    """Where the character comes from."""


LOOKALIKES: tuple[Lookalike, ...] = (
    Lookalike(
        "no-break space",
        "\u00a0",
        " ",
        "a web page's or a rich-text editor's `&nbsp;` copied as text (a rendered GitHub or forum "
        "post, a chat client, a PDF); HTML 5 §13.5 named character references",
    ),
    Lookalike(
        "narrow no-break space",
        "\u202f",
        " ",
        "U+202F, which macOS and some locales put in times and numbers a page shows",
    ),
    Lookalike("figure space", "\u2007", " ", "U+2007, a rich-text editor's space between digits"),
    Lookalike(
        "ideographic space",
        "\u3000",
        " ",
        "U+3000, a Chinese or Japanese input method's full-width space",
    ),
    Lookalike(
        "zero-width space",
        "\u200b",
        "",
        "U+200B, which chat clients and web pages put into long words as a wrap point "
        "(Unicode 15 §23.2 Layout Controls)",
    ),
    Lookalike("zero-width non-joiner", "\u200c", "", "U+200C (Unicode 15 §23.2), as U+200B"),
    Lookalike("zero-width joiner", "\u200d", "", "U+200D (Unicode 15 §23.2), as U+200B"),
    Lookalike("word joiner", "\u2060", "", "U+2060 (Unicode 15 §23.2), as U+200B"),
    Lookalike(
        "byte-order mark",
        "\ufeff",
        "",
        "U+FEFF, a Windows editor's byte-order mark at the start of a saved paste, or a "
        "zero-width no-break space inside it",
    ),
    Lookalike("soft hyphen", "\u00ad", "", "U+00AD, a web page's hyphenation point"),
    Lookalike(
        "left single quotation mark",
        "\u2018",
        "'",
        "smart quotes: macOS, iOS, Word, Google Docs, Notion and Slack turn a typed or pasted "
        "`'` into `‘` or `’` and `\"` into `“` or `”`",
    ),
    Lookalike("right single quotation mark", "\u2019", "'", "smart quotes (the row above)"),
    Lookalike("left double quotation mark", "\u201c", '"', "smart quotes (the row above)"),
    Lookalike("right double quotation mark", "\u201d", '"', "smart quotes (the row above)"),
    Lookalike(
        "full-width colon",
        "\uff1a",
        ": ",
        "a Chinese input method's `：` (U+FF1A, Unicode's Halfwidth and Fullwidth Forms block) "
        "typed or converted for `:` in a paste",
    ),
    Lookalike("full-width comma", "\uff0c", ", ", "`，` (U+FF0C), as the full-width colon"),
    Lookalike("full-width left parenthesis", "\uff08", "(", "`（` (U+FF08), as the colon"),
    Lookalike("full-width right parenthesis", "\uff09", ")", "`）` (U+FF09), as the colon"),
    Lookalike(
        "HTML less-than",
        "&lt;",
        "<",
        "a log copied from a page's HTML source or an e-mail's, escaped for HTML (HTML 5 §13.5 "
        "named character references; Python's html.escape writes these five)",
    ),
    Lookalike("HTML greater-than", "&gt;", ">", "HTML-escaped (the row above)"),
    Lookalike("HTML quotation mark", "&quot;", '"', "HTML-escaped (the row above)"),
    Lookalike("HTML apostrophe", "&#x27;", "'", "HTML-escaped (html.escape's spelling)"),
    Lookalike("HTML apostrophe, decimal", "&#39;", "'", "HTML-escaped (GitHub's spelling)"),
    Lookalike("HTML named apostrophe", "&apos;", "'", "HTML-escaped (XML's spelling)"),
    Lookalike("HTML no-break space", "&nbsp;", " ", "HTML-escaped (the row above)"),
    Lookalike("HTML ampersand", "&amp;", "&", "HTML-escaped (read once: `&amp;lt;` is `&lt;`)"),
)
"""Every look-alike character, read as what the log printed (memledger.input.reader translates the
input a process reads itself); `&amp;` last (plain_bytes)."""

_PLAIN = tuple((row.text.encode(), row.plain.encode()) for row in LOOKALIKES)
_LOOKALIKE_LEADS = tuple(
    (lead, re.compile(re.escape(lead) + b"[" + re.escape(bytes(sorted(seconds))) + b"]"))
    for lead in dict.fromkeys(text[:1] for text, _ in _PLAIN)
    if (seconds := {text[1] for text, _ in _PLAIN if text[:1] == lead})
)
"""Each look-alike's first byte, and a regex for it with the byte after it: a block is searched
for a first byte (memchr), then for its pairs only where it holds one (UTF-8's lead byte of `█`
is the one of U+2000-U+20FF, on every line of a progress bar); a two-byte needle per look-alike
costs a block one slow scan each."""
LOOKALIKE_HOLD = max(len(text) for text, _ in _PLAIN) - 1
"""The most bytes a block's end can hold of a look-alike whose rest is in the next block."""


def plain_bytes(data: bytes) -> bytes:
    """Bytes with every look-alike replaced by what the log printed; bytes without any as is.
    A look for each first byte (_LOOKALIKE_LEADS), then, only in a block that holds one, a
    `replace` per look-alike present: memory stays a copy of the block however many there are.
    Read once: no row's plain text is another row's, and `&amp;` goes last, so `&amp;lt;` is
    `&lt;`. Never adds or removes a line end."""
    if not any(data.find(lead) >= 0 and pairs.search(data) for lead, pairs in _LOOKALIKE_LEADS):
        return data
    for text, plain in _PLAIN:
        if data.find(text) >= 0:
            data = data.replace(text, plain)
    return data


def lookalike_tail(data: bytes) -> int:
    """How many bytes at the end of a block may start a look-alike cut by the block's end (to be
    read with the next block): the longest such ending, else 0."""
    for size in range(min(LOOKALIKE_HOLD, len(data)), 0, -1):
        tail = data[-size:]
        if any(text.startswith(tail) and text != tail for text, _ in _PLAIN):
            return size
    return 0


@dataclass(frozen=True, slots=True)
class Rendered:
    """A Python name a rendered page shows in place of the one a traceback's frame printed: a
    log pasted without a code fence is read as markdown, and `__x__` is strong emphasis (bold
    `x`), so a copy of the page gives `x` back."""

    printed: str
    """What the frame printed (`__init__`)."""
    where: str
    """FUNCTION (the frame's `in NAME`) or MODULE (a path's last part, `NAME.py`)."""
    source: str


FUNCTION = "function"
MODULE = "module"
_EMPHASIS = (
    "CommonMark 0.31 §6.2: `__x__` is strong emphasis where it is left- and right-flanking (a "
    "word's start and end, or after `/` and before `.`), so GitHub shows it bold and a copy "
    "drops the underscores"
)

RENDERED: tuple[Rendered, ...] = (
    Rendered("__init__", FUNCTION, f"Python data model object.__init__; {_EMPHASIS}"),
    Rendered("__call__", FUNCTION, f"object.__call__ (torch.nn.Module, torch._ops); {_EMPHASIS}"),
    Rendered("__enter__", FUNCTION, f"a context manager's __enter__; {_EMPHASIS}"),
    Rendered("__exit__", FUNCTION, f"a context manager's __exit__; {_EMPHASIS}"),
    Rendered("__post_init__", FUNCTION, f"dataclasses' __post_init__ (ServerArgs); {_EMPHASIS}"),
    Rendered("__new__", FUNCTION, f"object.__new__; {_EMPHASIS}"),
    Rendered("__getattr__", FUNCTION, f"object.__getattr__; {_EMPHASIS}"),
    Rendered(
        "__torch_function__",
        FUNCTION,
        f"torch's __torch_function__ override (torch/utils/_device.py); {_EMPHASIS}",
    ),
    Rendered("__torch_dispatch__", FUNCTION, f"torch's __torch_dispatch__; {_EMPHASIS}"),
    Rendered("__init__", MODULE, f"a package's __init__.py (torch/cuda/__init__.py); {_EMPHASIS}"),
    Rendered("__main__", MODULE, f"a package's __main__.py (`python -m`); {_EMPHASIS}"),
)
"""Every name a rendered page shows without its underscores, restored in a traceback frame that
lost its indentation (Python's traceback module prints two blanks before `File`: a frame at the
line's start was copied from a page, which drops a line's leading blanks too)."""

_RENDERED_FUNCTION = re.compile(
    r", in ("
    + "|".join(re.escape(r.printed.strip("_")) for r in RENDERED if r.where == FUNCTION)
    + r")\s*$"
)
_RENDERED_MODULE = re.compile(
    r"/("
    + "|".join(re.escape(r.printed.strip("_")) for r in RENDERED if r.where == MODULE)
    + r')\.py", line '
)


def unrendered_frame(text: str) -> str:
    """A traceback frame's line with the RENDERED names a page showed bold put back, when the
    line starts with `File "` (its indentation lost: a page's copy); else the text as is."""
    if not text.startswith('File "'):
        return text
    text = _RENDERED_MODULE.sub(lambda m: f'/__{m[1]}__.py", line ', text)
    return _RENDERED_FUNCTION.sub(lambda m: f", in __{m[1]}__", text)


@dataclass(frozen=True, slots=True)
class Encoding:
    """A text encoding a tool saved a log in, told by the byte-order mark it starts with."""

    name: str
    bom: bytes
    codec: str
    """Python's codec (it drops the mark)."""
    source: str


ENCODINGS: tuple[Encoding, ...] = (
    Encoding(
        "UTF-16 little-endian",
        b"\xff\xfe",
        "utf-16",
        "Windows PowerShell 5.1 saves a redirected command's output (`> log.txt`, Out-File) as "
        "UTF-16LE with a byte-order mark: learn.microsoft.com/powershell/module/"
        "microsoft.powershell.core/about/about_character_encoding ('Unicode' in 5.1); Notepad's "
        "'UTF-16 LE' (its 'Unicode')",
    ),
    Encoding(
        "UTF-16 big-endian",
        b"\xfe\xff",
        "utf-16",
        "UTF-16 with a big-endian byte-order mark (Unicode 15 §23.8; Notepad's 'UTF-16 BE')",
    ),
)
"""Encodings other than UTF-8 that a log is read in (memledger.input.reader re-encodes it)."""


def encoding_of(head: bytes) -> Encoding | None:
    """The ENCODINGS row whose byte-order mark starts the input, else None (UTF-8)."""
    return next((row for row in ENCODINGS if head.startswith(row.bom)), None)


def _union(kind: str, chance: bool | None = None) -> str:
    return "|".join(w.pattern for w in WRAPPERS if w.kind == kind and chance in (None, w.chance))


COLUMN_PATTERN = _union(COLUMN)
"""One COLUMN row, as a regex alternation."""
SURE_COLUMN_PATTERN = _union(COLUMN, chance=False)
"""One COLUMN row text never starts with by chance."""
CHANCE_COLUMN_PATTERN = _union(COLUMN, chance=True)
"""One COLUMN row text may start with by chance (`Wrapper.chance`)."""
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
ENCLOSURE_PATTERN = "|".join(w.pattern for w in ENCLOSURES)
"""One ENCLOSURES row, as a regex alternation (matched against a whole line)."""
ENCLOSURE_STARTS = "".join(dict.fromkeys(w.example[0] for w in ENCLOSURES))
"""The characters an enclosure starts with (a cheap test before the regex)."""
_ENCLOSED_TEXT = re.compile(ENCLOSURE_PATTERN)
_ENCLOSED_BYTES = re.compile(ENCLOSURE_PATTERN.encode())
_ENCLOSURE_STARTS_BYTES = ENCLOSURE_STARTS.encode()


def unenclosed(text: str) -> str | None:
    """The line an ENCLOSURES row put around the whole of `text`, else None."""
    if not text or text[0] not in ENCLOSURE_STARTS:
        return None
    whole = _ENCLOSED_TEXT.fullmatch(text.rstrip("\r"))
    if whole is None:
        return None
    inner, fence = whole.group("inner", "fence")
    if _closes(inner, fence):  # a run as long as the fence closed the span before the end
        return None
    padded = inner[:1] == inner[-1:] == " " and inner.strip(" ")
    return inner[1:-1] if padded else inner


def _closes(inner: str, fence: str) -> bool:
    """Whether a backtick run exactly as long as the fence is inside (CommonMark: it ends the
    span there, `` `a` and `b` `` is two spans)."""
    return fence in inner and any(len(run) == len(fence) for run in re.findall("`+", inner))


def _unenclosed_bytes(raw: bytes) -> bytes | None:
    if not raw or raw[:1] not in _ENCLOSURE_STARTS_BYTES:
        return None
    whole = _ENCLOSED_BYTES.fullmatch(raw)
    if whole is None:
        return None
    inner, fence = whole.group("inner", "fence")
    if _closes(inner.decode("latin-1"), fence.decode()):
        return None
    padded = inner[:1] == inner[-1:] == b" " and inner.strip(b" ")
    return inner[1:-1] if padded else inner


def enclosed_line(line: str) -> str | None:
    """The line an ENCLOSURES row holds behind the columns before it (`` - `LINE` `` ->
    `LINE`, nothing peeled inside it), else None: for a reader that keeps what a line starts
    with (a process tag) and only needs the line out of its enclosure."""
    for _ in range(MAX_COLUMNS + 1):
        inner = unenclosed(line)
        if inner is not None:
            return inner
        column = _PEEL_TEXT(line)
        if column is None or not column.end():
            return None
        line = line[column.end() :]
    return None


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
        raw = raw.rstrip(b"\r")
    if raw.endswith(_SUFFIX_END_BYTES):
        raw = _SUFFIX_BYTES.sub(b"", raw, count=1)
    enclosed = False
    for _ in range(MAX_COLUMNS):
        column = _PEEL_BYTES(raw)
        if column is None or not column.end():
            inner = None if enclosed else _unenclosed_bytes(raw)
            if inner is None:
                break
            raw, enclosed = inner, True
            continue
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
    return without_columns(line[line.rfind("\r") + 1 :])


def without_columns(line: str) -> str:
    """The line without up to MAX_COLUMNS columns and stamps at its start, and without an
    ENCLOSURES row around what they leave (once: `` - `LINE` ``)."""
    enclosed = False
    for _ in range(MAX_COLUMNS):
        column = _PEEL_TEXT(line)
        if column is None or not column.end():
            inner = None if enclosed else unenclosed(line)
            if inner is None:
                break
            line, enclosed = inner, True
            continue
        line = line[column.end() :]
    return line


def without_suffix(text: str) -> str:
    """The line without what a tool put after it (a SUFFIX row)."""
    if text.endswith(SUFFIX_END):
        return _SUFFIX_TEXT.sub("", text, count=1)
    return text


def unwrapped_record(text: str) -> str:
    """The line a RECORDS row holds (`{"log":"LINE\\n",...}` -> `LINE`), else the text as is
    (json.loads runs no code; a record too deep or no JSON is left as is)."""
    if not text.startswith(RECORD_START) or not text.rstrip().endswith("}"):
        return text
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return text
    line = record_line(record)
    return text if line is None else line.rstrip("\n")


def record_line(document: object) -> str | None:
    """The line a decoded JSON value holds as a RECORDS row's record, else None."""
    if isinstance(document, dict):
        for row in RECORDS:
            line = document.get(row.key)
            if isinstance(line, str):
                return line
    return None


def is_log_record(document: object) -> bool:
    """Whether a decoded JSON value is a RECORDS row's record (a line under one of their keys)."""
    return record_line(document) is not None
