"""The JSON document of `memledger parse --format json` (versioned); built from a parsed log by
`memledger.input.facts.parse_document`, rendered by `memledger.render.parse`."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from memledger.model.events import Event, ParamValue, RankInfo, UnrecognisedLine
from memledger.record import record

PARSE_SCHEMA_VERSION = 1

_SHOWN_EMPTY: dict[str, Any] = {"json_schema_extra": {"default": []}}
"""A list field that starts empty, its default stated in the schema as `[]`."""


@record
class Outcome:
    """How the startup ended and the line that decided it."""

    outcome: str
    line: int | None
    text: str


@record
class Coverage:
    """Memory-looking lines of the selected rank that matched no known shape (or held garbage)."""

    count: int
    listed: list[UnrecognisedLine]
    skipped_count: int = 0
    """Memory-looking lines that were not read (bare lines of a prefixed input)."""
    skipped: list[UnrecognisedLine] = field(default_factory=list, metadata=_SHOWN_EMPTY)
    """The first of them, each with why."""


@record
class ParseDocument:
    """The JSON document of `memledger parse --format json` (versioned)."""

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
    notes: list[str] = field(default_factory=list, metadata=_SHOWN_EMPTY)
    """How the input was read where the default rules did not apply (see ParsedLog.notes)."""
