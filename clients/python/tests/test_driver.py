"""The conformance driver against stand-in nodes: the protocol's answers, by hand."""

from __future__ import annotations

import os
import subprocess
import time

from standin import Cluster

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance", "driver")


def run_driver(cluster: Cluster, commands: str, plant: str = "", driver: str = DRIVER) -> list:
    """Sends the commands, waits for their answers, then "0 close" alone (as the harness does)."""
    env = dict(os.environ, TICKETD_ADDR=",".join(cluster.addrs()), TICKETD_CONFORMANCE_CALL_TIMEOUT_MS="500",
               TICKETD_CONFORMANCE_ATTEMPT_TIMEOUT_MS="300", TICKETD_CONFORMANCE_PLANT=plant)
    p = subprocess.Popen([driver], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
    assert p.stdin is not None and p.stdout is not None
    out = [p.stdout.readline().rstrip("\n")]
    p.stdin.write(commands)
    p.stdin.flush()
    for _ in commands.splitlines():
        out.append(p.stdout.readline().rstrip("\n"))
    p.stdin.write("0 close\n")
    p.stdin.close()
    out.append(p.stdout.readline().rstrip("\n"))
    assert p.wait(timeout=10) == 0
    return out


def test_driver_speaks_the_protocol(cluster: Cluster) -> None:
    cluster.node()
    cluster.node()
    cluster.sequences["s"] = {"start": 1, "max": 2**63 - 1, "next": 1}
    cluster.namespaces["ns"] = 7000
    out = run_driver(cluster, "1 open h s\n1 next h\n1 nextn h 3\n2 reserve s 5\n3 snowflake f ns\n"
                              "3 snext f\n3 snextn f 2\n4 reserve nope 1\n5 next missing\n6 reserve s 0\n")
    assert out[0].startswith("ready python ")
    by_lane: dict = {}
    for line in out[1:]:
        lane, rest = line.split(" ", 1)
        by_lane.setdefault(lane, []).append(rest)
    assert by_lane["1"][0] == "ok"
    assert by_lane["1"][1].startswith("ok ") and by_lane["1"][2].count("-") == 1
    assert by_lane["2"][0].startswith("ok ")
    assert by_lane["3"][0] == "ok" and len(by_lane["3"][2].split()) == 3
    assert by_lane["4"] == [by_lane["4"][0]] and by_lane["4"][0].startswith("err not_found ")
    assert by_lane["5"][0].startswith("err untyped builtins.LookupError")
    assert by_lane["6"][0].startswith("err invalid_argument ")
    assert by_lane["0"] == ["ok threads=0"]


def test_driver_unavailable_is_typed_and_bounded(cluster: Cluster) -> None:
    cluster.node()
    cluster.sequences["s"] = {"start": 1, "max": 2**63 - 1, "next": 1}
    cluster.nodes[0].hook = lambda m, p: (503, {"Retry-After": "1"}, {"type": "urn:ticketd:problem:unavailable"})
    t = time.monotonic()
    out = run_driver(cluster, "1 open h s\n1 next h\n")
    assert out[2].startswith("1 err unavailable ")
    assert out[3] == "0 ok threads=0"
    assert time.monotonic() - t < 5


def fork_answers(cluster: Cluster, plant: str) -> tuple:
    """The parent's IDs before and after a fork, and the forked child's (PROTOCOL.md's fork)."""
    cluster.node()
    cluster.sequences["s"] = {"start": 1, "max": 2**63 - 1, "next": 1}
    cluster.namespaces["ns"] = 7000
    out = run_driver(cluster, "1 open h s\n1 next h\n1 fork h 5\n1 nextn h 5\n"
                              "2 snowflake f ns\n2 snext f\n2 fork f 5\n2 snextn f 5\n", plant)
    by_lane: dict = {}
    for line in out[1:-1]:
        lane, rest = line.split(" ", 1)
        by_lane.setdefault(lane, []).append(rest)
    seq, flake = by_lane["1"], by_lane["2"]
    assert all(a.startswith("ok") for a in seq + flake), (seq, flake)
    first, last = (int(x) for x in seq[3].split()[1].split("-"))
    parent = [int(seq[1].split()[1])] + list(range(first, last + 1))
    child = [int(x) for x in seq[2].split()[1:]]
    parent_f = [int(flake[1].split()[1])] + [int(x) for x in flake[3].split()[1:]]
    child_f = [int(x) for x in flake[2].split()[1:]]
    return parent, child, parent_f, child_f


def test_driver_fork_childs_ids_are_its_own(cluster: Cluster) -> None:
    parent, child, parent_f, child_f = fork_answers(cluster, "")
    assert len(child) == len(child_f) == 5
    assert not set(parent) & set(child) and not set(parent_f) & set(child_f)


def test_driver_fork_planted_caches_kept_hand_out_the_parents_ids(cluster: Cluster) -> None:
    parent, child, parent_f, child_f = fork_answers(cluster, "caches-kept-across-fork")
    assert set(parent) & set(child) and set(parent_f) & set(child_f)
