"""AsyncClient: the Client for asyncio. One call, one answer, retried over
every endpoint, awaiting where the threaded client blocks."""

from __future__ import annotations

import asyncio
import ssl
import time
import weakref
from typing import Any, Callable, Coroutine, Dict, List, Optional, Sequence as Seq, Set, Tuple, TypeVar, Union

from .._options import parse_options
from .._process import ForkAware, NotCopyable, reset_in_forked_child
from .._retry import call_plan
from .._token import AsyncTokenSource, async_authorization
from .._transport import Answer
from .._wire import (
    MAX_RESERVE_COUNT,
    Range,
    SequenceInfo,
    _check_count,
    check_name,
    create_request,
    path_segment,
    range_of_answer,
    reserve_request,
    sequence_info_of,
)
from ..errors import Closed
from ..sequence import DEFAULT_COVERAGE, DEFAULT_MAX_RANGE, DEFAULT_MIN_RANGE
from ..snowflake import DEFAULT_BATCH, DEFAULT_MAX_AGE
from ._http import Pool
from ._plan import TRANSPORT_ERRORS, run_plan
from .sequence import AsyncSequence
from .snowflake import AsyncSnowflake

__all__ = ["AsyncClient"]

_H = TypeVar("_H")

class AsyncClient(ForkAware, NotCopyable):
    """A client of a ticketd cluster for asyncio programs: every call is a
    coroutine, and waiting (for the network, for a cache refill) never blocks
    the event loop.

        async with ticketd.aio.AsyncClient(["http://10.0.0.1:8080"]) as c:
            orders = c.sequence("orders")
            order_id = await orders.next()

    It takes the same arguments as ticketd.Client (the token may also be a
    coroutine function). Not thread-safe: use it from one event loop, that of
    its first call. Once that loop has closed (asyncio.run returned), a new
    loop may take it over; its cached IDs stay valid, its connections are
    dropped. Background work (refills, Snowflake fetches) runs as tasks named
    "ticketd-…", all cancelled and awaited by aclose().

    Across os.fork the child's copy starts afresh, as the threaded client's
    does, for programs that make the client before they fork and run their
    event loop in each child (a prefork server's preloaded app). Forking
    while the event loop runs is not supported: asyncio itself is not.
    """

    def __init__(
        self,
        endpoints: Optional[Union[str, Seq[str]]] = None,
        *,
        token: Optional[AsyncTokenSource] = None,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
        timeout: float = 5.0,
        call_timeout: Optional[float] = 30.0,
        backoff: Tuple[float, float] = (0.05, 2.0),
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        """See ticketd.Client. token: a str, a callable returning one, or a
        coroutine function returning one, asked on every request."""
        o = parse_options(endpoints, token, ca_file, cert_file, key_file, timeout, call_timeout, backoff,
                          ssl_context)
        self._endpoints = o.endpoints
        self._auth = async_authorization(o.token)
        self._timeout = o.timeout
        self._call_timeout = o.call_timeout
        self._backoff = o.backoff
        self._ssl = o.ssl_context
        self._pool = Pool(o.ssl_context)
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._closing: Optional[asyncio.Event] = None  # set by aclose(); made on the loop it serves
        self._preferred = 0
        self._closed = False
        self._tasks: Set["asyncio.Task[None]"] = set()
        self._handles: "weakref.WeakSet[Any]" = weakref.WeakSet()
        reset_in_forked_child(self)

    # -- lifecycle ---------------------------------------------------------

    async def aclose(self) -> None:
        """Cancels the background refills and fetches, waits for their tasks
        to end, and closes the connections; calls in flight end with Closed.
        Idempotent; later calls raise Closed."""
        self._closed = True
        if self._closing is not None:
            self._closing.set()  # wakes the calls waiting out a backoff
        for h in list(self._handles):
            h._close_from_client()
        if self._loop is not None and self._loop.is_closed():
            # Its connections cannot be closed through it any more: their
            # transports close their sockets when collected.
            self._pool = Pool(self._ssl)
        self._pool.close()
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks and self._loop is not None and self._loop is _running_loop():
            await asyncio.gather(*tasks, return_exceptions=True)

    def _after_fork_in_child(self) -> None:
        """In a forked child: the parent's connections, tasks and loop are not
        this process's; the handles drop their caches. Whether it was closed stays."""
        self._pool = self._pool.for_forked_child()
        self._tasks = set()
        self._loop = None
        self._closing = None
        for h in list(self._handles):
            h._after_fork_in_child()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def endpoints(self) -> List[str]:
        return [e.base for e in self._endpoints]

    def _check_open(self) -> None:
        if self._closed:
            raise Closed("ticketd: the client is closed")
        self._bind()

    def _bind(self) -> asyncio.AbstractEventLoop:
        """The event loop this client works on: that of its first call, or a
        new one once that has closed (connections, which belong to a loop,
        are dropped then; the background tasks ended with it)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return loop
        if self._loop is not None and not self._loop.is_closed():
            raise RuntimeError("ticketd: this AsyncClient works on the event loop of its first call, which is "
                               "still open; make one AsyncClient per event loop")
        if self._loop is not None:
            self._pool = Pool(self._ssl)  # the old loop's: their transports close their sockets when collected
            self._tasks = set()
        self._loop = loop
        self._closing = asyncio.Event()
        return loop

    def _register(self, handle: _H) -> _H:
        if self._closed:
            raise Closed("ticketd: the client is closed")
        self._handles.add(handle)
        return handle

    def _deadline(self) -> Optional[float]:
        return None if self._call_timeout is None else time.monotonic() + self._call_timeout

    def _spawn(self, name: str, work: Callable[[], Coroutine[Any, Any, None]]) -> bool:
        """Starts work() as a background task of this client; False once it is closed."""
        if self._closed:
            return False
        t = self._bind().create_task(work(), name=name)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return True

    # -- calls -------------------------------------------------------------

    async def reserve(self, sequence: str, count: int) -> Range:
        """Reserves count consecutive IDs (1..10,000,000) of a sequence,
        retrying over the endpoints until it succeeds or the call timeout passes."""
        self._check_open()
        check_name(sequence)
        _check_count(count, MAX_RESERVE_COUNT, "count")
        return await self._reserve(sequence, count, self._deadline(), None)

    async def _reserve(self, sequence: str, count: int, deadline: Optional[float],
                       on_failure: Optional[Callable[[BaseException], None]]) -> Range:
        path, body = reserve_request(sequence, count)
        _, doc = await self._round_trip("POST", path, body, deadline, on_failure)
        return range_of_answer(doc, sequence, count)

    async def create_sequence(self, name: str, *, start: Optional[int] = None,
                              max: Optional[int] = None) -> Tuple[SequenceInfo, bool]:
        """See Client.create_sequence."""
        self._check_open()
        path, body = create_request(name, start, max)
        status, doc = await self._round_trip("PUT", path, body, self._deadline(), None)
        return sequence_info_of(doc), status == 201

    async def sequence_info(self, name: str) -> SequenceInfo:
        """See Client.sequence_info."""
        self._check_open()
        check_name(name)
        _, doc = await self._round_trip("GET", f"/v1/sequences/{path_segment(name)}", None, self._deadline(), None)
        return sequence_info_of(doc)

    def sequence(self, name: str, *, coverage: float = DEFAULT_COVERAGE, min_range: int = DEFAULT_MIN_RANGE,
                 max_range: int = DEFAULT_MAX_RANGE) -> AsyncSequence:
        """A cached generator of a sequence's IDs (see Client.sequence): one
        per sequence; share it between tasks."""
        return self._register(AsyncSequence(self, name, coverage=coverage, min_range=min_range,
                                            max_range=max_range))

    def snowflake(self, namespace: str, *, batch: int = DEFAULT_BATCH, low_water: Optional[int] = None,
                  max_age: Optional[float] = DEFAULT_MAX_AGE) -> AsyncSnowflake:
        """A prefetching generator of server-made Snowflake IDs (see Client.snowflake)."""
        return self._register(AsyncSnowflake(self, namespace, batch=batch, low_water=low_water, max_age=max_age))

    # -- the retry loop ----------------------------------------------------

    async def _attempt(self, idx: int, method: str, path: str, body: Optional[bytes], timeout: float) -> Answer:
        """One HTTP exchange with an endpoint, the whole of it (asking the
        token callable included) within timeout. Raises one of
        TRANSPORT_ERRORS for a transport failure, a TicketdError (final) when
        the token callable failed or answered no token."""
        headers = {"Accept": "application/json, application/problem+json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return await asyncio.wait_for(self._exchange(idx, method, path, body, headers), timeout)

    async def _exchange(self, idx: int, method: str, path: str, body: Optional[bytes],
                        headers: Dict[str, str]) -> Answer:
        if self._auth is not None:
            headers["Authorization"] = await self._auth()
        return await self._pool.request(self._endpoints[idx], method, path, body, headers)

    async def _round_trip(self, method: str, path: str, body: Optional[bytes], deadline: Optional[float],
                          on_failure: Optional[Callable[[BaseException], None]]) -> Tuple[int, Any]:
        """The call's plan (ticketd._retry.call_plan), the threaded client's,
        carried out by awaiting."""
        return await run_plan(call_plan(self, method, path, deadline, on_failure),
                              lambda a: self._attempt(a.idx, method, path, body, a.timeout),
                              self._closed_within, TRANSPORT_ERRORS)

    async def _closed_within(self, seconds: float) -> bool:
        """Waits seconds, or less if the client is closed meanwhile: whether it was."""
        closing = self._closing
        if closing is None or self._closed:
            return self._closed
        try:
            await asyncio.wait_for(closing.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        return self._closed


def _running_loop() -> Optional[asyncio.AbstractEventLoop]:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
