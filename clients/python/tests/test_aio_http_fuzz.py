"""ticketd.aio reads HTTP answers itself (aio/_http.py): bytes from outside
the process. A seeded random search (bounded) feeds mutated answers, whole
and cut short, to its reader and checks that each yields an answer within
the limits or raises a transport failure the retry loop handles
(aio/_plan.TRANSPORT_ERRORS), never anything else. The seed is in the
failure's message so that a finding can be replayed."""

from __future__ import annotations

import asyncio
import random
from typing import List

from ticketd._transport import MAX_ANSWER_BYTES, Endpoint
from ticketd.aio._http import _read_answer
from ticketd.aio._plan import TRANSPORT_ERRORS

ITERATIONS = 3000
SEEDS: List[bytes] = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"first\": 1}\n",
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nX-Ticketd-Leader: 127.0.0.1:1\r\n"
    b"Content-Length: 2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nTrailer: 1\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\nbody to the end",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
]
# Bytes that matter to the parser: separators, digits of other scripts, signs.
ODD = [b"\r\n", b"\n", b":", b" ", b";", b"-", b"+", b"_", b"0x", b"\xb2", b"\xd9\xa3", b"\x00", b"99999999999999999999",
       b"chunked", b"close", b"Content-Length: ", b"HTTP/1.1 ", b"\r\n\r\n"]


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        i = rng.randint(0, len(b))
        if r < 0.3 and b:
            del b[i:i + rng.randint(1, 8)]
        elif r < 0.6:
            b[i:i] = rng.choice(ODD)
        elif r < 0.8 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        else:
            b = b[:i]  # cut short
    return bytes(b)


def test_answers_mutated_give_an_answer_or_a_transport_failure() -> None:
    ep = Endpoint("http://127.0.0.1:1")
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)

    async def read(data: bytes) -> None:
        reader = asyncio.StreamReader(limit=8192)
        reader.feed_data(data)
        reader.feed_eof()
        try:
            ans, _ = await _read_answer(reader, ep, rng.choice(["GET", "POST", "HEAD"]))
        except TRANSPORT_ERRORS:
            return
        except Exception as e:
            raise AssertionError(f"seed {seed}: {data!r} raised {type(e).__name__}: {e}") from e
        assert 100 <= ans.status <= 999 and len(ans.body) <= MAX_ANSWER_BYTES, (seed, data)

    async def main() -> None:
        for _ in range(ITERATIONS):
            await read(mutate(rng, rng.choice(SEEDS)))

    asyncio.run(main())
