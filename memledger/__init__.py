"""memledger: SGLang startup logs -> GPU-memory ledgers, diffs and CI budgets.

The public API is imported lazily (PEP 562), so `import memledger` and `memledger --help` stay
fast; see `memledger.api` for the functions and `docs/api.md` for examples.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "load": "memledger.api",
    "load_text": "memledger.api",
    "diff": "memledger.api",
    "check": "memledger.api",
    "assert_budget": "memledger.api",
    "BudgetFailure": "memledger.api",
    "BudgetWarning": "memledger.api",
    "Source": "memledger.api",
    "Budget": "memledger.budget",
    "BudgetEntry": "memledger.budget",
    "load_budget": "memledger.budget",
    "parse_budget": "memledger.budget",
    "Check": "memledger.checking",
    "CheckReport": "memledger.checking",
    "CheckStatus": "memledger.checking",
    "LedgerDiff": "memledger.diffing",
    "MemledgerError": "memledger.errors",
    "ConfigError": "memledger.errors",
    "InputError": "memledger.errors",
    "Event": "memledger.events",
    "EventKind": "memledger.events",
    "ParsedLog": "memledger.events",
    "Startup": "memledger.events",
    "Ledger": "memledger.ledger",
    "Row": "memledger.ledger",
    "Summary": "memledger.ledger",
    "Size": "memledger.units",
}

__all__ = [
    "__version__",
    "ledger",
    "load",
    "load_text",
    "diff",
    "check",
    "assert_budget",
    "BudgetFailure",
    "BudgetWarning",
    "Source",
    "Budget",
    "BudgetEntry",
    "load_budget",
    "parse_budget",
    "Check",
    "CheckReport",
    "CheckStatus",
    "LedgerDiff",
    "MemledgerError",
    "ConfigError",
    "InputError",
    "Event",
    "EventKind",
    "ParsedLog",
    "Startup",
    "Ledger",
    "Row",
    "Summary",
    "Size",
]

if TYPE_CHECKING:  # the same names, eagerly, for type checkers
    from memledger.api import (
        BudgetFailure,
        BudgetWarning,
        Source,
        assert_budget,
        check,
        diff,
        load,
        load_text,
    )
    from memledger.api import ledger as ledger  # the function; see _LedgerFunction
    from memledger.budget import Budget, BudgetEntry, load_budget, parse_budget
    from memledger.checking import Check, CheckReport, CheckStatus
    from memledger.diffing import LedgerDiff
    from memledger.errors import ConfigError, InputError, MemledgerError
    from memledger.events import Event, EventKind, ParsedLog, Startup
    from memledger.ledger import Ledger, Row, Summary
    from memledger.units import Size


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memledger' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _LedgerFunction:
    """`memledger.ledger(source)` builds a ledger; its attributes are the `memledger.ledger` module.

    The package has both a submodule `ledger` (the models) and the API function `ledger()`. Python
    binds an imported submodule as a package attribute, which would shadow the function; this
    object is both: calling it runs `memledger.api.ledger`, attribute access reaches the module.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from memledger.api import ledger

        return ledger(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("memledger.ledger"), name)

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        from memledger.api import ledger

        return ledger.__doc__

    def __repr__(self) -> str:
        return "<function memledger.ledger (and module memledger.ledger)>"


class _Package(types.ModuleType):
    """The package module, with `ledger` kept as the API function when the submodule loads."""

    _ledger_function = _LedgerFunction()

    @property
    def ledger(self) -> Any:
        return self._ledger_function

    @ledger.setter
    def ledger(self, module: types.ModuleType) -> None:
        # The import system sets the submodule here; it stays reachable via sys.modules.
        self.__dict__["_ledger_module"] = module


sys.modules[__name__].__class__ = _Package
