"""AsyncSequence.next() against the bare limit of an awaited call: a
coroutine that increments an integer, awaited from the same loop, on 1 and 8
tasks, in the same run.

    /usr/bin/python3 clients/python/bench_aio.py [--ops N]

The AsyncSequence is served by the tests' in-process stand-in node; its
ranges grow with the rate up to 10M IDs, so after warm-up next() almost
never leaves its hot path. ops/s is the total of all tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from typing import Awaitable, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src"))
sys.path.insert(0, os.path.join(HERE, "tests"))

from ticketd.aio import AsyncClient  # noqa: E402
from standin import Cluster  # noqa: E402


class AwaitedCounter:
    def __init__(self) -> None:
        self._n = 0

    async def next(self) -> int:
        self._n += 1
        return self._n


async def run(f: Callable[[], Awaitable[int]], tasks: int, ops: int) -> float:
    per = ops // tasks

    async def loop() -> None:
        for _ in range(per):
            await f()

    t0 = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(tasks)))
    return per * tasks / (time.perf_counter() - t0)


async def main(ops: int, rounds: int) -> None:
    cluster = Cluster()
    cluster.node()
    cluster.sequences["bench"] = {"start": 1, "max": 2**63 - 1, "next": 1}
    try:
        async with AsyncClient(cluster.addrs()) as c:
            s = c.sequence("bench")
            for _ in range(200_000):  # warm-up: the rate, and so the ranges, grow
                await s.next()
            print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {ops:,} ops per run, best of {rounds}")
            print("tasks  awaited int ops/s  await next() ops/s  ratio")
            for tasks in (1, 8):
                bare = max([await run(AwaitedCounter().next, tasks, ops) for _ in range(rounds)])
                got = max([await run(s.next, tasks, ops) for _ in range(rounds)])
                print(f"{tasks:5d}  {bare:17,.0f}  {got:18,.0f}  {got / bare:5.2f}")
            st = s.stats()
            print(f"sequence: refills={st.refills} waits={st.waits} range_size={st.range_size:,} "
                  f"waits_while_cached={st.waits_while_cached}")
    finally:
        cluster.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    asyncio.run(main(a.ops, a.rounds))
