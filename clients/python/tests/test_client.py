"""The Client against stand-in nodes: typed errors, retries, the leader hint,
the call bound, env vars, HTTPS."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest

import ticketd
from standin import Cluster, problem


def dead_addr() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def make(cluster: Cluster, nodes: int = 1, **kw: object) -> ticketd.Client:
    for _ in range(nodes - len(cluster.nodes)):
        cluster.node()
    kw.setdefault("call_timeout", 2.0)
    kw.setdefault("timeout", 1.0)
    kw.setdefault("backoff", (0.01, 0.05))
    return ticketd.Client(cluster.addrs(), **kw)  # type: ignore[arg-type]


def test_reserve_create_info(cluster: Cluster) -> None:
    with make(cluster) as c:
        info, created = c.create_sequence("orders", start=100)
        assert created and info.next == 100
        _, created = c.create_sequence("orders", start=100)
        assert not created
        assert c.reserve("orders", 10) == ticketd.Range(100, 109)
        r = c.reserve("orders", 5)
        assert r == (110, 114) and r.size == 5 and 112 in r
        assert c.sequence_info("orders").next == 115


@pytest.mark.parametrize("answer,cls", [
    (problem(404, "sequence-not-found"), ticketd.NotFound),
    (problem(409, "sequence-exhausted"), ticketd.Exhausted),
    (problem(409, "conflict"), ticketd.Conflict),
    (problem(401, "unauthorized"), ticketd.Unauthorized),
    (problem(403, "forbidden"), ticketd.Forbidden),
    (problem(400, "bad-request"), ticketd.InvalidArgument),
    (problem(413, "body-too-large"), ticketd.InvalidArgument),
    (problem(404, "route-not-found"), ticketd.TicketdError),
])
def test_errors_typed_per_problem(cluster: Cluster, answer, cls) -> None:
    with make(cluster) as c:
        cluster.nodes[0].script.append(answer)
        with pytest.raises(ticketd.TicketdError) as ei:
            c.reserve("orders", 1)
        e = ei.value
        assert type(e) is cls
        assert e.status == answer[0] and e.problem["type"] == answer[2]["type"]
        assert e.endpoint == cluster.nodes[0].url
        assert len(cluster.nodes[0].requests) == 1, "a final answer is not retried"


def test_error_text_says_the_title_once(cluster: Cluster) -> None:
    # A node's detail usually starts with its title ("sequence not found:
    # \"nope\""): the message says it once, as the CLI does; a detail that
    # does not say it keeps the title in front (issue 48, part 3).
    answers = [
        (problem(404, "sequence-not-found", detail='sequence not found: "nope"'), 'answered 404 sequence not found: "nope"'),
        (problem(409, "sequence-exhausted", detail="no IDs left below max 10"), "answered 409 sequence exhausted: no IDs left below max 10"),
        (problem(404, "sequence-not-found"), "answered 404 sequence not found"),
    ]
    with make(cluster) as c:
        for answer, want in answers:
            status, headers, body = answer
            body = dict(body, title=answer[2]["type"].rsplit(":", 1)[1].replace("-", " "))
            cluster.nodes[0].script.append((status, headers, body))
            with pytest.raises(ticketd.TicketdError) as ei:
                c.reserve("nope", 1)
            msg = str(ei.value)
            assert msg.endswith(want), msg
            assert msg.count(body["title"]) == 1, msg


def test_refused_before_sending(cluster: Cluster) -> None:
    with make(cluster) as c:
        for bad in (lambda: c.reserve("bad name", 1), lambda: c.reserve("x", 0),
                    lambda: c.reserve("x", 10_000_001), lambda: c.create_sequence(".."),
                    lambda: c.sequence("x").next_n(0)):
            with pytest.raises(ticketd.InvalidArgument):
                bad()
        assert cluster.nodes[0].requests == []
    with pytest.raises(ticketd.InvalidArgument):
        ticketd.Client(["ftp://x"])
    with pytest.raises(ticketd.InvalidArgument):
        ticketd.Client(["http://x:1/path"])


def test_retries_over_endpoints_and_keeps_the_one_that_answered(cluster: Cluster) -> None:
    cluster.node()
    c = ticketd.Client([dead_addr(), cluster.nodes[0].url], timeout=1.0, call_timeout=3.0, backoff=(0.01, 0.02))
    with c:
        c.create_sequence("s")
        assert c.reserve("s", 3) == (1, 3)
        assert c._preferred == 1
        t = time.monotonic()
        c.reserve("s", 3)
        assert time.monotonic() - t < 0.5  # straight to the endpoint that answered last


def test_503_retried_and_retry_after_honoured(cluster: Cluster) -> None:
    with make(cluster, nodes=2) as c:
        c.create_sequence("s")
        for n in cluster.nodes:
            n.script.append(problem(503, "unavailable", "no leader"))  # Retry-After: 1
        t = time.monotonic()
        assert c.reserve("s", 1).first == 1
        took = time.monotonic() - t
        assert 0.95 <= took < 1.8, took  # backoff max is 50 ms: the wait is Retry-After's


def test_unavailable_after_call_timeout_with_last_failure(cluster: Cluster) -> None:
    with make(cluster, nodes=2, call_timeout=0.5) as c:
        c.create_sequence("s")
        for n in cluster.nodes:
            n.hook = lambda m, p: problem(503, "unavailable", "no leader")
        t = time.monotonic()
        with pytest.raises(ticketd.Unavailable) as ei:
            c.reserve("s", 1)
        assert time.monotonic() - t < 0.5 + 0.3
        assert isinstance(ei.value.last, ticketd.Unavailable) and ei.value.status == 503
        # a 429/5xx is retried: more than one request per node
        assert len(cluster.nodes[0].range_requests()) >= 1


def test_dropped_connection_is_retried(cluster: Cluster) -> None:
    with make(cluster) as c:
        c.create_sequence("s")
        cluster.nodes[0].script.append((0, {}, {}))
        assert c.reserve("s", 2) == (1, 2)


def test_leader_hint_followed_only_when_it_is_an_endpoint(cluster: Cluster) -> None:
    with make(cluster, nodes=3) as c:
        c.create_sequence("s")
        n0, n1, n2 = cluster.nodes
        n0.leader_hint = n2.netloc
        c._preferred = 0
        c.reserve("s", 1)  # answered by n0, which names n2
        assert c._preferred == 2
        c.reserve("s", 1)
        assert len(n2.range_requests()) == 1
        n2.leader_hint = "10.9.9.9:8080"  # not an endpoint: ignored
        c.reserve("s", 1)
        assert c._preferred == 2


def test_env_vars(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.node()
    cluster.node()
    monkeypatch.setenv("TICKETD_ADDR", ",".join(cluster.addrs()))
    monkeypatch.setenv("TICKETD_TOKEN", "s3cret")
    with ticketd.Client(call_timeout=2.0) as c:
        assert c.endpoints == cluster.addrs()
        c.create_sequence("s")
        c.reserve("s", 1)
    auth = [r[2].get("Authorization") for n in cluster.nodes for r in n.requests]
    assert auth and all(a == "Bearer s3cret" for a in auth)
    monkeypatch.delenv("TICKETD_ADDR")
    with pytest.raises(ticketd.InvalidArgument):
        ticketd.Client()


def test_calls_after_close_raise_closed(cluster: Cluster) -> None:
    c = make(cluster)
    c.create_sequence("s")
    seq = c.sequence("s")
    seq.next()
    c.close()
    c.close()  # idempotent
    with pytest.raises(ticketd.Closed):
        c.reserve("s", 1)
    with pytest.raises(ticketd.Closed):
        seq.next()
    with pytest.raises(ticketd.Closed):
        c.sequence("s")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
def test_https_with_a_ca_file(cluster: Cluster, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    key, crt = tmp_path / "key.pem", tmp_path / "crt.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(crt), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(str(crt), str(key))
    node = cluster.node(tls=sctx)
    assert node.url.startswith("https://")
    with ticketd.Client([node.url], ca_file=str(crt), call_timeout=2.0) as c:
        c.create_sequence("tls")
        assert c.reserve("tls", 2) == (1, 2)
    monkeypatch.setenv("TICKETD_CA", str(crt))
    with ticketd.Client([node.url], call_timeout=2.0) as c:
        assert c.reserve("tls", 1) == (3, 3)
    # Without the CA the certificate is refused: a transport failure, so Unavailable.
    # One attempt with the whole call's 3 s, time for a handshake on a loaded
    # machine (with 0.5 s and quick retries, CI once met "The handshake
    # operation timed out" instead of the refusal): the backoff outlasts the
    # call (its jitter pinned to the top), so no later attempt starts with a
    # sliver of time left.
    monkeypatch.delenv("TICKETD_CA")
    monkeypatch.setattr(ticketd._retry.random, "uniform", lambda lo, hi: hi)
    with ticketd.Client([node.url], call_timeout=3.0, backoff=(5.0, 5.0)) as c:
        with pytest.raises(ticketd.Unavailable) as ei:
            c.reserve("tls", 1)
        assert isinstance(ei.value.last, ssl.SSLError)
