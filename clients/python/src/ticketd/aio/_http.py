"""HTTP/1.1 over asyncio streams: persistent connections to the endpoints,
one small pool each, for the AsyncClient.

The standard library has no asyncio HTTP client (aiohttp and httpx are not
in it, and the package depends on nothing). ticketd's exchanges are small
JSON requests and answers, so the client speaks the part of HTTP/1.1 they
need and refuses the rest: a request with a Content-Length; an answer with
a Content-Length, chunked, or read to the connection's end; keep-alive
unless the answer says Connection: close. Status line, headers and body are
bounded (MAX_ANSWER_BYTES, as the threaded client's), and the attempt as a
whole by one deadline (the caller's asyncio.wait_for), connecting and the
TLS handshake included, so a node trickling its answer cannot hold a call.

A connection belongs to the event loop it was opened on. The pool takes
connections of one loop only; the client drops the pool when it is used on
a new loop (after the old one closed) and in a forked child.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from typing import Dict, List, Mapping, Optional, Set, Tuple

from .._transport import MAX_ANSWER_BYTES, Answer, Endpoint

# Idle connections kept per endpoint; more tasks than this open their own.
_MAX_IDLE = 16
# A status line or header line longer than this is refused (Go's net/http
# server sends far shorter ones).
_MAX_LINE = 8192
_MAX_HEADERS = 100


class ProtocolError(OSError):
    """An answer that is not HTTP/1.1 as the client speaks it: a transport
    failure, as a connection reset is (the next endpoint is asked)."""


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        # An idle connection the server closed shows EOF (or a closing
        # transport) once the loop has read it: not worth a request.
        return not self.reader.at_eof() and not self.writer.transport.is_closing()

    def abort(self) -> None:
        self.writer.transport.abort()


class Pool:
    def __init__(self, ssl_context: Optional[ssl.SSLContext]) -> None:
        self._ssl = ssl_context
        self._idle: Dict[str, List[_Conn]] = {}
        self._busy: Set[_Conn] = set()
        self._closed = False

    async def _dial(self, ep: Endpoint) -> _Conn:
        tls: Optional[ssl.SSLContext] = None
        if ep.scheme == "https":
            tls = self._ssl or ssl.create_default_context()
        reader, writer = await asyncio.open_connection(
            ep.host, ep.port, ssl=tls, server_hostname=ep.host if tls is not None else None,
            limit=_MAX_LINE)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Conn(reader, writer)

    def _take(self, ep: Endpoint) -> Optional[_Conn]:
        idle = self._idle.get(ep.base)
        while idle:
            conn = idle.pop()
            if conn.usable():
                return conn
            conn.abort()
        return None

    def _give_back(self, ep: Endpoint, conn: _Conn, keep: bool) -> None:
        self._busy.discard(conn)
        if keep and not self._closed:
            idle = self._idle.setdefault(ep.base, [])
            if len(idle) < _MAX_IDLE:
                idle.append(conn)
                return
        conn.abort()  # nothing is left to say on it: no close handshake to wait for

    async def request(self, ep: Endpoint, method: str, path: str, body: Optional[bytes],
                      headers: Mapping[str, str]) -> Answer:
        """One HTTP exchange with ep. Raises OSError (ProtocolError among
        them) or asyncio.IncompleteReadError on transport failures; the
        caller bounds it in time, and a cancelled exchange's connection is
        closed, never reused (its answer may still be on its way)."""
        if self._closed:
            raise ConnectionAbortedError("ticketd: the client is closed")
        head = _request_head(ep, method, path, body, headers)
        for first_try in (True, False):
            conn = self._take(ep)
            reused = conn is not None
            if conn is None:
                conn = await self._dial(ep)
                if self._closed:  # closed while dialling: nothing else would close it
                    conn.abort()
                    raise ConnectionAbortedError("ticketd: the client is closed")
            self._busy.add(conn)
            keep = False
            try:
                conn.writer.write(head if body is None else head + body)
                await conn.writer.drain()
                ans, keep = await _read_answer(conn.reader, ep, method)
                return ans
            except (ConnectionError, asyncio.IncompleteReadError, ProtocolError) as e:
                # The server closed a kept connection while it was idle: once
                # more on a new one (an EOF before the status line's first byte).
                stale = isinstance(e, (ConnectionError, _EmptyAnswer))
                if reused and first_try and stale:
                    continue
                raise
            finally:
                self._give_back(ep, conn, keep)
        raise AssertionError("unreachable")

    def for_forked_child(self) -> "Pool":
        """A forked child's pool: empty. The child's copies of the parent's
        sockets are replaced by /dev/null (dup2), so that closing them, now
        or when their transports are collected, never ends the parent's
        connections (a shutdown would) nor closes a descriptor number the
        child has reused since; the child's loop, if any, is not touched:
        asyncio's selector is shared with the parent across a fork."""
        conns = [c for cs in self._idle.values() for c in cs] + list(self._busy)
        if conns:
            null = os.open(os.devnull, os.O_RDWR)
            try:
                for c in conns:
                    sock = c.writer.get_extra_info("socket")
                    fd = sock.fileno() if sock is not None else -1
                    if fd >= 0:
                        os.dup2(null, fd)
            finally:
                os.close(null)
        return Pool(self._ssl)

    def close(self) -> None:
        """Closes every connection: the idle ones, and those in use, whose
        exchanges then fail at once (the client turns that into Closed)."""
        self._closed = True
        conns = [c for cs in self._idle.values() for c in cs] + list(self._busy)
        self._idle.clear()
        self._busy.clear()
        for c in conns:
            c.abort()


class _EmptyAnswer(ProtocolError):
    """The connection ended before the status line began."""


def _request_head(ep: Endpoint, method: str, path: str, body: Optional[bytes], headers: Mapping[str, str]) -> bytes:
    # Names and paths were checked (_wire.check_name), tokens too (_token):
    # nothing here can carry a line break into the request.
    lines = [f"{method} {path} HTTP/1.1", f"Host: {ep.netloc}", "User-Agent: ticketd-python-aio"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    elif method in ("POST", "PUT"):
        lines.append("Content-Length: 0")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _read_line(reader: asyncio.StreamReader, ep: Endpoint) -> bytes:
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"{ep.base} sent a line longer than {_MAX_LINE} bytes") from None
    return line.rstrip(b"\r\n")


async def _read_answer(reader: asyncio.StreamReader, ep: Endpoint, method: str) -> Tuple[Answer, bool]:
    """The answer, and whether the connection may carry the next request."""
    while True:
        try:
            status_line = await _read_line(reader, ep)
        except asyncio.IncompleteReadError as e:
            if not e.partial:
                raise _EmptyAnswer(f"{ep.base} closed the connection before answering") from None
            raise
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise ProtocolError(f"{ep.base} answered with {status_line[:80]!r}, not an HTTP/1.1 status line")
        status = int(parts[1])
        if status < 100:
            raise ProtocolError(f"{ep.base} answered with status {status}, which HTTP does not have")
        headers: Dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            line = await _read_line(reader, ep)
            if not line:
                break
            name, sep, value = line.partition(b":")
            if not sep or not name.strip():
                raise ProtocolError(f"{ep.base} sent a header line {line[:80]!r} without a name")
            key = name.strip().decode("latin-1").lower()
            v = value.strip().decode("latin-1")
            headers[key] = f"{headers[key]}, {v}" if key in headers else v
        else:
            raise ProtocolError(f"{ep.base} sent more than {_MAX_HEADERS} headers")
        if 100 <= status < 200:
            continue  # an interim answer (100 Continue): the real one follows
        break
    keep = parts[0] == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    if method == "HEAD" or status in (204, 304):
        return Answer(status, headers, b""), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Answer(status, headers, await _read_chunked(reader, ep)), keep
    length = headers.get("content-length")
    if length is not None:
        if not (length.isascii() and length.isdigit()):  # str.isdigit() takes "²", which int() refuses
            raise ProtocolError(f"{ep.base} sent Content-Length {length!r}")
        n = int(length)
        if n > MAX_ANSWER_BYTES:
            raise ProtocolError(f"{ep.base} answered more than {MAX_ANSWER_BYTES} bytes")
        return Answer(status, headers, await reader.readexactly(n)), keep
    # Neither: the body runs to the connection's end, which then cannot be kept.
    body = await reader.read(MAX_ANSWER_BYTES + 1)
    while body and len(body) <= MAX_ANSWER_BYTES:
        more = await reader.read(MAX_ANSWER_BYTES + 1 - len(body))
        if not more:
            break
        body += more
    if len(body) > MAX_ANSWER_BYTES:
        raise ProtocolError(f"{ep.base} answered more than {MAX_ANSWER_BYTES} bytes")
    return Answer(status, headers, body), False


async def _read_chunked(reader: asyncio.StreamReader, ep: Endpoint) -> bytes:
    chunks: List[bytes] = []
    total = 0
    while True:
        size_line = (await _read_line(reader, ep)).split(b";", 1)[0].strip()
        # Hex digits only: int(x, 16) also takes "0x", "+" and "_".
        if not size_line or size_line.strip(b"0123456789abcdefABCDEF") or len(size_line) > 16:
            raise ProtocolError(f"{ep.base} sent a chunk size {size_line[:20]!r}")
        size = int(size_line, 16)
        if size == 0:
            for _ in range(_MAX_HEADERS + 1):  # trailers, then the blank line
                if not await _read_line(reader, ep):
                    return b"".join(chunks)
            raise ProtocolError(f"{ep.base} sent more than {_MAX_HEADERS} trailers")
        total += size
        if total > MAX_ANSWER_BYTES:
            raise ProtocolError(f"{ep.base} answered more than {MAX_ANSWER_BYTES} bytes")
        chunks.append(await reader.readexactly(size))
        if await reader.readexactly(2) != b"\r\n":
            raise ProtocolError(f"{ep.base} sent a chunk without its line end")
