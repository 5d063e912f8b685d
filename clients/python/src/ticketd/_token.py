"""The bearer token: a fixed string, or a callable asked on every request so
that a rotated token is used from the next request on (issue 46, part 5).

A fixed token that cannot be one is refused when the client is made. A
callable that raises, or answers something that cannot be a token, fails
that attempt as a node that did not answer does (a TokenFailure): it is
retried with backoff, since a vault briefly sealed or a secret file caught
mid-rewrite is usually over soon, and a call that never gets a token ends
with Unavailable whose last failure says what was wrong. The Go SDK's
WithBearerTokenFunc does the same."""

from __future__ import annotations

import inspect
from typing import Awaitable, Callable, Optional, Type, Union

from .errors import InvalidArgument, TicketdError

# What Client(token=...) accepts.
TokenSource = Union[str, Callable[[], str]]
# What AsyncClient(token=...) accepts: also a coroutine function.
AsyncTokenSource = Union[str, Callable[[], str], Callable[[], Awaitable[str]]]


class TokenFailure(TicketdError):
    """The token callable gave no token for an attempt: retried as a transport failure."""


class BadTokenAnswer(TokenFailure, InvalidArgument):
    """The token callable answered something that cannot be a bearer token."""


def check_token(value: object, what: str, error: Type[InvalidArgument] = InvalidArgument) -> str:
    """value if it can be a bearer token, else error saying what is wrong
    with it. The value itself is never repeated: it may be a secret."""
    if not isinstance(value, str):
        raise error(f"{what} must be a str, not {type(value).__name__}")
    if not value:
        raise error(f"{what} is empty")
    for i, ch in enumerate(value):
        if not 0x21 <= ord(ch) <= 0x7E:
            raise error(f"{what} has {ch!r} at {i}: a bearer token is visible ASCII only "
                        f"(no spaces, no line breaks)")
    return value


def authorization(token: Optional[TokenSource]) -> Optional[Callable[[], str]]:
    """The Authorization header's value for each request, or None for no
    token. A fixed token is checked once, here; a callable's answer on every
    call, since it is a new one each time."""
    if token is None:
        return None
    if isinstance(token, str):
        header = "Bearer " + check_token(token, "the token")
        return lambda: header
    if not callable(token):
        raise InvalidArgument(f"token must be a str or a callable returning one, got {type(token).__name__}")
    source = token

    def ask() -> str:
        try:
            value = source()
        except TicketdError:
            raise
        except Exception as e:
            # Every error a call raises is a TicketdError; the callable's own
            # stays reachable as the cause.
            raise TokenFailure(f"ticketd: the token callable {_name(source)} raised {type(e).__name__}: {e}") from e
        return "Bearer " + check_token(value, f"the token returned by {_name(source)}", BadTokenAnswer)

    return ask


def async_authorization(token: Optional[AsyncTokenSource]) -> Optional[Callable[[], Awaitable[str]]]:
    """authorization() for the AsyncClient: the callable may also be a
    coroutine function (or return an awaitable), awaited on every request,
    so that a token can come from a vault over the network without blocking
    the event loop."""
    if token is None:
        return None
    if isinstance(token, str) or not callable(token):
        fixed = authorization(token)  # checked, or refused, there
        if fixed is None:
            return None
        header = fixed()

        async def constant() -> str:
            return header

        return constant
    source = token

    async def ask() -> str:
        try:
            value = source()
            if inspect.isawaitable(value):
                value = await value
        except TicketdError:
            raise
        except Exception as e:  # not CancelledError: a cancelled call stays cancelled
            raise TokenFailure(f"ticketd: the token callable {_name(source)} raised {type(e).__name__}: {e}") from e
        return "Bearer " + check_token(value, f"the token returned by {_name(source)}", BadTokenAnswer)

    return ask


def _name(f: Callable[[], object]) -> str:
    name = getattr(f, "__qualname__", None)
    return f"{name}()" if isinstance(name, str) else repr(f)
