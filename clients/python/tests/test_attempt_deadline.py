"""The attempt timeout bounds the whole exchange with one endpoint, the
status line and the headers included (issue 46, part 3).

Before the fix only the body's reads waited until the attempt's deadline:
http.client read the status line and the headers with the socket's
timeout, which is per read, so a peer sending one byte every 50 ms held an
attempt (and the call) for as long as it kept trickling.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Iterator, List, Tuple

import pytest

import ticketd

# What the peer sends, trickled from `trickle_from` on: a status line, then a
# header line that never ends (http.client accepts 64 KiB of it: 55 minutes
# at this pace).
STATUS = b"HTTP/1.1 200 OK\r\n"
ENDLESS_HEADER = b"X-Pad: "
EVERY = 0.05


class TricklingPeer:
    """A listening socket whose every connection gets the answer's first
    `trickle_from` bytes at once and the rest one byte every EVERY seconds,
    without end. It records how long each connection lasted: from its
    accept until the client went away (a send failed) or the peer stopped."""

    def __init__(self, trickle_from: int) -> None:
        self.trickle_from = trickle_from
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.lasted: List[Tuple[float, bool]] = []  # (seconds, whether the client went away)
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.srv.settimeout(0.1)
        self.url = "http://127.0.0.1:%d" % self.srv.getsockname()[1]
        self.trickles: List[threading.Thread] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.srv.accept()
            except socket.timeout:
                continue
            t = threading.Thread(target=self._trickle, args=(conn,), daemon=True)
            self.trickles.append(t)
            t.start()
        self.srv.close()

    def _bytes(self) -> Iterator[bytes]:
        head = STATUS + ENDLESS_HEADER
        yield head[:self.trickle_from]
        for b in head[self.trickle_from:]:
            yield bytes([b])
        while True:
            yield b"a"

    def _trickle(self, conn: socket.socket) -> None:
        start = time.monotonic()
        gone = False
        try:
            conn.recv(65536)  # the request
            for chunk in self._bytes():
                if self.stop.is_set():
                    break
                if chunk:
                    conn.sendall(chunk)
                time.sleep(EVERY)
        except OSError:
            gone = True  # the client closed its end: the attempt is over
        finally:
            conn.close()
            with self.lock:
                self.lasted.append((time.monotonic() - start, gone))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for t in self.trickles:
            t.join(5)


@pytest.mark.parametrize("trickle_from,what", [
    (0, "the status line"),
    (len(STATUS), "the headers"),
])
def test_a_trickled_status_line_or_headers_cannot_outlast_the_attempt(trickle_from: int, what: str) -> None:
    timeout, call_timeout = 0.5, 2.0
    peer = TricklingPeer(trickle_from)
    result: dict = {}
    c = ticketd.Client([peer.url], timeout=timeout, call_timeout=call_timeout, backoff=(0.01, 0.02))
    try:
        def call() -> None:
            t0 = time.monotonic()
            try:
                c.reserve("orders", 1)
            except ticketd.TicketdError as e:
                result["err"] = e
            result["took"] = time.monotonic() - t0

        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join(call_timeout + 3)
        alive = t.is_alive()
    finally:
        c.close()
        peer.close()
        t.join(5)
    with peer.lock:
        lasted = list(peer.lasted)
    assert not alive, (f"reserve() was still reading {what}, trickled a byte every {EVERY} s, "
                       f"{call_timeout + 3:.0f} s into a call bounded by {call_timeout} s "
                       f"(attempt timeout {timeout} s); connections: {lasted}")
    assert isinstance(result.get("err"), ticketd.Unavailable), result
    assert result["took"] < call_timeout + 1.0, result
    # Every attempt was cut at its own timeout, not merely the call at its
    # bound: the peer saw the client go away (the last attempt's, at the
    # call's end, may have been cut by the peer's own stop) within the
    # timeout and a send's slack.
    assert sum(gone for _, gone in lasted) >= 3, lasted
    assert all(secs < timeout + 0.4 for secs, _ in lasted), (
        f"attempts against a peer trickling {what} lasted {lasted}; the attempt timeout is {timeout} s")
