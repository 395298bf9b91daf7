"""One step of SGLang's pool sizing as data (memledger.sglang.sizing_rules, fraction_rules)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SizingRule:
    """One step of SGLang's pool sizing, valid for a release range."""

    id: str
    title: str
    formula: str
    first: str | None
    """First release the rule holds for (None: since the oldest release read)."""
    last: str | None
    """Last release the rule holds for (None: still in the newest release read, 0.5.23)."""
    source: str
