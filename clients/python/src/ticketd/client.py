"""The Client: one call, one answer, retried over every endpoint."""

from __future__ import annotations

import ssl
import threading
import time
import weakref
from typing import Any, Callable, List, Optional, Sequence as Seq, Tuple, TypeVar, Union

from ._log import logger
from ._process import ForkAware, NotCopyable, forks_without_the_gil, reset_in_forked_child
from ._options import parse_options
from ._retry import ATTEMPT_FAILURES, call_plan, run_plan
from ._token import TokenSource, authorization
from ._transport import Answer, Pool
from ._wire import (  # noqa: F401 (re-exported: ticketd.client.X as before)
    LEADER_HEADER,
    MAX_ID,
    MAX_RESERVE_COUNT,
    MAX_SNOWFLAKE_IDS,
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
from .errors import Closed
from .sequence import DEFAULT_COVERAGE, DEFAULT_MAX_RANGE, DEFAULT_MIN_RANGE, CachedSequence
from .snowflake import DEFAULT_BATCH, DEFAULT_MAX_AGE, SnowflakeRemote

_H = TypeVar("_H")  # a handle the client makes and registers

__all__ = ["Client", "Range", "SequenceInfo", "MAX_RESERVE_COUNT", "MAX_SNOWFLAKE_IDS"]


class _Background:
    """The client's background threads: started only while the client is
    open, each named "ticketd-…", all joined by close()."""

    def __init__(self, settle_within: float, closed: bool = False) -> None:
        self.lock = threading.Lock()
        self.closed = threading.Event()
        if closed:
            self.closed.set()
        self.threads: List[threading.Thread] = []
        # In uWSGI's master before it forks (see _process.forks_without_the_gil),
        # a call that started a thread waits for it to end: settle().
        self.settling = forks_without_the_gil()
        self.settle_within = settle_within

    def start(self, name: str, target: Callable[[], None]) -> bool:
        with self.lock:
            if self.closed.is_set():
                return False
            self.threads = [t for t in self.threads if t.is_alive()]
            t = threading.Thread(target=target, name=name, daemon=True)
            self.threads.append(t)
            t.start()
            return True

    def settle(self) -> None:
        """In a process that forks without the GIL (uWSGI's master): waits, up
        to settle_within seconds, for the background threads to end, so that
        none holds the GIL when the workers are forked. Called by the handles
        once their locks are released, at the end of a call that may have
        started one. Elsewhere: nothing (one attribute read)."""
        if not self.settling:
            return
        end = time.monotonic() + self.settle_within
        with self.lock:
            alive = [t for t in self.threads if t.is_alive() and t is not threading.current_thread()]
        for t in alive:
            t.join(max(end - time.monotonic(), 0.0))
        if any(t.is_alive() for t in alive):
            logger.warning("ticketd: a background refill or fetch still runs in uWSGI's master after %.0f s; a "
                           "worker forked while it runs may hang: run uWSGI with --py-call-uwsgi-fork-hooks or "
                           "--lazy-apps", self.settle_within)


class Client(ForkAware, NotCopyable):
    """A client of a ticketd cluster. Thread-safe: make one per process and share it.

    Across os.fork (multiprocessing, prefork servers) the child's copy starts
    afresh: it drops the parent's cached IDs and connections and reserves its
    own on first use; the parent goes on as before. A Client and its handles
    cannot be copied or pickled.
    """

    def __init__(
        self,
        endpoints: Optional[Union[str, Seq[str]]] = None,
        *,
        token: Optional[TokenSource] = None,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
        timeout: float = 5.0,
        call_timeout: Optional[float] = 30.0,
        backoff: Tuple[float, float] = (0.05, 2.0),
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        """
        endpoints: base URLs of some nodes ("http://10.0.0.1:8080"), a list or
            one comma-separated string; default the TICKETD_ADDR variable.
        token: the bearer token, a str, or a callable returning one, called
            for every request so that a rotated token is used at once (keep
            it cheap: a cached value); default TICKETD_TOKEN. A callable that
            raises, or answers no non-empty visible-ASCII str, fails that
            attempt and is retried; a call that never gets a token ends with
            Unavailable saying why.
        ca_file: the CA bundle for https endpoints; default TICKETD_CA.
        cert_file, key_file: a client certificate and its key.
        timeout: one HTTP attempt to one endpoint, in seconds, the whole of it:
            connecting, the TLS handshake, sending, the status line, the
            headers and the body.
        call_timeout: a whole call, retries included (None or 0: no bound);
            also the longest a CachedSequence's next() waits for an empty cache.
        backoff: (min, max) seconds between rounds over the endpoints.
        ssl_context: the TLS settings to use instead of ca_file, cert_file and
            key_file.
        """
        o = parse_options(endpoints, token, ca_file, cert_file, key_file, timeout, call_timeout, backoff,
                          ssl_context)
        self._endpoints = o.endpoints
        self._auth = authorization(o.token)  # the Authorization header's value, asked per request
        self._timeout = o.timeout
        self._call_timeout = o.call_timeout
        self._backoff = o.backoff
        self._pool = Pool(o.ssl_context)
        self._preferred = 0  # the endpoint that answered last (an int store is atomic)
        self._bg = _Background(self._call_timeout or self._timeout)
        self._handles: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._close_lock = threading.Lock()
        reset_in_forked_child(self)

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Stops the background refills and fetches, waits for their threads to
        end, and closes the connections. Idempotent; later calls raise Closed."""
        with self._close_lock:
            self._bg.closed.set()
            handles = list(self._handles)
        for h in handles:
            h._close_from_client()
        self._pool.close()  # wakes threads blocked on a socket
        while True:
            with self._bg.lock:
                alive = [t for t in self._bg.threads if t.is_alive() and t is not threading.current_thread()]
            if not alive:
                break
            for t in alive:
                t.join()

    def _after_fork_in_child(self) -> None:
        """In a forked child, before its code goes on (see _process.py): the
        background threads, connections and handles' caches are the parent's,
        so all are dropped, and the locks replaced (the thread that held one
        at the fork is not in the child). Whether the client was closed stays."""
        self._close_lock = threading.Lock()
        self._bg = _Background(self._call_timeout or self._timeout, closed=self._bg.closed.is_set())
        self._pool = self._pool.for_forked_child()
        for h in list(self._handles):
            h._after_fork_in_child()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._bg.closed.is_set()

    @property
    def endpoints(self) -> List[str]:
        return [e.base for e in self._endpoints]

    def _check_open(self) -> None:
        if self._bg.closed.is_set():
            raise Closed("ticketd: the client is closed")

    def _register(self, handle: _H) -> _H:
        """Keeps handle to close it with the client and reset it in a forked
        child. The client registers the handles it makes, so that the
        handles' modules never call back into this one (issue 48)."""
        with self._close_lock:
            self._check_open()
            self._handles.add(handle)
        return handle

    def _deadline(self) -> Optional[float]:
        return None if self._call_timeout is None else time.monotonic() + self._call_timeout

    # -- calls -------------------------------------------------------------

    def reserve(self, sequence: str, count: int) -> Range:
        """Reserves count consecutive IDs (1..10,000,000) of a sequence, retrying
        over the endpoints until it succeeds or the call timeout passes."""
        self._check_open()
        check_name(sequence)
        _check_count(count, MAX_RESERVE_COUNT, "count")
        return self._reserve(sequence, count, self._deadline(), None)

    def _reserve(self, sequence: str, count: int, deadline: Optional[float],
                 on_failure: Optional[Callable[[BaseException], None]]) -> Range:
        path, body = reserve_request(sequence, count)
        _, doc = self._round_trip("POST", path, body, deadline, on_failure)
        return range_of_answer(doc, sequence, count)

    def create_sequence(self, name: str, *, start: Optional[int] = None, max: Optional[int] = None) -> Tuple[SequenceInfo, bool]:
        """Creates a sequence, or confirms it exists with the same settings.
        Returns (info, created). Other settings: Conflict. Idempotent.

        start: its first ID (default 1).
        max: its last ID (default 2^63 - 1).
        """
        self._check_open()
        path, body = create_request(name, start, max)
        status, doc = self._round_trip("PUT", path, body, self._deadline(), None)
        return sequence_info_of(doc), status == 201

    def sequence_info(self, name: str) -> SequenceInfo:
        """A sequence's settings, the lowest ID never handed out (None once exhausted) and what remains."""
        self._check_open()
        check_name(name)
        _, doc = self._round_trip("GET", f"/v1/sequences/{path_segment(name)}", None, self._deadline(), None)
        return sequence_info_of(doc)

    def sequence(self, name: str, *, coverage: float = DEFAULT_COVERAGE, min_range: int = DEFAULT_MIN_RANGE,
                 max_range: int = DEFAULT_MAX_RANGE) -> CachedSequence:
        """A cached generator of a sequence's IDs. One per sequence and process; share it between threads.

        coverage: the seconds of IDs, at the rate observed, that the cache
            should hold, to ride out an outage that long (default 10).
        min_range, max_range: bounds of the ranges it reserves (default
            1,000 and 10,000,000).
        """
        return self._register(CachedSequence(self, name, coverage=coverage, min_range=min_range, max_range=max_range))

    def snowflake(self, namespace: str, *, batch: int = DEFAULT_BATCH, low_water: Optional[int] = None,
                  max_age: Optional[float] = DEFAULT_MAX_AGE) -> SnowflakeRemote:
        """A prefetching generator of server-made Snowflake IDs of a namespace.

        batch: IDs asked of a node at once, 1..10,000 (default 256).
        low_water: fetch the next batch when fewer are left in the current one
            (default half the batch; 0: only when it is used up).
        max_age: seconds a batch is handed out after the request that brought
            it was sent (default 600, Hazelcast's); older IDs would sort
            before those made since, so they are dropped and fresh ones
            fetched. None or 0: no limit.
        """
        return self._register(SnowflakeRemote(self, namespace, batch=batch, low_water=low_water, max_age=max_age))

    # -- the retry loop ----------------------------------------------------

    def _attempt(self, idx: int, method: str, path: str, body: Optional[bytes], timeout: float) -> Answer:
        """One HTTP exchange with an endpoint. Raises OSError or HTTPException
        for a transport failure, a TicketdError (final) when the token
        callable failed or answered no token."""
        headers = {"Accept": "application/json, application/problem+json"}
        if self._auth is not None:
            headers["Authorization"] = self._auth()
        if body is not None:
            headers["Content-Type"] = "application/json"
        return self._pool.request(self._endpoints[idx], method, path, body, headers, timeout)

    def _round_trip(self, method: str, path: str, body: Optional[bytes], deadline: Optional[float],
                    on_failure: Optional[Callable[[BaseException], None]]) -> Tuple[int, Any]:
        """The call's plan (_retry.call_plan) carried out by this thread:
        attempts block on the socket, pauses wait on the close event."""
        return run_plan(call_plan(self, method, path, deadline, on_failure),
                        lambda a: self._attempt(a.idx, method, path, body, a.timeout),
                        self._bg.closed.wait, ATTEMPT_FAILURES)
