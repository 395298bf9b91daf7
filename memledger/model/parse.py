"""The JSON document of `memledger parse --format json` (versioned) and how it is built from a
parsed log; the renderers are in `memledger.render.parse`."""

from __future__ import annotations

from typing import Any

from memledger.input.facts import facts_of
from memledger.model.events import Event, ParamValue, ParsedLog, RankInfo, UnrecognisedLine
from memledger.record import ConfigDict, Record

PARSE_SCHEMA_VERSION = 1


class Outcome(Record):
    """How the startup ended and the line that decided it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: str
    line: int | None
    text: str


class Coverage(Record):
    """Memory-looking lines of the selected rank that matched no known shape (or held garbage)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    listed: list[UnrecognisedLine]
    skipped_count: int = 0
    """Memory-looking lines that were not read (bare lines of a prefixed input)."""
    skipped: list[UnrecognisedLine] = []
    """The first of them, each with why."""


class ParseDocument(Record):
    """The JSON document of `memledger parse --format json` (versioned)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = PARSE_SCHEMA_VERSION
    path: str
    n_lines: int
    invalid_utf8_bytes: int
    n_startups: int
    selected_startup: int
    first_line: int
    last_line: int
    rank: str
    outcome: Outcome
    facts: dict[str, Any]
    events: list[Event]
    server_args: dict[str, ParamValue]
    coverage: Coverage
    ranks: list[RankInfo]
    notes: list[str] = []
    """How the input was read where the default rules did not apply (see ParsedLog.notes)."""


def parse_document(parsed: ParsedLog) -> ParseDocument:
    """The JSON document of a parsed log."""
    startup = parsed.startup
    return ParseDocument(
        path=parsed.path,
        n_lines=parsed.n_lines,
        invalid_utf8_bytes=parsed.invalid_utf8_bytes,
        n_startups=parsed.n_startups,
        selected_startup=parsed.selected,
        first_line=startup.first_line,
        last_line=startup.last_line,
        rank=startup.rank,
        outcome=Outcome(
            outcome=startup.outcome, line=startup.outcome_line, text=startup.outcome_text
        ),
        facts=facts_of(parsed),
        events=startup.events,
        server_args=startup.server_args,
        coverage=Coverage(
            count=startup.unrecognised_count,
            listed=startup.unrecognised,
            skipped_count=startup.skipped_count,
            skipped=startup.skipped,
        ),
        ranks=startup.ranks,
        notes=parsed.notes,
    )
