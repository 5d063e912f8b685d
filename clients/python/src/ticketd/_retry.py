"""The retry loop of a call, written once for both clients: which endpoint to
ask, for how long, what an answer means (served, final, or worth another
endpoint), and how long to back off between rounds.

It is a plan, not a loop that does I/O (the "sans-I/O" shape of h11 and
hyper-h2): a generator that yields the next step, an Attempt of one endpoint
or a Pause, and is sent what came of it. The threaded Client carries the
steps out by blocking, the AsyncClient by awaiting (run_plan here and in
ticketd.aio); the decisions are the same lines for both.
"""

from __future__ import annotations

import http.client
import json
import random
import time
from typing import Any, Callable, Generator, List, Mapping, NamedTuple, Optional, Protocol, Tuple, Type, TypeVar, Union

from ._token import TokenFailure
from ._transport import Answer, Endpoint
from ._wire import LEADER_HEADER, parse_retry_after, problem_of
from .errors import Closed, TicketdError, Unavailable, error_from_answer, is_retryable_status


# What ends one attempt of the threaded client without an answer, to be
# retried: a transport failure, or no token to send (see _token).
ATTEMPT_FAILURES: Tuple[Type[BaseException], ...] = (OSError, http.client.HTTPException, TokenFailure)


class Attempt(NamedTuple):
    """Step: one exchange with endpoint idx, within timeout seconds. The plan
    is sent the Answer, or the transport failure (an exception) it ended with."""

    idx: int
    timeout: float


class Pause(NamedTuple):
    """Step: wait seconds, or less if the client closes meanwhile. The plan is
    sent whether it closed."""

    seconds: float


Step = Union[Attempt, Pause]
Outcome = Union[Answer, BaseException, bool, None]
R = TypeVar("R")
Plan = Generator[Step, Outcome, R]


class Caller(Protocol):
    """What a call's plan reads of the client."""

    _endpoints: List[Endpoint]
    _timeout: float
    _backoff: Tuple[float, float]
    _preferred: int

    @property
    def closed(self) -> bool: ...


def backoff_wait(backoff: Tuple[float, float], k: int) -> float:
    """Full jitter: the k-th wait (k >= 1) is uniform in [0, min(max, min * 2^(k-1))]."""
    lo, hi = backoff
    return random.uniform(0.0, min(hi, lo * (2 ** min(k - 1, 60))))


def leader_index(endpoints: List[Endpoint], idx: int, headers: Mapping[str, str]) -> int:
    """The endpoint an answer names as the leader, or idx: a leader that is
    none of the endpoints is ignored."""
    leader = headers.get(LEADER_HEADER)
    if leader:
        for i, ep in enumerate(endpoints):
            if ep.netloc == leader:
                return i
    return idx


class Verdict(NamedTuple):
    """What one answer means for the call: served (error None), final (error
    and final), or not now (error, not final: the next endpoint is asked,
    after retry_after seconds at least when a round ends)."""

    status: int
    doc: Any
    error: Optional[TicketdError]
    final: bool
    retry_after: float


def judge(method: str, path: str, ep: Endpoint, ans: Answer) -> Verdict:
    if 200 <= ans.status < 300:
        try:
            doc = json.loads(ans.body) if ans.body.strip() else None
        except (ValueError, RecursionError):
            doc = None
        if doc is None and method != "DELETE":
            err = TicketdError(f"ticketd: {ep.base} answered {method} {path} with {ans.status} "
                               f"and a body that is not JSON", status=ans.status, endpoint=ep.base)
            return Verdict(ans.status, None, err, True, 0.0)
        return Verdict(ans.status, doc, None, True, 0.0)
    err = error_from_answer(ans.status, problem_of(ans.status, ans.body), ep.base)
    if not is_retryable_status(ans.status):
        return Verdict(ans.status, None, err, True, 0.0)
    return Verdict(ans.status, None, err, False, parse_retry_after(ans.headers.get("retry-after")))


def out_of_time(method: str, path: str, last: Optional[BaseException]) -> Unavailable:
    return Unavailable(f"ticketd: no endpoint could serve {method} {path} within the call timeout"
                       + (f"; last failure: {last}" if last else ""), last=last)


def call_plan(c: Caller, method: str, path: str, deadline: Optional[float],
              on_failure: Optional[Callable[[BaseException], None]]) -> Plan[Tuple[int, Any]]:
    """One call: sends until an endpoint serves, a final answer comes, the
    deadline passes (Unavailable) or the client closes (Closed). Each round
    tries every endpoint once from the one that answered last; between
    rounds it backs off, at least as long as any Retry-After asked."""
    last: Optional[BaseException] = None
    n = len(c._endpoints)
    k = 0
    while True:
        retry_after = 0.0
        start = c._preferred
        for j in range(n):
            if c.closed:
                raise Closed("ticketd: the client is closed")
            timeout = c._timeout
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout <= 0:
                    break
            idx = (start + j) % n
            got = yield Attempt(idx, timeout)
            if not isinstance(got, Answer):
                assert isinstance(got, BaseException)
                if c.closed:
                    raise Closed("ticketd: the client is closed") from None
                last = got
                if on_failure is not None:
                    on_failure(got)
                continue
            v = judge(method, path, c._endpoints[idx], got)
            if v.final:
                c._preferred = leader_index(c._endpoints, idx, got.headers)
                if v.error is not None:
                    raise v.error
                return v.status, v.doc
            last = err = v.error
            assert err is not None
            retry_after = max(retry_after, v.retry_after)
            if on_failure is not None:
                on_failure(err)
        if deadline is not None and time.monotonic() >= deadline:
            raise out_of_time(method, path, last)
        k += 1
        wait = max(backoff_wait(c._backoff, k), retry_after)
        if deadline is not None:
            wait = min(wait, max(deadline - time.monotonic(), 0.0))
        if (yield Pause(wait)):
            raise Closed("ticketd: the client is closed")


def run_plan(plan: Plan[R], attempt: Callable[[Attempt], Answer], pause: Callable[[float], bool],
             transport_errors: Tuple[Type[BaseException], ...]) -> R:
    """Carries a plan out by blocking: attempt(step) for an Attempt (its
    transport_errors sent to the plan as what came of it), pause(seconds)
    for a Pause. What the plan returns, or raises."""
    got: Outcome = None
    while True:
        try:
            step = plan.send(got)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if isinstance(step, Pause):
            got = pause(step.seconds)
            continue
        try:
            got = attempt(step)
        except transport_errors as e:
            got = e
