"""AsyncSnowflake: Snowflake IDs made by the nodes, prefetched in batches by
a background task.

SnowflakeRemote's buffer and rules (see ticketd.snowflake): the batch being
handed out and at most one fetched ahead, a fetch started when fewer than
the low-water mark are left, fetches round the nodes from a random first
one, a node resting after a failure or for its Retry-After, every answer
checked, and a batch handed out for max_age seconds after the request that
brought it was sent. As in AsyncSequence, one event loop runs every task,
so cutting needs no lock, and callers wait for a fetch through a shield.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from typing import Any, Callable, Dict, List, Optional

from .._log import FailureStreak
from .._process import ForkAware, NotCopyable
from .._wire import MAX_SNOWFLAKE_IDS, check_name
from ..errors import Closed, InvalidArgument, TicketdError, Unavailable, fresh
from ..snowflake import (
    DEFAULT_BATCH,
    DEFAULT_MAX_AGE,
    SnowflakeStats,
    check_batch,
    check_options,
    fetch_plan,
    ids_path,
    worker_refusal,
)
from ._host import AsyncHandleHost
from ._plan import TRANSPORT_ERRORS, run_plan
from .sequence import _Refill as _Fetch

__all__ = ["AsyncSnowflake"]


class _Batch:
    __slots__ = ("ids", "used", "trigger", "expires")

    def __init__(self, ids: List[int], expires: float = math.inf) -> None:
        self.ids = ids
        self.used = 0
        self.trigger = -1  # the index whose taker starts the next fetch; -1: none
        self.expires = expires  # time.monotonic() past which none is handed out

    def remaining(self) -> int:
        return len(self.ids) - self.used


class AsyncSnowflake(ForkAware, NotCopyable):
    """Server-made Snowflake IDs of one namespace, prefetched in batches; make
    it with AsyncClient.snowflake(). Share it between the tasks of the
    client's event loop."""

    def __init__(self, client: AsyncHandleHost, namespace: str, *, batch: int = DEFAULT_BATCH,
                 low_water: Optional[int] = None, max_age: Optional[float] = DEFAULT_MAX_AGE) -> None:
        """See Client.snowflake() for the arguments."""
        check_name(namespace, "namespace")
        self._client = client
        self._ns = namespace
        self._path = ids_path(namespace)
        self._batch, self._low, self._max_age = check_options(batch, low_water, max_age)
        self._closed = False
        self._skip_until = [0.0] * len(client._endpoints)
        self._highest: Dict[int, int] = {}  # per worker id, the highest ID received; kept across a fork
        self._start_afresh()

    def _start_afresh(self) -> None:
        self._cur = _Batch([])
        self._nxt: Optional[_Batch] = None
        self._inflight: Optional[_Fetch] = None
        self._rr = random.randrange(len(self._client._endpoints))
        self._streak = FailureStreak(f"Snowflake fetch of namespace {self._ns!r}")
        self.fetches = 0
        self.failures = 0
        self.refused = 0
        self.waits = 0
        self.expired = 0

    def _after_fork_in_child(self) -> None:
        self._start_afresh()

    @property
    def namespace(self) -> str:
        return self._ns

    async def next(self) -> int:
        """One ID: from the buffer while it holds any younger than max_age."""
        b = self._cur
        i = b.used
        if i < len(b.ids) and i != b.trigger and time.monotonic() < b.expires:
            b.used = i + 1
            return b.ids[i]
        return (await self._take_slow(1, []))[0]

    async def next_n(self, n: int) -> List[int]:
        """n IDs (1..10,000), increasing within what one node answered."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SNOWFLAKE_IDS:
            raise InvalidArgument(f"next_n: n must be an int between 1 and {MAX_SNOWFLAKE_IDS}, got {n!r}")
        return await self._take_slow(n, [])

    def stats(self) -> SnowflakeStats:
        self._drop_expired()
        cached = self._cur.remaining() + (len(self._nxt.ids) if self._nxt is not None else 0)
        return SnowflakeStats(cached=cached, fetching=self._inflight is not None, fetches=self.fetches,
                              failures=self.failures, refused=self.refused, waits=self.waits, expired=self.expired)

    def close(self) -> None:
        """Drops the buffer; the fetch in flight ends with Closed. The client's aclose() does it too."""
        self._close_from_client()

    def _close_from_client(self) -> None:
        self._closed = True
        self._nxt = None
        self._cur = _Batch([])

    # -- slow path ---------------------------------------------------------

    def _is_closed(self) -> bool:
        return self._closed or self._client.closed

    async def _take_slow(self, want: int, out: List[int]) -> List[int]:
        deadline: Optional[float] = None
        waited = False
        while True:
            while want > 0:
                ids = self._take_cached(want)
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
                f = self._start_fetch(want)
                if f is None:
                    raise Closed("ticketd: the client is closed")
            if not waited:
                waited = True
                self.waits += 1
                deadline = self._client._deadline()
            timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            try:
                await asyncio.wait_for(asyncio.shield(f.done), timeout)
            except asyncio.TimeoutError:
                if self._is_closed():
                    raise Closed("ticketd: the Snowflake handle or its client is closed") from None
                last = f.last_error
                raise Unavailable(f"ticketd: no node could serve Snowflake IDs of {self._ns!r} within the call "
                                  f"timeout" + (f"; last failure: {last}" if last else ""), last=last) from None
            if f.error is not None:
                raise fresh(f.error)

    def _take_cached(self, want: int) -> Optional[List[int]]:
        self._drop_expired()
        while True:
            b = self._cur
            i = b.used
            if i < len(b.ids):
                got = min(want, len(b.ids) - i)
                b.used = i + got
                if i <= b.trigger < i + got:
                    self._prefetch()
                return b.ids[i:i + got]
            if self._nxt is None:
                return None
            nb, self._nxt = self._nxt, None
            nb.trigger = max(len(nb.ids) - self._low, 0) if self._low > 0 else -1
            self._cur = nb

    def _drop_expired(self) -> None:
        now = time.monotonic()
        b = self._cur
        if b.expires <= now and b.used < len(b.ids):
            b.used = len(b.ids)
            self.expired += 1
        if self._nxt is not None and self._nxt.expires <= now:
            self._nxt = None
            self.expired += 1

    def _prefetch(self) -> None:
        if self._inflight is None and self._nxt is None and not self._is_closed():
            self._start_fetch(0)

    def _start_fetch(self, want: int) -> Optional[_Fetch]:
        count = max(self._batch, min(want, MAX_SNOWFLAKE_IDS))
        f = _Fetch()
        if self._is_closed() or not self._client._spawn(f"ticketd-snowflake-{self._ns}",
                                                        lambda: self._run_fetch(f, count)):
            return None
        self._inflight = f
        return f

    async def _run_fetch(self, f: _Fetch, count: int) -> None:
        def on_failure(err: BaseException) -> None:
            f.last_error = err
            self.failures += 1
            self._streak.failed(err)

        b: Optional[_Batch] = None
        err: Optional[TicketdError] = None
        try:
            b = await self._fetch(count, on_failure)
        except asyncio.CancelledError:
            self._finish_fetch(f, None, Closed("ticketd: the Snowflake handle or its client is closed"))
            raise
        except TicketdError as e:
            err = e
        except Exception as e:  # a bug must not leave waiters hanging
            err = TicketdError(f"ticketd: Snowflake fetch failed: {e!r}")
        self._finish_fetch(f, b, err)

    def _finish_fetch(self, f: _Fetch, b: Optional[_Batch], err: Optional[TicketdError]) -> None:
        if self._is_closed():
            err = Closed("ticketd: the Snowflake handle or its client is closed")
        elif err is None:
            self._nxt = b
        if self._inflight is f:
            self._inflight = None
        f.finish(err)
        if err is None:
            self._streak.succeeded()
        elif not isinstance(err, Closed):
            self._streak.failed(err)

    async def _fetch(self, count: int, on_failure: Callable[[BaseException], None]) -> _Batch:
        """The fetch's plan (ticketd.snowflake.fetch_plan), SnowflakeRemote's,
        carried out by awaiting."""
        c = self._client
        body = json.dumps({"count": count}).encode()
        return await run_plan(fetch_plan(self, count, on_failure),
                              lambda a: c._attempt(a.idx, "POST", self._path, body, a.timeout),
                              c._closed_within, TRANSPORT_ERRORS)

    def _accept(self, idx: int, doc: Any, count: int) -> _Batch:
        base = self._client._endpoints[idx].base
        try:
            ids, worker = check_batch(doc, self._ns, count)
            why = worker_refusal(self._highest, worker, ids)
        except ValueError as e:
            why = f"that are refused: {e}"
        else:
            why = f"{why}; refused" if why else ""
        if why:
            self.refused += 1
            raise TicketdError(f"ticketd: {base} answered Snowflake IDs of {self._ns!r} {why}", endpoint=base)
        self.fetches += 1
        self._rr = (idx + 1) % len(self._client._endpoints)
        return _Batch(ids)
