"""The asyncio conformance driver: PROTOCOL.md, spoken by ticketd.aio.

One event loop runs everything. Commands come on stdin (read by the loop, not
a thread); each lane is a task that runs its commands in order, so lanes run
concurrently as the tasks of one asyncio program do, and several lanes share
a handle as tasks share one. Answers go to stdout whole, one line each (one
thread writes them all). The error kinds are the threaded driver's (same
exceptions, same mapping). fork answers unsupported: forking a process whose
event loop runs is not supported by asyncio, so not by the library; its
fork-safety (a client made before the fork, used on the child's own loop) is
tested in tests/test_aio.py. close answers with the library's tasks left
running (and any thread it might have started: none).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import Any, Dict, List, Optional

import ticketd
import ticketd.aio

import plants
from driver import answer_of, ms_env


class Driver:
    def __init__(self) -> None:
        kw: Dict[str, Any] = {}
        call = ms_env("TICKETD_CONFORMANCE_CALL_TIMEOUT_MS")
        attempt = ms_env("TICKETD_CONFORMANCE_ATTEMPT_TIMEOUT_MS")
        if call is not None:
            kw["call_timeout"] = call
        if attempt is not None:
            kw["timeout"] = attempt
        self.client = ticketd.aio.AsyncClient(**kw)  # endpoints and token: TICKETD_ADDR, TICKETD_TOKEN
        self.handles: Dict[str, Any] = {}
        self.lanes: Dict[str, "asyncio.Queue[Optional[List[str]]]"] = {}
        self.tasks: List["asyncio.Task[None]"] = []

    def write(self, line: str) -> None:
        sys.stdout.write(line.replace("\n", " ").replace("\r", " ") + "\n")
        sys.stdout.flush()

    def handle(self, name: str) -> Any:
        h = self.handles.get(name)
        if h is None:
            raise LookupError(f"no handle {name!r}")
        return h

    async def run(self, args: List[str]) -> str:
        op = args[0]
        if op == "open":
            if len(args) > 3:
                return f"err unsupported ticketd.aio has no {args[3]!r} mode"
            self.handles[args[1]] = self.client.sequence(args[2])
            return "ok"
        if op == "next":
            return f"ok {await self.handle(args[1]).next()}"
        if op == "nextn":
            rs = await self.handle(args[1]).next_n(int(args[2]))
            return "ok " + " ".join(f"{r.first}-{r.last}" for r in rs)
        if op == "reserve":
            r = await self.client.reserve(args[1], int(args[2]))
            return f"ok {r.first}-{r.last}"
        if op == "snowflake":
            self.handles[args[1]] = self.client.snowflake(args[2])
            return "ok"
        if op == "snext":
            return f"ok {await self.handle(args[1]).next()}"
        if op == "snextn":
            return "ok " + " ".join(str(i) for i in await self.handle(args[1]).next_n(int(args[2])))
        if op == "fork":
            return "err unsupported forking a process whose asyncio event loop runs is not supported"
        if op == "close":
            await self.client.aclose()
            tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("ticketd-") and not t.done()]
            threads = [t for t in threading.enumerate() if t.name.startswith("ticketd-") and t.is_alive()]
            return f"ok threads={len(tasks) + len(threads)}"
        raise ValueError(f"unknown command {op!r}")

    async def lane(self, lane: str, q: "asyncio.Queue[Optional[List[str]]]") -> None:
        while True:
            args = await q.get()
            if args is None:
                return
            try:
                answer = await self.run(args)
            except Exception as e:  # every failure gets its answer line
                answer = answer_of(e)
            except asyncio.CancelledError as e:
                # Not this lane's task being cancelled (nothing cancels it
                # before stdin ends): a library error that escaped as a
                # cancellation, which the harness must see as untyped.
                answer = answer_of(e)
            self.write(f"{lane} {answer}")

    def dispatch(self, line: str) -> None:
        fields = line.rstrip("\r\n").split(" ")
        if len(fields) < 2:
            self.write(f"{fields[0] if fields else '?'} err untyped ValueError: malformed command {line!r}")
            return
        lane = fields[0]
        q = self.lanes.get(lane)
        if q is None:
            q = self.lanes[lane] = asyncio.Queue()
            self.tasks.append(asyncio.ensure_future(self.lane(lane, q)))
        q.put_nowait(fields[1:])

    async def finish(self) -> None:
        for q in self.lanes.values():
            q.put_nowait(None)
        await asyncio.wait(self.tasks, timeout=8) if self.tasks else None
        await self.client.aclose()


async def main() -> int:
    plants.apply(os.environ.get("TICKETD_CONFORMANCE_PLANT", ""))
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    d = Driver()
    d.write(f"ready python-asyncio {ticketd.__version__}")
    while True:
        line = (await stdin.readline()).decode()
        if not line:
            break
        if line.strip():
            d.dispatch(line)
    await d.finish()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
