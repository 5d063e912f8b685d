"""Server answers are bytes from outside the process: a seeded random search
(bounded, a few seconds) feeds mutated answers to the client's decoders and
checks that each either yields what the contract promises or raises the
client's own error, never anything else. (PyPI's hypothesis is not reachable
here; the seed is printed on failure so a finding can be replayed.)"""

from __future__ import annotations

import json
import random
from typing import Any, List

import pytest

import ticketd
from ticketd._wire import problem_of, range_of_answer

INT64_MAX = 2**63 - 1
ITERATIONS = 4000

# Values of every JSON type, and the ints at the edges the checks must mind.
ODD: List[Any] = [None, True, False, 0, -1, 1, 2, INT64_MAX, INT64_MAX + 1, 2**64, -(2**63), 1.5, 1e300,
                  "", "1", "orders", [], [1], {}, {"a": 1}]


def mutate(rng: random.Random, doc: Any, depth: int = 0) -> Any:
    """A random variation of doc: a field dropped, retyped, replaced by an
    edge value, or the whole document swapped for another JSON value."""
    r = rng.random()
    if r < 0.05 or depth > 3:
        return rng.choice(ODD)
    if isinstance(doc, dict):
        out = dict(doc)
        for k in list(out):
            p = rng.random()
            if p < 0.15:
                del out[k]
            elif p < 0.45:
                out[k] = mutate(rng, out[k], depth + 1)
        if rng.random() < 0.1:
            out[rng.choice(["x", "first", "ids"])] = rng.choice(ODD)
        return out
    if isinstance(doc, list):
        out_l = [mutate(rng, v, depth + 1) if rng.random() < 0.3 else v for v in doc]
        if out_l and rng.random() < 0.2:
            out_l.pop(rng.randrange(len(out_l)))
        if rng.random() < 0.2:
            out_l.append(rng.choice(ODD))
        return out_l
    if isinstance(doc, int) and not isinstance(doc, bool) and rng.random() < 0.5:
        return doc + rng.choice([-1, 1, INT64_MAX, -(2**63), 2**64])
    return rng.choice(ODD)


def is_id(v: Any) -> bool:
    return type(v) is int and 1 <= v <= INT64_MAX


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_range_answers(seed: int) -> None:
    rng = random.Random(seed)
    for i in range(ITERATIONS):
        count = rng.choice([1, 2, 10, 1000])
        first = rng.choice([1, 5, INT64_MAX - count + 1, INT64_MAX - 3])
        doc = mutate(rng, {"sequence": "orders", "first": first, "last": first + count - 1})
        doc = json.loads(json.dumps(doc))  # what a real answer can hold
        try:
            r = range_of_answer(doc, "orders", count)
        except ticketd.TicketdError:
            continue
        ctx = f"seed {seed} iteration {i}: {doc!r} for {count} accepted as {r!r}"
        assert is_id(r.first) and is_id(r.last), ctx
        assert r.last - r.first + 1 == count, ctx


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_snowflake_answers(seed: int) -> None:
    rng = random.Random(seed)
    with ticketd.Client(["http://127.0.0.1:9"]) as c:
        remote = c.snowflake("events")
        for i in range(ITERATIONS):
            count = rng.choice([1, 2, 5])
            base = rng.choice([1, 1 << 22, INT64_MAX - 10])
            doc = mutate(rng, {"namespace": "events", "node": "n1", "worker_id": rng.choice([0, 7]),
                               "ids": [base + 2 * k for k in range(count)]})
            doc = json.loads(json.dumps(doc))
            try:
                batch = remote._accept(0, doc, count)
            except ticketd.TicketdError:
                continue
            ctx = f"seed {seed} iteration {i}: {doc!r} for {count} accepted as {batch.ids!r}"
            assert len(batch.ids) == count, ctx
            assert all(type(v) is int and 0 <= v <= INT64_MAX for v in batch.ids), ctx
            assert all(a < b for a, b in zip(batch.ids, batch.ids[1:])), ctx
            remote._highest.clear()  # each answer is judged alone here


@pytest.mark.parametrize("seed", [1, 2])
def test_error_bodies(seed: int) -> None:
    rng = random.Random(seed)
    pieces = [b"{", b"}", b"[", b"]", b'"type"', b":", b",", b'"urn:ticketd:problem:x"', b"\xff", b"1e999",
              b"null", b"\\u", b" "]
    for _ in range(ITERATIONS):
        body = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 40)))
        if rng.random() < 0.01:
            body = b"[" * 50_000
        doc = problem_of(rng.choice([400, 404, 409, 429, 503]), body)
        assert isinstance(doc, dict) and any(isinstance(doc.get(k), str) for k in ("type", "title", "detail"))
