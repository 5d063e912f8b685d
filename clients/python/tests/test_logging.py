"""What the library logs (issue 46, part 5): a background refill or fetch that
fails, once per failure streak at WARNING, its recovery at INFO, and
nothing on the paths that hand out IDs."""

from __future__ import annotations

import logging
import time
from typing import List

import pytest

import ticketd
from standin import Cluster, P

from test_client import make
from test_sequence import wait_for


def records(caplog: pytest.LogCaptureFixture) -> List[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "ticketd"]


def test_the_ticketd_logger_has_a_null_handler() -> None:
    # The library convention: no "No handlers could be found" and no output
    # to stderr unless the application configures logging.
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("ticketd").handlers)


def test_a_refill_failing_after_a_token_rotation_is_logged_once_and_its_recovery_too(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ticketd")
    node = cluster.node()
    node.token = "token-1"
    current = ["token-1"]
    with make(cluster, token=lambda: current[0]) as c:
        c.create_sequence("orders")
        seq = c.sequence("orders", min_range=5, max_range=5)
        assert seq.next() == 1
        wait_for(lambda: seq.stats().refills == 2)  # 1..5 and 6..10 cached
        node.token = "token-2"  # rotated on the cluster, not yet in the application
        assert [seq.next() for _ in range(9)] == list(range(2, 11))  # the cache is served as before
        for _ in range(3):  # each call starts a refill, which the cluster refuses
            with pytest.raises(ticketd.Unauthorized):
                seq.next()
        warnings = [r for r in records(caplog) if r.levelno == logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in records(caplog)]
        msg = warnings[0].getMessage()
        assert "refill of sequence 'orders' failed" in msg and "401" in msg, msg

        current[0] = "token-2"
        assert seq.next() == 11
        # The refill's thread logs its recovery after it has handed the
        # range on, so the call above may return first.
        wait_for(lambda: any(r.levelno == logging.INFO for r in records(caplog)))
        infos = [r for r in records(caplog) if r.levelno == logging.INFO]
        assert len(infos) == 1 and "refill of sequence 'orders' recovered after" in infos[0].getMessage()

        seen = len(records(caplog))
        for _ in range(2000):  # the hot path, and the refills of a healthy cluster: nothing
            seq.next()
        assert len(records(caplog)) == seen, [r.getMessage() for r in records(caplog)[seen:]]


def test_retried_failures_are_one_warning_not_one_per_retry(cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ticketd")
    node = cluster.node()
    down = {"on": True}
    node.hook = lambda m, p: ((503, {}, {"type": P + "no-leader", "title": "no leader", "status": 503})
                              if down["on"] and p.endswith("/ranges") else None)
    with make(cluster, backoff=(0.005, 0.01), call_timeout=0.5) as c:
        c.create_sequence("orders")
        seq = c.sequence("orders")
        with pytest.raises(ticketd.Unavailable):
            seq.next()  # the refill goes on retrying after the call's bound
        assert len(node.range_requests()) > 10
        down["on"] = False
        assert seq.next() == 1
        wait_for(lambda: len(records(caplog)) >= 2)  # the recovery is logged after the hand-over
        got = [(r.levelname, r.getMessage()) for r in records(caplog)]
        assert [level for level, _ in got] == ["WARNING", "INFO"], got
        assert "no leader" in got[0][1]
        failures = int(got[1][1].split("recovered after ")[1].split(" ")[0])
        assert failures >= 10, got


def test_a_snowflake_fetch_failing_is_logged_once_and_its_recovery_too(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ticketd")
    node = cluster.node()
    cluster.namespaces["ev"] = 1000
    down = {"on": True}
    node.hook = lambda m, p: ((503, {}, {"type": P + "no-worker-lease", "title": "no worker lease", "status": 503})
                              if down["on"] else None)
    with make(cluster, backoff=(0.005, 0.01), call_timeout=0.3) as c:
        sf = c.snowflake("ev", batch=10)
        for _ in range(3):
            with pytest.raises(ticketd.Unavailable):
                sf.next()
        down["on"] = False
        wait_for(lambda: sf.stats().cached > 0)  # the fetch in flight recovers on its own
        assert sf.next() == 1000
        wait_for(lambda: len(records(caplog)) >= 2)  # the recovery is logged after the hand-over
        got = [(r.levelname, r.getMessage()) for r in records(caplog)]
        assert [level for level, _ in got] == ["WARNING", "INFO"], got
        assert "Snowflake fetch of namespace 'ev' failed" in got[0][1] and "no worker lease" in got[0][1]
        assert "Snowflake fetch of namespace 'ev' recovered after" in got[1][1]
        time.sleep(0.05)
        for _ in range(500):
            sf.next()
        assert len(records(caplog)) == 2
