"""What both clients' retry loops decide alike: how long to back off, which
endpoint to ask next, and what an answer means (served, final, or worth
another endpoint). The loops themselves differ only in how they wait: a
thread blocks, a coroutine awaits."""

from __future__ import annotations

import json
import random
from typing import Any, List, Mapping, NamedTuple, Optional, Tuple

from ._transport import Answer, Endpoint
from ._wire import LEADER_HEADER, parse_retry_after, problem_of
from .errors import TicketdError, Unavailable, error_from_answer, is_retryable_status


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
