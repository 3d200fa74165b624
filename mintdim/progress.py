"""Throttled progress lines for long stages: count, share done, rate and ETA.

Nothing is printed during the first `every` seconds, then at most one line every
`every` seconds, so a short job stays silent and a cluster log gets a few lines
per minute, not one per batch:

    [unit-build] write unit 192: 120,000/553,000 records (22%), 45.1 MB/s, ETA 12 s
"""

from __future__ import annotations

import time

EVERY = 5.0


def _eta(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    def __init__(self, log, label: str, total: int, what: str = "records", every: float = EVERY, clock=None):
        self.log = log
        self.label = label
        self.total = int(total)
        self.what = what
        self.every = every
        self.clock = clock or time.monotonic
        self.start = self.last = self.clock()

    def line(self, done: int, nbytes: int | None = None) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        share = done / self.total if self.total else 1.0
        text = f"{self.label}: {done:,}/{self.total:,} {self.what} ({share:.0%})"
        if nbytes is not None:
            text += f", {nbytes / elapsed / 1e6:.1f} MB/s"
        else:
            rate = done / elapsed
            text += f", {rate:,.0f} {self.what}/s" if rate >= 10 else f", {rate:.2g} {self.what}/s"
        if 0 < done < self.total:
            text += f", ETA {_eta(elapsed * (self.total - done) / done)}"
        return text

    def update(self, done: int, nbytes: int | None = None) -> bool:
        """Log one line if `every` seconds passed since the start or the last line; True if it did."""
        now = self.clock()
        if now - self.last < self.every:
            return False
        self.last = now
        self.log(self.line(done, nbytes))
        return True
