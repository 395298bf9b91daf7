"""The JSON document of `memledger parse --format json` (versioned); built from a parsed log by
`memledger.input.facts.parse_document`, rendered by `memledger.render.parse`."""

from __future__ import annotations

from typing import Any

from memledger.model.events import Event, ParamValue, RankInfo, UnrecognisedLine
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
