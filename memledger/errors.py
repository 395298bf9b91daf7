"""Error hierarchy and the documented exit codes (the one table the help texts come from);
stdlib only."""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
"""Everything ran; for `check`, every budget passed (warnings allowed)."""
EXIT_BUDGET_FAILED = 1
"""`check` only: a fail-level budget was breached (or any breach with --strict), or a checked
startup ran out of memory or crashed."""
EXIT_USAGE = 2
"""Bad command line or option value; malformed config (budget, grammar, model config)."""
EXIT_INPUT = 3
"""Input not understood: missing/empty/binary file, no SGLang lines, unknown rank/startup,
a budgeted item the log cannot provide, or a log `whatif` cannot model (docs/whatif.md)."""
EXIT_INTERRUPTED = 130
"""Interrupted: Ctrl-C (128 + SIGINT); SIGTERM gives 143 (128 + 15)."""


@dataclass(frozen=True)
class ExitCode:
    """One documented exit code: what it means in general and for `check`."""

    code: int
    meaning: str
    """For every command (the `memledger --help` epilog)."""
    check_meaning: str
    """For `memledger check` (its `--help` epilog)."""
    verdict: str | None = None
    """The word `check` prints for a run that ends with this code."""


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(
        EXIT_OK,
        "ok",
        "every budget passed (warn-level and waived breaches allowed)",
        verdict="PASS",
    ),
    ExitCode(
        EXIT_BUDGET_FAILED,
        "check: a fail-level budget was breached, or a startup OOMed/crashed",
        "a fail-level breach (or any warn-level breach with --strict), or a\n"
        "startup that ran out of memory or crashed (one line: phase, shortfall)",
        verdict="FAIL",
    ),
    ExitCode(EXIT_USAGE, "usage or config error", "usage or budget-file error (file:line)"),
    ExitCode(
        EXIT_INPUT,
        "input not understood (missing/empty/binary file, no SGLang lines,\n"
        "unknown --rank/--startup, budget item the log cannot provide,\n"
        "a log whatif cannot model)",
        "a log not understood, a budgeted item this log cannot provide, nothing checked,\n"
        "or a --require-baseline baseline that does not exist",
        verdict="INCOMPLETE",
    ),
    ExitCode(EXIT_INTERRUPTED, "interrupted (Ctrl-C; 143 on SIGTERM)", "interrupted"),
)
"""Every exit code memledger documents, in order."""

CHECK_VERDICTS: dict[int, str] = {
    exit.code: exit.verdict for exit in EXIT_CODES if exit.verdict is not None
}
"""`check`'s one-word verdict per exit code (PASS, FAIL, INCOMPLETE)."""


def exit_codes_help(*, check: bool = False) -> str:
    """The `Exit codes:` block of a help epilog (click's `\\b` keeps its line breaks)."""
    lines = ["\b", "Exit codes:"]
    for exit in EXIT_CODES:
        meaning = exit.check_meaning if check else exit.meaning
        first, *rest = meaning.split("\n")
        lines.append(f"  {exit.code}  {first}")
        lines.extend(f"     {more}" for more in rest)
    return "\n".join(lines)


MESSAGE_CHARS = 1000
"""The longest error or note line memledger prints: a hostile value (a 40 KB version string, a
file name, a budget item) is shown by its start and end, never whole."""


def bounded(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text`, or its start and end around `…[N characters not shown]…` when longer than
    `limit` (the end often holds the hint: `... (see 'memledger diff --help')`)."""
    if len(text) <= limit:
        return text
    keep = max(limit - 40, 2)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    return f"{text[:head]}…[{len(text) - head - tail:,} characters not shown]…{text[-tail:]}"


class MemledgerError(Exception):
    """Root of every error memledger reports as one line; carries its exit code."""

    exit_code: int = EXIT_INPUT

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """`path:line: message`, with whatever location parts are known."""
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.message}"


class InputError(MemledgerError):
    """A log (or saved ledger) that cannot be read or holds nothing memledger understands."""

    exit_code = EXIT_INPUT


class SelectionError(InputError):
    """A --rank or --startup that the log does not contain."""


class ConfigError(MemledgerError):
    """A malformed budget file, grammar extension, model config or option value."""

    exit_code = EXIT_USAGE


class NoSuchRowError(KeyError):
    """`ledger["typo"]`: a row id the ledger does not have; the message lists the ids it has."""

    def __str__(self) -> str:  # KeyError's own str() is the repr of its argument
        return str(self.args[0]) if self.args else ""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like Ctrl-C, so every `finally` stops its scan worker or grep."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = 128 + signum
