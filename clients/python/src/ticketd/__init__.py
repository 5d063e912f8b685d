"""ticketd: the Python client of ticketd, a Raft-replicated ID server.

    with ticketd.Client(["http://10.0.0.1:8080", "http://10.0.0.2:8080"]) as c:
        r = c.reserve("orders", 1000)          # Range(first, last), inclusive
        orders = c.sequence("orders")          # cached, refilled in the background
        order_id = orders.next()

Standard library only; CPython 3.9+. Cutting IDs is under a lock, not the GIL's atomicity
(free-threaded builds are not tested here).

Logs go to the "ticketd" logger, which has a NullHandler: the application
decides where they go (logging.basicConfig() shows them).
"""

from __future__ import annotations

import logging

from .client import MAX_RESERVE_COUNT, MAX_SNOWFLAKE_IDS, Client, Range, SequenceInfo
from .errors import (
    ClockBehind,
    Closed,
    Conflict,
    Exhausted,
    Forbidden,
    InvalidArgument,
    NotFound,
    TicketdError,
    Unauthorized,
    Unavailable,
)
from .sequence import CachedSequence, SequenceStats
from .snowflake import SnowflakeRemote, SnowflakeStats

# The package's one version: pyproject.toml reads it from here.
__version__ = "0.1.0"

# The library convention: no output unless the application configures logging.
logging.getLogger("ticketd").addHandler(logging.NullHandler())

__all__ = [
    "Client",
    "Range",
    "SequenceInfo",
    "CachedSequence",
    "SequenceStats",
    "SnowflakeRemote",
    "SnowflakeStats",
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
    "MAX_RESERVE_COUNT",
    "MAX_SNOWFLAKE_IDS",
    "__version__",
]
