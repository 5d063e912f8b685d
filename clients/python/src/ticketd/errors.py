"""The errors of the ticketd client: one small hierarchy rooted at TicketdError.

Every error a call raises is a TicketdError. When a server answered, the error
carries the HTTP status, the RFC 9457 problem document (a dict) and the
endpoint that answered; callers switch on the class, never on a status code.

Three are also the built-in exception that says the same thing, so that code
written against the built-ins catches them (issue 46, part 7), while
`except TicketdError` still catches every one:

- InvalidArgument is a ValueError: a value the library or the server refuses.
- Closed is a RuntimeError: the call is fine, the object's state forbids it
  (as concurrent.futures' submit() after shutdown()).
- Unavailable is a TimeoutError: it is raised only when a call's time bound
  (call_timeout, or the wait of next() for an empty cache) passed without an
  answer. Not a ConnectionError: the failures behind it may be 503s from nodes
  that were reached (no leader), and the transport's own errors are only its
  .last. (TimeoutError is an OSError: `except OSError` catches it too, as it
  catches socket.timeout.) ClockBehind, an Unavailable, follows.

The others have no built-in twin worth the confusion: NotFound is no KeyError
(a missing sequence is no missing mapping key), Unauthorized and Forbidden no
PermissionError (which is about files: EACCES, EPERM).
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping, Optional

__all__ = [
    "TicketdError",
    "NotFound",
    "Exhausted",
    "Unauthorized",
    "Forbidden",
    "Unavailable",
    "ClockBehind",
    "InvalidArgument",
    "Conflict",
    "Closed",
    "error_from_answer",
    "is_retryable_status",
]

PROBLEM_PREFIX = "urn:ticketd:problem:"


class TicketdError(Exception):
    """Root of the client's errors.

    status is the HTTP status of the answer (None when nothing was answered),
    problem the problem document as a dict (empty when there was none), and
    endpoint the base URL of the node that answered (None when none did).
    A TicketdError that is none of the subclasses is an answer the client has
    no kind for (another 4xx, a route an older node does not know).
    """

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        problem: Optional[Mapping[str, Any]] = None,
        endpoint: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.problem: Dict[str, Any] = dict(problem or {})
        self.endpoint = endpoint

    @property
    def problem_type(self) -> str:
        """The problem's stable type, such as urn:ticketd:problem:sequence-not-found ('' if none)."""
        t = self.problem.get("type")
        return t if isinstance(t, str) else ""


class NotFound(TicketdError):
    """The sequence, namespace or member does not exist (404). Not retried."""


class Exhausted(TicketdError):
    """The sequence passed its maximum, or a namespace's timestamp bits ran out (409). Final."""


class Unauthorized(TicketdError):
    """401: no bearer token, or one the cluster does not know. Not retried."""


class Forbidden(TicketdError):
    """403: the token lacks the scope the call needs. Not retried."""


class Unavailable(TicketdError, TimeoutError):
    """Nothing could be had within the call's bound: no leader, every endpoint
    down, 503s, timeouts. last is the last failure seen (also __cause__).
    Also a TimeoutError (see the module's doc).

    For a reservation the outcome is unknown: the cluster may have reserved a
    range whose answer was lost. Retrying is safe: ticketd may waste a range
    (a gap), never hand an ID out twice.
    """

    def __init__(self, message: str, *, last: Optional[BaseException] = None, **kw: Any) -> None:
        if isinstance(last, TicketdError):
            kw.setdefault("status", last.status)
            kw.setdefault("problem", last.problem)
            kw.setdefault("endpoint", last.endpoint)
        super().__init__(message, **kw)
        self.last = last
        if last is not None:
            self.__cause__ = last


class ClockBehind(Unavailable):
    """A node's clock is behind the floor of its Snowflake IDs (503
    clock-behind); behind_ms says by how much. The node is skipped for its
    Retry-After."""

    def __init__(self, message: str, *, behind_ms: int = 0, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.behind_ms = behind_ms


class InvalidArgument(TicketdError, ValueError):
    """Bad input: refused by the library before sending, or by the server (400,
    413). Also a ValueError."""


class Conflict(TicketdError):
    """409 other than exhaustion: a sequence with other settings, a member that conflicts."""


class Closed(TicketdError, RuntimeError):
    """The client (or the handle) was closed. Also a RuntimeError."""


# Statuses that mean "not now": the call goes on to the next endpoint.
_RETRYABLE = frozenset((429, 500, 502, 503, 504))


def is_retryable_status(status: int) -> bool:
    return status in _RETRYABLE


def _problem_name(problem: Mapping[str, Any]) -> str:
    t = problem.get("type")
    if isinstance(t, str) and t.startswith(PROBLEM_PREFIX):
        return t[len(PROBLEM_PREFIX):]
    return ""


def error_from_answer(status: int, problem: Mapping[str, Any], endpoint: str) -> TicketdError:
    """The typed error of a non-2xx answer, from its problem type first, then its status."""
    name = _problem_name(problem)
    title = problem.get("title") or f"HTTP {status}"
    detail = problem.get("detail")
    # A node's detail usually starts with its title ("sequence not found:
    # \"x\""): say it once, as the CLI does, and the title alone when the
    # detail does not say it.
    if not detail:
        text = str(title)
    elif str(title).lower() in str(detail).lower():
        text = str(detail)
    else:
        text = f"{title}: {detail}"
    msg = f"ticketd: {endpoint} answered {status} {text}"
    kw: Dict[str, Any] = {"status": status, "problem": problem, "endpoint": endpoint}
    if name in ("sequence-not-found", "member-not-found", "namespace-not-found"):
        return NotFound(msg, **kw)
    if name in ("sequence-exhausted", "timestamp-exhausted"):
        return Exhausted(msg, **kw)
    if name == "clock-behind":
        behind = problem.get("clock_behind_ms")
        return ClockBehind(msg, behind_ms=behind if isinstance(behind, int) else 0, **kw)
    if status == 401:
        return Unauthorized(msg, **kw)
    if status == 403:
        return Forbidden(msg, **kw)
    if status in (400, 413):
        return InvalidArgument(msg, **kw)
    if status == 409:
        return Conflict(msg, **kw)
    if status in _RETRYABLE:
        return Unavailable(msg, **kw)
    return TicketdError(msg, **kw)


def fresh(err: TicketdError) -> TicketdError:
    """A new error equal to err, to raise where err itself is kept and raised
    again and again (a CachedSequence's final error, one refill's error for each
    of its waiters): raising one object again adds every caller's frames to
    its traceback, which then grows without bound and keeps them alive, and
    threads raising it at once share one traceback."""
    new = copy.copy(err)  # the class, message and attributes; no traceback
    new.__cause__ = err.__cause__
    return new
