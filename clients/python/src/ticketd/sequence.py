"""CachedSequence: single IDs from a local cache of ranges, refilled in the background.

(Named so, not Sequence, so that `from ticketd import *` does not shadow
typing.Sequence and the name says what it is: issue 46, part 7.)

The cache is the Go SDK's (client/sequence.go):

- Hot path: the current range is three integers, the next ID, the end and
  the trigger, under a lock held for nothing else: next() takes the lock,
  compares, adds one and returns. No I/O, no clock, no allocation. A lock,
  not an itertools.count (lock-free under the GIL): cutting must be atomic
  on free-threaded Pythons too, and next_n must cut n IDs in O(1). It is
  taken with "with": an explicit acquire() returns through a point where
  the interpreter may switch threads while the lock is held, and under
  contention that convoys (measured: 0.2x of a locked increment on 4
  threads, against 0.8-0.9x with "with"; bench.py).
- Double buffer: besides the current range the cache holds at most one range
  fetched ahead. The first caller to find the current range used up takes the
  CachedSequence's lock and swaps the fetched range in.
- Low-water mark: when a range becomes current it gets a trigger index, where
  only rate x coverage of its IDs are left (its first index when it holds
  less, or while the rate is unknown). The one caller whose draw lands on it
  starts the refill on a background thread; a refill in flight, or a range
  already fetched ahead, means none is started: one reservation in flight at
  most, however many threads call. (The Go SDK's rule, not "at half": with a
  steady rate it starts the refill coverage seconds before the range runs out.)
- Sizing: each refill samples the rate (rises at once, falls by half per
  sample at most); a range holds rate x coverage IDs within [min, max], and at
  least twice the last size when a caller had to wait.
- Waiting: only when the cache is empty. The wait is bounded by the client's
  call timeout, then Unavailable; the refill itself keeps retrying until it
  succeeds or the client closes, so the CachedSequence recovers on its own.
- Order: IDs are unique and strictly increasing in the order the draws cut
  them; a range not above the last one held is refused.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import List, Optional, Tuple

from ._host import HandleHost
from ._log import FailureStreak
from ._process import ForkAware, NotCopyable
from ._wire import MAX_RESERVE_COUNT, Range, check_name
from .errors import Closed, Exhausted, InvalidArgument, TicketdError, Unavailable, fresh


__all__ = ["CachedSequence", "SequenceStats"]

DEFAULT_COVERAGE = 10.0
DEFAULT_MIN_RANGE = 1000
DEFAULT_MAX_RANGE = MAX_RESERVE_COUNT
# The shortest interval a rate is computed over; shorter ones fold into the next.
_MIN_SAMPLE = 0.005


@dataclass(frozen=True)
class SequenceStats:
    """A snapshot of a CachedSequence's cache and counters."""

    cached: int  # IDs cached now: the current range's and the one fetched ahead
    refilling: bool  # a refill is in flight
    refills: int  # ranges received
    waits: int  # calls that waited for an empty cache
    waits_while_cached: int  # of those, calls that waited while IDs were cached (a bug if not 0)
    range_size: int  # IDs asked for by the last refill
    rate: float  # the IDs per second the sizing follows


class _Sizer:
    def __init__(self, coverage: float, lo: int, hi: int) -> None:
        self.coverage, self.lo, self.hi = coverage, lo, hi
        self.rate = 0.0
        self.at: Optional[float] = None
        self.ids = 0

    def observe(self, ids: int, now: float) -> None:
        if self.at is None:
            self.at, self.ids = now, ids
            return
        dt = now - self.at
        if dt < _MIN_SAMPLE:
            return
        inst = (ids - self.ids) / dt
        # A cache too large costs a few IDs; one too small makes callers wait.
        self.rate = inst if inst >= self.rate else max(inst, self.rate / 2)
        self.at, self.ids = now, ids

    def low_water(self) -> int:
        return _clamp(self.rate * self.coverage, 0, 1 << 62)

    def size(self, ran_dry: bool, last: int) -> int:
        n = _clamp(self.rate * self.coverage, self.lo, self.hi)
        if ran_dry and last > 0:
            n = max(n, min(2 * last, self.hi))
        return n


def _clamp(f: float, lo: int, hi: int) -> int:
    if math.isnan(f) or f <= lo:
        return lo
    if f >= hi:
        return hi
    return int(math.ceil(f))


def check_options(coverage: float, min_range: int, max_range: int) -> None:
    """Refuses a cache's tuning that cannot work, saying why."""
    if not (isinstance(coverage, (int, float)) and coverage > 0):
        raise InvalidArgument(f"coverage must be positive seconds, got {coverage!r}")
    if not (isinstance(min_range, int) and isinstance(max_range, int)
            and 1 <= min_range <= max_range <= MAX_RESERVE_COUNT):
        raise InvalidArgument(f"want 1 <= min_range <= max_range <= {MAX_RESERVE_COUNT}, "
                              f"got {min_range!r}, {max_range!r}")


def not_above(r: Range, highest: int, name: str, holder: str) -> TicketdError:
    """The refusal of a range r of sequence name that is not above highest,
    the last ID of the newest range holder received: its IDs, or some, were
    handed out before."""
    return TicketdError(f"ticketd: the server answered range {r.first}..{r.last} of {name!r}, "
                        f"not above {highest}, an ID this {holder} already had; refused")


class _Refill:
    """One background reservation; done is set when it ends."""

    __slots__ = ("done", "error", "last_error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: Optional[TicketdError] = None
        self.last_error: Optional[BaseException] = None


class RangeCache:
    """The state of a cache of ranges and what is decided on it, without
    locks or I/O, for CachedSequence (which holds its locks around these
    methods) and ticketd.aio's AsyncSequence (whose event loop runs one task
    at a time): the current range (IDs _at.._end-1 left; the taker of _trig
    starts the refill, 0 for none, as IDs are positive), the range fetched
    ahead, the sizing, and the checks a refill's range passes to land."""

    _name: str
    _coverage: float
    _min_range: int
    _max_range: int
    _sticky: Optional[TicketdError]  # Exhausted or Closed, once seen
    # The last of the newest range received. Kept across a fork: the
    # child's ranges are reserved after it, so they must be above it.
    _highest: int

    def _reset_cache(self) -> None:
        self._at = 0
        self._end = 0
        self._trig = 0
        self._cur_first = 0
        self._nxt: Optional[Range] = None  # the range fetched ahead
        self._retired = 0  # IDs of the ranges used up
        self._sizer = _Sizer(self._coverage, self._min_range, self._max_range)
        self._ran_dry = False
        self._last_size = 0
        self._refills = 0
        self._waits = 0

    def _cut_range(self, want: int) -> Optional[Tuple[Range, bool]]:
        """Cuts up to want IDs of the current range: (the IDs, whether they
        include the trigger), or None when it is used up."""
        i = self._at
        if i >= self._end:
            return None
        last = min(i + want, self._end) - 1
        self._at = last + 1
        return Range(i, last), i <= self._trig <= last

    def _install_range(self, nr: Range) -> None:
        """Makes nr the current range. Its trigger: where only low-water IDs
        are left, or its first ID when it holds fewer (or the rate is not
        known yet)."""
        trig = nr.first
        low = self._sizer.low_water()
        if 0 < low < nr.size:
            trig = nr.last + 1 - low
        self._retired += self._end - self._cur_first
        self._cur_first, self._at, self._end, self._trig = nr.first, nr.first, nr.last + 1, trig

    def _refill_size(self) -> int:
        """The size of the refill starting now, from the rate observed."""
        self._sizer.observe(self._retired + self._taken(), time.monotonic())
        size = self._sizer.size(self._ran_dry, self._last_size)
        self._ran_dry = False
        self._last_size = size
        return size

    def _land(self, r: Optional[Range], err: Optional[TicketdError], closed: bool) -> Optional[TicketdError]:
        """What a refill that ended with range r or error err means: None once
        r is fetched ahead, or the error its waiters get (Closed once closed;
        a range not above one received before is refused; exhaustion sticks)."""
        if closed or isinstance(self._sticky, Closed):
            return Closed("ticketd: the client is closed")
        if err is None and r is not None and r.first <= self._highest:
            return not_above(r, self._highest, self._name, type(self).__name__)
        if err is None and r is not None:
            self._highest = r.last
            self._refills += 1
            self._nxt = r
            return None
        if isinstance(err, Exhausted):
            self._sticky = err
        return err

    def _empty_cache(self) -> None:
        """At close: what is left is never handed out."""
        self._sticky = Closed("ticketd: the client is closed")
        self._nxt = None
        self._retired += self._end - self._cur_first
        self._cur_first = self._at = self._end = self._trig = 0

    def _cached_ids(self) -> int:
        n = self._end - min(self._at, self._end)
        if self._nxt is not None:
            n += self._nxt.size
        return n

    def _taken(self) -> int:
        """IDs cut from the current range."""
        return min(self._at, self._end) - self._cur_first


class CachedSequence(RangeCache, ForkAware, NotCopyable):
    """IDs of one sequence from a local cache of ranges; make it with
    Client.sequence(). Thread-safe: share one per sequence and process. A
    forked child's copy starts with an empty cache.
    """

    def __init__(self, client: HandleHost, name: str, *, coverage: float = DEFAULT_COVERAGE,
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
        """An empty cache, no refill, fresh locks and counters: a new
        CachedSequence, and a forked child's copy (_after_fork_in_child)."""
        # The current range is guarded by _hot, which is held for nothing
        # but cutting and installing; the rest by _mu.
        self._hot = threading.Lock()
        self._mu = threading.Lock()
        self._reset_cache()
        self._inflight: Optional[_Refill] = None
        self._waits_while_cached = 0
        self._streak = FailureStreak(f"refill of sequence {self._name!r}")

    def _after_fork_in_child(self) -> None:
        # The parent hands out what was cached, and its refill in flight
        # ends in the parent, not here (no thread runs it in the child).
        # The rate too is the parent's, not this process's.
        self._start_afresh()

    @property
    def name(self) -> str:
        return self._name

    def next(self) -> int:
        """The next ID: a compare and an add under the hot lock while the
        cache holds IDs. Raises Unavailable when the cache stayed empty for
        the call timeout, Exhausted, NotFound, Unauthorized, Forbidden,
        Closed."""
        with self._hot:
            i = self._at
            if i < self._end and i != self._trig:
                self._at = i + 1
                return i
        # The range is used up, or the next ID is the trigger: the slow path
        # cuts it and starts the refill.
        return self._take_slow(1).first

    def next_n(self, n: int) -> List[Range]:
        """n IDs at once (1..10,000,000) as increasing disjoint ranges: one unless
        they straddle the end of a cached range. On error none are returned
        (those already cut are gaps)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RESERVE_COUNT:
            raise InvalidArgument(f"next_n: n must be an int between 1 and {MAX_RESERVE_COUNT}, got {n!r}")
        out: List[Range] = []
        want = n
        cut = self._cut(want)
        if cut is not None:
            r, triggered = cut
            if triggered:
                self._prefetch()
            out.append(r)
            want -= r.size
        while want > 0:
            r = self._take_slow(want)
            if out and out[-1].last + 1 == r.first:
                out[-1] = Range(out[-1].first, r.last)
            else:
                out.append(r)
            want -= r.size
        return out

    def stats(self) -> SequenceStats:
        with self._mu:
            return SequenceStats(cached=self._cached_locked(), refilling=self._inflight is not None,
                                 refills=self._refills, waits=self._waits,
                                 waits_while_cached=self._waits_while_cached,
                                 range_size=self._last_size, rate=self._sizer.rate)

    # -- slow path ---------------------------------------------------------

    def _take_slow(self, want: int) -> Range:
        try:
            return self._take_waiting(want)
        finally:
            self._client._bg.settle()  # uWSGI's master: no thread of ours runs on (client._Background)

    def _take_waiting(self, want: int) -> Range:
        deadline: Optional[float] = None
        waited = False
        while True:
            with self._mu:
                r = self._take_locked(want)
                if r is not None:
                    return r
                if self._sticky is not None:
                    raise fresh(self._sticky)
                a = self._inflight
                if a is None:
                    a = self._start_refill_locked()
                    if a is None:
                        raise Closed("ticketd: the client is closed")
                if not waited:
                    waited = True
                    self._wait_locked()
                    deadline = self._client._deadline()
            if deadline is None:
                ok = a.done.wait()
            else:
                ok = a.done.wait(max(deadline - time.monotonic(), 0.0))
            if not ok:
                if self._client.closed:
                    raise Closed("ticketd: the client is closed")
                last = a.last_error
                raise Unavailable(f"ticketd: no range of {self._name!r} could be had within the call timeout"
                                  + (f"; last failure: {last}" if last else ""), last=last)
            if a.error is not None:
                raise fresh(a.error)

    def _wait_locked(self) -> None:
        # The only place a caller waits; reached only with the current range
        # used up and nothing fetched ahead, so waits_while_cached stays 0.
        self._waits += 1
        self._ran_dry = True
        if self._cached_locked() > 0:
            self._waits_while_cached += 1

    def _cut(self, want: int) -> Optional[Tuple[Range, bool]]:
        """Cuts up to want IDs of the current range: (the IDs, whether they
        include the trigger), or None when it is used up."""
        with self._hot:
            return self._cut_range(want)

    def _take_locked(self, want: int) -> Optional[Range]:
        while True:
            cut = self._cut(want)
            if cut is not None:
                r, triggered = cut
                if triggered:
                    self._prefetch_locked()
                return r
            if self._nxt is None:
                return None
            nr, self._nxt = self._nxt, None
            self._install_locked(nr)

    def _install_locked(self, nr: Range) -> None:
        with self._hot:
            self._install_range(nr)

    def _prefetch(self) -> None:
        with self._mu:
            self._prefetch_locked()
        self._client._bg.settle()

    def _prefetch_locked(self) -> None:
        if self._inflight is None and self._nxt is None and self._sticky is None:
            self._start_refill_locked()

    def _start_refill_locked(self) -> Optional[_Refill]:
        size = self._refill_size()
        a = _Refill()
        if not self._client._bg.start(f"ticketd-refill-{self._name}", lambda: self._run_refill(a, size)):
            return None
        self._inflight = a
        return a

    def _run_refill(self, a: _Refill, size: int) -> None:
        """Reserves size IDs (fewer when fewer are left), retrying until it
        succeeds, the answer is final, or the client is closed."""

        def on_failure(err: BaseException) -> None:
            with self._mu:
                a.last_error = err
            self._streak.failed(err)

        while True:
            try:
                r: Optional[Range] = self._client._reserve(self._name, size, None, on_failure)
                err: Optional[TicketdError] = None
            except Exhausted as e:
                if size > 1:
                    size //= 2  # fewer IDs are left than asked for: ask for fewer
                    continue
                r, err = None, e
            except TicketdError as e:
                r, err = None, e
            except BaseException as e:  # a bug must not leave waiters hanging
                r, err = None, TicketdError(f"ticketd: refill failed: {e!r}")
            self._finish_refill(a, r, err)
            return

    def _finish_refill(self, a: _Refill, r: Optional[Range], err: Optional[TicketdError]) -> None:
        with self._mu:
            err = self._land(r, err, self._client.closed)
            a.error = err
            self._inflight = None
            a.done.set()
        if err is None:
            self._streak.succeeded()
        elif not isinstance(err, Closed):
            self._streak.failed(err)  # a final answer (401 after a token rotation, exhaustion)

    def _close_from_client(self) -> None:
        with self._mu, self._hot:
            self._empty_cache()

    def _cached_locked(self) -> int:
        return self._cached_ids()
