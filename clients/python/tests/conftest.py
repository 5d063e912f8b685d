from __future__ import annotations

import os
import sys
import threading
from typing import Iterator

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, HERE)

from standin import Cluster  # noqa: E402


def ticketd_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("ticketd-") and t.is_alive()]


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.close()


@pytest.fixture(autouse=True)
def no_thread_left() -> Iterator[None]:
    """Every test's clients must be closed, leaving no ticketd-* thread."""
    yield
    left = ticketd_threads()
    assert not left, f"threads left after the test: {left}"
