"""The asyncio conformance driver against stand-in nodes: the protocol's answers, by hand."""

from __future__ import annotations

import os
import time

from standin import Cluster
from test_aio import slow_ranges
from test_driver import run_driver

AIO_DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance", "aio-driver")


def test_aio_driver_speaks_the_protocol(cluster: Cluster) -> None:
    cluster.node()
    cluster.node()
    cluster.sequences["s"] = {"start": 1, "max": 2**63 - 1, "next": 1}
    cluster.namespaces["ns"] = 7000
    out = run_driver(cluster, "1 open h s\n1 next h\n1 nextn h 3\n2 reserve s 5\n3 snowflake f ns\n"
                              "3 snext f\n3 snextn f 2\n4 reserve nope 1\n5 next missing\n6 reserve s 0\n"
                              "7 fork h 1\n8 open u s unordered\n", driver=AIO_DRIVER)
    assert out[0].startswith("ready python-asyncio ")
    by_lane: dict = {}
    for line in out[1:]:
        lane, rest = line.split(" ", 1)
        by_lane.setdefault(lane, []).append(rest)
    assert by_lane["1"][0] == "ok"
    assert by_lane["1"][1].startswith("ok ") and by_lane["1"][2].count("-") == 1
    assert by_lane["2"][0].startswith("ok ")
    assert by_lane["3"][0] == "ok" and len(by_lane["3"][2].split()) == 3
    assert by_lane["4"][0].startswith("err not_found ")
    assert by_lane["5"][0].startswith("err untyped builtins.LookupError")
    assert by_lane["6"][0].startswith("err invalid_argument ")
    assert by_lane["7"][0].startswith("err unsupported ")
    assert by_lane["8"][0].startswith("err unsupported ")
    assert by_lane["0"] == ["ok threads=0"]


def test_aio_driver_unavailable_is_typed_and_bounded(cluster: Cluster) -> None:
    cluster.node()
    cluster.sequences["s"] = {"start": 1, "max": 2**63 - 1, "next": 1}
    cluster.nodes[0].hook = lambda m, p: (503, {"Retry-After": "1"}, {"type": "urn:ticketd:problem:unavailable"})
    t = time.monotonic()
    out = run_driver(cluster, "1 open h s\n1 next h\n", driver=AIO_DRIVER)
    assert out[2].startswith("1 err unavailable ")
    assert time.monotonic() - t < 5


def test_aio_driver_plant_unshielded_answers_untyped(cluster: Cluster) -> None:
    """A lane's call times out (500 ms) on a refill that takes 1.2 s, and its
    next call waits for the same refill: typed Unavailable both times; with
    the plant, the first timeout cancelled the refill's future, and the
    second ends with CancelledError, untyped."""
    cluster.node()
    cluster.sequences["s"] = {"start": 1, "max": 2**63 - 1, "next": 1}
    slow_ranges(cluster, 1.2)
    cmds = "1 open h s\n1 next h\n1 next h\n"
    clean = run_driver(cluster, cmds, driver=AIO_DRIVER)
    assert all(line.startswith("1 err unavailable ") for line in clean[2:4]), clean
    planted = run_driver(cluster, cmds, plant="refill-wait-unshielded", driver=AIO_DRIVER)
    assert planted[3].startswith("1 err untyped asyncio.exceptions.CancelledError"), planted
