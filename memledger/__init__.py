"""memledger: SGLang startup logs -> GPU-memory ledgers, diffs and CI budgets.

The public API is imported lazily (PEP 562), so `import memledger` and `memledger --help` stay
fast; see `memledger.api` for the functions and `docs/api.md` for examples.

Modules:

(by layer, each importing only from the layers below it)

- `cli`: the command-line entry; starts the big-log prefilter, then runs `commands`.
- `commands`: the click commands, one module each: options in, one call to `app`.
- `api`: the Python API (`memledger.ledger`, `diff`, `check`, ...) over the same flow.
- `testing`: pytest helpers (`assert_budget`), the CLI's breach lines as test failures.
- `app`: the flow, one module per command: load the input, analyse, render, emit an `Output`.
- `render`: records -> strings, one format registry per command (text, markdown, json, csv).
- `compare`: two ledgers -> a `LedgerDiff`, and the upgrade explanation (`memledger diff`).
- `diagnosis`: why a startup failed or came out small (`memledger diagnose`).
- `checking`: budgets, their evaluation against ledgers, the results read back (`check`).
- `engine`: a parsed log -> its ledger, as an ordered list of steps (pure).
- `sizing`: SGLang's KV-pool arithmetic redone from a log, and what-if / solve (pure).
- `formulas`: named fixed costs as data, and their safe evaluator.
- `input`: bytes of a log -> `ParsedLog` (reader, prefilter, grammar, transformer, pastes).
- `sglang`: what memledger knows about SGLang's logs and releases, as tables.
- `vllm`: what memledger knows about vLLM's logs, as tables (the sibling of `sglang`).
- `model`: the records the layers hand each other and the JSON contract; no computation.
- `record`: records as frozen stdlib data classes; their JSON, and pydantic's TypeAdapter on demand.
- `config_files`: reading the user's TOML/JSON files, depth bounded.
- `model_catalogue`: public models' config.json facts by repo id, when no --model-config is given.
- `errors`: the error hierarchy and the documented exit codes.
- `units`: sizes as integer bytes with the printing precision they were read at.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: `import memledger` (the CLI's first step) skips typing
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "ledger": "memledger.api",
    "load": "memledger.api",
    "load_text": "memledger.api",
    "diff": "memledger.api",
    "diagnose": "memledger.api",
    "Diagnosis": "memledger.diagnosis",
    "check": "memledger.api",
    "whatif": "memledger.api",
    "WhatIf": "memledger.sizing",
    "against_release": "memledger.api",
    "AgainstRelease": "memledger.compare.upgrade_models",
    "SizingResult": "memledger.model.sizing",
    "assert_budget": "memledger.api",
    "BudgetFailure": "memledger.api",
    "BudgetWarning": "memledger.api",
    "Source": "memledger.app.options",
    "Budget": "memledger.checking.budget",
    "BudgetEntry": "memledger.checking.budget",
    "load_budget": "memledger.checking.budget",
    "parse_budget": "memledger.checking.budget",
    "Check": "memledger.model.check",
    "CheckReport": "memledger.model.check",
    "CheckStatus": "memledger.model.check",
    "LedgerDiff": "memledger.compare.models",
    "MemledgerError": "memledger.errors",
    "ConfigError": "memledger.errors",
    "InputError": "memledger.errors",
    "NoSuchRowError": "memledger.errors",
    "Event": "memledger.model.events",
    "EventKind": "memledger.model.events",
    "ParsedLog": "memledger.model.events",
    "Startup": "memledger.model.events",
    "Ledger": "memledger.model.ledger",
    "Row": "memledger.model.ledger",
    "Summary": "memledger.model.ledger",
    "Size": "memledger.units",
}

__all__ = [
    "__version__",
    "ledger",
    "load",
    "load_text",
    "diff",
    "diagnose",
    "Diagnosis",
    "check",
    "whatif",
    "WhatIf",
    "against_release",
    "AgainstRelease",
    "SizingResult",
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
    "NoSuchRowError",
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
        against_release,
        assert_budget,
        check,
        diagnose,
        diff,
        ledger,
        load,
        load_text,
        whatif,
    )
    from memledger.app.options import Source
    from memledger.checking.budget import Budget, BudgetEntry, load_budget, parse_budget
    from memledger.compare.models import LedgerDiff
    from memledger.compare.upgrade_models import AgainstRelease
    from memledger.diagnosis import Diagnosis
    from memledger.errors import ConfigError, InputError, MemledgerError, NoSuchRowError
    from memledger.model.check import Check, CheckReport, CheckStatus
    from memledger.model.events import Event, EventKind, ParsedLog, Startup
    from memledger.model.ledger import Ledger, Row, Summary
    from memledger.model.sizing import SizingResult
    from memledger.sizing import WhatIf
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
