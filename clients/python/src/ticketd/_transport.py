"""Persistent HTTP(S) connections to the endpoints, one small pool each.

http.client connections are not thread-safe, so a connection is used by one
attempt at a time: an attempt takes an idle one (or dials), and puts it back
once the answer was read whole. Connections in use are tracked so that
close() can shut their sockets down and wake a thread blocked on a read.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from typing import Dict, List, Mapping, Optional, Set, Tuple
from urllib.parse import urlsplit

from ._deadline_http import DeadlineConnection
from .errors import InvalidArgument

_Conn = DeadlineConnection

# An answer larger than this is refused: ticketd's answers are small.
MAX_ANSWER_BYTES = 1 << 20

# Idle connections kept per endpoint; more threads than this dial their own.
_MAX_IDLE = 16

# Errors that a connection taken from the pool raises when the server closed
# it while it was idle: the request is sent again once, on a new connection.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class Endpoint:
    """One node's base URL, parsed."""

    __slots__ = ("base", "scheme", "host", "port", "netloc")

    def __init__(self, raw: str) -> None:
        text = raw.strip().rstrip("/")
        try:
            u = urlsplit(text)
            port = u.port
        except ValueError as e:
            raise InvalidArgument(f"endpoint {raw!r} is not a URL: {e}") from None
        if u.scheme not in ("http", "https"):
            raise InvalidArgument(
                f"endpoint {raw!r}: want an http:// or https:// base URL such as http://127.0.0.1:8080")
        if not u.hostname:
            raise InvalidArgument(f"endpoint {raw!r} has no host")
        if u.path or u.query or u.fragment or u.username or u.password:
            raise InvalidArgument(f"endpoint {raw!r}: want only scheme://host[:port], without path, query or user info")
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = port if port is not None else (443 if u.scheme == "https" else 80)
        self.netloc = u.netloc  # "host:port" as written, as a node names the leader
        self.base = f"{u.scheme}://{u.netloc}"


class Answer:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class Pool:
    def __init__(self, ssl_context: Optional[ssl.SSLContext]) -> None:
        self._ssl = ssl_context
        self._lock = threading.Lock()
        self._idle: Dict[str, List[_Conn]] = {}
        self._busy: Set[_Conn] = set()
        self._closed = False

    def _dial(self, ep: Endpoint) -> _Conn:
        # Not connected yet: the attempt connects, within its deadline.
        tls = None
        if ep.scheme == "https":
            tls = self._ssl or ssl.create_default_context()
        return DeadlineConnection(ep.host, ep.port, tls, ep.base)

    def _take(self, ep: Endpoint) -> Tuple[_Conn, bool]:
        with self._lock:
            if self._closed:
                # A thread that raced close() must not dial and block it for an attempt timeout.
                raise ConnectionAbortedError("ticketd: the client is closed")
            idle = self._idle.get(ep.base)
            conn = idle.pop() if idle else None
            reused = conn is not None
            if conn is None:
                conn = self._dial(ep)
            self._busy.add(conn)
        return conn, reused

    def _give_back(self, ep: Endpoint, conn: _Conn, keep: bool) -> None:
        with self._lock:
            self._busy.discard(conn)
            if keep and not self._closed:
                idle = self._idle.setdefault(ep.base, [])
                if len(idle) < _MAX_IDLE:
                    idle.append(conn)
                    return
        conn.close()

    def request(self, ep: Endpoint, method: str, path: str, body: Optional[bytes],
                headers: Mapping[str, str], timeout: float) -> Answer:
        """One HTTP exchange with ep, whole within timeout seconds. Raises
        OSError or http.client.HTTPException on transport failures (timeouts
        included)."""
        # The timeout bounds the exchange, not each socket operation: a node
        # that trickles its answer (status line, headers or body) a byte at
        # a time must not hold the call (DeadlineConnection).
        deadline = time.monotonic() + timeout
        for first_try in (True, False):
            conn, reused = self._take(ep)
            conn.start(deadline, timeout)
            keep = False
            try:
                conn.request(method, path, body=body, headers=dict(headers))
                resp = conn.getresponse()
                data = _read_body(resp, ep)
                keep = not resp.will_close
                return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
            except _STALE:
                if reused and first_try:
                    continue  # the server closed it while idle: once more, on a new connection
                raise
            finally:
                self._give_back(ep, conn, keep)
        raise AssertionError("unreachable")

    def for_forked_child(self) -> "Pool":
        """A forked child's pool: empty. The child's copies of the parent's
        sockets are closed without a shutdown, which would end the parent's
        connections too; the parent's own descriptors stay open, so its
        connections, and any answer on its way, are untouched."""
        for conn in [c for cs in self._idle.values() for c in cs] + list(self._busy):
            sock = conn.sock
            conn.sock = None
            if sock is not None:
                sock.close()
        return Pool(self._ssl)

    def close(self) -> None:
        """Closes the idle connections and shuts down those in use, which makes
        the threads blocked on them fail at once."""
        with self._lock:
            self._closed = True
            idle = [c for cs in self._idle.values() for c in cs]
            self._idle.clear()
            busy = list(self._busy)
        for c in idle:
            c.close()
        for c in busy:
            sock = c.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def _read_body(resp: http.client.HTTPResponse, ep: Endpoint) -> bytes:
    """The answer's body, at most MAX_ANSWER_BYTES. Each read waits only for
    the time left before the attempt's deadline (DeadlineConnection); read1:
    whatever one read of the socket brings, where read(n) would wait for
    all n bytes."""
    chunks: List[bytes] = []
    total = 0
    while True:
        chunk = resp.read1(65536)
        if not chunk:
            # Closed, as read() closes it at the end: the connection takes
            # its next request only once its last answer is closed.
            resp.close()
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_ANSWER_BYTES:
            raise http.client.HTTPException(f"{ep.base} answered more than {MAX_ANSWER_BYTES} bytes")
        chunks.append(chunk)
