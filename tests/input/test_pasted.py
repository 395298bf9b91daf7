"""Pasted input (issue 11): bare lines, annotations, ellipses, one line, another rank's lines.

Every input here is rewritten in the test from a real log of ../shared/real-logs (prefixes
stripped, notes added, lines cut); nothing of the corpus is copied into the repository.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memledger.input.facts import FACT_KEYS, facts_of
from memledger.input.logical import split_physical_line
from memledger.input.parsing import parse_log
from memledger.input.ranks import is_rank0_tag
from memledger.model.events import EventKind, ParsedLog
from tests.conftest import run_cli
from tests.input.helpers import physical_lines, real_log, truth_facts

pytestmark = pytest.mark.real_logs

# Memory facts a paste keeps (the README's facts, memledger.input.facts.FACT_KEYS, without the ones
# that describe the file, rank_tag and n_startups, and without the draft and outcome facts).
MEMORY_FACTS = tuple(
    key
    for key in FACT_KEYS
    if key not in {"rank_tag", "n_startups", "outcome"} and not key.startswith("draft_")
)
# Single-startup logs of different shapes and releases (docker prefix, no tag, old format, TP2).
LOGS = [
    "single/001-docker-r1-distill-qwen7b-3090",
    "single/003-qwen3-14b-tp2-a4500-truncated",
    "single/012-qwen25-3b-tp1-notag-nohup-nocudagraph",
    "single/020-qwen3-0.6b-tp1-notag-wsl-0.4.6.post2",
    "single/022-grok2-tp8-h100-k8s-v0.5.2rc2",
]


def _rank0_messages(path: Path) -> list[str]:
    """The log as a user copies rank 0's messages out of a terminal: prefixes stripped."""
    return [
        logical.text
        for number, text in enumerate(physical_lines(path), start=1)
        for logical in split_physical_line(number, text)
        if logical.prefixed and (not logical.rank or is_rank0_tag(logical.rank))
    ]


def _write(tmp_path: Path, lines: list[str], name: str = "paste.txt") -> Path:
    target = tmp_path / name
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def _memory_facts(parsed: ParsedLog) -> dict[str, Any]:
    facts = facts_of(parsed)
    return {key: facts[key] for key in MEMORY_FACTS}


def _expected(name: str) -> dict[str, Any]:
    truth = truth_facts(real_log(name))
    return {key: truth[key] for key in MEMORY_FACTS}


def _pasted_note(parsed: ParsedLog) -> int:
    found = [re.fullmatch(r"no SGLang prefix: read (\d+) pasted lines?", n) for n in parsed.notes]
    counts = [int(m.group(1)) for m in found if m]
    assert len(counts) == 1, parsed.notes
    return counts[0]


@pytest.mark.parametrize("name", LOGS)
def test_bare_messages_read_as_the_prefixed_log(name: str, tmp_path: Path) -> None:
    messages = _rank0_messages(real_log(name))
    parsed = parse_log(_write(tmp_path, messages))
    assert _memory_facts(parsed) == _expected(name)
    memory_events = [e for e in parsed.startup.events if e.kind is not EventKind.SERVER_ARGS]
    assert _pasted_note(parsed) >= len({e.line for e in memory_events}) > 0
    assert parsed.startup.outcome == truth_facts(real_log(name))["outcome"]


@pytest.mark.parametrize("name", LOGS)
def test_aligned_annotated_and_abridged_pastes(name: str, tmp_path: Path) -> None:
    rewritten: list[str] = []
    for message in _rank0_messages(real_log(name)):
        line = message.replace(", ", ",    ")  # column alignment
        line = re.sub(r"\btype=[\w.]+", "type=...", line)  # a value the user elided
        line = line.replace("This can take up to several minutes.", "...")  # abridged
        if "avail mem=" in line:
            line += "   <- here"  # the user's note
        rewritten.append("    " + line)  # indented, as in a quote
    parsed = parse_log(_write(tmp_path, rewritten))
    assert _memory_facts(parsed) == _expected(name)


def test_one_pasted_line(tmp_path: Path) -> None:
    name = "single/001-docker-r1-distill-qwen7b-3090"
    load_end = next(m for m in _rank0_messages(real_log(name)) if m.startswith("Load weight end"))
    parsed = parse_log(_write(tmp_path, [load_end + "  <- why so little?"]))
    assert [e.kind for e in parsed.startup.events] == [EventKind.LOAD_END]
    assert facts_of(parsed)["load_end_avail"] == truth_facts(real_log(name))["load_end_avail"]
    assert _pasted_note(parsed) == 1


def test_one_pasted_error_line_decides_the_outcome(tmp_path: Path) -> None:
    name = "single/015-qwen36-35b-a3b-awq-tp2-r9700-oom-load"
    # the allocator's message is a bare traceback line in the log; paste it alone
    error = next(line for line in physical_lines(real_log(name)) if "out of memory" in line)
    parsed = parse_log(_write(tmp_path, [error]))
    assert parsed.startup.outcome == "oom"
    assert any(e.kind is EventKind.OOM_MESSAGE for e in parsed.startup.events)
    assert _pasted_note(parsed) == 1


def test_the_cli_says_how_a_paste_was_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paste = _write(tmp_path, _rank0_messages(real_log(LOGS[0])))
    code, out, _ = run_cli(["parse", str(paste)], capsys)
    assert code == 0 and re.search(r"^note: +no SGLang prefix: read \d+ pasted lines$", out, re.M)
    code, out, _ = run_cli(["ledger", str(paste), "--format", "json"], capsys)
    assert code == 0 and any(n.startswith("no SGLang prefix: read ") for n in _notes(out))


def _notes(ledger_json: str) -> list[str]:
    import json

    notes: list[str] = json.loads(ledger_json)["notes"]
    return notes


def test_bare_lines_of_a_prefixed_log_are_listed_as_not_read(tmp_path: Path) -> None:
    log = real_log(LOGS[1])
    lines = physical_lines(log)
    at = next(i for i, line in enumerate(lines) if "Load weight end" in line)
    note = "Load weight end. avail mem=99.99 GB  (my own measurement)"
    rewritten = [*lines[:at], note, *lines[at:]]
    parsed = parse_log(_write(tmp_path, rewritten, "with-note.log"))
    assert _memory_facts(parsed) == _expected(LOGS[1])  # the bare line is not read ...
    assert parsed.notes == []
    skipped = {u.line: u for u in parsed.startup.skipped}
    assert at + 1 in skipped and skipped[at + 1].reason.startswith("skipped: no SGLang prefix")
    assert parsed.startup.skipped_count >= 1  # ... and coverage says so


# ---- another rank's lines --------------------------------------------------------------------

MULTI_RANK = "complex/017-rtx4090-qwen35-9b-tp2-hybrid-gdn-fragment"


def _without_rank0(path: Path) -> list[str]:
    kept: list[str] = []
    for number, text in enumerate(physical_lines(path), start=1):
        pieces = split_physical_line(number, text)
        if any(p.prefixed and is_rank0_tag(p.rank) for p in pieces):
            continue
        kept.append(text)
    return kept


def test_only_another_ranks_lines_are_read_and_said(tmp_path: Path) -> None:
    original = real_log(MULTI_RANK)
    other = parse_log(original).startup.ranks[-1].rank
    assert not is_rank0_tag(other)
    parsed = parse_log(_write(tmp_path, _without_rank0(original), "tp1.log"))
    assert parsed.startup.rank == other
    assert parsed.notes == [f"no rank 0 in this input: read {other}, the only rank present"]
    by_rank = parse_log(original, rank=other)
    assert _memory_facts(parsed) == _memory_facts(by_rank)
    assert parsed.startup.events  # the account has lines to work with


def test_two_fragments_of_different_ranks_are_said(tmp_path: Path) -> None:
    name = "complex/004-ascend-qwen3-480b-dp4-tp16-ep16-deepep-2node"
    original = real_log(name)
    ranks = [info.rank for info in parse_log(original).startup.ranks]
    first, second = ranks[1], ranks[2]
    lines = physical_lines(original)

    def of(rank: str) -> list[str]:
        return [
            text
            for number, text in enumerate(lines, start=1)
            if any(p.prefixed and p.rank == rank for p in split_physical_line(number, text))
        ]

    # the first half of one rank's lines, then the second half of another's
    head, tail = of(first), of(second)
    pasted = head[: len(head) // 2] + tail[len(tail) // 2 :]
    parsed = parse_log(_write(tmp_path, pasted, "fragments.log"))
    (note,) = parsed.notes
    assert note.startswith("no rank 0 in this input: 2 ranks present (")
    assert first in note and second in note and "fragments of different ranks" in note
    assert parsed.startup.rank in (first, second)


def test_error_text_under_a_traceback_is_read_not_listed_as_skipped() -> None:
    parsed = parse_log(real_log("single/015-qwen36-35b-a3b-awq-tp2-r9700-oom-load"))
    assert parsed.startup.outcome == "oom"
    assert not any("out of memory" in u.text for u in parsed.startup.skipped)
