"""run_plan for asyncio: carries out a plan of ticketd._retry (a call's, a
Snowflake fetch's) by awaiting, where the threaded client blocks."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Tuple, Type

from .._retry import Attempt, Outcome, Pause, Plan, R
from .._token import TokenFailure
from .._transport import Answer

# What ends one attempt without an answer here, to be retried: the socket's
# errors (OSError, _http.ProtocolError), an answer cut short, the attempt's
# timeout (asyncio.TimeoutError, an OSError only since Python 3.11), and no
# token to send (see ticketd._token).
TRANSPORT_ERRORS: Tuple[Type[BaseException], ...] = (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError,
                                                     TokenFailure)


async def run_plan(plan: Plan[R], attempt: Callable[[Attempt], Awaitable[Answer]],
                   pause: Callable[[float], Awaitable[bool]], transport_errors: Tuple[Type[BaseException], ...]) -> R:
    """ticketd._retry.run_plan, awaiting each step."""
    got: Outcome = None
    while True:
        try:
            step = plan.send(got)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if isinstance(step, Pause):
            got = await pause(step.seconds)
            continue
        try:
            got = await attempt(step)
        except transport_errors as e:
            got = e
