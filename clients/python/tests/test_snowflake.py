"""SnowflakeRemote against stand-in nodes: buffer, any node, clock-behind
skipping, the check of every answer."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest

import ticketd
from standin import Cluster, problem

from test_client import make
from test_sequence import wait_for


def add_ns(cluster: Cluster, ns: str, first: int = 1000) -> None:
    cluster.namespaces[ns] = first


def test_next_and_next_n_prefetch(cluster: Cluster) -> None:
    with make(cluster, nodes=2) as c:
        add_ns(cluster, "ev")
        sf = c.snowflake("ev", batch=10)
        a = sf.next()
        wait_for(lambda: sf.fetches == 1)
        ids = [sf.next() for _ in range(5)]  # reaches half the batch: a fetch ahead starts
        wait_for(lambda: sf.fetches == 2)
        more = sf.next_n(20)  # more than is buffered: the rest in one request
        got = [a] + ids + more
        assert len(got) == len(set(got)) == 26
        assert more == sorted(more)
        st = sf.stats()
        assert st.fetches >= 3 and st.refused == 0 and st.waits == 2


def test_not_found_is_final(cluster: Cluster) -> None:
    with make(cluster) as c:
        sf = c.snowflake("none")
        with pytest.raises(ticketd.NotFound):
            sf.next()
        assert len(cluster.nodes[0].requests) == 1


def test_clock_behind_skips_the_node_for_retry_after(cluster: Cluster) -> None:
    with make(cluster, nodes=2) as c:
        add_ns(cluster, "ev")
        n0, n1 = cluster.nodes
        n0.hook = lambda m, p: (503, {"Retry-After": "5"},
                                problem(503, "clock-behind", clock_behind_ms=4200)[2])
        sf = c.snowflake("ev", batch=4, low_water=0)
        for _ in range(12):
            sf.next()
        assert len(n0.requests) == 1, "a node that asked to wait is not asked again before Retry-After"
        assert len(n1.requests) >= 3


def test_clock_behind_everywhere_is_unavailable_with_behind_ms(cluster: Cluster) -> None:
    with make(cluster, nodes=1, call_timeout=0.4) as c:
        add_ns(cluster, "ev")
        cluster.nodes[0].hook = lambda m, p: (503, {"Retry-After": "1"},
                                              problem(503, "clock-behind", clock_behind_ms=900)[2])
        with pytest.raises(ticketd.Unavailable) as ei:
            c.snowflake("ev").next()
        assert isinstance(ei.value.last, ticketd.ClockBehind) and ei.value.last.behind_ms == 900


@pytest.mark.parametrize("bad", [
    {"namespace": "other", "worker_id": 0, "ids": [1, 2, 3, 4]},
    {"namespace": "ev", "worker_id": 0, "ids": [1, 2, 3]},
    {"namespace": "ev", "worker_id": 0, "ids": [1, 3, 3, 4]},
    {"namespace": "ev", "worker_id": 0, "ids": [4, 3, 2, 1]},
])
def test_a_bad_answer_is_refused_and_the_fetch_moves_on(cluster: Cluster, bad) -> None:
    with make(cluster, nodes=2) as c:
        add_ns(cluster, "ev", first=500)
        sf = c.snowflake("ev", batch=4)
        sf._rr = 0
        cluster.nodes[0].script.append((201, {}, bad))
        assert sf.next_n(4) == [500, 501, 502, 503]
        assert sf.refused == 1


def test_ids_not_above_a_worker_ids_last_are_refused(cluster: Cluster) -> None:
    with make(cluster, nodes=1, call_timeout=0.5) as c:
        add_ns(cluster, "ev", first=100)
        sf = c.snowflake("ev", batch=2, low_water=0)
        assert sf.next_n(2) == [100, 101]
        cluster.nodes[0].script.append((201, {}, {"namespace": "ev", "worker_id": 0, "ids": [50, 51]}))
        assert sf.next_n(2) == [102, 103]
        assert sf.refused == 1


def test_many_threads_unique(cluster: Cluster) -> None:
    with make(cluster, nodes=3) as c:
        add_ns(cluster, "ev")
        sf = c.snowflake("ev", batch=64)
        out: List[List[int]] = []

        def worker() -> None:
            mine = []
            for j in range(2000):
                if j % 5 == 0:
                    got = sf.next_n(3)
                    assert got == sorted(got)
                    mine.extend(got)
                else:
                    mine.append(sf.next())
            out.append(mine)

        ts = [threading.Thread(target=worker) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert len(out) == 8, "a worker failed"
        ids = [i for m in out for i in m]
        assert len(ids) == len(set(ids)) == 8 * (2000 + 400 * 2)


def test_close_of_the_handle_and_of_the_client(cluster: Cluster) -> None:
    c = make(cluster, nodes=1, call_timeout=0.2)
    add_ns(cluster, "ev")
    cluster.nodes[0].hook = lambda m, p: problem(503, "no-worker-lease")
    sf = c.snowflake("ev")
    with pytest.raises(ticketd.Unavailable):
        sf.next()
    t = time.monotonic()
    sf.close()
    with pytest.raises(ticketd.Closed):
        sf.next()
    c.close()
    assert time.monotonic() - t < 1.5


def test_batches_older_than_max_age_are_not_handed_out(cluster: Cluster) -> None:
    # A Snowflake ID's timestamp is when a node made it: a batch a quiet
    # process kept for an hour would hand out hour-old IDs, which sort before
    # those other processes made meanwhile (issue 46, part 4). Before the
    # fix no batch expired: the second next() below was 1001, from the first batch.
    max_age = 0.2
    with make(cluster, nodes=1) as c:
        add_ns(cluster, "ev", first=1000)
        sf = c.snowflake("ev", batch=10, low_water=2, max_age=max_age)
        assert sf.next() == 1000  # the batch 1000..1009
        time.sleep(3 * max_age)
        st = sf.stats()
        assert st.cached == 0 and st.expired == 1, f"a batch older than the maximum age is still buffered: {st}"
        assert sf.next() == 1010, "the old batch's IDs were handed out"
        assert sf.stats().fetches == 2 and len(cluster.nodes[0].requests) == 2

        # A batch fetched ahead and kept past the maximum age is dropped when
        # it would be installed, as is the current one.
        for _ in range(8):  # down to the low-water mark: the fetch ahead starts
            sf.next()
        wait_for(lambda: sf.stats().cached == 11)
        time.sleep(3 * max_age)
        assert sf.next() == 1030, "an ID of an expired batch was handed out"
        st = sf.stats()
        assert st.fetches == 4 and st.expired == 3, st


@pytest.mark.parametrize("no_limit", [None, 0])
def test_max_age_none_or_0_keeps_batches(cluster: Cluster, no_limit: object) -> None:
    with make(cluster, nodes=1) as c:
        add_ns(cluster, "ev", first=1000)
        sf = c.snowflake("ev", batch=10, low_water=0, max_age=no_limit)  # type: ignore[arg-type]
        assert sf.next() == 1000
        time.sleep(0.3)
        assert sf.next() == 1001 and sf.stats().expired == 0


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "600", True])
def test_max_age_validated(cluster: Cluster, bad: object) -> None:
    with make(cluster, nodes=1) as c:
        with pytest.raises(ticketd.InvalidArgument, match="max_age"):
            c.snowflake("ev", max_age=bad)  # type: ignore[arg-type]
