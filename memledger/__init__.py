"""memledger: SGLang startup logs -> GPU-memory ledgers, diffs and CI budgets."""

from __future__ import annotations

__version__ = "0.1.0"
