"""The cyclic garbage collector paused while a large structure is built: a policy's derived values
(compiled matchers, memos, the digest), learning's rounds, impact's chunks.

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

_PAUSES = threading.Lock()
_paused = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector paused for the block and resumed after, if it was running before the first of
    the pauses that overlap (nested, or in other threads at the same time: the last one resumes it)."""
    global _paused, _resume
    with _PAUSES:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _PAUSES:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()
