"""One step of SGLang's pool sizing as data (memledger.sglang.sizing_rules, fraction_rules)."""

from __future__ import annotations

from dataclasses import dataclass

from memledger.sglang.releases import ReleaseRange


@dataclass(frozen=True)
class SizingRule:
    """One step of SGLang's pool sizing, valid for a release range."""

    id: str
    title: str
    formula: str
    releases: ReleaseRange
    """The releases it holds for (`first` None: since the oldest release read; `last` None:
    still in the newest release read, 0.5.23)."""
    source: str
