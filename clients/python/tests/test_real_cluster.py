"""One real ticketd node (not a stand-in), when TICKETD_BIN names a built
binary; skipped otherwise. The conformance harness covers real 3-node
clusters under faults; this checks the wire shapes and the error kinds.

    go build -o /tmp/ticketd ./cmd/ticketd
    TICKETD_BIN=/tmp/ticketd /usr/bin/python3 -m pytest -q tests/test_real_cluster.py
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import threading
import time
import urllib.request
from typing import Iterator, List, Tuple

import pytest

import ticketd

BIN = os.environ.get("TICKETD_BIN", "")
pytestmark = pytest.mark.skipif(not BIN, reason="set TICKETD_BIN to a built ticketd binary")


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture
def node(tmp_path) -> Iterator[Tuple[str, str, str]]:
    http_addr, raft_addr = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    tokens = tmp_path / "tokens"
    admin, reserve = secrets.token_hex(16), secrets.token_hex(16)  # the server wants >= 22 characters
    tokens.write_text(f"admin {admin}\nreserve {reserve}\n")
    log = open(tmp_path / "node.log", "w")
    p = subprocess.Popen([BIN, "serve", "--id", "n1", "--data-dir", str(tmp_path / "data"),
                          "--http-addr", http_addr, "--raft-addr", raft_addr,
                          "--initial-cluster", f"n1={raft_addr}", "--tokens-file", str(tokens),
                          "--insecure-plaintext-raft", "--heartbeat-timeout", "300ms",
                          "--election-timeout", "300ms", "--leader-lease-timeout", "150ms"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://{http_addr}/readyz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert p.poll() is None and time.monotonic() < end, (tmp_path / "node.log").read_text()[-2000:]
            time.sleep(0.05)
        yield f"http://{http_addr}", admin, reserve
    finally:
        p.terminate()
        p.wait(10)
        log.close()


def test_real_node(node) -> None:
    url, admin, reserve = node
    with ticketd.Client([url], token=admin, call_timeout=5) as c:
        info, created = c.create_sequence("py", start=10)
        assert created and info.next == 10
    with ticketd.Client([url], call_timeout=5) as c:
        with pytest.raises(ticketd.Unauthorized) as ei:
            c.reserve("py", 1)
        assert ei.value.status == 401 and ei.value.problem_type.startswith("urn:ticketd:problem:")
    with ticketd.Client([url], token=reserve, call_timeout=5) as c:
        with pytest.raises(ticketd.Forbidden):
            c.create_sequence("other")
        with pytest.raises(ticketd.NotFound):
            c.reserve("nope", 1)
        r = c.reserve("py", 5)
        assert r.first >= 10 and r.size == 5
        seq = c.sequence("py", min_range=100, max_range=1000)
        per: List[List[int]] = []

        def worker() -> None:
            mine = [seq.next() for _ in range(3000)]
            assert all(a < b for a, b in zip(mine, mine[1:]))
            per.append(mine)

        ts = [threading.Thread(target=worker) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        ids = [i for m in per for i in m]
        assert len(ids) == len(set(ids)) == 12000
        assert min(ids) > r.last
