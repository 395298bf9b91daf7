"""Error hierarchy and the documented exit codes; stdlib only."""

from __future__ import annotations

EXIT_OK = 0
"""Everything ran; for `check`, every budget passed (warnings allowed)."""
EXIT_BUDGET_FAILED = 1
"""`check` only: a fail-level budget was breached (or any breach with --strict)."""
EXIT_USAGE = 2
"""Bad command line or option value; malformed config (budget, grammar, model config)."""
EXIT_INPUT = 3
"""Input not understood: missing/empty/binary file, no SGLang lines, unknown rank/startup,
or a budgeted item the log cannot provide."""


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


class BudgetItemError(InputError):
    """A budget names an item that this log cannot provide."""
