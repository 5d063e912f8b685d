"""One real ticketd node (not a stand-in), when TICKETD_BIN names a built
binary; skipped otherwise. The conformance harness covers real 3-node
clusters under faults; this checks the wire shapes and the error kinds.

    go build -o /tmp/ticketd ./cmd/ticketd
    TICKETD_BIN=/tmp/ticketd /usr/bin/python3 -m pytest -q tests/test_real_cluster.py
"""

from __future__ import annotations

import threading
from typing import List

import pytest

import ticketd

from conftest import needs_ticketd_bin

pytestmark = needs_ticketd_bin


def test_real_node(node) -> None:
    url, admin, reserve, _ = node
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
