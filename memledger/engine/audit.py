"""The engine's bookkeeping: the notes a ledger carries and the printed numbers it used.

The only state shared by the steps of `build_ledger`, and it is passed to each explicitly:
steps append notes (degradations, assumptions) and record every printed number the partition
used, whose half-ULP bounds add up to the ledger's tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memledger.model.events import Event
from memledger.units import Size


@dataclass
class Audit:
    """Notes in the order the steps wrote them, and the printing precision used."""

    notes: list[str] = field(default_factory=list)
    numbers: dict[tuple[int, str], int] = field(default_factory=dict)
    """(line, key) -> half_ulp of every printed number the partition used."""
    reading_noise: int = 0
    """Extra ± bytes on every avail reading (host RAM read as avail on an integrated GPU)."""

    def note(self, text: str) -> None:
        self.notes.append(text)

    def use_number(self, event: Event, key: str, size: Size) -> None:
        self.numbers[(event.line, key)] = size.half_ulp

    def use_sizes(self, event: Event) -> None:
        for key, size in event.sizes.items():
            self.numbers[(event.line, key)] = size.half_ulp

    def tolerance(self) -> int:
        """The ± bound of the partition's sum: every used number's printing precision."""
        readings = sum(1 for _, key in self.numbers if key == "avail")
        return sum(self.numbers.values()) + readings * self.reading_noise
