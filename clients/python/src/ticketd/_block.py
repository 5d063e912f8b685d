"""A block of a cache: the range (or batch) that callers cut IDs from.

A block (a SnowflakeRemote's batch) is a count of indices used under a
lock of its own. The lock is held for a compare and an add, never across
I/O, and it is what makes cutting an index atomic on every Python: a GIL
build, and a free-threaded one (3.13t), where no single bytecode is.
(An itertools.count would be lock-free under the GIL, but reading its state
needs its pickle support, which Python 3.14 removes, and it is not atomic
without the GIL; see sequence.py for what the lock costs.)
"""

from __future__ import annotations

import threading
from typing import Optional, Tuple


class Block:
    __slots__ = ("lock", "used", "first", "n", "trigger")

    def __init__(self, first: int = 0, n: int = 0, trigger: int = -1) -> None:
        self.lock = threading.Lock()
        self.used = 0  # indices cut so far; never above n
        self.first = first
        self.n = n
        # The index whose taker starts the next refill; -1: none. Set before
        # the block is published as current, never after.
        self.trigger = trigger

    def taken(self) -> int:
        return self.used

    def remaining(self) -> int:
        return self.n - self.used

    def take(self, want: int) -> Optional[Tuple[int, int, bool]]:
        """Cuts up to want consecutive indices: (first index, how many,
        crossed the trigger), or None when the block is used up."""
        with self.lock:
            i = self.used
            if i >= self.n:
                return None
            got = min(want, self.n - i)
            self.used = i + got
        return i, got, i <= self.trigger < i + got
