"""A progress bar on stderr for a long run over many logs (a folder, a fleet), as pip and ruff
show one: only on a terminal, redrawn in place at most ten times a second, and erased at the
end so the report that follows starts on a clean line.

    memledger: [##########..........]   512/1,000 logs   84.2 logs/s   0:06 left
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")
BAR_WIDTH = 20
REDRAW_SECONDS = 0.1
SHOW_AFTER_SECONDS = 0.5
"""A run shorter than this shows nothing (no flicker for a handful of logs)."""


def bar_text(done: int, total: int | None, seconds: float) -> str:
    """`[####......]  512/1,000 logs  84.2 logs/s  0:06 left` (no bar when the total is not
    known)."""
    rate = done / seconds if seconds > 0 else 0.0
    count = f"{done:,} logs"
    bar = ""
    left = ""
    if total:
        filled = min(BAR_WIDTH, BAR_WIDTH * done // total)
        bar = "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "] "
        count = f"{done:,}/{total:,} logs"
        if rate > 0 and done < total:
            remaining = int((total - done) / rate)
            left = f"   {remaining // 60}:{remaining % 60:02d} left"
    return f"memledger: {bar}{count}   {rate:,.1f} logs/s{left}"


class ProgressBar:
    """Counts finished logs and redraws the bar (`bar_text`) on `stream` when enabled."""

    def __init__(
        self,
        total: int | None,
        *,
        enabled: bool,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.done = 0
        self.drawn_at: float | None = None

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < SHOW_AFTER_SECONDS:
            return
        if self.drawn_at is not None and now - self.drawn_at < REDRAW_SECONDS:
            return
        self.drawn_at = now
        self.stream.write("\r" + bar_text(self.done, self.total, now - self.start) + "\x1b[K")
        self.stream.flush()

    def finish(self) -> None:
        if self.drawn_at is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def with_progress(items: Iterable[T], bar: ProgressBar) -> Iterator[T]:
    """The items, one step of the bar after each; the bar is erased when they end (or fail)."""
    try:
        for item in items:
            yield item
            bar.step()
    finally:
        bar.finish()
