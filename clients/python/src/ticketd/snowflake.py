"""SnowflakeRemote: Snowflake IDs made by the nodes, prefetched in batches.

The Go SDK's SnowflakeRemote (client/snowflake_remote*.go): the same double
buffer as a CachedSequence's (the batch being handed out, cut under its lock,
and at most one batch fetched ahead), a fetch started in the background when
fewer than the low-water mark (default half the batch) are left. Fetches go
round the nodes from a random first one (the leader is not preferred); a node
that answered with Retry-After (503 clock-behind among others) is not asked
again until then, one that failed at the transport rests for the longest
backoff. Every answer is checked before it enters the buffer (accept()).

Maximum age (issue 46, part 4): a Snowflake ID's timestamp is when a node
made it, so a batch a quiet process keeps for an hour would hand out
hour-old IDs, which sort before those other processes made meanwhile. A
batch is handed out for max_age seconds (default 10 min, Hazelcast's prefetch
validity) after the request that brought it was sent, on the monotonic clock
(which does not count a suspended machine's sleep); then it is dropped and
the next call fetches fresh IDs. next() reads the clock for it: about 50 ns
on a next() of about 180 from a full buffer, against about 3.2 us of client
CPU per ID that fetching batches of 256 from a real node costs anyway (a
1.5% rise; measured on the project's 2-core machine). The Go SDK ends a
batch with a timer instead, its Next being a few nanoseconds; here a timer
is a thread, and a thread that runs in a uWSGI master as it forks its
workers (it forks without holding the GIL) can take the GIL across the fork
and hang a worker: a thread started at the first batch did in 5 of 20 starts.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from dataclasses import dataclass
from time import monotonic as _now  # a global, not time.monotonic: one lookup less in next()
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple, TypeVar

from ._block import Block
from ._host import HandleHost
from ._log import FailureStreak
from ._retry import ATTEMPT_FAILURES, Attempt, Pause, Plan, backoff_wait, run_plan
from ._token import TokenFailure
from ._transport import Answer, Endpoint
from ._process import ForkAware, NotCopyable
from ._wire import MAX_ID, MAX_SNOWFLAKE_IDS, check_name, parse_retry_after, path_segment, problem_of
from .errors import (
    ClockBehind,
    Closed,
    InvalidArgument,
    TicketdError,
    Unavailable,
    error_from_answer,
    fresh,
    is_retryable_status,
)


__all__ = ["SnowflakeRemote", "SnowflakeStats"]

DEFAULT_BATCH = 256
DEFAULT_MAX_AGE = 600.0  # seconds: Hazelcast's FlakeIdGenerator's prefetch validity


@dataclass(frozen=True)
class SnowflakeStats:
    """A snapshot of a SnowflakeRemote's buffer and counters."""

    cached: int  # IDs buffered now
    fetching: bool  # a fetch is in flight
    fetches: int  # batches received
    failures: int  # node failures moved past
    refused: int  # answers refused by the checks
    waits: int  # calls that waited on the network
    expired: int  # batches dropped, whole or in part, at their maximum age


class _Batch(Block):
    __slots__ = ("ids", "expires")

    def __init__(self, ids: List[int], expires: float = math.inf) -> None:
        super().__init__(0, len(ids))
        self.ids = ids
        self.expires = expires  # time.monotonic() past which none is handed out


class _Fetch:
    __slots__ = ("done", "error", "last_error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: Optional[TicketdError] = None
        self.last_error: Optional[BaseException] = None


class SnowflakeRemote(ForkAware, NotCopyable):
    """Server-made Snowflake IDs of one namespace, prefetched in batches; make
    it with Client.snowflake(). Thread-safe; a forked child's copy starts with
    an empty buffer.
    """

    def __init__(self, client: HandleHost, namespace: str, *, batch: int = DEFAULT_BATCH,
                 low_water: Optional[int] = None, max_age: Optional[float] = DEFAULT_MAX_AGE) -> None:
        """See Client.snowflake() for the arguments."""
        check_name(namespace, "namespace")
        self._client = client
        self._ns = namespace
        self._path = ids_path(namespace)
        self._batch, self._low, self._max_age = check_options(batch, low_water, max_age)
        self._closed = threading.Event()
        self._skip_until = [0.0] * len(client._endpoints)
        # Per worker id, the highest ID received. Kept across a fork: what
        # the child is served later must be above it too.
        self._highest: Dict[int, int] = {}
        self._start_afresh()

    def _start_afresh(self) -> None:
        """An empty buffer, no fetch, fresh locks and counters: a new handle,
        and a forked child's copy (_after_fork_in_child)."""
        self._cur = _Batch([])
        self._mu = threading.Lock()
        self._nxt: Optional[_Batch] = None
        self._inflight: Optional[_Fetch] = None
        self._rr = random.randrange(len(self._client._endpoints))  # spread many processes' first fetches
        self._streak = FailureStreak(f"Snowflake fetch of namespace {self._ns!r}")
        self.fetches = 0
        self.failures = 0
        self.refused = 0
        self.waits = 0
        self.expired = 0

    def _after_fork_in_child(self) -> None:
        # The parent hands out its buffered IDs, and its fetch in flight
        # ends in the parent; the Event is replaced as a lock would be.
        closed = self._closed.is_set()
        self._closed = threading.Event()
        if closed:
            self._closed.set()
        self._start_afresh()

    @property
    def namespace(self) -> str:
        return self._ns

    def next(self) -> int:
        """One ID: from the buffer (a clock reading, then a compare and an
        add under its lock) while it holds any younger than max_age."""
        b = self._cur
        fresh = _now() < b.expires  # read outside the lock: the lock is held for the cut alone
        with b.lock:  # "with", not acquire(): see sequence.py on convoys
            i = b.used
            if fresh and i < b.n and i != b.trigger:
                b.used = i + 1
                return b.ids[i]
        # Used up, too old, or the next index is the trigger: the slow path
        # drops it or cuts the index, and starts the fetch.
        return self._take_slow(1, [])[0]

    def next_n(self, n: int) -> List[int]:
        """n IDs (1..10,000), increasing within what one node answered."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SNOWFLAKE_IDS:
            raise InvalidArgument(f"next_n: n must be an int between 1 and {MAX_SNOWFLAKE_IDS}, got {n!r}")
        b = self._cur
        out: List[int] = []
        t = b.take(n) if _now() < b.expires else None
        if t is not None:
            i, got, triggered = t
            if triggered:
                self._prefetch()
            out = b.ids[i:i + got]
            if got == n:
                return out
        return self._take_slow(n - len(out), out)

    def stats(self) -> SnowflakeStats:
        with self._mu:
            self._drop_expired_locked()  # IDs too old to hand out are not cached ones
            cached = self._cur.remaining() + (self._nxt.n if self._nxt is not None else 0)
            return SnowflakeStats(cached=cached, fetching=self._inflight is not None, fetches=self.fetches,
                                  failures=self.failures, refused=self.refused, waits=self.waits,
                                  expired=self.expired)

    def close(self) -> None:
        """Drops the buffer and waits for the fetch in flight. The client's close() does it too."""
        self._close_from_client()
        with self._mu:
            f = self._inflight
        if f is not None:
            f.done.wait()

    def _close_from_client(self) -> None:
        self._closed.set()
        with self._mu:
            self._nxt = None
            self._cur = _Batch([])

    # -- slow path ---------------------------------------------------------

    def _is_closed(self) -> bool:
        return self._closed.is_set() or self._client.closed

    def _take_slow(self, want: int, out: List[int]) -> List[int]:
        try:
            return self._take_waiting(want, out)
        finally:
            self._client._bg.settle()  # uWSGI's master: no thread of ours runs on (client._Background)

    def _take_waiting(self, want: int, out: List[int]) -> List[int]:
        deadline: Optional[float] = None
        waited = False
        while True:
            with self._mu:
                while want > 0:
                    ids = self._take_locked(want)
                    if ids is None:
                        break
                    out.extend(ids)
                    want -= len(ids)
                if want == 0:
                    return out
                if self._is_closed():
                    raise Closed("ticketd: the Snowflake handle or its client is closed")
                f = self._inflight
                if f is None:
                    f = self._start_fetch_locked(want)
                    if f is None:
                        raise Closed("ticketd: the client is closed")
                if not waited:
                    waited = True
                    self.waits += 1
                    deadline = self._client._deadline()
            ok = f.done.wait() if deadline is None else f.done.wait(max(deadline - time.monotonic(), 0.0))
            if not ok:
                if self._is_closed():
                    raise Closed("ticketd: the Snowflake handle or its client is closed")
                last = f.last_error
                raise Unavailable(f"ticketd: no node could serve Snowflake IDs of {self._ns!r} within the call "
                                  f"timeout" + (f"; last failure: {last}" if last else ""), last=last)
            if f.error is not None:
                raise fresh(f.error)

    def _take_locked(self, want: int) -> Optional[List[int]]:
        self._drop_expired_locked()
        while True:
            b = self._cur
            t = b.take(want)
            if t is not None:
                i, got, triggered = t
                if triggered:
                    self._prefetch_locked()
                return b.ids[i:i + got]
            if self._nxt is None:
                return None
            nb, self._nxt = self._nxt, None
            nb.trigger = max(nb.n - self._low, 0) if self._low > 0 else -1
            self._cur = nb

    def _drop_expired_locked(self) -> None:
        """Drops the batches past their maximum age: the current one (its count
        jumps to the end, so every later take finds it used up; a take that
        read the clock just before still gets its ID, a moment under the age,
        and none gets an ID twice, since the count only moves up) and the one
        fetched ahead."""
        now = _now()
        b = self._cur
        if b.expires <= now:
            with b.lock:
                if b.used < b.n:
                    b.used = b.n
                    self.expired += 1
        if self._nxt is not None and self._nxt.expires <= now:
            self._nxt = None
            self.expired += 1

    def _prefetch(self) -> None:
        with self._mu:
            self._prefetch_locked()
        self._client._bg.settle()

    def _prefetch_locked(self) -> None:
        if self._inflight is None and self._nxt is None and not self._is_closed():
            self._start_fetch_locked(0)

    def _start_fetch_locked(self, want: int) -> Optional[_Fetch]:
        count = max(self._batch, min(want, MAX_SNOWFLAKE_IDS))
        f = _Fetch()
        if self._is_closed() or not self._client._bg.start(f"ticketd-snowflake-{self._ns}",
                                                           lambda: self._run_fetch(f, count)):
            return None
        self._inflight = f
        return f

    def _run_fetch(self, f: _Fetch, count: int) -> None:
        def on_failure(err: BaseException) -> None:
            with self._mu:
                f.last_error = err
                self.failures += 1
            self._streak.failed(err)

        try:
            b: Optional[_Batch] = self._fetch(count, on_failure)
            err: Optional[TicketdError] = None
        except TicketdError as e:
            b, err = None, e
        except BaseException as e:  # a bug must not leave waiters hanging
            b, err = None, TicketdError(f"ticketd: Snowflake fetch failed: {e!r}")
        with self._mu:
            if self._is_closed():
                err = Closed("ticketd: the Snowflake handle or its client is closed")
            elif err is None:
                self._nxt = b
            f.error = err
            self._inflight = None
            f.done.set()
        if err is None:
            self._streak.succeeded()
        elif not isinstance(err, Closed):
            self._streak.failed(err)  # a final answer (401 after a token rotation, 404)

    def _fetch(self, count: int, on_failure: Callable[[BaseException], None]) -> _Batch:
        """The fetch's plan (fetch_plan) carried out by this thread."""
        c = self._client
        body = json.dumps({"count": count}).encode()
        return run_plan(fetch_plan(self, count, on_failure),
                        lambda a: c._attempt(a.idx, "POST", self._path, body, a.timeout),
                        self._closed.wait, ATTEMPT_FAILURES)

    def _accept(self, idx: int, doc: Any, count: int) -> _Batch:
        """Checks a node's answer: count IDs of this namespace, strictly
        increasing, the first above the highest received under its worker id."""
        base = self._client._endpoints[idx].base

        def refuse(why: str) -> TicketdError:
            with self._mu:
                self.refused += 1
            return TicketdError(f"ticketd: {base} answered Snowflake IDs of {self._ns!r} that are refused: {why}",
                                endpoint=base)

        try:
            ids, worker = check_batch(doc, self._ns, count)
        except ValueError as e:
            raise refuse(str(e)) from None
        with self._mu:
            why = worker_refusal(self._highest, worker, ids)
            if why:
                self.refused += 1
                raise TicketdError(f"ticketd: {base} answered Snowflake IDs of {self._ns!r} {why}; refused",
                                   endpoint=base)
            self.fetches += 1
            self._rr = (idx + 1) % len(self._client._endpoints)  # the next fetch goes to the next node
        return _Batch(ids)


def check_batch(doc: Any, namespace: str, count: int) -> Tuple[List[int], int]:
    """The IDs and worker id of a node's answer to a fetch of count IDs of
    namespace, or ValueError saying why the answer is refused: it must hold
    count IDs of this namespace, strictly increasing signed 64-bit integers.
    The worker id is -1 when the answer names none (a node that lost its
    lease as it answered): such IDs cannot be checked against earlier ones."""
    if not isinstance(doc, dict):
        raise ValueError("the answer is not a JSON object")
    if doc.get("namespace") != namespace:
        raise ValueError(f"the answer is for namespace {doc.get('namespace')!r}")
    ids = doc.get("ids")
    if not isinstance(ids, list) or len(ids) != count:
        raise ValueError(f"{len(ids) if isinstance(ids, list) else 'no'} IDs for {count} asked")
    prev = -1
    for i, v in enumerate(ids):
        if type(v) is not int or v <= prev or v > MAX_ID:
            raise ValueError(f"ID {v!r} at {i} does not increase, or is no signed 64-bit integer")
        prev = v
    worker = doc.get("worker_id")
    return ids, worker if type(worker) is int else -1


def answer_is_final(status: int, problem: Dict[str, Any]) -> bool:
    """Whether a fetch's non-2xx answer ends the fetch. A node that does not
    know the route (an older release, mid-upgrade) is passed over as a busy
    one is: another node may serve."""
    route_unknown = problem.get("type") == "urn:ticketd:problem:route-not-found" or status == 405
    return not is_retryable_status(status) and not route_unknown


def worker_refusal(highest: Dict[int, int], worker: int, ids: List[int]) -> str:
    """Why ids, answered under worker id worker, are refused ('' if they are
    not), given the highest ID received under each worker id so far; records
    ids as received when they are not refused. Under one worker id, IDs only
    grow: one not above what was received before was handed out before."""
    if worker < 0:
        return ""  # a node that lost its lease as it answered names worker id -1: not checkable
    h = highest.get(worker)
    if h is not None and ids[0] <= h:
        return f"from {ids[0]} under worker id {worker}, not above {h}, already received under it"
    highest[worker] = ids[-1]
    return ""


def check_options(batch: int, low_water: Optional[int], max_age: Optional[float]) -> Tuple[int, int, Optional[float]]:
    """A Snowflake handle's tuning, checked: (batch, low-water mark, maximum
    age in seconds or None), the defaults filled in."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_SNOWFLAKE_IDS:
        raise InvalidArgument(f"batch must be an int between 1 and {MAX_SNOWFLAKE_IDS}, got {batch!r}")
    if low_water is None:
        low_water = batch // 2
    if isinstance(low_water, bool) or not isinstance(low_water, int) or not 0 <= low_water <= batch:
        raise InvalidArgument(f"low_water must be between 0 and the batch ({batch}), got {low_water!r}")
    if max_age is not None and (isinstance(max_age, bool) or not isinstance(max_age, (int, float))
                                or not 0 <= max_age < math.inf):
        raise InvalidArgument(f"max_age must be seconds (a finite number > 0), or None or 0 for no limit; "
                              f"got {max_age!r}")
    return batch, low_water, float(max_age) if max_age else None


def ids_path(namespace: str) -> str:
    return f"/v1/namespaces/{path_segment(namespace)}/ids"


class Expiring(Protocol):
    expires: float


B_co = TypeVar("B_co", bound=Expiring, covariant=True)


class FetchHost(Protocol):
    """What a fetch's plan reads of the client."""

    @property
    def _endpoints(self) -> List[Endpoint]: ...

    @property
    def _timeout(self) -> float: ...

    @property
    def _backoff(self) -> Tuple[float, float]: ...


class Fetcher(Protocol[B_co]):
    """What a fetch's plan reads of the handle (SnowflakeRemote, AsyncSnowflake)."""

    @property
    def _client(self) -> FetchHost: ...

    _rr: int
    _skip_until: List[float]
    _max_age: Optional[float]

    def _is_closed(self) -> bool: ...

    def _accept(self, idx: int, doc: Any, count: int) -> B_co: ...


def fetch_plan(h: Fetcher[B_co], count: int, on_failure: Callable[[BaseException], None]) -> Plan[B_co]:
    """One fetch of count IDs (a plan, see ticketd._retry): asks the nodes in
    turn from h._rr until one serves a valid batch, an answer is final, or
    the handle closes; between rounds it waits with the client's backoff,
    and at least until some node may be asked again. A node that failed at
    the transport rests for the longest backoff (a node down or cut off
    would cost every fetch a timeout), one that answered Retry-After for it."""
    c = h._client
    n = len(c._endpoints)
    k = 0
    while True:
        start = h._rr
        for j in range(n):
            if h._is_closed():
                raise Closed("ticketd: the Snowflake handle or its client is closed")
            idx = (start + j) % n
            if h._skip_until[idx] > time.monotonic():
                continue
            sent = time.monotonic()  # the IDs answered were made after this
            got = yield Attempt(idx, c._timeout)
            if not isinstance(got, Answer):
                assert isinstance(got, BaseException)
                if h._is_closed():
                    raise Closed("ticketd: the Snowflake handle or its client is closed") from None
                if n > 1 and not isinstance(got, TokenFailure):  # no token: not the node's fault
                    h._skip_until[idx] = time.monotonic() + c._backoff[1]
                on_failure(got)
                continue
            if 200 <= got.status < 300:
                try:
                    batch = h._accept(idx, json.loads(got.body), count)
                except (ValueError, RecursionError, TicketdError) as e:
                    on_failure(e)
                    continue
                if h._max_age is not None:
                    batch.expires = sent + h._max_age
                return batch
            problem = problem_of(got.status, got.body)
            err = error_from_answer(got.status, problem, c._endpoints[idx].base)
            if answer_is_final(got.status, problem):
                raise err
            ra = parse_retry_after(got.headers.get("retry-after"))
            if ra > 0:
                h._skip_until[idx] = time.monotonic() + ra
            on_failure(err)
        k += 1
        wait = backoff_wait(c._backoff, k)
        soonest = min(h._skip_until) - time.monotonic()
        if soonest > 0:
            wait = max(wait, soonest)
        if (yield Pause(wait)) or h._is_closed():
            raise Closed("ticketd: the Snowflake handle or its client is closed")
