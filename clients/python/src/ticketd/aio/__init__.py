"""ticketd.aio: the client for asyncio programs.

    async with ticketd.aio.AsyncClient(["http://10.0.0.1:8080"]) as c:
        r = await c.reserve("orders", 1000)    # Range(first, last), inclusive
        orders = c.sequence("orders")          # cached, refilled by a background task
        order_id = await orders.next()

The threaded Client's guarantees and arguments, on the standard library's
asyncio alone: waiting for the network or for an empty cache never blocks
the event loop. Errors are the package's (ticketd.Unavailable, ...), and the
token may be a coroutine function, awaited for every request.
"""

from __future__ import annotations

from .client import AsyncClient
from .sequence import AsyncSequence
from .snowflake import AsyncSnowflake

__all__ = ["AsyncClient", "AsyncSequence", "AsyncSnowflake"]
