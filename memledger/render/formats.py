"""Format registries: one per command, the single list its `--format` choices, help text and
renderer lookup come from (pip-audit's `to_format`, check-jsonschema's `REPORTER_BY_NAME`).

A format is a factory: it takes the command's render options (sort order, markdown marker, an
`--explain` target ...) and returns the `model -> str` renderer, so an option that only one
format understands lives in that format's constructor, not in every signature.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from memledger.errors import ConfigError
from memledger.record import to_dict
from memledger.render.escape import Destination, finish
from memledger.render.terminal import Terminal

K = TypeVar("K", bound=StrEnum)
O = TypeVar("O")  # noqa: E741 - the render options of a command
M = TypeVar("M")


def choose(kind: type[K], name: str, what: str = "format") -> K:
    """The member of `kind` called `name`; ConfigError listing the choices otherwise.

    Every picker (formats, sort keys, schema names) goes through here, so a bad name is always
    a one-line usage error (exit 2).
    """
    if isinstance(name, kind):
        return name
    try:
        return kind(name)
    except ValueError:
        choices = ", ".join(member.value for member in kind)
        raise ConfigError(f"unknown {what} {name!r}; choose one of {choices}") from None


DESTINATION_OF: dict[str, Destination] = {
    "text": Destination.TERMINAL,
    "markdown": Destination.MARKDOWN,
    "github": Destination.GITHUB,
    "json": Destination.JSON,
    "junit": Destination.JUNIT,
    "csv": Destination.CSV,
    "html": Destination.HTML,
}
"""Where each format name's output goes (a format of another name must say so itself)."""


@dataclass(frozen=True)
class Format(Generic[O, M]):
    """One output format: how to build its renderer from the options, and one help phrase."""

    make: Callable[[O], Callable[[M], str]]
    help: str
    destination: Destination | None = None
    """How its output is made inert (memledger.render.escape); None: by the format's name."""


class Formats(Generic[K, O, M]):
    """A command's formats, keyed by its enum; every member must have an entry."""

    def __init__(self, kind: type[K], entries: Mapping[K, Format[O, M]]) -> None:
        missing = [member.value for member in kind if member not in entries]
        if missing:
            raise TypeError(f"{kind.__name__}: no renderer for {', '.join(missing)}")
        self.kind = kind
        self.entries = dict(entries)
        self.destinations: dict[K, Destination] = {}
        for member, entry in self.entries.items():
            destination = entry.destination or DESTINATION_OF.get(member.value)
            if destination is None:
                raise TypeError(f"{kind.__name__}.{member.name}: say where its output goes")
            self.destinations[member] = destination

    @property
    def names(self) -> list[str]:
        """The `--format` choices, in registry order."""
        return [member.value for member in self.entries]

    @property
    def help(self) -> str:
        """`text: ...; json: ...`: the `--format` help text."""
        return "; ".join(f"{member.value}: {entry.help}" for member, entry in self.entries.items())

    def pick(self, name: str) -> K:
        """The format called `name` (ConfigError otherwise)."""
        return choose(self.kind, name)

    def renderer(self, name: str, options: O) -> Callable[[M], str]:
        """The renderer of the format called `name`, built with `options`; its output always
        passes the format's escaping (`memledger.render.escape.finish`)."""
        member = self.pick(name)
        render = self.entries[member].make(options)
        destination = self.destinations[member]
        return lambda model: finish(destination, render(model))


class ReportFormat(StrEnum):
    """The formats of a command whose answer is one record: `whatif`, `diff --against-release`."""

    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"


def report_formats(
    text: Callable[[M, Terminal], str], markdown: Callable[[M], str]
) -> Formats[ReportFormat, Terminal, M]:
    """The registry of a one-record answer: its text (fitted to the terminal) and markdown
    renderers, and the record itself as indented JSON."""

    def as_json(answer: M) -> str:
        return json.dumps(to_dict(answer, mode="json"), indent=2) + "\n"

    return Formats(
        ReportFormat,
        {
            ReportFormat.TEXT: Format(
                lambda terminal: lambda answer: text(answer, terminal), "terminal report"
            ),
            ReportFormat.MARKDOWN: Format(lambda _: markdown, "GitHub markdown"),
            ReportFormat.JSON: Format(lambda _: as_json, "machine-readable"),
        },
    )


PIECE_CHARS = 1 << 16
"""Streamed output is written in pieces of whole lines of about this size."""


def pieces(chunks: Iterable[str]) -> Iterator[str]:
    """The chunks regrouped into pieces of whole lines of about `PIECE_CHARS` characters (the
    escaping passes are per line; a piece of lines is one write)."""
    held: list[str] = []
    size = 0
    for chunk in chunks:
        held.append(chunk)
        size += len(chunk)
        if size >= PIECE_CHARS:
            text = "".join(held)
            end = text.rfind("\n") + 1
            if end:
                yield text[:end]
            held, size = [text[end:]], len(text) - end
    if held and (text := "".join(held)):
        yield text
