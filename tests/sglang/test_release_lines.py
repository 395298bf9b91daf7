"""Coverage by release: every memory format string of SGLang 0.3.0 .. 0.5.23, rendered with
plausible values exactly as that release's logger prints it, parses into the right event.

The table is tests/data/sglang_release_lines.toml: one entry per distinct printed shape, with every
release (and file:line at that release) that prints it. Each entry is parsed under each prefix its
releases' `configure_logger` writes (see PREFIXES), through the whole pipeline (prefilter, prefix
split, grammar or error-text reader). An entry with `kind = ""` is a line memledger deliberately
does not read (its `why` says so): it must then give no event, so reading it later means updating
the table. Lines tqdm prints (`tqdm = true`) carry no prefix and a bar; raised messages
(`raised = "RuntimeError"`) come as the last line of a traceback logged by the scheduler.
"""

from __future__ import annotations

import io
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from memledger.input.parsing import parse_log
from memledger.model.events import Event, ParsedLog

TABLE = Path(__file__).parent.parent / "data" / "sglang_release_lines.toml"
ENTRIES: list[dict[str, Any]] = tomllib.loads(TABLE.read_text(encoding="utf-8"))["line"]

RELEASES = (
    "0.3.0 0.3.6 0.4.0 0.4.3 0.4.6 0.4.9 0.5.1 0.5.2 0.5.5 0.5.8 0.5.10 0.5.13 0.5.16 0.5.20 0.5.23"
).split()

_TAGS_BY_RELEASE: tuple[tuple[str, tuple[str, ...]], ...] = (
    # v0.3.0 utils.py:709-714 (datefmt %H:%M:%S), managers/tp_worker.py:882 (` TP{tp_rank}`)
    ("0.3.0", ("TP0", "TP3")),
    # v0.3.6 managers/scheduler.py:1397-1399, v0.4.6 :1985-2003: ` TP{n}` or ` DP{d} TP{n}`
    ("0.3.6", ("TP0", "DP1 TP3")),
    # v0.4.9 managers/scheduler.py:2691-2695: DP, TP, PP
    ("0.4.9", ("TP0", "DP1 TP3", "TP0 PP1")),
    # v0.5.1 managers/scheduler.py:2533-2539, v0.5.5 :2764-2770: DP, TP, EP, PP
    ("0.5.1", ("TP0", "DP1 TP3 EP3", "TP0 EP0 PP1")),
    # v0.5.8 managers/scheduler.py:2897-2903: DP, PP, TP, EP
    ("0.5.8", ("TP0", "DP1 TP3 EP3", "PP1 TP0 EP0")),
    # v0.5.10 managers/scheduler.py:3537-3547, v0.5.23 :6279-6291: DP, PP, ATTN_CP, MOE_DP, TP, EP
    ("0.5.10", ("TP0", "DP1 TP3 EP3", "DP1 PP1 ATTN_CP1 MOE_DP1 TP3 EP3")),
)


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def prefixes(release: str) -> list[str]:
    """Every prefix shape `configure_logger` writes at this release, and an untagged one."""
    tags = next(
        t for first, t in reversed(_TAGS_BY_RELEASE) if _version(release) >= _version(first)
    )
    if release == "0.3.0":
        stamps = ["17:52:52"]
    elif _version(release) >= (0, 5, 10):
        # SGLANG_LOG_MS adds milliseconds (v0.5.10 utils/common.py:1136-1137)
        stamps = ["2026-01-12 17:52:52", "2026-01-12 17:52:52.123"]
    else:
        stamps = ["2025-03-04 17:52:52"]
    return [f"[{stamp} {tag}] " for stamp in stamps for tag in tags] + [f"[{stamps[0]}] "]


def _releases(entry: dict[str, Any]) -> list[str]:
    return sorted({source.split()[0] for source in entry["sources"]}, key=_version)


def _cases() -> list[tuple[str, str, str]]:
    # each entry under every prefix of its first and its last release (the prefix shapes change
    # between releases, never within an entry's span in a way the two ends miss)
    cases = []
    for number, entry in enumerate(ENTRIES):
        releases = _releases(entry)
        for release in dict.fromkeys((releases[0], releases[-1])):
            styles = [""] if entry.get("tqdm") else prefixes(release)
            cases += [(f"{number}", release, style) for style in styles]
    return cases


def _log(entry: dict[str, Any], prefix: str) -> str:
    message = entry["message"]
    if entry.get("tqdm"):
        return f"{message}: 100%|##########| 4/4 [00:02<00:00,  1.50it/s]\n"
    if "raised" in entry:
        return (
            f"{prefix}Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2344, '
            "in run_scheduler_process\n"
            f"{entry['raised']}: {message}\n"
        )
    return f"{prefix}{message}\n"


def _parse(text: str) -> ParsedLog:
    return parse_log(io.BytesIO(text.encode()), label="release-line.log")


# kinds a line may add beside its own: the summary line means the server is up (`ready`), an
# allocator message is also an `oom`, a raised message leaves its traceback and a crash
_COMPANIONS = {"ready", "oom", "crash", "traceback"}


def _check(entry: dict[str, Any], events: list[Event], rank: str) -> None:
    kinds = [event.kind.value for event in events]
    if not entry["kind"]:
        assert not events, f"{entry['message']!r} is read now: update its entry ({kinds})"
        return
    own = [event for event in events if event.kind.value == entry["kind"]]
    assert len(own) == 1, (entry["message"], kinds)
    assert set(kinds) - {entry["kind"]} <= _COMPANIONS, kinds
    (event,) = own
    assert {key: size.text for key, size in event.sizes.items()} == entry["sizes"]
    assert {key: event.values.get(key, "<absent>") for key in entry["values"]} == entry["values"]
    assert event.rank == rank


@pytest.mark.parametrize(("number", "release", "prefix"), _cases())
def test_release_line_parses(number: str, release: str, prefix: str) -> None:
    entry = ENTRIES[int(number)]
    try:
        parsed = _parse(_log(entry, prefix))
    except Exception as exc:  # noqa: BLE001 - an unread line is "no SGLang lines found"
        assert not entry["kind"], f"{entry['message']!r}: {exc}"
        return
    rank = " ".join(w for w in prefix.strip("[] ").split(" ") if re.fullmatch(r"[A-Z_]+\d+", w))
    _check(entry, parsed.startup.events, rank)


def test_the_table_spans_the_releases_and_cites_each_source() -> None:
    cited = {source.split()[0] for entry in ENTRIES for source in entry["sources"]}
    assert cited == set(RELEASES)
    for entry in ENTRIES:
        for source in entry["sources"]:
            assert re.fullmatch(r"\d+\.\d+\.\d+ [\w/]+\.py:\d+", source), source
        if not entry["kind"]:
            assert entry.get("why"), entry["message"]


def test_a_release_log_reads_in_order() -> None:
    # one startup of v0.5.8, every line of it from the table in SGLang's order: the events come
    # out in the same order, each with its own numbers
    wanted = [
        "Init torch distributed begin.",
        "Load weight begin. avail mem=",
        "Load weight end. type=",
        "KV Cache is allocated. #tokens: ",
        "Memory pool end. avail mem=",
        "Capture cuda graph begin. ",
        "Capture cuda graph end. ",
        "max_total_num_tokens=",
    ]
    lines = []
    for start in wanted:
        entry = next(
            e
            for e in ENTRIES
            if e["message"].startswith(start)
            and "0.5.8" in _releases(e)
            and "KV size" not in e["message"]
        )
        lines.append((entry, f"[2025-09-01 10:00:00 TP0] {entry['message']}\n"))
    parsed = _parse("".join(text for _, text in lines))
    kinds = [e.kind.value for e in parsed.startup.events if e.kind.value != "ready"]
    assert kinds == [entry["kind"] for entry, _ in lines]
