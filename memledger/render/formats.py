"""Format registries: one per command, the single list its `--format` choices, help text and
renderer lookup come from (pip-audit's `to_format`, check-jsonschema's `REPORTER_BY_NAME`).

A format is a factory: it takes the command's render options (sort order, markdown marker, an
`--explain` target ...) and returns the `model -> str` renderer, so an option that only one
format understands lives in that format's constructor, not in every signature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

from memledger.errors import ConfigError

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


@dataclass(frozen=True)
class Format(Generic[O, M]):
    """One output format: how to build its renderer from the options, and one help phrase."""

    make: Callable[[O], Callable[[M], str]]
    help: str


class Formats(Generic[K, O, M]):
    """A command's formats, keyed by its enum; every member must have an entry."""

    def __init__(self, kind: type[K], entries: Mapping[K, Format[O, M]]) -> None:
        missing = [member.value for member in kind if member not in entries]
        if missing:
            raise TypeError(f"{kind.__name__}: no renderer for {', '.join(missing)}")
        self.kind = kind
        self.entries = dict(entries)

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
        """The renderer of the format called `name`, built with `options`."""
        return self.entries[self.pick(name)].make(options)
