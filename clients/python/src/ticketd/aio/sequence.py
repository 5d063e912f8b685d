"""AsyncSequence: single IDs from a local cache of ranges, refilled by a
background task.

The cache is CachedSequence's (see ticketd.sequence): the current range and
at most one fetched ahead, a refill started by the caller whose draw lands
on the low-water trigger, its size following the observed rate. What
differs is how callers wait: one event loop runs every task, so cutting an
ID needs no lock (nothing runs between the compare and the add), and a
caller that finds the cache empty awaits the refill in flight.

A refill is shared by every caller waiting for it, and each waits for it
within its own call timeout. So a caller never waits on the refill's task
or future itself, only on a shield of it: a caller whose wait times out,
or whose task is cancelled, must not cancel the refill that the others wait
for (conformance plant "refill-wait-unshielded" takes the shield away: the
others then end with CancelledError, and the refill never lands).
"""

from __future__ import annotations

import asyncio
import time
from typing import List, Optional

from .._log import FailureStreak
from .._process import ForkAware, NotCopyable
from .._wire import MAX_RESERVE_COUNT, Range, check_name
from ..errors import Closed, Exhausted, InvalidArgument, TicketdError, Unavailable, fresh
from ..sequence import DEFAULT_COVERAGE, DEFAULT_MAX_RANGE, DEFAULT_MIN_RANGE, RangeCache, SequenceStats, check_options
from ._host import AsyncHandleHost

__all__ = ["AsyncSequence"]


class _Refill:
    """One background reservation; done is set when it ends, with error None
    once its range is in the cache."""

    __slots__ = ("done", "error", "last_error")

    def __init__(self) -> None:
        self.done: "asyncio.Future[None]" = asyncio.get_running_loop().create_future()
        self.error: Optional[TicketdError] = None
        self.last_error: Optional[BaseException] = None

    def finish(self, error: Optional[TicketdError]) -> None:
        self.error = error
        if not self.done.done():
            self.done.set_result(None)


class AsyncSequence(RangeCache, ForkAware, NotCopyable):
    """IDs of one sequence from a local cache of ranges; make it with
    AsyncClient.sequence(). Share one per sequence between the tasks of the
    client's event loop. IDs are unique and increase in the order the calls
    return them."""

    def __init__(self, client: AsyncHandleHost, name: str, *, coverage: float = DEFAULT_COVERAGE,
                 min_range: int = DEFAULT_MIN_RANGE, max_range: int = DEFAULT_MAX_RANGE) -> None:
        """See Client.sequence() for the arguments."""
        check_name(name)
        check_options(coverage, min_range, max_range)
        self._client = client
        self._name = name
        self._coverage, self._min_range, self._max_range = float(coverage), min_range, max_range
        self._sticky = None
        self._highest = 0
        self._start_afresh()

    def _start_afresh(self) -> None:
        self._reset_cache()
        self._inflight: Optional[_Refill] = None
        self._streak = FailureStreak(f"refill of sequence {self._name!r}")

    def _after_fork_in_child(self) -> None:
        self._start_afresh()

    @property
    def name(self) -> str:
        return self._name

    async def next(self) -> int:
        """The next ID: a compare and an add while the cache holds IDs.
        Raises Unavailable when the cache stayed empty for the call timeout,
        Exhausted, NotFound, Unauthorized, Forbidden, Closed."""
        i = self._at
        if i < self._end and i != self._trig:
            self._at = i + 1
            return i
        return (await self._take_slow(1)).first

    async def next_n(self, n: int) -> List[Range]:
        """n IDs at once (1..10,000,000) as increasing disjoint ranges (see
        CachedSequence.next_n)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RESERVE_COUNT:
            raise InvalidArgument(f"next_n: n must be an int between 1 and {MAX_RESERVE_COUNT}, got {n!r}")
        out: List[Range] = []
        want = n
        while want > 0:
            r = self._take_cached(want)
            if r is None:
                r = await self._take_slow(want)
            if out and out[-1].last + 1 == r.first:
                out[-1] = Range(out[-1].first, r.last)
            else:
                out.append(r)
            want -= r.size
        return out

    def stats(self) -> SequenceStats:
        # No caller waits while IDs are cached: the cut and the wait cannot
        # interleave on one loop, so waits_while_cached is 0 by construction.
        return SequenceStats(cached=self._cached_ids(), refilling=self._inflight is not None, refills=self._refills,
                             waits=self._waits, waits_while_cached=0, range_size=self._last_size,
                             rate=self._sizer.rate)

    # -- slow path ---------------------------------------------------------

    async def _take_slow(self, want: int) -> Range:
        deadline: Optional[float] = None
        waited = False
        while True:
            r = self._take_cached(want)
            if r is not None:
                return r
            if self._sticky is not None:
                raise fresh(self._sticky)
            a = self._inflight
            if a is None:
                a = self._start_refill()
                if a is None:
                    raise Closed("ticketd: the client is closed")
            if not waited:
                waited = True
                self._waits += 1
                self._ran_dry = True
                deadline = self._client._deadline()
            timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not await self._wait_for_refill(a, timeout):
                if self._client.closed:
                    raise Closed("ticketd: the client is closed")
                last = a.last_error
                raise Unavailable(f"ticketd: no range of {self._name!r} could be had within the call timeout"
                                  + (f"; last failure: {last}" if last else ""), last=last)
            if a.error is not None:
                raise fresh(a.error)

    async def _wait_for_refill(self, a: _Refill, timeout: Optional[float]) -> bool:
        """Waits up to timeout seconds (None: no bound) for refill a to end:
        whether it did. Through a shield: see the module's doc."""
        try:
            await asyncio.wait_for(asyncio.shield(a.done), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    def _take_cached(self, want: int) -> Optional[Range]:
        """Cuts up to want IDs from the cache (swapping the range fetched
        ahead in when the current one is used up), or None when it is empty."""
        while True:
            cut = self._cut_range(want)
            if cut is not None:
                r, triggered = cut
                if triggered:
                    self._prefetch()
                return r
            if self._nxt is None:
                return None
            nr, self._nxt = self._nxt, None
            self._install_range(nr)

    def _prefetch(self) -> None:
        if self._inflight is None and self._nxt is None and self._sticky is None:
            self._start_refill()

    def _start_refill(self) -> Optional[_Refill]:
        size = self._refill_size()
        a = _Refill()
        if not self._client._spawn(f"ticketd-refill-{self._name}", lambda: self._run_refill(a, size)):
            return None
        self._inflight = a
        return a

    async def _run_refill(self, a: _Refill, size: int) -> None:
        """Reserves size IDs (fewer when fewer are left), retrying until it
        succeeds, the answer is final, or the client is closed (the task is
        cancelled then)."""

        def on_failure(err: BaseException) -> None:
            a.last_error = err
            self._streak.failed(err)

        r: Optional[Range] = None
        err: Optional[TicketdError] = None
        try:
            while True:
                try:
                    r = await self._client._reserve(self._name, size, None, on_failure)
                except Exhausted as e:
                    if size > 1:
                        size //= 2  # fewer IDs are left than asked for: ask for fewer
                        continue
                    err = e
                except TicketdError as e:
                    err = e
                except Exception as e:  # a bug must not leave waiters hanging
                    err = TicketdError(f"ticketd: refill failed: {e!r}")
                break
        except asyncio.CancelledError:
            # aclose(), or the loop shutting down (asyncio.run's end): the
            # waiters learn it, and a later caller on a new loop starts over.
            self._finish_refill(a, None, Closed("ticketd: the client is closed"))
            raise
        self._finish_refill(a, r, err)

    def _finish_refill(self, a: _Refill, r: Optional[Range], err: Optional[TicketdError]) -> None:
        err = self._land(r, err, self._client.closed)
        if self._inflight is a:
            self._inflight = None
        a.finish(err)
        if err is None:
            self._streak.succeeded()
        elif not isinstance(err, Closed):
            self._streak.failed(err)

    def _close_from_client(self) -> None:
        self._empty_cache()
