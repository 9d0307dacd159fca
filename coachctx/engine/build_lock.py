"""The cyclic garbage collector paused while a large structure is built, and the lock a policy's
derived values (compiled matchers, memos, the digest) are built under.

Compiling a vocabulary allocates a few hundred thousand small objects (terms, stem keys, phrase
starts), and learning from a labelled log builds and compiles a policy per round. The collector,
triggered by those allocations alone, walked the new objects again and again while they were built,
and every long-lived object with them: more than half of a compile's time (a changed vocabulary
compiled and decided: about 700 ms, 270 ms paused) and of learning's (the corpus tune half: 27 s,
13 s paused). Nothing built there is garbage in a cycle (a full collection after learning frees no
object), so the collector is paused while such work runs and resumed after, as it was.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

_PAUSES = threading.Lock()
_paused = 0
_resume = False


def pause_collector() -> None:
    """Pause the collector; `resume_collector` once for each call resumes it, if it was running
    before the first of the pauses that overlap (threads may pause at the same time)."""
    global _paused, _resume
    with _PAUSES:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1


def resume_collector() -> None:
    global _paused
    with _PAUSES:
        _paused -= 1
        if _paused == 0 and _resume:
            gc.enable()


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector paused for the block and resumed after, as it was."""
    pause_collector()
    try:
        yield
    finally:
        resume_collector()


class BuildLock:
    """A re-entrant lock that pauses the collector while it is held."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def __enter__(self) -> BuildLock:
        self._lock.acquire()
        pause_collector()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        resume_collector()
        self._lock.release()
