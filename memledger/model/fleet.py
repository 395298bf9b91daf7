"""One line of the fleet view (`memledger ledger` over several logs), as it travels back from a
worker: built by `memledger.app.fleet`, rendered by `memledger.render.fleet`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class FleetEntry:
    """One input of the fleet: its summary line (`render.fleet.line_of`), or the one-line error
    that stopped it. Only this travels back from a worker, never the ledger."""

    path: str
    line: dict[str, Any] | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return Path(self.path).name
