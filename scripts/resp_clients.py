#!/usr/bin/python3
"""ticketd's Redis-protocol front through Python's redis module (redis-py).

Run by scripts/resp-clients.sh against the 3-node cluster it starts, with
Debian's /usr/bin/python3 and python3-redis (redis-py 4.3.4 on bookworm:
only APIs that exist there). It checks, through the leader and both
followers:

  * AUTH (a password, and a user name with it), scopes and every error code
    as the library maps them: NOAUTH, WRONGPASS, NOPERM, NOTFOUND, CONFLICT,
    EXHAUSTED, ERR;
  * INCR, INCRBY, GET and TICKETD.RESERVE, answers growing across nodes;
  * pipelines (200 INCRBY through a follower, answered in order), and a
    pipeline mixing reads, reservations and an error;
  * a leader SIGKILLed under load: 6 threads with clients to all three nodes
    reserve (counts 1 and 1000, half of them 16 commands per pipeline),
    moving to another node on a connection error, a timeout or TRYAGAIN;
    the main thread kills the leader after about 1 s. Every range issued,
    before and after the kill, must be disjoint from every other, each
    thread's answers must grow (each request started after its previous one
    completed: linearizable ranges), at least 300 ranges must come after
    the kill, and every thread must have reserved again after it.

Exits 1 with a message on the first failure; on success writes a one-line
summary to --summary-file.
"""

import argparse
import os
import signal
import sys
import threading
import time

import redis
from redis.exceptions import (
    AuthenticationError,
    ConnectionError,
    NoPermissionError,
    RedisError,
    ResponseError,
    TimeoutError,
)

HOST = "127.0.0.1"


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def log(msg):
    print("resp_clients.py: " + msg, file=sys.stderr, flush=True)


def client(port, password=None, username=None):
    """A client of one node's front: no retries, every wait bounded."""
    return redis.Redis(
        host=HOST,
        port=port,
        username=username,
        password=password,
        socket_timeout=5,
        socket_connect_timeout=2,
        retry_on_timeout=False,
    )


def expect_error(what, fn, cls, prefix):
    """fn() must raise cls (or a subclass) whose message starts with prefix."""
    try:
        got = fn()
    except RedisError as e:
        if not isinstance(e, cls):
            fail(f"{what}: expected {cls.__name__} starting with {prefix!r}, got {type(e).__name__}: {e}")
        if not str(e).startswith(prefix):
            fail(f"{what}: expected a message starting with {prefix!r}, got {type(e).__name__}: {e}")
        return e
    fail(f"{what}: expected {cls.__name__} starting with {prefix!r}, got the answer {got!r}")


def expect(what, want, got):
    if got != want:
        fail(f"{what}: expected {want!r}, got {got!r}")


def expect_int(what, got):
    if not isinstance(got, int) or isinstance(got, bool) or got < 1:
        fail(f"{what}: expected a positive integer, got {got!r}")
    return got


def check_basics(ports, leader_port, admin, reserve):
    followers = [p for p in ports if p != leader_port]
    f1, f2 = followers
    seq = "pyorders"

    # Authentication. redis-py maps NOAUTH to AuthenticationError and strips
    # the code; WRONGPASS it does not know, so it is a ResponseError with
    # the code in its text (raised while connecting, when the client's
    # password is wrong).
    anon = client(f1)
    expect("PING without AUTH", True, anon.ping())
    expect_error("INCR without AUTH", lambda: anon.incr(seq), AuthenticationError, "Authentication required.")
    expect_error("AUTH with a wrong token", lambda: anon.execute_command("AUTH", "WRONG"), ResponseError,
                 "WRONGPASS invalid username-password pair or user is disabled.")
    expect("AUTH with the reserve token on the same connection", True, anon.execute_command("AUTH", reserve))
    expect("PING after AUTH", True, anon.ping())
    wrong = client(leader_port, "WRONG")
    expect_error("a client whose password is wrong", lambda: wrong.incr(seq), RedisError, "WRONGPASS")
    wrong_user = client(f2, "WRONG", username="ticketd")
    expect_error("a client whose user and password are wrong", lambda: wrong_user.incr(seq), RedisError, "WRONGPASS")
    with_user = client(f2, reserve, username="ticketd")  # AUTH user token: the user name is ignored
    expect("PING as user ticketd", True, with_user.ping())

    res = {p: client(p, reserve) for p in ports}
    adm = {p: client(p, admin) for p in ports}
    for p in ports:
        expect_error(f"TICKETD.CREATE with the reserve token on {p}", lambda: res[p].execute_command("TICKETD.CREATE", seq),
                     NoPermissionError, "this token may not run 'ticketd.create': it needs the admin scope")
        expect_error(f"INCR of {seq} before it exists on {p}", lambda: res[p].incr(seq), ResponseError,
                     f'NOTFOUND sequence "{seq}" does not exist')
        expect(f"GET of {seq} before it exists on {p}", None, res[p].get(seq))
    expect(f"TICKETD.CREATE {seq} through a follower", 1, adm[f1].execute_command("TICKETD.CREATE", seq))
    expect(f"TICKETD.CREATE {seq} again through the other follower", 0, adm[f2].execute_command("TICKETD.CREATE", seq))
    expect_error(f"TICKETD.CREATE {seq} with other settings", lambda: adm[leader_port].execute_command("TICKETD.CREATE", seq, "MAX", 99),
                 ResponseError, "CONFLICT")

    # Answers grow, whichever node serves them.
    last = 0
    order = [leader_port, f1, f2, f2, f1, leader_port]
    for p in order:
        got = expect_int(f"INCR {seq} on {p}", res[p].incr(seq))
        if got <= last:
            fail(f"INCR {seq} on {p} answered {got}, not more than the previous answer {last}")
        last = got
        got = expect_int(f"INCRBY {seq} 1000 on {p}", res[p].incrby(seq, 1000))
        if got - 999 <= last:
            fail(f"INCRBY {seq} 1000 on {p} answered {got}: its range starts at or below the previous answer {last}")
        last = got
        rng = res[p].execute_command("TICKETD.RESERVE", seq, 10)
        if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, int) for x in rng)):
            fail(f"TICKETD.RESERVE {seq} 10 on {p}: expected [first, last], got {rng!r}")
        if rng[1] != rng[0] + 9 or rng[0] <= last:
            fail(f"TICKETD.RESERVE {seq} 10 on {p} answered {rng}: not 10 IDs above the previous answer {last}")
        last = rng[1]
    for p in ports:
        got = res[p].get(seq)
        got = expect_int(f"GET {seq} on {p}", int(got) if got is not None else got)
        if got < last:
            fail(f"GET {seq} on {p} answered {got}, less than the last ID issued ({last})")
        expect(f"GET of a missing sequence on {p}", None, res[p].get("missing"))
        expect_error(f"INCR of a missing sequence on {p}", lambda: res[p].incr("missing"), ResponseError,
                     'NOTFOUND sequence "missing" does not exist; create it first')

    # ERR: redis-py strips the code.
    expect_error("an unknown command", lambda: res[f1].execute_command("FLUSHALL"), ResponseError,
                 "unknown command 'FLUSHALL'")
    expect_error("INCRBY -5", lambda: res[f2].incrby(seq, -5), ResponseError, f"incrby {seq}: count must be between 1 and ")
    expect_error("INCRBY 0", lambda: res[leader_port].incrby(seq, 0), ResponseError, f"incrby {seq}: count must be between 1 and ")
    expect_error("SELECT 1", lambda: res[f1].execute_command("SELECT", 1), ResponseError, "DB index is out of range")
    expect("CLIENT SETNAME", True, res[f1].client_setname("pyclient"))
    expect("CLIENT GETNAME", "pyclient", res[f1].client_getname())
    info = res[f1].info("replication")
    expect("INFO replication role on a follower", "slave", info.get("role"))
    info = res[leader_port].info("replication")
    expect("INFO replication role on the leader", "master", info.get("role"))

    # EXHAUSTED: a sequence of 10 IDs.
    small = "pysmall"
    expect("TICKETD.CREATE pysmall START 1 MAX 10", 1,
           adm[f2].execute_command("TICKETD.CREATE", small, "START", 1, "MAX", 10))
    expect("INCRBY pysmall 8", 8, res[f1].incrby(small, 8))
    expect_error("INCRBY pysmall 5 (past MAX 10)", lambda: res[f2].incrby(small, 5), ResponseError, "EXHAUSTED")
    expect_error("INCRBY pysmall 5 on the leader", lambda: res[leader_port].incrby(small, 5), ResponseError, "EXHAUSTED")
    small_get = res[f1].get(small)
    if small_get is None or not 8 <= int(small_get) <= 10:
        fail(f"GET pysmall after 8 of 10 IDs: expected 8 to 10, got {small_get!r}")

    # A pipeline of 200 INCRBY through a follower: answered in order, each
    # range after the one before.
    pseq = "pypipe"
    expect(f"TICKETD.CREATE {pseq}", 1, adm[leader_port].execute_command("TICKETD.CREATE", pseq))
    pipe = res[f1].pipeline(transaction=False)
    for _ in range(200):
        pipe.incrby(pseq, 3)
    answers = pipe.execute()
    if len(answers) != 200:
        fail(f"a pipeline of 200 INCRBY got {len(answers)} answers")
    prev = 0
    for i, a in enumerate(answers):
        expect_int(f"pipelined INCRBY #{i}", a)
        if a - 2 <= prev:
            fail(f"pipelined INCRBY {pseq} 3 #{i} answered {a} after {prev}: the answers of a pipeline must grow in order by at least 3; all: {answers}")
        prev = a

    # A pipeline mixing reservations, reads and an error, through the other
    # follower: every command answered, in order; a GET never less than an
    # INCR before it; the error alone fails.
    pipe = res[f2].pipeline(transaction=False)
    pipe.incr(pseq)
    pipe.get(pseq)
    pipe.incr("missing")
    pipe.incrby(pseq, 5)
    pipe.execute_command("TICKETD.RESERVE", pseq, 4)
    pipe.get(pseq)
    pipe.ping()
    out = pipe.execute(raise_on_error=False)
    if len(out) != 7:
        fail(f"a mixed pipeline of 7 commands got {len(out)} answers: {out!r}")
    a, g1, err, b, rng, g2, pong = out
    expect_int("mixed pipeline: INCR", a)
    if a <= prev:
        fail(f"mixed pipeline: INCR answered {a}, not above the previous pipeline's {prev}")
    if g1 is None or int(g1) < a:
        fail(f"mixed pipeline: GET answered {g1!r}, less than the INCR before it ({a})")
    if not isinstance(err, ResponseError) or not str(err).startswith("NOTFOUND"):
        fail(f"mixed pipeline: INCR missing should be a NOTFOUND error, got {err!r}")
    expect_int("mixed pipeline: INCRBY 5", b)
    if b - 4 <= a:
        fail(f"mixed pipeline: INCRBY 5 answered {b}, its range not above the INCR's {a}")
    if not (isinstance(rng, list) and len(rng) == 2 and rng[1] == rng[0] + 3 and rng[0] > b):
        fail(f"mixed pipeline: TICKETD.RESERVE 4 answered {rng!r}, want [first, first+3] above {b}")
    if g2 is None or int(g2) < rng[1]:
        fail(f"mixed pipeline: the second GET answered {g2!r}, less than the reservation before it ({rng[1]})")
    expect("mixed pipeline: PING", True, pong)

    for c in [anon, wrong, wrong_user, with_user, *res.values(), *adm.values()]:
        c.close()


def leader_now(ports, reserve):
    """The port whose node says it serves (INFO ticketd), or None."""
    for p in ports:
        try:
            c = client(p, reserve)
            info = c.info("ticketd")  # parsed by redis-py into a dict
            c.close()
        except RedisError:
            continue
        if info.get("serving") == 1:
            return p
    return None


def read_pid(path):
    with open(path) as f:
        return int(f.read().strip())


def process_gone(pid):
    """The process has exited (a zombie not yet reaped by its parent counts)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


class Run:
    """What the failover's threads share."""

    def __init__(self):
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.killed = threading.Event()
        self.kill_time = None
        self.after_kill = 0
        self.threads_after_kill = set()  # the workers with a range after the kill
        self.first_after_kill = None  # seconds from the kill to the first range after it
        self.errors = []


class Worker(threading.Thread):
    def __init__(self, n, ports, reserve, seq, run, deadline):
        super().__init__(name=f"worker{n}", daemon=True)
        self.n = n
        self.ports = ports
        self.seq = seq
        self.run_ = run
        self.deadline = deadline
        self.count = 1 if n % 2 == 0 else 1000
        self.pipelined = n < 3  # counts 1, 1000, 1 pipelined; 1000, 1, 1000 one at a time
        self.clients = [client(p, reserve) for p in ports]
        self.node = n % len(ports)
        self.ranges = []  # (first, last, after_kill, port)
        self.tryagain = 0
        self.conn_errors = 0
        self.timeouts = 0
        self.last = 0

    def move(self):
        self.node = (self.node + 1) % len(self.ports)
        time.sleep(0.02)

    def record(self, last, after, port):
        first = last - self.count + 1
        if first <= self.last:
            # This request was sent after the previous one was answered.
            raise Failure(f"{self.name}: INCRBY {self.seq} {self.count} on {port} answered {last} (range [{first}, {last}]) "
                          f"after an earlier answer of this thread was {self.last}: not linearizable")
        self.last = last
        self.ranges.append((first, last, after, port))
        if after:
            run = self.run_
            with run.lock:
                run.after_kill += 1
                run.threads_after_kill.add(self.n)
                if run.first_after_kill is None:
                    run.first_after_kill = time.monotonic() - run.kill_time

    def run(self):
        try:
            self.loop()
        except Failure as e:
            with self.run_.lock:
                self.run_.errors.append(str(e))
            self.run_.stop.set()
        except Exception as e:  # anything unexpected fails the run, with its type
            with self.run_.lock:
                self.run_.errors.append(f"{self.name}: {type(e).__name__}: {e}")
            self.run_.stop.set()
        finally:
            for c in self.clients:
                c.close()

    def loop(self):
        run = self.run_
        for _ in range(200_000):
            if run.stop.is_set() or time.monotonic() > self.deadline:
                return
            after = run.killed.is_set()
            port = self.ports[self.node]
            r = self.clients[self.node]
            try:
                if self.pipelined:
                    pipe = r.pipeline(transaction=False)
                    for _ in range(16):
                        pipe.incrby(self.seq, self.count)
                    answers = pipe.execute(raise_on_error=False)
                    if len(answers) != 16:
                        raise Failure(f"{self.name}: a pipeline of 16 INCRBY on {port} got {len(answers)} answers")
                else:
                    answers = [r.incrby(self.seq, self.count)]
            except AuthenticationError as e:  # a ConnectionError too: never expected here
                raise Failure(f"{self.name}: INCRBY on {port}: authentication error {e}")
            except TimeoutError:
                self.timeouts += 1
                self.move()
                continue
            except ConnectionError:
                self.conn_errors += 1
                self.move()
                continue
            except ResponseError as e:
                if str(e).startswith("TRYAGAIN"):
                    self.tryagain += 1
                    self.move()
                    continue
                raise Failure(f"{self.name}: INCRBY {self.seq} {self.count} on {port}: unexpected error {e}")
            retry = False
            for a in answers:
                if isinstance(a, ResponseError):
                    if not str(a).startswith("TRYAGAIN"):
                        raise Failure(f"{self.name}: pipelined INCRBY {self.seq} {self.count} on {port}: unexpected error {a}")
                    self.tryagain += 1
                    retry = True
                elif isinstance(a, int) and not isinstance(a, bool):
                    self.record(a, after, port)
                else:
                    raise Failure(f"{self.name}: INCRBY on {port} answered {a!r}, not an integer")
            if retry:
                self.move()
        raise Failure(f"{self.name}: ran 200,000 iterations without being stopped")


def failover(ports, leader_port, admin, reserve, leader_pid, pid_files):
    seq = "pyfailover"
    # Through a follower, so the killed leader is not the only one asked.
    f = next(p for p in ports if p != leader_port)
    adm = client(f, admin)
    expect(f"TICKETD.CREATE {seq}", 1, adm.execute_command("TICKETD.CREATE", seq))
    adm.close()

    # Kill the node that serves now: the one the shell found, unless the
    # leadership moved since (then its pid comes from its pid file).
    serving = leader_now(ports, reserve)
    if serving is None:
        fail("no node says serving:1 in INFO ticketd before the kill")
    pid = leader_pid
    if serving != leader_port:
        log(f"the leader moved from RESP port {leader_port} to {serving} since the shell looked; killing that one")
        pid = read_pid(pid_files[ports.index(serving)])
    elif read_pid(pid_files[ports.index(serving)]) != leader_pid:
        fail(f"--leader-pid {leader_pid} is not the pid in {pid_files[ports.index(serving)]}")
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read().split(b"\0")
    except FileNotFoundError:
        fail(f"the leader's process {pid} does not exist")
    if b"serve" not in cmdline or f"{HOST}:{serving}".encode() not in cmdline:
        fail(f"process {pid} is not the ticketd serving RESP on {serving}: {cmdline!r}")

    run = Run()
    start = time.monotonic()
    deadline = start + 1 + 20 + 5
    workers = [Worker(n, ports, reserve, seq, run, deadline) for n in range(6)]
    for w in workers:
        w.start()
    run.stop.wait(1.0)
    if run.errors:
        fail("before the kill: " + "; ".join(run.errors))
    before = sum(len(w.ranges) for w in workers)
    log(f"{before} ranges before the kill; SIGKILL to the leader (pid {pid}, RESP {serving})")
    run.kill_time = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    run.killed.set()

    while not run.stop.is_set():
        with run.lock:
            done = run.after_kill >= 300 and len(run.threads_after_kill) == len(workers)
        if done or time.monotonic() - run.kill_time > 20 or not any(w.is_alive() for w in workers):
            break
        time.sleep(0.05)
    since_kill = time.monotonic() - run.kill_time
    run.stop.set()
    for w in workers:
        w.join(timeout=max(1.0, deadline + 10 - time.monotonic()))
    stuck = [w.name for w in workers if w.is_alive()]
    if stuck:
        fail(f"threads still running 10 s past their deadline: {stuck}")
    if run.errors:
        fail("; ".join(run.errors))

    gone_deadline = time.monotonic() + 5
    while not process_gone(pid):
        if time.monotonic() > gone_deadline:
            fail(f"the leader's process {pid} is still there 5 s after SIGKILL")
        time.sleep(0.05)

    ranges = sorted(r for w in workers for r in w.ranges)
    after = sum(1 for r in ranges if r[2])
    overlaps = []
    top = None  # the range with the largest last so far
    for r in ranges:
        if top is not None and r[0] <= top[1]:
            overlaps.append((top, r))
        if top is None or r[1] > top[1]:
            top = r
    ids = sum(r[1] - r[0] + 1 for r in ranges)
    tryagain = sum(w.tryagain for w in workers)
    conn_errors = sum(w.conn_errors for w in workers)
    timeouts = sum(w.timeouts for w in workers)
    by_port = {p: sum(1 for r in ranges if r[2] and r[3] == p) for p in ports}
    log(f"{len(ranges)} ranges ({ids} IDs), {after} after the kill (by RESP port: {by_port}); "
        f"first range after the kill {run.first_after_kill if run.first_after_kill is None else round(run.first_after_kill, 3)} s after it; "
        f"TRYAGAIN {tryagain}, connection errors {conn_errors}, timeouts {timeouts}; stopped {since_kill:.1f} s after the kill")
    if overlaps:
        shown = "; ".join(f"[{a[0]}, {a[1]}] on {a[3]} and [{b[0]}, {b[1]}] on {b[3]}" for a, b in overlaps[:5])
        fail(f"{len(overlaps)} overlapping ranges (IDs issued twice): {shown}")
    if before == 0:
        fail("no range was issued in the second before the kill")
    if after < 300:
        fail(f"only {after} ranges were issued after the leader's SIGKILL in {since_kill:.1f} s; want at least 300")
    recovered = {w.n for w in workers if any(r[2] for r in w.ranges)}
    if len(recovered) != len(workers):
        fail(f"threads with no range after the kill: {sorted(set(range(len(workers))) - recovered)}")
    if by_port.get(serving):
        fail(f"{by_port[serving]} ranges answered by the killed leader's port {serving} after the kill")

    # A linearizable read after every range: GET is at least the last ID.
    top_last = max(r[1] for r in ranges)
    survivors = [p for p in ports if p != serving]
    got = None
    get_deadline = time.monotonic() + 10
    while got is None:
        for p in survivors:
            c = client(p, reserve)
            try:
                got = c.get(seq)
                break
            except (ConnectionError, TimeoutError):
                pass
            except ResponseError as e:
                if not str(e).startswith("TRYAGAIN"):
                    fail(f"GET {seq} on {p} after the failover: {e}")
            finally:
                c.close()
        if got is None:
            if time.monotonic() > get_deadline:
                fail(f"GET {seq} answered by neither survivor in 10 s")
            time.sleep(0.1)
    if int(got) < top_last:
        fail(f"GET {seq} after the failover answered {int(got)}, less than the largest ID issued ({top_last})")
    return len(ranges), after, len(overlaps)


def check_snowflake(ports, reserve):
    """TICKETD.SNOWFLAKE (issue #32), as docs/snowflake.md shows it: every node
    answers from its own worker-id lease, IDs strictly increasing per node
    and never repeated across nodes; an unknown namespace is NOTFOUND."""
    seen = set()
    for p in ports:
        r = client(p, password=reserve)
        last = 0
        for _ in range(5):
            ids = r.execute_command("TICKETD.SNOWFLAKE", "flake", 100)
            if not isinstance(ids, list) or len(ids) != 100:
                fail(f"TICKETD.SNOWFLAKE flake 100 on {p}: expected a list of 100 integers, got {ids!r}")
            for i in ids:
                expect_int(f"TICKETD.SNOWFLAKE flake 100 on {p}", i)
                if i <= last:
                    fail(f"TICKETD.SNOWFLAKE on {p}: {i} after {last}: one node's IDs must strictly increase")
                if i in seen:
                    fail(f"TICKETD.SNOWFLAKE on {p}: {i} served twice")
                seen.add(i)
                last = i
        one = r.execute_command("TICKETD.SNOWFLAKE", "flake")
        if not isinstance(one, list) or len(one) != 1 or one[0] <= last:
            fail(f"TICKETD.SNOWFLAKE flake (no count) on {p}: expected one integer above {last}, got {one!r}")
        expect_error(f"TICKETD.SNOWFLAKE nope on {p}", lambda: r.execute_command("TICKETD.SNOWFLAKE", "nope", 1),
                     ResponseError, "NOTFOUND")
    return len(seen)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ports", required=True, help="the three nodes' RESP ports, comma-separated")
    ap.add_argument("--leader-port", type=int, required=True)
    ap.add_argument("--admin-token", required=True)
    ap.add_argument("--reserve-token", required=True)
    ap.add_argument("--leader-pid", type=int, required=True)
    ap.add_argument("--pid-files", required=True, help="the nodes' pid files, comma-separated, in the order of --ports")
    ap.add_argument("--summary-file", required=True)
    args = ap.parse_args()
    ports = [int(p) for p in args.ports.split(",")]
    pid_files = args.pid_files.split(",")
    if len(ports) != 3 or len(pid_files) != 3 or args.leader_port not in ports:
        fail("--ports and --pid-files need three entries each, and --leader-port must be one of --ports")

    t0 = time.monotonic()
    check_basics(ports, args.leader_port, args.admin_token, args.reserve_token)
    log(f"auth, scopes, errors, INCR/INCRBY/GET/TICKETD.RESERVE and pipelines OK ({time.monotonic() - t0:.1f} s)")
    flakes = check_snowflake(ports, args.reserve_token)
    log(f"TICKETD.SNOWFLAKE: {flakes} IDs from the three nodes, none twice, each node's increasing")
    n, after, overlaps = failover(ports, args.leader_port, args.admin_token, args.reserve_token,
                                  args.leader_pid, pid_files)
    summary = f"python redis {redis.__version__} OK: {n} ranges, {after} after the leader kill, {overlaps} overlaps"
    with open(args.summary_file, "w") as f:
        f.write(summary + "\n")
    log(summary)


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(f"resp_clients.py: FAIL: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
