"""The Python conformance driver: speaks clients/conformance/PROTOCOL.md.

Commands come on stdin, one per line, "<lane> <op> [args...]"; each lane runs
on its own thread, in order; answers go to stdout whole, one line each.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional

import ticketd

import plants

# isinstance order matters: ClockBehind is an Unavailable, and is "unavailable".
KINDS = [
    (ticketd.Closed, "closed"),
    (ticketd.NotFound, "not_found"),
    (ticketd.Exhausted, "exhausted"),
    (ticketd.Unauthorized, "unauthorized"),
    (ticketd.Forbidden, "forbidden"),
    (ticketd.Unavailable, "unavailable"),
    (ticketd.InvalidArgument, "invalid_argument"),
    (ticketd.Conflict, "conflict"),
]


def kind_of(e: BaseException) -> str:
    for cls, kind in KINDS:
        if isinstance(e, cls):
            return kind
    return "untyped"


def answer_of(e: BaseException) -> str:
    kind = kind_of(e)
    msg = str(e) if kind != "untyped" else f"{type(e).__module__}.{type(e).__name__}: {e}"
    return f"err {kind} {msg}"


def ms_env(name: str) -> Optional[float]:
    v = os.environ.get(name, "")
    return int(v) / 1000.0 if v else None


class Driver:
    def __init__(self, out: Any) -> None:
        self.out = out
        self.out_lock = threading.Lock()
        kw: Dict[str, Any] = {}
        call = ms_env("TICKETD_CONFORMANCE_CALL_TIMEOUT_MS")
        attempt = ms_env("TICKETD_CONFORMANCE_ATTEMPT_TIMEOUT_MS")
        if call is not None:
            kw["call_timeout"] = call
        if attempt is not None:
            kw["timeout"] = attempt
        self.call_timeout = call if call is not None else 30.0
        self.client = ticketd.Client(**kw)  # endpoints and token: TICKETD_ADDR, TICKETD_TOKEN
        self.handles: Dict[str, Any] = {}
        self.handles_lock = threading.Lock()
        self.lanes: Dict[str, "queue.Queue[Optional[List[str]]]"] = {}
        self.threads: List[threading.Thread] = []

    def write(self, line: str) -> None:
        with self.out_lock:
            self.out.write(line.replace("\n", " ").replace("\r", " ") + "\n")
            self.out.flush()

    def handle(self, name: str) -> Any:
        with self.handles_lock:
            h = self.handles.get(name)
        if h is None:
            raise LookupError(f"no handle {name!r}")
        return h

    def put_handle(self, name: str, h: Any) -> None:
        with self.handles_lock:
            self.handles[name] = h

    def run(self, args: List[str]) -> str:
        op = args[0]
        if op == "open":
            self.put_handle(args[1], self.client.sequence(args[2]))
            return "ok"
        if op == "next":
            return f"ok {self.handle(args[1]).next()}"
        if op == "nextn":
            rs = self.handle(args[1]).next_n(int(args[2]))
            return "ok " + " ".join(f"{r.first}-{r.last}" for r in rs)
        if op == "reserve":
            r = self.client.reserve(args[1], int(args[2]))
            return f"ok {r.first}-{r.last}"
        if op == "snowflake":
            self.put_handle(args[1], self.client.snowflake(args[2]))
            return "ok"
        if op == "snext":
            return f"ok {self.handle(args[1]).next()}"
        if op == "snextn":
            return "ok " + " ".join(str(i) for i in self.handle(args[1]).next_n(int(args[2])))
        if op == "fork":
            return self.fork(self.handle(args[1]), int(args[2]))
        if op == "close":
            self.client.close()
            left = [t for t in threading.enumerate() if t.name.startswith("ticketd-") and t.is_alive()]
            return f"ok threads={len(left)}"
        raise ValueError(f"unknown command {op!r}")

    def fork(self, h: Any, n: int) -> str:
        """PROTOCOL.md's fork: os.fork() here, on this lane's thread, while the
        other lanes go on; the child takes n IDs from its copy of h with
        next(), writes its answer to a pipe and leaves with os._exit (nothing
        of the parent's, its stdout buffer above all, is flushed twice). The
        parent answers with what the child wrote."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                try:
                    answer = "ok " + " ".join(str(h.next()) for _ in range(n))
                except Exception as e:
                    answer = answer_of(e)
                os.write(w, answer.encode())
            finally:
                os._exit(0)
        os.close(w)
        # The child's next() calls wait at most a call timeout between them
        # in all; past twice that it is stuck, and the answer says so.
        limit = 2 * self.call_timeout + 5
        end = time.monotonic() + limit
        chunks: List[bytes] = []
        try:
            while True:
                left = end - time.monotonic()
                if left <= 0 or not select.select([r], [], [], left)[0]:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return f"err untyped ChildStuck: the forked child gave no answer within {limit:.0f} s"
                b = os.read(r, 1 << 16)
                if not b:
                    break
                chunks.append(b)
        finally:
            os.close(r)
        _, status = os.waitpid(pid, 0)
        answer = b"".join(chunks).decode()
        if os.waitstatus_to_exitcode(status) != 0 or not answer:
            return f"err untyped ChildFailed: the forked child ended with status {status} and answered {answer!r}"
        return answer

    def lane(self, lane: str, q: "queue.Queue[Optional[List[str]]]") -> None:
        while True:
            args = q.get()
            if args is None:
                return
            try:
                answer = self.run(args)
            except Exception as e:  # every failure gets its answer line
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
            q = self.lanes[lane] = queue.Queue()
            t = threading.Thread(target=self.lane, args=(lane, q), name=f"lane-{lane}", daemon=True)
            self.threads.append(t)
            t.start()
        q.put(fields[1:])

    def finish(self) -> None:
        for q in self.lanes.values():
            q.put(None)
        for t in self.threads:
            t.join(timeout=8)
        self.client.close()


def main() -> int:
    # Python 3.12+ warns that fork() in a threaded process may deadlock the
    # child: the fork command does exactly that on purpose, as prefork
    # servers do, and the library makes its own state safe in the child.
    warnings.filterwarnings("ignore", message=".*use of fork\\(\\) may lead to deadlocks", category=DeprecationWarning)
    plants.apply(os.environ.get("TICKETD_CONFORMANCE_PLANT", ""))
    d = Driver(sys.stdout)
    d.write(f"ready python {ticketd.__version__}")
    for line in sys.stdin:
        if line.strip():
            d.dispatch(line)
    d.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
