"""Regressions found by review (issue 33): each test failed on the code before its fix."""

from __future__ import annotations

import socket
import threading
import time
import traceback

import pytest

import ticketd
from ticketd._wire import parse_retry_after, problem_of
from standin import Cluster
from test_client import make


def test_a_final_error_is_raised_afresh_each_time(cluster: Cluster) -> None:
    # Before: the CachedSequence re-raised one stored exception object, whose
    # traceback grew by the caller's frames at every raise (and kept them
    # alive): a service calling next() after exhaustion leaked without bound.
    cluster.node()
    with make(cluster) as c:
        c.create_sequence("tiny", max=3)
        seq = c.sequence("tiny", min_range=3, max_range=3)
        assert [seq.next() for _ in range(3)] == [1, 2, 3]
        seen = []
        for _ in range(50):
            try:
                seq.next()
            except ticketd.Exhausted as e:
                seen.append(e)
        assert len(seen) == 50
        assert len({id(e) for e in seen}) == 50, "the same exception object was raised again"
        depth = len(traceback.extract_tb(seen[-1].__traceback__))
        assert depth < 10, f"the 50th raise carries {depth} traceback entries"
        assert all(isinstance(e, ticketd.Exhausted) and str(e) == str(seen[0]) for e in seen)


@pytest.mark.parametrize("value,want", [
    ("²", 0.0),            # str.isdigit() is true for superscripts; int() refuses them
    ("٣", 0.0),            # Arabic-Indic 3: not an HTTP delay-seconds
    ("9" * 400, 30.0),     # float(int(...)) overflows
    (" 7 ", 7.0),
    ("-1", 0.0),
])
def test_retry_after_never_raises(value: str, want: float) -> None:
    # Before: "²" raised ValueError and 400 nines OverflowError out of the
    # retry loop: an untyped error for reserve(), a final one for a refill.
    assert parse_retry_after(value) == want


def test_a_deeply_nested_error_body_is_only_text() -> None:
    # Before: json.loads raised RecursionError, which only ValueError was
    # caught for: an untyped error out of reserve().
    doc = problem_of(503, b"[" * 100_000)
    assert doc["status"] == 503 and doc["detail"].startswith("[[[")


def _trickling_node(stop: threading.Event) -> str:
    """A node that answers with headers, then one body byte every 100 ms."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)

    def serve() -> None:
        conns = []
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            conns.append(conn)

            def trickle(conn: socket.socket = conn) -> None:
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
                    while not stop.is_set():
                        conn.sendall(b" ")
                        time.sleep(0.1)
                except OSError:
                    pass

            threading.Thread(target=trickle, daemon=True).start()
        for conn in conns:
            conn.close()
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return "http://127.0.0.1:%d" % srv.getsockname()[1]


def test_a_trickling_answer_cannot_outlast_the_call_timeout() -> None:
    # Before: the attempt timeout bounded each socket read, not the exchange,
    # so a node sending a byte every 100 ms held reserve() for 100 s.
    stop = threading.Event()
    addr = _trickling_node(stop)
    result = {}
    try:
        c = ticketd.Client([addr], timeout=0.5, call_timeout=1.5)

        def call() -> None:
            t0 = time.monotonic()
            try:
                c.reserve("orders", 1)
            except ticketd.TicketdError as e:
                result["err"] = e
            result["took"] = time.monotonic() - t0

        t = threading.Thread(target=call, daemon=True)
        t.start()
        t.join(6)
        assert not t.is_alive(), "reserve() was still reading the trickle after 6 s (call timeout 1.5 s)"
        assert isinstance(result.get("err"), ticketd.Unavailable), result
        assert result["took"] < 3.0, result
        c.close()
    finally:
        stop.set()


def test_a_kept_connection_serves_the_next_request_without_a_lost_range(cluster: Cluster) -> None:
    # While fixing the trickle: a body read to its end with read1() left the
    # answer open, so the kept connection refused the next request after
    # sending it (ResponseNotReady), and the retry lost the range it reserved.
    cluster.node()
    with make(cluster) as c:
        c.create_sequence("contiguous")
        got = [c.reserve("contiguous", 10) for _ in range(5)]
        assert [(r.first, r.last) for r in got] == [(1 + 10 * k, 10 * (k + 1)) for k in range(5)]
        assert len(cluster.nodes[0].range_requests()) == 5
