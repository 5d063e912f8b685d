"""What a handle (CachedSequence, SnowflakeRemote) needs of the Client that
made it, as a Protocol: the handles' modules import this, never client.py,
and client.py imports them, so the imports run one way (issue 48). The
Client meets it structurally; mypy checks that where the client passes
itself to a handle."""

from __future__ import annotations

from typing import Callable, List, Optional, Protocol, Tuple

from ._transport import Answer, Endpoint
from ._wire import Range


class Starter(Protocol):
    """The client's background threads: start returns False once the client is closed."""

    def start(self, name: str, target: Callable[[], None]) -> bool: ...

    def settle(self) -> None: ...


class HandleHost(Protocol):
    """The Client as its handles see it."""

    _endpoints: List[Endpoint]
    _timeout: float
    _backoff: Tuple[float, float]

    @property
    def _bg(self) -> Starter: ...  # read-only here, so the Client's own class for it fits

    @property
    def closed(self) -> bool: ...

    def _deadline(self) -> Optional[float]: ...

    def _reserve(self, sequence: str, count: int, deadline: Optional[float],
                 on_failure: Optional[Callable[[BaseException], None]]) -> Range: ...

    def _attempt(self, idx: int, method: str, path: str, body: Optional[bytes], timeout: float) -> Answer: ...
