"""The bearer token as a callable, asked on every request so that tokens can
rotate, and what a bad answer of it gives (issue 46, part 5)."""

from __future__ import annotations

import itertools
from typing import List

import pytest

import ticketd
from standin import Cluster

from test_client import make


def authorizations(cluster: Cluster) -> List[str]:
    return [r[2].get("Authorization", "") for r in cluster.nodes[0].requests]


def test_a_callable_token_is_asked_on_every_request(cluster: Cluster) -> None:
    n = itertools.count(1)
    with make(cluster, token=lambda: f"tok-{next(n)}") as c:
        c.create_sequence("s")
        for _ in range(3):
            c.reserve("s", 1)
    assert authorizations(cluster) == ["Bearer tok-1", "Bearer tok-2", "Bearer tok-3", "Bearer tok-4"]


def test_a_rotated_token_is_used_from_the_next_request(cluster: Cluster) -> None:
    current = ["old-token"]
    cluster.node().token = "old-token"
    with make(cluster, token=lambda: current[0]) as c:
        c.create_sequence("s")
        cluster.nodes[0].token = "new-token"  # the cluster's tokens file changed
        with pytest.raises(ticketd.Unauthorized):
            c.reserve("s", 1)
        current[0] = "new-token"  # and the application's secret store followed
        assert c.reserve("s", 1) == (1, 1)


def bad_token(value: object):
    def get_token() -> object:
        return value
    return get_token


def flaky_token(*failures: object):
    """A token callable that first fails as failures say (an exception is
    raised, anything else is answered), then answers "good-token"."""
    left = list(failures)

    def from_vault() -> object:
        if left:
            f = left.pop(0)
            if isinstance(f, BaseException):
                raise f
            return f
        return "good-token"
    return from_vault


def test_a_token_callable_failing_for_a_moment_is_retried_as_the_go_sdk_does(cluster: Cluster) -> None:
    """A vault briefly sealed, a secret file caught mid-rewrite: the attempt
    fails like a node that did not answer, and the call goes on (issue 46:
    the clients follow WithBearerTokenFunc). Nothing is sent without a token."""
    cluster.node().token = "good-token"
    with make(cluster, token=flaky_token(KeyError("sealed"), "", None)) as c:
        info, created = c.create_sequence("s")
        assert created
    assert authorizations(cluster) == ["Bearer good-token"]


@pytest.mark.parametrize("value,says", [
    (None, "the token returned by bad_token.<locals>.get_token() must be a str, not NoneType"),
    (b"tok", "must be a str, not bytes"),
    (42, "must be a str, not int"),
    ("", "is empty"),
    ("tok en", "has ' ' at 3: a bearer token is visible ASCII only"),
    ("token\n", "has '\\n' at 5"),
])
def test_a_bad_token_from_the_callable_ends_the_call_unavailable_saying_why(cluster: Cluster, value: object,
                                                                            says: str) -> None:
    with make(cluster, token=bad_token(value), call_timeout=0.3) as c:
        with pytest.raises(ticketd.Unavailable) as ei:
            c.reserve("s", 1)
    assert isinstance(ei.value.last, ticketd.InvalidArgument), repr(ei.value.last)
    assert says in str(ei.value.last) and says in str(ei.value)
    assert "tok" not in str(ei.value).replace("token", ""), "the token's value is a secret: not repeated"
    assert cluster.nodes[0].requests == [], "nothing is sent without a token"


def test_a_bad_token_reaches_the_caller_of_next(cluster: Cluster) -> None:
    # The refill runs on a background thread and keeps trying: the waiter's
    # bound ends with Unavailable, whose last failure says what is wrong.
    with make(cluster, token=bad_token(""), call_timeout=0.3) as c:
        with pytest.raises(ticketd.Unavailable, match="is empty"):
            c.sequence("s").next()
        with pytest.raises(ticketd.Unavailable, match="is empty"):
            c.snowflake("ev").next()


def test_a_token_callable_that_keeps_raising_ends_the_call_unavailable_with_its_cause(cluster: Cluster) -> None:
    def from_vault() -> str:
        raise KeyError("ticketd/token")

    with make(cluster, token=from_vault, call_timeout=0.3) as c:
        with pytest.raises(ticketd.Unavailable, match="from_vault\\(\\) raised KeyError") as ei:
            c.reserve("s", 1)
    assert isinstance(ei.value.last, ticketd.TicketdError)
    assert isinstance(ei.value.last.__cause__, KeyError)


@pytest.mark.parametrize("token,says", [
    (42, "token must be a str or a callable returning one, got int"),
    ("", "the token is empty"),
    ("a b", "the token has ' ' at 1"),
])
def test_a_bad_fixed_token_is_refused_at_once(cluster: Cluster, token: object, says: str) -> None:
    with pytest.raises(ticketd.InvalidArgument, match=says):
        make(cluster, token=token)
