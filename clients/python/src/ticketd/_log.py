"""What the library logs: the failures of its background work, which no
caller sees until a next() finds the cache empty (issue 46, part 5).

The logger is "ticketd"; the package adds a NullHandler to it (the library
convention: the application decides where records go). A background job
(a CachedSequence's refill, a Snowflake handle's fetch) logs once per failure
streak: a WARNING at its first failure, then nothing however often it
retries or fails again, and an INFO once it succeeds again. Nothing is
logged on the paths that hand out IDs.
"""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger("ticketd")


class FailureStreak:
    """One background job's failures since its last success. what names the
    job in the records ("refill of sequence 'orders'")."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._lock = threading.Lock()
        self._failures = 0
        self._since = 0.0

    def failed(self, err: BaseException) -> None:
        with self._lock:
            self._failures += 1
            first = self._failures == 1
            if first:
                self._since = time.monotonic()
        if first:  # logged outside the lock: a handler may do I/O
            logger.warning("ticketd: the background %s failed: %s; further failures are not logged "
                           "until it succeeds again", self._what, err)

    def succeeded(self) -> None:
        with self._lock:
            failures, self._failures = self._failures, 0
            took = time.monotonic() - self._since
        if failures:
            logger.info("ticketd: the background %s recovered after %d failure%s in %.1f s",
                        self._what, failures, "" if failures == 1 else "s", took)
