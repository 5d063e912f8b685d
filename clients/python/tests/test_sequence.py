"""The CachedSequence cache against stand-in nodes: double buffer, prefetch, sizing,
refill retries, the bounded wait, many threads, the planted bug."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Dict, List

import pytest

import ticketd
from standin import Cluster, problem

from test_client import make

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))


def wait_for(cond, timeout: float = 3.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.005)


def test_first_next_waits_then_prefetches_one_range_ahead(cluster: Cluster) -> None:
    with make(cluster) as c:
        c.create_sequence("s")
        seq = c.sequence("s", min_range=100, max_range=100)
        assert seq.next() == 1  # waited for the first range: rate unknown, so trigger at index 0
        assert seq.stats().waits == 1
        wait_for(lambda: seq.stats().refills == 2)  # the range fetched ahead
        st = seq.stats()
        assert st.cached == 99 + 100 and not st.refilling
        ids = [seq.next() for _ in range(199)]
        assert ids == list(range(2, 201))
        assert seq.stats().waits == 1 and seq.stats().waits_while_cached == 0
        assert len(cluster.nodes[0].range_requests()) <= 3  # double buffer: at most one range ahead


def test_next_n_straddles_ranges(cluster: Cluster) -> None:
    with make(cluster) as c:
        c.create_sequence("s")
        seq = c.sequence("s", min_range=10, max_range=10)
        assert seq.next_n(3) == [(1, 3)]
        wait_for(lambda: seq.stats().refills == 2)
        rs = seq.next_n(12)
        assert rs == [(4, 15)]  # two ranges back to back merge into one
        assert sum(r.size for r in rs) == 12


def test_one_refill_in_flight_however_many_threads(cluster: Cluster) -> None:
    gate = threading.Event()
    node = cluster.node()
    original = node.serve

    def slow(m, p):
        if p.endswith("/ranges"):
            gate.wait(2)
        return None

    with make(cluster) as c:
        c.create_sequence("s")
        node.hook = slow
        seq = c.sequence("s", min_range=50, max_range=50)
        out: List[int] = []
        lock = threading.Lock()

        def worker() -> None:
            v = seq.next()
            with lock:
                out.append(v)

        ts = [threading.Thread(target=worker) for _ in range(16)]
        for t in ts:
            t.start()
        time.sleep(0.2)
        assert len(node.range_requests()) == 1  # 16 waiting callers, one reservation
        gate.set()
        for t in ts:
            t.join()
        assert sorted(out) == list(range(1, 17))
        assert original is not None


def test_range_size_follows_the_rate(cluster: Cluster) -> None:
    with make(cluster) as c:
        c.create_sequence("s")
        seq = c.sequence("s", coverage=1.0, min_range=10, max_range=1_000_000)
        end = time.monotonic() + 0.6
        while time.monotonic() < end:
            seq.next_n(100)
        st = seq.stats()
        assert st.rate > 1000, st
        assert st.range_size > 1000, st  # well above min_range: sized from rate x coverage
        assert st.range_size <= 1_000_000


def test_refill_keeps_retrying_in_the_background_after_failures(cluster: Cluster) -> None:
    with make(cluster, nodes=2, backoff=(0.01, 0.02)) as c:
        c.create_sequence("s")
        seq = c.sequence("s", min_range=100, max_range=100)
        seq.next()
        wait_for(lambda: seq.stats().refills == 2)
        fails = {"n": 0}

        def flaky(m, p):
            if p.endswith("/ranges") and fails["n"] < 20:
                fails["n"] += 1
                return 503, {}, problem(503, "unavailable")[2]  # no Retry-After: backoff only
            return None

        for n in cluster.nodes:
            n.hook = flaky
        # Use the cache up: the refills fail 20 times, then recover on their own.
        ids = [seq.next() for _ in range(500)]
        assert ids == sorted(set(ids)) and len(ids) == 500
        assert fails["n"] == 20


def test_empty_cache_wait_is_bounded_then_recovers(cluster: Cluster) -> None:
    with make(cluster, nodes=2, call_timeout=0.4) as c:
        c.create_sequence("s")
        seq = c.sequence("s", min_range=10, max_range=10)
        down = {"v": True}
        for n in cluster.nodes:
            n.hook = lambda m, p: problem(503, "unavailable") if down["v"] else None
        for _ in range(2):
            t = time.monotonic()
            with pytest.raises(ticketd.Unavailable) as ei:
                seq.next()
            took = time.monotonic() - t
            assert 0.35 <= took < 0.4 + 0.3, took
            assert isinstance(ei.value.last, ticketd.Unavailable)
        assert seq.stats().refilling  # the refill goes on in the background
        down["v"] = False
        wait_for(lambda: seq.stats().cached > 0, timeout=3)
        assert seq.next() >= 1


def test_final_errors_reach_the_caller(cluster: Cluster) -> None:
    with make(cluster) as c:
        with pytest.raises(ticketd.NotFound):
            c.sequence("nope").next()
        c.create_sequence("small", max=25)
        seq = c.sequence("small", min_range=10, max_range=10)
        got = [seq.next() for _ in range(25)]
        assert got == list(range(1, 26))  # the refill halves its ask down to what is left
        with pytest.raises(ticketd.Exhausted):
            seq.next()
        with pytest.raises(ticketd.Exhausted):
            seq.next_n(2)


def test_refuses_a_range_not_above_the_last(cluster: Cluster) -> None:
    node = cluster.node()
    with make(cluster) as c:
        c.create_sequence("s")
        seq = c.sequence("s", min_range=5, max_range=5)
        seq.next()
        wait_for(lambda: seq.stats().refills == 2)
        node.script.append((200, {}, {"sequence": "s", "first": 3, "last": 7}))
        with pytest.raises(ticketd.TicketdError) as ei:
            for _ in range(20):
                seq.next()
        assert "not above" in str(ei.value)


def test_many_threads_no_duplicate_and_increasing_per_thread(cluster: Cluster) -> None:
    # Ranges this small are far below what 8 hot threads use, so callers wait
    # often and one may lose the race for a fresh range many times in a row
    # (nothing makes waiters fair): a generous call timeout keeps that from
    # failing the test, which is about duplicates and order across ranges.
    with make(cluster, nodes=3, call_timeout=30.0) as c:
        c.create_sequence("s")
        seq = c.sequence("s", min_range=37, max_range=500)
        per: Dict[int, List[int]] = {}

        def worker(k: int) -> None:
            mine: List[int] = []
            for j in range(3000):
                if j % 7 == 0:
                    for r in seq.next_n(5):
                        mine.extend(r.ids())
                else:
                    mine.append(seq.next())
            per[k] = mine

        ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(per) == 8, "a worker failed"
        all_ids = [i for v in per.values() for i in v]
        assert len(all_ids) == len(set(all_ids)) == 8 * (3000 + 429 * 4)
        for v in per.values():
            assert all(a < b for a, b in zip(v, v[1:]))
        assert seq.stats().waits_while_cached == 0


def test_close_stops_a_refill_that_is_retrying(cluster: Cluster) -> None:
    c = make(cluster, nodes=2, call_timeout=0.2)
    c.create_sequence("s")
    for n in cluster.nodes:
        n.hook = lambda m, p: problem(503, "unavailable")
    seq = c.sequence("s")
    with pytest.raises(ticketd.Unavailable):
        seq.next()
    assert [t for t in threading.enumerate() if t.name.startswith("ticketd-")]
    t = time.monotonic()
    c.close()
    assert time.monotonic() - t < 1.5
    assert not [t for t in threading.enumerate() if t.name.startswith("ticketd-")]


def run_outage(cluster: Cluster, c: ticketd.Client) -> int:
    """Takes a CachedSequence through an outage that outlasts its cache, then heals
    the nodes; returns an ID served after the outage (raises if none is)."""
    c.create_sequence("s")
    seq = c.sequence("s", min_range=10, max_range=10)
    seq.next()
    down = {"v": True}
    for n in cluster.nodes:
        n.hook = lambda m, p: problem(503, "unavailable") if down["v"] else None
    with pytest.raises(ticketd.Unavailable):
        for _ in range(100):
            seq.next()
    down["v"] = False
    end = time.monotonic() + 2.0
    while True:
        try:
            return seq.next()
        except ticketd.Unavailable:
            if time.monotonic() > end:
                raise


def test_recovery_after_an_outage(cluster: Cluster) -> None:
    with make(cluster, nodes=2, call_timeout=0.3) as c:
        assert run_outage(cluster, c) > 10


def test_planted_bug_breaks_recovery(cluster: Cluster) -> None:
    """prefetch-stops-after-error: the same outage, and the CachedSequence never serves again."""
    import plants
    from ticketd.sequence import CachedSequence

    saved = CachedSequence._start_refill_locked, CachedSequence._run_refill
    try:
        plants.apply("prefetch-stops-after-error")
        with make(cluster, nodes=2, call_timeout=0.3) as c:
            with pytest.raises(ticketd.Unavailable):
                run_outage(cluster, c)
    finally:
        CachedSequence._start_refill_locked, CachedSequence._run_refill = saved
