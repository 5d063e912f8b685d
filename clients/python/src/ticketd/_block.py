"""A block of a cache: the range (or batch) that callers cut IDs from.

The counter is an itertools.count: next() on it is one call into C, which
CPython runs whole under the GIL, so two threads never get the same index
and no lock is taken on the hot path. take(want) draws want indices in one
C call (a deque fed by islice) for the same reason: no bytecode runs inside
it, so no other thread can draw in between, and the indices are consecutive.
This relies on the GIL: a free-threaded build (3.13t) is not supported.
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Optional, Tuple, cast


class Block:
    __slots__ = ("counter", "first", "n", "trigger")

    def __init__(self, first: int = 0, n: int = 0, trigger: int = -1) -> None:
        self.counter = itertools.count()
        self.first = first
        self.n = n
        # The index whose taker starts the next refill; -1: none.
        self.trigger = trigger

    def peek(self) -> int:
        """How many indices were drawn so far (may pass n)."""
        # count's state, read without drawing: (count, (next value,))
        return cast(int, self.counter.__reduce__()[1][0])

    def taken(self) -> int:
        return min(self.peek(), self.n)

    def remaining(self) -> int:
        return self.n - self.taken()

    def take(self, want: int) -> Optional[Tuple[int, int, bool]]:
        """Cuts up to want indices: (first index, how many, crossed the trigger),
        or None when the block is used up."""
        if want == 1:
            i = next(self.counter)
            got = 1
        else:
            left = self.n - self.peek()
            if left <= 0:
                return None
            k = min(want, left)
            # Others may draw between peek() and here: then some of these k
            # indices lie past n and are simply not ours to hand out.
            i = deque(itertools.islice(self.counter, k), maxlen=1)[0] - k + 1
            got = k
        if i >= self.n:
            return None
        got = min(got, self.n - i)
        return i, got, i <= self.trigger < i + got
