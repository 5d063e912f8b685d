"""A client across a fork (issue 45), against a real ticketd node.

Prefork servers (gunicorn --preload, Celery's prefork pool, uWSGI) and
multiprocessing's fork context copy a process that may already hold a
Client: its cached ranges, prefetched Snowflake IDs, pooled keep-alive
connections and the mark of a refill whose thread does not exist in the
child. The child must start afresh and the parent go on as before: no ID in
two processes, and every process served within the call bound.

Each child reports what it took through a pipe and ends with os._exit, so
nothing of the parent's (pytest's buffers, atexit) runs twice.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import signal
import threading
import time
import urllib.request
from typing import Any, Callable, Dict, List, Tuple

import pytest

import ticketd

from conftest import RealNode, needs_ticketd_bin

pytestmark = [needs_ticketd_bin, pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")]

CALL_TIMEOUT = 5.0  # the library's bound on a call: a child must be served within it
CHILD_LIMIT = 30.0  # a child not done by then is killed and the test fails


def create(node: RealNode) -> None:
    """The sequence "orders" and the Snowflake namespace "events", as admin."""
    for path in ("sequences/orders", "namespaces/events"):
        put_as_admin(node, path)


def put_as_admin(node: RealNode, path: str) -> None:
    req = urllib.request.Request(f"{node.url}/v1/{path}", data=b"{}", method="PUT",
                                 headers={"Authorization": "Bearer " + node.admin,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status in (200, 201)


def client(node: RealNode) -> ticketd.Client:
    return ticketd.Client([node.url], token=node.reserve, call_timeout=CALL_TIMEOUT, timeout=2.0)


def take(handle: Any, n: int) -> Dict[str, Any]:
    """n IDs from a handle, one next() each: the IDs, or the error that stopped it."""
    ids: List[int] = []
    t0 = time.monotonic()
    try:
        for _ in range(n):
            ids.append(handle.next())
    except Exception as e:  # reported to the parent, which fails the test
        return {"ids": ids, "error": f"{type(e).__name__}: {e}", "seconds": time.monotonic() - t0}
    return {"ids": ids, "error": None, "seconds": time.monotonic() - t0}


def in_forked_child(work: Callable[[], Dict[str, Any]]) -> Tuple[int, Callable[[], Dict[str, Any]]]:
    """Forks; the child runs work() and sends its result as JSON. Returns the
    child's pid and a function that waits for the result (at most CHILD_LIMIT)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        try:
            out = work()
        except BaseException as e:
            out = {"ids": [], "error": f"child crashed: {type(e).__name__}: {e}", "seconds": 0}
        with os.fdopen(w, "w") as f:
            f.write(json.dumps(out))
        os._exit(0)
    os.close(w)

    def result() -> Dict[str, Any]:
        chunks: List[bytes] = []
        end = time.monotonic() + CHILD_LIMIT
        try:
            while True:
                left = end - time.monotonic()
                if left <= 0 or not select.select([r], [], [], left)[0]:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    pytest.fail(f"the forked child was not done within {CHILD_LIMIT} s")
                b = os.read(r, 65536)
                if not b:
                    break
                chunks.append(b)
        finally:
            os.close(r)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        return json.loads(b"".join(chunks))

    return pid, result


def served(res: Dict[str, Any], n: int, who: str) -> List[int]:
    assert res["error"] is None, f"{who}: {res['error']} (after {len(res['ids'])} IDs, {res['seconds']:.2f} s)"
    assert len(res["ids"]) == n
    return res["ids"]


def assert_disjoint(per: Dict[str, List[int]]) -> None:
    seen: Dict[int, str] = {}
    twice: List[Tuple[int, str, str]] = []
    for who, ids in per.items():
        assert all(0 < i < 2**63 for i in ids)
        for i in ids:
            if i in seen:
                twice.append((i, seen[i], who))
            seen[i] = who
    assert not twice, f"{len(twice)} IDs handed out twice, first {twice[:5]}"


@pytest.mark.parametrize("kind", ["sequence", "snowflake"])
def test_fork_after_ids_were_taken_child_and_parent_share_none(node: RealNode, kind: str) -> None:
    """The issue's first try: a handle used in the parent, then os.fork."""
    create(node)
    with client(node) as c:
        if kind == "sequence":
            h: Any = c.sequence("orders")
        else:
            h = c.snowflake("events")
        before = h.next()  # the cache now holds the rest of a range (or a batch)
        assert h.stats().cached > 0
        _, result = in_forked_child(lambda: take(h, 1000))
        parent = served(take(h, 1000), 1000, "parent")
        child = served(result(), 1000, "child")
    assert_disjoint({"before": [before], "parent": parent, "child": child})
    if kind == "sequence":
        assert child == sorted(child) and parent == sorted(parent)


def _mp_worker(h: Any, n: int, conn: Any) -> None:
    conn.send(take(h, n))
    conn.close()


@pytest.mark.parametrize("kind", ["sequence", "snowflake"])
def test_multiprocessing_fork_workers_share_no_id(node: RealNode, kind: str) -> None:
    """multiprocessing's fork context: 4 workers and the parent, 1,000 each,
    after one next() before the fork (the issue: 4,000 sequence IDs twice)."""
    create(node)
    ctx = multiprocessing.get_context("fork")
    with client(node) as c:
        if kind == "sequence":
            h: Any = c.sequence("orders")
        else:
            h = c.snowflake("events")
        per: Dict[str, List[int]] = {"before": [h.next()]}
        workers = []
        for k in range(4):
            recv, send = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_mp_worker, args=(h, 1000, send), name=f"worker-{k}")
            p.start()
            send.close()
            workers.append((p, recv))
        per["parent"] = served(take(h, 1000), 1000, "parent")
        for k, (p, recv) in enumerate(workers):
            if not recv.poll(CHILD_LIMIT):
                p.kill()
                pytest.fail(f"worker {k} sent nothing within {CHILD_LIMIT} s")
            per[f"worker-{k}"] = served(recv.recv(), 1000, f"worker {k}")
            p.join(CHILD_LIMIT)
            assert p.exitcode == 0
    assert_disjoint(per)


def _wait_for(cond: Callable[[], bool], what: str, limit: float = 10.0) -> None:
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, f"not reached within {limit} s: {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("kind", ["sequence", "snowflake"])
def test_fork_with_a_refill_in_flight_child_is_served_within_the_bound(node: RealNode, kind: str) -> None:
    """The fork comes while the parent's refill (fetch) is in flight and its
    cache is empty: the node is stopped (SIGSTOP) so that the request hangs.
    The child must not wait on a refill whose thread it does not have, nor
    use the parent's connections; the parent's refill completes for the
    parent once the node goes on."""
    create(node)
    with client(node) as c:
        if kind == "sequence":
            h: Any = c.sequence("orders", min_range=100, max_range=100)
            busy = "refilling"
        else:
            h = c.snowflake("events", batch=50)
            busy = "fetching"
        first = h.next()
        _wait_for(lambda: not getattr(h.stats(), busy), "the first prefetch done")
        node.process.send_signal(signal.SIGSTOP)
        try:
            drained: List[int] = []
            n = h.stats().cached
            for _ in range(n):  # empty the cache; the cuts start the next refill, which hangs
                drained.append(h.next())
            waiter: Dict[str, Any] = {}
            t = threading.Thread(target=lambda: waiter.update(take(h, 1)))  # waits for the hung refill
            t.start()
            _wait_for(lambda: getattr(h.stats(), busy) and h.stats().cached == 0, "cache empty, refill in flight")
            _, result = in_forked_child(lambda: take(h, 50))
        finally:
            node.process.send_signal(signal.SIGCONT)
        child = served(result(), 50, "child")
        t.join(CHILD_LIMIT)
        parent = served(waiter, 1, "parent's waiter") + served(take(h, 50), 50, "parent")
    assert_disjoint({"before": [first] + drained, "parent": parent, "child": child})


def test_handles_cannot_be_copied_or_pickled(node: RealNode) -> None:
    """A copy of a handle is a second cache of the same ranges: copy.copy of a
    CachedSequence would hand out its IDs twice within one process, and a pickled
    one (multiprocessing's spawn) would in another. Each refuses, saying why."""
    import copy
    import pickle

    create(node)
    with client(node) as c:
        s = c.sequence("orders")
        s.next()
        for obj in (c, s, c.snowflake("events")):
            for how in (copy.copy, copy.deepcopy, pickle.dumps):
                with pytest.raises(TypeError, match="one Client per process"):
                    how(obj)
