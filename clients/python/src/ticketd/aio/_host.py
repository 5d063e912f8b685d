"""What a handle (AsyncSequence, AsyncSnowflake) needs of the AsyncClient
that made it, as a Protocol: the handles' modules import this, never
client.py, so the imports run one way (as ticketd._host does for the
threaded client)."""

from __future__ import annotations

from typing import Any, Callable, Coroutine, List, Optional, Protocol, Tuple

from .._transport import Answer, Endpoint
from .._wire import Range


class AsyncHandleHost(Protocol):
    """The AsyncClient as its handles see it."""

    _endpoints: List[Endpoint]
    _timeout: float
    _backoff: Tuple[float, float]

    @property
    def closed(self) -> bool: ...

    def _deadline(self) -> Optional[float]: ...

    def _spawn(self, name: str, work: Callable[[], Coroutine[Any, Any, None]]) -> bool: ...

    async def _reserve(self, sequence: str, count: int, deadline: Optional[float],
                       on_failure: Optional[Callable[[BaseException], None]]) -> Range: ...

    async def _attempt(self, idx: int, method: str, path: str, body: Optional[bytes], timeout: float) -> Answer: ...

    async def _closed_within(self, seconds: float) -> bool: ...
