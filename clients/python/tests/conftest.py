from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Iterator, NamedTuple

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, HERE)

from standin import Cluster  # noqa: E402


def ticketd_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("ticketd-") and t.is_alive()]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.close()


@pytest.fixture(autouse=True)
def no_thread_left() -> Iterator[None]:
    """Every test's clients must be closed, leaving no ticketd-* thread."""
    yield
    left = ticketd_threads()
    assert not left, f"threads left after the test: {left}"


# A real ticketd node for the tests that need one (test_real_cluster.py,
# test_fork.py): TICKETD_BIN names a built binary; without it they skip.
TICKETD_BIN = os.environ.get("TICKETD_BIN", "")
needs_ticketd_bin = pytest.mark.skipif(not TICKETD_BIN, reason="set TICKETD_BIN to a built ticketd binary")


class RealNode(NamedTuple):
    url: str
    admin: str  # tokens: admin scope, and reserve scope
    reserve: str
    process: subprocess.Popen


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture
def node(tmp_path) -> Iterator[RealNode]:
    http_addr, raft_addr = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    tokens = tmp_path / "tokens"
    admin, reserve = secrets.token_hex(16), secrets.token_hex(16)  # the server wants >= 22 characters
    tokens.write_text(f"admin {admin}\nreserve {reserve}\n")
    log = open(tmp_path / "node.log", "w")
    p = subprocess.Popen([TICKETD_BIN, "serve", "--id", "n1", "--data-dir", str(tmp_path / "data"),
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
        yield RealNode(f"http://{http_addr}", admin, reserve, p)
    finally:
        p.terminate()
        p.wait(10)
        log.close()


