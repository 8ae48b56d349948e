"""Ctrl-C during a query: taken between the engine's steps, never inside a kernel.

Python runs a SIGINT handler at the next bytecode of the main thread, which may be in
the middle of a compiled kernel's call: numba's dispatcher then returns a result with
the ``KeyboardInterrupt`` set (``SystemError: CPUDispatcher(...) returned a result with
an exception set``), or a C function on the way clears it and the interrupt is lost. So
while the batch engine searches, :func:`deferred_interrupts` installs a handler that only
notes the interrupt, and the engine calls :func:`check` between kernel calls (every step,
every piece of a batch, every finished background task: well under a second apart),
which raises a plain ``KeyboardInterrupt`` there. A second Ctrl-C before that raises at
once, as Python's own handler would.

Only the main thread receives signals, so elsewhere (a query run from another thread)
nothing is installed; a thread that searches for another (the producer behind
``idx.iter_query``) is stopped instead by the event it was started with
(:func:`stopped_by`): :func:`check` raises there once it is set.

>>> with deferred_interrupts():
...     check()                      # no Ctrl-C: nothing happens
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["check", "deferred_interrupts", "stopped_by"]

_noted = threading.Event()


_this_thread = threading.local()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if Ctrl-C was pressed since the search began (or, in a
    thread searching for another, once that one asked it to stop: :func:`stopped_by`)."""
    if _noted.is_set():
        _noted.clear()
        raise KeyboardInterrupt("query interrupted")
    stop = getattr(_this_thread, "stop", None)
    if stop is not None and stop.is_set():
        raise KeyboardInterrupt("query stopped by its consumer")


@contextmanager
def stopped_by(stop: threading.Event) -> Iterator[None]:
    """In this (non-main) thread, make :func:`check` raise once ``stop`` is set: how the
    thread that consumes a search's answers ends the search on Ctrl-C or when it stops
    reading."""
    _this_thread.stop = stop
    try:
        yield
    finally:
        _this_thread.stop = None


def _note(signum: int, frame: FrameType | None) -> None:
    if _noted.is_set():
        # A second Ctrl-C: the user does not want to wait for the next check.
        _noted.clear()
        raise KeyboardInterrupt("query interrupted")
    _noted.set()


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Note Ctrl-C instead of raising it wherever the main thread is; raise it from
    :func:`check`, or on leaving the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Any = signal.getsignal(signal.SIGINT)
    if previous is _note or not callable(previous):
        # Nested, or SIGINT ignored or left to the system: nothing to defer.
        yield
        return
    _noted.clear()
    signal.signal(signal.SIGINT, _note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    check()
