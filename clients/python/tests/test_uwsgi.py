"""A client made at import under uWSGI's prefork workers (issue 45).

uWSGI forks its workers in C and, unless started with --py-call-osafterfork,
runs none of Python's fork hooks (os.register_at_fork); it runs its own
uwsgi.post_fork_hook instead. An application that makes its client at import
(no --lazy-apps) hands every worker the master's copy. Here a real uWSGI
(Debian's uwsgi-core, uwsgi-plugin-python3 and python3-uwsgidecorators,
which scripts/clients-test.sh installs) serves an application that takes IDs at import, with four
workers, against a real ticketd node: no ID may come from two workers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import textwrap
import threading
import time
import urllib.request
from typing import Any, Dict, List

import pytest

from conftest import RealNode, free_port, needs_ticketd_bin

UWSGI = shutil.which("uwsgi") or shutil.which("uwsgi-core")
PLUGIN = "/usr/lib/uwsgi/plugins/python3_plugin.so"

pytestmark = [
    needs_ticketd_bin,
    pytest.mark.skipif(not (UWSGI and os.path.exists(PLUGIN)),
                       reason="needs Debian's uwsgi-core and uwsgi-plugin-python3 (scripts/clients-test.sh installs them)"),
]

APP = """
import json, os
import ticketd

# Made at import, in uWSGI's master, and used there once: every worker is
# forked with this client, its cached range and its prefetched batch.
client = ticketd.Client([os.environ["T_URL"]], token=os.environ["T_TOKEN"], call_timeout=5)
orders = client.sequence("orders")
events = client.snowflake("events")
orders.next()
events.next()


def application(environ, start_response):
    body = json.dumps({"pid": os.getpid(), "orders": [orders.next() for _ in range(50)],
                       "events": [events.next() for _ in range(10)]}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
"""


# The application above, with a token callable that computes for a while in
# Python (a token signed on the spot, a slow secrets client) when the prefetch
# that the import-time next() started asks it in uWSGI's master: that thread
# is running Python while the master forks the workers. uWSGI forks in C
# without taking the GIL (unless --py-call-uwsgi-fork-hooks); a worker forked
# while that thread held it starts with a GIL no thread of its own will
# release, and hangs at its first line of Python.
BUSY_TOKEN_APP = APP.replace(
    'token=os.environ["T_TOKEN"]', 'token=busy_token').replace("import ticketd\n", """import ticketd
import threading
import time
import uwsgi

refills_asked = []


def busy_token():
    if uwsgi.worker_id() == 0 and threading.current_thread().name.startswith("ticketd-refill-"):
        refills_asked.append(1)
        if len(refills_asked) == 2:  # the prefetch after the first range: 3 s of Python
            end = time.monotonic() + 3
            while time.monotonic() < end:
                pass
    return os.environ["T_TOKEN"]
""")


def get(url: str) -> Dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


# The library's reset runs from uWSGI's post-fork hook: through uwsgidecorators
# (Debian's python3-uwsgidecorators, installed), through the hook chained by
# hand when that module cannot be imported (--no-site hides dist-packages), and
# twice when --py-call-osafterfork runs Python's fork hooks as well.
FLAVOURS = {"with-uwsgidecorators": [], "without-uwsgidecorators": ["--no-site"],
            "py-call-osafterfork-too": ["--py-call-osafterfork"]}


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_uwsgi_prefork_workers_share_no_id(node: RealNode, tmp_path: Any, flavour: str) -> None:
    serve_and_check(node, tmp_path, APP, FLAVOURS[flavour])


def test_uwsgi_workers_forked_while_a_background_refill_computes_all_serve(node: RealNode, tmp_path: Any) -> None:
    """No --py-call-uwsgi-fork-hooks, as uWSGI runs by default: the library
    lets no background thread of its own run on in the master past the call
    that started it, so the workers are forked with the GIL free."""
    serve_and_check(node, tmp_path, BUSY_TOKEN_APP, [])


def serve_and_check(node: RealNode, tmp_path: Any, app: str, flags: List[str]) -> None:
    """Serves app under uWSGI (4 prefork workers, flags added), calls it 200
    times from 8 threads, and checks that every call was answered and that no
    ID came from two workers."""
    for path in ("sequences/orders", "namespaces/events"):
        req = urllib.request.Request(f"{node.url}/v1/{path}", data=b"{}", method="PUT",
                                     headers={"Authorization": "Bearer " + node.admin})
        urllib.request.urlopen(req, timeout=10).close()
    (tmp_path / "app.py").write_text(textwrap.dedent(app))
    port = free_port()
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env = dict(os.environ, T_URL=node.url, T_TOKEN=node.reserve, PYTHONPATH=src)
    args = [UWSGI, "--plugin", PLUGIN, "--http-socket", f"127.0.0.1:{port}", "--master", "--processes", "4",
            "--enable-threads", "--wsgi-file", str(tmp_path / "app.py"), "--chdir", str(tmp_path),
            "--die-on-term", "--disable-logging"]
    args += flags
    log = open(tmp_path / "uwsgi.log", "w")
    answers: List[Dict[str, Any]] = []
    failures: List[str] = []
    # A session of its own, so that workers left hung by a failure are killed with it.
    p = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        end = time.monotonic() + 20
        while True:
            try:
                get(url)
                break
            except OSError:
                assert p.poll() is None and time.monotonic() < end, (
                    "no worker answered within 20 s (hung?): " + (tmp_path / "uwsgi.log").read_text()[-3000:])
                time.sleep(0.1)
        lock = threading.Lock()

        def caller() -> None:
            for _ in range(25):
                try:
                    a = get(url)
                except OSError as e:  # a hung worker: the call times out
                    with lock:
                        failures.append(repr(e))
                    continue
                with lock:
                    answers.append(a)

        ts = [threading.Thread(target=caller) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
    finally:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            failures.append("uWSGI did not stop within 20 s of SIGTERM (a worker hung?)")
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(5)
        log.close()
    pids = {a["pid"] for a in answers}
    assert not failures, f"{len(failures)} of 200 calls unanswered (a worker hung?), first {failures[:2]}"
    assert len(answers) == 200 and len(pids) >= 2, f"{len(answers)} answers from workers {pids}"
    for kind in ("orders", "events"):
        owner: Dict[int, int] = {}
        twice = []
        for a in answers:
            for i in a[kind]:
                if owner.get(i, a["pid"]) != a["pid"]:
                    twice.append(i)
                owner[i] = a["pid"]
        assert not twice, f"{kind}: {len(twice)} IDs from two workers, first {twice[:5]} ({len(pids)} workers)"
