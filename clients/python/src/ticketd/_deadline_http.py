"""An HTTP(S) connection whose every step ends by one deadline per attempt.

http.client waits for each socket operation with the socket's timeout,
which is per operation: a peer sending one byte every few milliseconds
holds a read of the status line or of the headers for as long as it keeps
trickling (issue 46, part 3). Here the attempt has one deadline, and every
step waits only for the time left before it: connecting, the TLS
handshake, sending, and every read of the status line, the headers and the
body. Past the deadline a step raises socket.timeout (an OSError), which
the caller handles as any transport failure.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import time
from typing import Any, Callable, Optional


class DeadlineConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection to host:port, over TLS when given a context.
    Persistent: each attempt sets its own deadline with start() first."""

    def __init__(self, host: str, port: int, tls: Optional[ssl.SSLContext], name: str) -> None:
        super().__init__(host, port)
        self._tls = tls
        self._name = name  # the endpoint, for the timeout's message
        self._deadline = 0.0
        self._budget = 0.0

    def start(self, deadline: float, budget: float) -> None:
        """The attempt that is starting ends at deadline (time.monotonic()),
        budget seconds after it began."""
        self._deadline = deadline
        self._budget = budget

    def left(self) -> float:
        """Seconds left before the deadline; socket.timeout once none are
        (never 0, which would make the socket non-blocking)."""
        r = self._deadline - time.monotonic()
        if r <= 0:
            raise socket.timeout(f"{self._name}: no whole answer within {self._budget:.3g} s")
        return r

    def connect(self) -> None:
        # Not http.client's connect(): its TLS handshake would get a whole
        # timeout of its own after the TCP connect used part of it.
        sock = socket.create_connection((self.host, self.port), self.left())
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                # The handshake as a whole is bounded by the socket's timeout
                # (the ssl module keeps a deadline of its own for it).
                sock.settimeout(self.left())
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise
        self.sock = sock

    def send(self, data: Any) -> None:
        if self.sock is None:
            self.connect()
        sock = self.sock
        if sock is not None:
            # sendall() counts its timeout over the whole send (Python 3.5+);
            # a request here goes out in one send (headers and body together).
            sock.settimeout(self.left())
        super().send(data)

    # http.client makes each answer with self.response_class(self.sock, ...);
    # a method here gives the answer this connection's deadline.
    def response_class(self, sock: socket.socket, *args: Any, **kwargs: Any) -> http.client.HTTPResponse:  # type: ignore[override]
        return http.client.HTTPResponse(_SocketReadUntil(sock, self.left), *args, **kwargs)  # type: ignore[arg-type]


class _SocketReadUntil:
    """What HTTPResponse asks of the socket it is given, makefile("rb"):
    here a buffered reader whose every read of the socket waits only for
    the time left."""

    def __init__(self, sock: socket.socket, left: Callable[[], float]) -> None:
        self._sock = sock
        self._left = left

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_ReadsBeforeDeadline(self._sock, self._left))


class _ReadsBeforeDeadline(io.RawIOBase):
    def __init__(self, sock: socket.socket, left: Callable[[], float]) -> None:
        super().__init__()
        self._sock = sock
        self._left = left
        # The socket's own raw reader, as http.client's reader would be: it
        # counts as a reference, so that the connection closing the socket
        # (as it does when the answer says Connection: close) leaves it open
        # until this answer is read.
        self._raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> Optional[int]:
        self._sock.settimeout(self._left())
        return self._raw.readinto(b)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()
