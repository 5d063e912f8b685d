"""What a copy of the process, or of a handle, must not keep.

A fork copies the parent's memory: a Client made before it (a prefork
server's import-time client, a warm-up, multiprocessing's fork context)
arrives in the child with the parent's cached ranges, prefetched Snowflake
IDs, pooled keep-alive sockets and the mark of a refill whose thread the
child does not have. Kept, the child would hand out the parent's IDs a
second time, interleave requests with it on one socket, and wait the whole
call timeout for a refill that never ends. So every live Client is reset in
the child by the interpreter's own fork hook (os.register_at_fork, which
os.fork, multiprocessing and the prefork servers' Python forks run), before
the child's code goes on; the parent goes on as before.

uWSGI forks its workers in C and runs those hooks only when started with
--py-call-osafterfork; it always calls its own uwsgi.post_fork_hook, so
inside uWSGI the reset is registered there too (through uwsgidecorators'
postfork chain when that module is installed, so that the application's own
postfork functions still run). Both running is harmless: the second reset
finds nothing to drop. Any other fork that bypasses the interpreter (a C
library calling fork() itself without PyOS_AfterFork_Child) runs no hook:
such a child must make its own Client. Checking the pid on every next()
instead would cost a system call per ID (glibc no longer caches getpid),
more than the rest of next().

A copy of a handle (copy.copy, deepcopy, pickle: multiprocessing's spawn
context pickles arguments) would be a second cache of the same ranges, so
Client and the handles refuse to be copied (NotCopyable).
"""

from __future__ import annotations

import os
import weakref
from typing import Any, NoReturn


class ForkAware:
    """An object reset in a forked child by _after_fork_in_child()."""

    __slots__ = ()

    def _after_fork_in_child(self) -> None:
        raise NotImplementedError


_live: "weakref.WeakSet[ForkAware]" = weakref.WeakSet()


def reset_in_forked_child(obj: ForkAware) -> None:
    """obj._after_fork_in_child() will run in the child of every fork while obj lives."""
    _live.add(obj)


def _after_fork_in_child() -> None:
    # Only the thread that forked runs in the child, so nothing here takes a
    # lock of the parent's: another thread may have held it at the fork, and
    # would never release it. The objects replace their locks instead.
    for obj in list(_live):
        obj._after_fork_in_child()


if hasattr(os, "register_at_fork"):  # every POSIX Python 3.7+; Windows has no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def forks_without_the_gil() -> bool:
    """Whether this is uWSGI's master as it stands before forking its
    workers (the application loaded there, without --lazy-apps), and uWSGI
    forks them without taking the GIL (no --py-call-uwsgi-fork-hooks). A
    worker forked while another thread of the master held the GIL starts
    with a GIL that no thread of its own releases, and hangs at its first
    line of Python; so in such a master the library lets no thread of its
    own run on past the call that started it (client._Background.settle)."""
    uwsgi = _uwsgi()
    if uwsgi is None:
        return False
    try:
        if uwsgi.worker_id() != 0 or (hasattr(uwsgi, "mule_id") and uwsgi.mule_id() != 0):
            return False  # a worker or a mule: it forks nothing
        opt = getattr(uwsgi, "opt", {}) or {}
        return not opt.get("py-call-uwsgi-fork-hooks") and not opt.get(b"py-call-uwsgi-fork-hooks")
    except Exception:  # an embedding that is not quite uWSGI's: assume the worst
        return True


def _uwsgi() -> Any:
    """The uwsgi module, which exists only inside a uWSGI process, or None."""
    try:
        import uwsgi  # type: ignore[import]
    except ImportError:
        return None
    return uwsgi


def _register_with_uwsgi() -> None:
    uwsgi = _uwsgi()
    if uwsgi is None:
        return
    try:
        from uwsgidecorators import postfork  # type: ignore[import]
    except ImportError:
        # No decorators module (Debian's uwsgi-plugin-python3 alone): chain
        # the hook by hand. Nothing else can replace it then, since what
        # would (uwsgidecorators) cannot be imported either.
        previous = getattr(uwsgi, "post_fork_hook", None)

        def hook() -> None:
            _after_fork_in_child()
            if previous is not None:
                previous()

        uwsgi.post_fork_hook = hook
        return
    postfork(_after_fork_in_child)


_register_with_uwsgi()


class NotCopyable:
    """Refuses copy.copy, copy.deepcopy and pickling, saying why."""

    __slots__ = ()

    def _refuse(self) -> NoReturn:
        raise TypeError(f"a ticketd {type(self).__name__} cannot be copied or pickled: the copy would hand out "
                        f"IDs the original has cached. Make one Client per process (a forked child's copy "
                        f"is reset by the library itself)")

    def __copy__(self) -> NoReturn:
        self._refuse()

    def __deepcopy__(self, memo: Any) -> NoReturn:
        self._refuse()

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        self._refuse()

    def __reduce__(self) -> NoReturn:
        self._refuse()
