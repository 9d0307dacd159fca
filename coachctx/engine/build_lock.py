"""The lock a policy's derived values (compiled matchers, memos, the digest) are built under.

Compiling a vocabulary allocates a few hundred thousand small objects (terms, stem keys, phrase
starts), and the cyclic garbage collector, triggered by the allocations alone, walked them again
and again while they were built: more than half of a compile's time (about 600 ms, 270 ms with the
collector paused; `make bench` reports it). Nothing built there is garbage, so the collector is
paused while the outermost build runs and resumed after it, as it was. Builds are serialised by the
lock, so one pause covers nested builds (a build asks for what it is built from).
"""

from __future__ import annotations

import gc
import threading
from types import TracebackType


class BuildLock:
    """A re-entrant lock that pauses the cyclic garbage collector while its outermost holder holds it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._resume = False

    def __enter__(self) -> BuildLock:
        self._lock.acquire()
        if self._depth == 0:
            self._resume = gc.isenabled()
            gc.disable()
        self._depth += 1
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._depth -= 1
        if self._depth == 0 and self._resume:
            gc.enable()
        self._lock.release()
