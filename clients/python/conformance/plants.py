"""Planted bugs, for showing that the conformance harness (and the tests)
catch them. Reachable only from the driver and the tests, by monkeypatching
the library's private methods: never through the public API.
"""

from __future__ import annotations

import asyncio
from typing import Callable, Dict, Optional

from ticketd import Client, Range, TicketdError, Unavailable
from ticketd.aio.sequence import AsyncSequence, _Refill as _AsyncRefill
from ticketd.sequence import CachedSequence, _Refill


class _Stop(Exception):
    pass


def _prefetch_stops_after_error() -> None:
    """The background prefetch never restarts once a refill has failed: the
    refill gives up at its first failure, and the CachedSequence starts no other."""
    start = CachedSequence._start_refill_locked

    def start_refill_locked(self: CachedSequence) -> Optional[_Refill]:
        if getattr(self, "_planted_dead", False):
            a = _Refill()
            a.error = Unavailable("ticketd: the refill stopped after a failure (planted bug)")
            a.done.set()
            return a
        return start(self)

    def run_refill(self: CachedSequence, a: _Refill, size: int) -> None:
        def on_failure(err: BaseException) -> None:
            a.last_error = err
            raise _Stop()

        r: Optional[Range] = None
        err: Optional[TicketdError] = None
        try:
            r = self._client._reserve(self._name, size, None, on_failure)
        except _Stop:
            self._planted_dead = True  # type: ignore[attr-defined]
            err = Unavailable("ticketd: refill failed (planted bug: never retried)", last=a.last_error)
        except TicketdError as e:
            err = e
        self._finish_refill(a, r, err)

    CachedSequence._start_refill_locked = start_refill_locked  # type: ignore[assignment]
    CachedSequence._run_refill = run_refill  # type: ignore[assignment]


def _caches_kept_across_fork() -> None:
    """A forked child keeps its copy of the client as the parent left it:
    cached ranges, prefetched Snowflake IDs, pooled connections, refills in
    flight (the library before issue 45)."""
    Client._after_fork_in_child = lambda self: None  # type: ignore[method-assign]


async def unshielded_wait_for_refill(self: AsyncSequence, a: _AsyncRefill, timeout: Optional[float]) -> bool:
    """AsyncSequence._wait_for_refill without its shield: a waiter whose
    call timeout passes cancels the refill's future, which every other
    waiter awaits too. They end with CancelledError, and the refill's range
    never reaches the cache."""
    try:
        await asyncio.wait_for(a.done, timeout)
    except asyncio.TimeoutError:
        return False
    return True


def _refill_wait_unshielded() -> None:
    AsyncSequence._wait_for_refill = unshielded_wait_for_refill  # type: ignore[method-assign]


PLANTS: Dict[str, Callable[[], None]] = {
    "prefetch-stops-after-error": _prefetch_stops_after_error,
    "caches-kept-across-fork": _caches_kept_across_fork,
    "refill-wait-unshielded": _refill_wait_unshielded,  # the asyncio driver's
}


def apply(name: str) -> None:
    """Switches the named planted bug on for this process; '' is none."""
    if not name:
        return
    if name not in PLANTS:
        raise SystemExit(f"unknown planted bug {name!r}; the Python driver knows {sorted(PLANTS)}")
    PLANTS[name]()
