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


@pytest.mark.parametrize("value,says", [
    (None, "the token returned by bad_token.<locals>.get_token() must be a str, not NoneType"),
    (b"tok", "must be a str, not bytes"),
    (42, "must be a str, not int"),
    ("", "is empty"),
    ("tok en", "has ' ' at 3: a bearer token is visible ASCII only"),
    ("token\n", "has '\\n' at 5"),
])
def test_a_bad_token_from_the_callable_is_a_clear_invalid_argument(cluster: Cluster, value: object, says: str) -> None:
    with make(cluster, token=bad_token(value)) as c:
        with pytest.raises(ticketd.InvalidArgument) as ei:
            c.reserve("s", 1)
    assert says in str(ei.value)
    assert "tok" not in str(ei.value).replace("token", ""), "the token's value is a secret: not repeated"
    assert cluster.nodes[0].requests == [], "nothing is sent without a token"


def test_a_bad_token_reaches_the_caller_of_next(cluster: Cluster) -> None:
    # The refill runs on a background thread: its failure is the waiter's.
    with make(cluster, token=bad_token("")) as c:
        with pytest.raises(ticketd.InvalidArgument, match="is empty"):
            c.sequence("s").next()
        with pytest.raises(ticketd.InvalidArgument, match="is empty"):
            c.snowflake("ev").next()


def test_a_token_callable_that_raises_is_a_ticketd_error_with_its_cause(cluster: Cluster) -> None:
    def from_vault() -> str:
        raise KeyError("ticketd/token")

    with make(cluster, token=from_vault) as c:
        with pytest.raises(ticketd.TicketdError, match="from_vault\\(\\) raised KeyError") as ei:
            c.reserve("s", 1)
    assert isinstance(ei.value.__cause__, KeyError)


@pytest.mark.parametrize("token,says", [
    (42, "token must be a str or a callable returning one, got int"),
    ("", "the token is empty"),
    ("a b", "the token has ' ' at 1"),
])
def test_a_bad_fixed_token_is_refused_at_once(cluster: Cluster, token: object, says: str) -> None:
    with pytest.raises(ticketd.InvalidArgument, match=says):
        make(cluster, token=token)
