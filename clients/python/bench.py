"""CachedSequence.next() against the bare limit: a threading.Lock-guarded integer
increment, on 1, 4 and 8 threads, in the same run.

    /usr/bin/python3 clients/python/bench.py [--ops N]

The CachedSequence is served by the in-process stand-in node of the tests (its
refills take the GIL too, as a real client's HTTP would); ranges grow with
the rate up to 10M IDs, so after warm-up next() almost never leaves its hot
path. ops/s is the total of all threads.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Callable, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "src"))
sys.path.insert(0, os.path.join(HERE, "tests"))

import ticketd  # noqa: E402
from standin import Cluster  # noqa: E402


class LockedCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def next(self) -> int:
        with self._lock:
            self._n += 1
            return self._n


def run(f: Callable[[], int], threads: int, ops: int) -> float:
    per = ops // threads
    start = threading.Barrier(threads + 1)

    def loop() -> None:
        start.wait()
        for _ in range(per):
            f()

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    return per * threads / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cluster = Cluster()
    cluster.node()
    try:
        with ticketd.Client(cluster.addrs()) as c:
            c.create_sequence("bench")
            seq = c.sequence("bench")
            run(seq.next, 1, 200_000)  # warm-up: the rate, and so the ranges, grow
            print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {args.ops:,} ops per run, "
                  f"best of {args.rounds}")
            print(f"{'threads':>7} {'lock+int ops/s':>15} {'next() ops/s':>13} {'ratio':>6}")
            for threads in (1, 4, 8):
                base = max(run(LockedCounter().next, threads, args.ops) for _ in range(args.rounds))
                mine = max(run(seq.next, threads, args.ops) for _ in range(args.rounds))
                print(f"{threads:>7} {base:>15,.0f} {mine:>13,.0f} {mine / base:>6.2f}")
            st = seq.stats()
            print(f"sequence: refills={st.refills} waits={st.waits} range_size={st.range_size:,} "
                  f"waits_while_cached={st.waits_while_cached}")
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
