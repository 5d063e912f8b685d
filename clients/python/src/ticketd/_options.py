"""The settings a client is made with, checked once, for both clients:
ticketd.Client (threads) and ticketd.aio.AsyncClient (asyncio) take the same
arguments, read the same environment variables and refuse the same mistakes
with the same words."""

from __future__ import annotations

import os
import ssl
from typing import Any, List, NamedTuple, Optional, Sequence as Seq, Tuple, Union

from ._transport import Endpoint
from .errors import InvalidArgument


class Options(NamedTuple):
    endpoints: List[Endpoint]  # distinct, in the order given
    token: Any  # as given, or TICKETD_TOKEN: each client makes its own Authorization source of it
    timeout: float  # one attempt, the whole of it
    call_timeout: Optional[float]  # a whole call; None: no bound
    backoff: Tuple[float, float]
    ssl_context: Optional[ssl.SSLContext]


def parse_options(
    endpoints: Optional[Union[str, Seq[str]]],
    token: Any,
    ca_file: Optional[str],
    cert_file: Optional[str],
    key_file: Optional[str],
    timeout: float,
    call_timeout: Optional[float],
    backoff: Tuple[float, float],
    ssl_context: Optional[ssl.SSLContext],
) -> Options:
    """The client's arguments checked, with the environment's defaults
    (TICKETD_ADDR, TICKETD_TOKEN, TICKETD_CA) filled in. See Client for what
    each means."""
    if endpoints is None:
        endpoints = os.environ.get("TICKETD_ADDR", "")
    if isinstance(endpoints, str):
        endpoints = [e for e in endpoints.split(",") if e.strip()]
    if not endpoints:
        raise InvalidArgument("no endpoints given (nor TICKETD_ADDR); pass the base URLs of one or more nodes, "
                              "such as http://127.0.0.1:8080")
    eps: List[Endpoint] = []
    for raw in endpoints:
        ep = Endpoint(raw)
        if all(e.base != ep.base for e in eps):
            eps.append(ep)
    if token is None:
        token = os.environ.get("TICKETD_TOKEN") or None
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise InvalidArgument(f"timeout must be positive, got {timeout!r}")
    if call_timeout is not None and not (isinstance(call_timeout, (int, float)) and call_timeout >= 0):
        raise InvalidArgument(f"call_timeout must be >= 0 or None, got {call_timeout!r}")
    lo, hi = backoff
    if not (0 < lo <= hi):
        raise InvalidArgument(f"backoff: want 0 < min <= max, got {backoff!r}")
    if ca_file is None:
        ca_file = os.environ.get("TICKETD_CA") or None
    if ssl_context is None and (ca_file or cert_file):
        try:
            ssl_context = ssl.create_default_context(cafile=ca_file)
            if cert_file:
                ssl_context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as e:
            raise InvalidArgument(f"TLS files: {e}") from e
    return Options(eps, token, float(timeout), float(call_timeout) if call_timeout else None,
                   (float(lo), float(hi)), ssl_context)
