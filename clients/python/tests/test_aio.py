"""ticketd.aio, the asyncio client (issue 46, part 6), against stand-in nodes
and, where the wire matters, a real one. The conformance harness drives it
against a real cluster under faults (conformance/aio_driver.py)."""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
import threading
import time
from typing import Any, Awaitable, Dict, List, Optional

import pytest

import ticketd
import ticketd.aio
from ticketd.aio import AsyncClient

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
import plants  # noqa: E402
from conftest import needs_ticketd_bin
from standin import Cluster, problem
from test_attempt_deadline import STATUS, TricklingPeer


def library_tasks() -> List["asyncio.Task[Any]"]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("ticketd-") and not t.done()]


def seq(cluster: Cluster, name: str = "s", start: int = 1, mx: int = 2**63 - 1) -> None:
    cluster.sequences[name] = {"start": start, "max": mx, "next": start}


def slow_ranges(cluster: Cluster, seconds: float) -> None:
    """Every node answers reservations after `seconds` (the stand-in's thread sleeps)."""
    def hook(method: str, path: str) -> None:
        if path.endswith("/ranges"):
            time.sleep(seconds)
        return None
    for n in cluster.nodes:
        n.hook = hook


def test_tasks_share_a_sequence_and_get_unique_increasing_ids(cluster: Cluster) -> None:
    cluster.node()
    seq(cluster)

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), call_timeout=5) as c:
            s = c.sequence("s", min_range=50, max_range=50)

            async def take() -> List[int]:
                out = []
                for _ in range(300):
                    out.append(await s.next())
                    if len(out) % 7 == 0:
                        await asyncio.sleep(0)  # let the others cut between
                return out

            per = await asyncio.gather(*(take() for _ in range(8)))
            many = await s.next_n(120)
            st = s.stats()
            assert st.refills >= 48 and st.waits_while_cached == 0
        assert not library_tasks()
        ids = [i for p in per for i in p] + [i for r in many for i in r.ids()]
        assert len(set(ids)) == len(ids) == 8 * 300 + 120
        for p in per:
            assert p == sorted(p)
        assert many[0].first > max(max(p) for p in per)

    asyncio.run(main())


def test_reserve_create_info_and_typed_errors(cluster: Cluster) -> None:
    n = cluster.node()

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), call_timeout=2, backoff=(0.01, 0.02)) as c:
            info, created = await c.create_sequence("orders", start=100)
            assert created and info.next == 100
            r = await c.reserve("orders", 10)
            assert r == ticketd.Range(100, 109)
            assert (await c.sequence_info("orders")).next == 110
            with pytest.raises(ticketd.NotFound):
                await c.reserve("nope", 1)
            with pytest.raises(ticketd.InvalidArgument):
                await c.reserve("orders", 0)
            with pytest.raises(ticketd.Conflict):
                await c.create_sequence("orders", start=5)
            n.script.append(problem(409, "sequence-exhausted", "none left"))
            with pytest.raises(ticketd.Exhausted):
                await c.reserve("orders", 1)
        with pytest.raises(ticketd.Closed):
            await c.reserve("orders", 1)

    asyncio.run(main())


def test_a_busy_node_is_passed_over_for_the_leader_it_names(cluster: Cluster) -> None:
    a, b = cluster.node(), cluster.node()
    seq(cluster)
    a.leader_hint = b.netloc
    a.hook = lambda m, p: problem(503, "not-leader", "ask the leader")

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), call_timeout=5, backoff=(0.01, 0.02)) as c:
            assert (await c.reserve("s", 3)).size == 3
            before = len(a.requests)
            for _ in range(5):
                await c.reserve("s", 1)
            assert len(a.requests) == before, "the leader named was not preferred"

    asyncio.run(main())


@pytest.mark.parametrize("trickle_from", [0, len(STATUS)])
def test_a_trickled_answer_cannot_outlast_the_attempt(trickle_from: int) -> None:
    peer = TricklingPeer(trickle_from)

    async def main() -> float:
        t0 = time.monotonic()
        async with AsyncClient([peer.url], timeout=0.4, call_timeout=1.5, backoff=(0.01, 0.02)) as c:
            with pytest.raises(ticketd.Unavailable) as ei:
                await c.reserve("orders", 1)
            assert isinstance(ei.value.last, (asyncio.TimeoutError, TimeoutError)), repr(ei.value.last)
        return time.monotonic() - t0

    try:
        took = asyncio.run(main())
    finally:
        peer.close()
    assert took < 1.5 + 1.0, took


async def outcome(call: Awaitable[int]) -> Any:
    """What the call returned, or the exception it ended with (CancelledError included)."""
    try:
        return await call
    except BaseException as e:
        return e


def test_a_waiter_timing_out_leaves_the_shared_refill_to_the_others(cluster: Cluster) -> None:
    """Callers wait for one refill that outlasts their call timeout: each
    gets Unavailable (typed), and the refill lands for the next caller. The
    second call starts while the refill the first timed out on still runs."""
    cluster.node()
    seq(cluster)
    slow_ranges(cluster, 1.2)

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), call_timeout=0.4, timeout=5) as c:
            s = c.sequence("s")
            together = await asyncio.gather(outcome(s.next()), outcome(s.next()))
            after = await outcome(s.next())
            for r in [*together, after]:
                assert isinstance(r, ticketd.Unavailable), repr(r)
            await asyncio.sleep(0.6)
            assert s.stats().cached > 0, "the refill did not land: a waiter's timeout cancelled it"
            assert await s.next() == 1

    asyncio.run(main())


def test_the_plant_without_the_shield_is_caught_here_too(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conformance plant refill-wait-unshielded fails the test above: the
    first waiter's timeout cancels the refill's future, and the next caller,
    within its own bound, ends with CancelledError."""
    cluster.node()
    seq(cluster)
    slow_ranges(cluster, 1.2)
    monkeypatch.setattr(ticketd.aio.AsyncSequence, "_wait_for_refill", plants.unshielded_wait_for_refill)

    async def main() -> List[Any]:
        async with AsyncClient(cluster.addrs(), call_timeout=0.4, timeout=5) as c:
            s = c.sequence("s")
            return [await outcome(s.next()), await outcome(s.next())]

    first, second = asyncio.run(main())
    assert isinstance(first, ticketd.Unavailable), repr(first)
    assert isinstance(second, asyncio.CancelledError), repr(second)


def test_a_cancelled_caller_leaves_the_refill_to_the_others(cluster: Cluster) -> None:
    cluster.node()
    seq(cluster)
    slow_ranges(cluster, 0.5)

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), call_timeout=5) as c:
            s = c.sequence("s")
            first = asyncio.ensure_future(s.next())
            second = asyncio.ensure_future(s.next())
            await asyncio.sleep(0.1)
            first.cancel()
            t0 = time.monotonic()
            assert await second == 1  # the refill was not cancelled with the first caller
            assert time.monotonic() - t0 < 2.0
            with pytest.raises(asyncio.CancelledError):
                await first

    asyncio.run(main())


def test_aclose_ends_the_refill_and_its_waiters_with_closed(cluster: Cluster) -> None:
    cluster.node()
    seq(cluster)
    slow_ranges(cluster, 1.0)

    async def main() -> None:
        c = AsyncClient(cluster.addrs(), call_timeout=5)
        s = c.sequence("s")
        waiter = asyncio.ensure_future(s.next())
        await asyncio.sleep(0.1)
        assert library_tasks(), "no refill task in flight"
        t0 = time.monotonic()
        await c.aclose()
        with pytest.raises(ticketd.Closed):
            await waiter
        assert time.monotonic() - t0 < 0.5
        assert not library_tasks()
        with pytest.raises(ticketd.Closed):
            await s.next()
        await c.aclose()  # idempotent

    asyncio.run(main())


def test_a_call_waiting_out_a_backoff_ends_at_aclose(cluster: Cluster) -> None:
    n = cluster.node()
    seq(cluster)
    n.hook = lambda m, p: problem(503, "unavailable", "no leader")

    async def main() -> None:
        c = AsyncClient(cluster.addrs(), call_timeout=30, backoff=(5.0, 5.0))
        call = asyncio.ensure_future(c.reserve("s", 1))
        await asyncio.sleep(0.3)
        t0 = time.monotonic()
        await c.aclose()
        with pytest.raises(ticketd.Closed):
            await call
        assert time.monotonic() - t0 < 0.5

    asyncio.run(main())


def test_snowflake_batches_expire_and_regressions_are_refused(cluster: Cluster) -> None:
    n = cluster.node()
    cluster.namespaces["ns"] = 5000

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), call_timeout=5, backoff=(0.01, 0.02)) as c:
            sf = c.snowflake("ns", batch=10, max_age=0.3)
            got = [await sf.next() for _ in range(25)]
            got += await sf.next_n(15)
            assert got == sorted(got) and len(set(got)) == 40
            await asyncio.sleep(0.35)
            fresh = await sf.next()
            st = sf.stats()
            assert st.expired >= 1 and fresh > got[-1]
            # A node answering IDs not above what its worker id gave before: refused, the fetch moves on.
            n.script.append((201, {}, {"namespace": "ns", "worker_id": 0, "ids": list(range(10))}))
            sf2 = c.snowflake("ns", batch=10, max_age=None)
            sf2._highest[0] = 10**6
            with pytest.raises(ticketd.Unavailable):
                await asyncio.wait_for(sf2.next(), 10)
            assert sf2.stats().refused >= 1

    asyncio.run(main())


def test_a_coroutine_token_is_awaited_for_every_request(cluster: Cluster) -> None:
    n = cluster.node()
    seq(cluster)
    current = {"token": "a" * 24}
    asked: List[str] = []

    async def token() -> str:
        await asyncio.sleep(0)  # as a vault lookup would
        asked.append(current["token"])
        return current["token"]

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), token=token, call_timeout=1) as c:
            n.token = current["token"]
            await c.reserve("s", 1)
            n.token = current["token"] = "b" * 24  # rotated: the next request carries the new one
            await c.reserve("s", 1)
            current["token"] = "not a token"  # retried until the call's bound, then Unavailable saying why
            with pytest.raises(ticketd.Unavailable, match="a bearer token is visible ASCII only") as ei:
                await c.reserve("s", 1)
            assert isinstance(ei.value.last, ticketd.InvalidArgument)

    asyncio.run(main())
    assert asked[:2] == ["a" * 24, "b" * 24]


def test_a_failing_token_coroutine_is_retried_within_the_call(cluster: Cluster) -> None:
    n = cluster.node()
    seq(cluster)
    n.token = "good-token-good-token"
    failures: List[Any] = [ConnectionError("vault unreachable"), ""]

    async def token() -> str:
        if failures:
            f = failures.pop(0)
            if isinstance(f, BaseException):
                raise f
            return str(f)
        return "good-token-good-token"

    async def main() -> None:
        async with AsyncClient(cluster.addrs(), token=token, call_timeout=2, backoff=(0.01, 0.02)) as c:
            assert (await c.reserve("s", 2)).size == 2
            failures.extend([KeyError("sealed")] * 1000)
            with pytest.raises(ticketd.Unavailable, match="raised KeyError") as ei:
                await c.reserve("s", 1)
            assert isinstance(ei.value.last, ticketd.TicketdError) and isinstance(ei.value.last.__cause__, KeyError)

    asyncio.run(main())


def test_a_new_loop_takes_over_once_the_first_has_closed(cluster: Cluster) -> None:
    cluster.node()
    seq(cluster)
    c = AsyncClient(cluster.addrs(), call_timeout=5)
    s = c.sequence("s", min_range=100, max_range=100)
    first = asyncio.run(s.next())
    second = asyncio.run(s.next())  # from the cache, on a new loop
    assert (first, second) == (1, 2)

    async def on_other_loop_while_open() -> None:
        def other() -> Optional[BaseException]:
            try:
                asyncio.run(c.reserve("s", 1))
            except BaseException as e:
                return e
            return None
        await c.reserve("s", 1)  # this loop takes the client over
        err = await asyncio.get_running_loop().run_in_executor(None, other)
        assert isinstance(err, RuntimeError) and "one AsyncClient per event loop" in str(err), repr(err)
        await c.aclose()

    asyncio.run(on_other_loop_while_open())


@needs_ticketd_bin
def test_a_real_node(node: Any) -> None:
    url, admin, reserve, _ = node

    async def main() -> None:
        async with AsyncClient([url], token=admin, call_timeout=5) as c:
            await c.create_sequence("aio", start=10)
        async with AsyncClient([url], call_timeout=5) as c:
            with pytest.raises(ticketd.Unauthorized):
                await c.reserve("aio", 1)
        async with AsyncClient([url], token=reserve, call_timeout=5) as c:
            with pytest.raises(ticketd.Forbidden):
                await c.create_sequence("other")
            s = c.sequence("aio", min_range=100, max_range=1000)
            per = await asyncio.gather(*(asyncio.gather(*(s.next() for _ in range(200))) for _ in range(5)))
            ids = [i for p in per for i in p]
            assert len(set(ids)) == 1000 and min(ids) >= 10
            r = await c.reserve("aio", 5)
            assert r.first > max(ids)
            with pytest.raises(ticketd.NotFound):
                await c.snowflake("nope").next()
            assert not library_tasks()

    asyncio.run(main())


@needs_ticketd_bin
def test_a_forked_child_starts_afresh_and_the_parent_goes_on(node: Any) -> None:
    """A client made and used before the fork (a prefork server's preloaded
    app): the child, on its own event loop, reserves its own IDs; the
    parent's cache and connections are untouched."""
    url, admin, reserve, _ = node
    asyncio.run(_create(url, admin, "forked"))
    c = AsyncClient([url], token=reserve, call_timeout=5)
    s = c.sequence("forked", min_range=1000, max_range=1000)
    parent_first = asyncio.run(_take(s, 10))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            try:
                answer = " ".join(map(str, asyncio.run(_take(s, 10))))
            except BaseException as e:
                answer = f"err {type(e).__name__}: {e}"
            os.write(w, answer.encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    end = time.monotonic() + 20
    while time.monotonic() < end and select.select([r], [], [], 1)[0]:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    if time.monotonic() >= end:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    child = b"".join(chunks).decode()
    assert not child.startswith("err"), child
    child_ids = [int(x) for x in child.split()]
    parent_more = asyncio.run(_take(s, 10))
    asyncio.run(c.aclose())
    assert parent_more[0] == parent_first[-1] + 1, "the parent's cache was disturbed by the fork"
    assert not set(child_ids) & set(parent_first + parent_more), (parent_first, child_ids)
    assert min(child_ids) > parent_first[0] + 999, "the child did not reserve a range of its own"


async def _create(url: str, admin: str, name: str) -> None:
    async with AsyncClient([url], token=admin, call_timeout=5) as c:
        await c.create_sequence(name)


async def _take(s: ticketd.aio.AsyncSequence, n: int) -> List[int]:
    return [await s.next() for _ in range(n)]


def test_stats_types_are_the_threaded_clients(cluster: Cluster) -> None:
    cluster.node()
    seq(cluster)

    async def main() -> Dict[str, Any]:
        async with AsyncClient(cluster.addrs()) as c:
            s = c.sequence("s")
            await s.next()
            return {"seq": s.stats(), "sf": c.snowflake("x").stats()}

    got = asyncio.run(main())
    assert isinstance(got["seq"], ticketd.SequenceStats) and isinstance(got["sf"], ticketd.SnowflakeStats)


def test_no_thread_is_started() -> None:
    before = {t.ident for t in threading.enumerate()}
    c = AsyncClient(["http://127.0.0.1:9"], call_timeout=0.2)
    asyncio.run(c.aclose())
    assert {t.ident for t in threading.enumerate()} == before
