"""The API's Python idioms (issue 46, part 7): errors that are also the
built-in exceptions that say the same, no public name shadowing typing's,
stats of one kind, keyword arguments spelled out and documented."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest

import ticketd
from standin import Cluster

from test_client import dead_addr, make


def test_invalid_argument_is_a_value_error(cluster: Cluster) -> None:
    with make(cluster) as c:
        with pytest.raises(ValueError):
            c.reserve("no spaces allowed", 1)
        cluster.nodes[0].script.append((400, {}, {"type": "urn:ticketd:problem:bad-request", "title": "bad"}))
        with pytest.raises(ValueError) as ei:
            c.reserve("s", 1)
        assert isinstance(ei.value, ticketd.InvalidArgument) and ei.value.status == 400


def test_unavailable_is_a_timeout_error() -> None:
    with ticketd.Client([dead_addr()], timeout=0.1, call_timeout=0.3, backoff=(0.01, 0.02)) as c:
        with pytest.raises(TimeoutError) as ei:
            c.reserve("s", 1)
    e = ei.value
    assert isinstance(e, ticketd.Unavailable) and isinstance(e.last, ConnectionRefusedError)
    assert str(e).startswith("ticketd: no endpoint could serve"), "one argument: OSError's own text is not used"
    assert issubclass(ticketd.ClockBehind, TimeoutError)


def test_closed_is_a_runtime_error(cluster: Cluster) -> None:
    c = make(cluster)
    seq = c.sequence("s")
    c.close()
    with pytest.raises(RuntimeError):
        c.reserve("s", 1)
    with pytest.raises(RuntimeError):
        seq.next()


@pytest.mark.parametrize("cls,builtin", [
    (ticketd.InvalidArgument, ValueError),
    (ticketd.Closed, RuntimeError),
    (ticketd.Unavailable, TimeoutError),
    (ticketd.ClockBehind, TimeoutError),
])
def test_each_is_still_a_ticketd_error(cls: type, builtin: type) -> None:
    assert issubclass(cls, ticketd.TicketdError) and issubclass(cls, builtin)
    with pytest.raises(ticketd.TicketdError):
        raise cls("x")


def test_no_public_name_shadows_typings() -> None:
    # `from ticketd import *` beside `from typing import Sequence` used to
    # rebind Sequence to the client's class.
    ns: dict = {}
    exec("from typing import Sequence\nfrom ticketd import *", ns)
    assert ns["Sequence"] is typing.Sequence
    assert not set(ticketd.__all__) & set(typing.__all__)
    assert "CachedSequence" in ticketd.__all__ and not hasattr(ticketd, "Sequence")


@pytest.mark.parametrize("cls", [ticketd.SequenceStats, ticketd.SnowflakeStats])
def test_stats_are_frozen_dataclasses_with_typed_fields(cls: type) -> None:
    assert dataclasses.is_dataclass(cls)
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    assert fields and all(hints[f.name] in (int, bool, float) for f in fields), hints
    st = cls(**{f.name: hints[f.name]() for f in fields})
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.cached = 1  # type: ignore[misc]
    assert st == cls(**{f.name: hints[f.name]() for f in fields})


def test_stats_of_live_handles(cluster: Cluster) -> None:
    with make(cluster) as c:
        c.create_sequence("s")
        cluster.namespaces["ev"] = 1
        seq, sf = c.sequence("s"), c.snowflake("ev")
        seq.next()
        sf.next()
        assert isinstance(seq.stats(), ticketd.SequenceStats) and seq.stats().refills >= 1
        assert isinstance(sf.stats(), ticketd.SnowflakeStats) and sf.stats().fetches >= 1


PUBLIC_CALLABLES = [
    (ticketd.Client.__init__, 1),  # (function, positional parameters besides self)
    (ticketd.Client.sequence, 1),
    (ticketd.Client.snowflake, 1),
    (ticketd.Client.create_sequence, 1),
    (ticketd.CachedSequence.__init__, 2),
    (ticketd.SnowflakeRemote.__init__, 2),
]


@pytest.mark.parametrize("f,positional", PUBLIC_CALLABLES, ids=lambda x: getattr(x, "__qualname__", str(x)))
def test_keyword_arguments_are_spelled_out_and_documented(f: typing.Callable[..., object], positional: int) -> None:
    params = list(inspect.signature(f).parameters.values())[1:]  # self
    assert all(p.kind is not p.VAR_KEYWORD and p.kind is not p.VAR_POSITIONAL for p in params), params
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params[:positional])
    keywords = params[positional:]
    assert keywords and all(p.kind is p.KEYWORD_ONLY for p in keywords), params
    if f.__name__ == "__init__" and f.__doc__ and "See Client." in f.__doc__:
        f = getattr(ticketd.Client, f.__doc__.split("See Client.")[1].split("(")[0])
    doc = inspect.getdoc(f) or ""
    undocumented = [p.name for p in keywords if p.name not in doc]
    assert not undocumented, f"{f.__qualname__}: no word on {undocumented} in its docstring"
