"""What the client and its generators share: the wire's limits, the Range and
SequenceInfo types, name checks and the parsing of answers. The modules
import it, never each other in a circle: client imports sequence and
snowflake, and all three import this (issue 48, part 3). The handles see
the client that made them through _host.HandleHost, a Protocol, and the
client registers them: nothing in sequence or snowflake names client."""

from __future__ import annotations

import email.utils
import http.client
import json
import time
from typing import Any, Dict, NamedTuple, Optional, Tuple

from .errors import InvalidArgument, TicketdError

MAX_RESERVE_COUNT = 10_000_000
MAX_SNOWFLAKE_IDS = 10_000
MAX_NAME_LEN = 64
LEADER_HEADER = "x-ticketd-leader"
# A Retry-After holds a call back this long at most, so that a misconfigured
# proxy cannot stall a client for hours.
MAX_RETRY_AFTER = 30.0
MAX_ID = 2**63 - 1  # IDs are positive signed 64-bit integers

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class Range(NamedTuple):
    """An inclusive range of IDs, first..last, each handed out once."""

    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    def __contains__(self, id_: object) -> bool:
        return isinstance(id_, int) and self.first <= id_ <= self.last

    def ids(self) -> range:
        return range(self.first, self.last + 1)


class SequenceInfo(NamedTuple):
    """A sequence as GET /v1/sequences/{name} describes it. next is None once exhausted."""

    name: str
    next: Optional[int]
    start: int
    max: int
    remaining: int


def check_name(name: object, what: str = "sequence") -> str:
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"{what} name must be a non-empty string of [A-Za-z0-9._-], got {name!r}")
    if len(name) > MAX_NAME_LEN:
        raise InvalidArgument(f"{what} name is {len(name)} characters long; at most {MAX_NAME_LEN} are allowed")
    for i, ch in enumerate(name):
        if ch not in _NAME_CHARS:
            raise InvalidArgument(f"{what} name has {ch!r} at {i}; only [A-Za-z0-9._-] are allowed")
    return name


def path_segment(name: str) -> str:
    # "." and ".." would be resolved away by URL normalisation.
    return {".": "%2E", "..": "%2E%2E"}.get(name, name)


def _check_count(count: object, hi: int, what: str) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= hi:
        raise InvalidArgument(f"{what} must be an int between 1 and {hi}, got {count!r}")
    return count


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> float:
    """Seconds a Retry-After header asks for (delay-seconds or an HTTP date), capped; 0 if none."""
    if not value:
        return 0.0
    v = value.strip()
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses;
    # the cap before float(): 400 nines would overflow it.
    if v.isascii() and v.isdigit():
        return float(min(int(v), int(MAX_RETRY_AFTER)))
    try:
        when = email.utils.parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return 0.0
    d = when - (time.time() if now is None else now)
    return min(d, MAX_RETRY_AFTER) if d > 0 else 0.0


def range_of_answer(doc: Any, sequence: str, count: int) -> Range:
    """The range a reservation's answer holds, checked against what was asked."""
    try:
        first, last, seq = doc["first"], doc["last"], doc["sequence"]
        # type() is int: JSON's true is a Python int too. IDs fit a signed
        # 64-bit integer (Go's decoder refuses more; json.loads does not).
        ok = (seq == sequence and type(first) is int and type(last) is int
              and 1 <= first <= last <= MAX_ID and last - first + 1 == count)
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise TicketdError(f"ticketd: the server answered {doc!r} for {count} IDs of {sequence!r}")
    return Range(first, last)


def problem_of(status: int, data: bytes) -> Dict[str, Any]:
    """The problem document of a non-2xx answer; any other body becomes its detail (cut to 200 characters)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: a body nested past the parser's depth
        doc = None
    if isinstance(doc, dict) and any(isinstance(doc.get(k), str) for k in ("type", "title", "detail")):
        return doc
    text = data.decode("utf-8", "replace").strip()
    if len(text) > 200:
        text = text[:200] + "..."
    return {"title": http.client.responses.get(status, f"HTTP {status}"), "status": status, "detail": text}


def create_request(name: str, start: Optional[int], max: Optional[int]) -> Tuple[str, bytes]:
    """The path and body of a PUT that creates sequence name, checked."""
    check_name(name)
    if name in (".", ".."):
        raise InvalidArgument(f"name {name!r} is a dot segment, which URLs and proxies rewrite; choose another")
    req: Dict[str, int] = {}
    for k, v in (("start", start), ("max", max)):
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidArgument(f"{k} must be a positive int, got {v!r}")
            req[k] = v
    return f"/v1/sequences/{path_segment(name)}", json.dumps(req).encode()


def sequence_info_of(doc: Any) -> SequenceInfo:
    """The SequenceInfo a sequence's description holds."""
    try:
        return SequenceInfo(doc["name"], doc.get("next"), doc["start"], doc["max"], doc["remaining"])
    except (KeyError, TypeError, AttributeError):
        raise TicketdError(f"ticketd: a sequence's description was expected, got {doc!r}") from None


def reserve_request(sequence: str, count: int) -> Tuple[str, bytes]:
    """The path and body of a POST that reserves count IDs of sequence (checked by the caller)."""
    return f"/v1/sequences/{path_segment(sequence)}/ranges", json.dumps({"count": count}).encode()
