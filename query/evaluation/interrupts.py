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
nothing is installed and :func:`check` never raises.

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

__all__ = ["check", "deferred_interrupts"]

_noted = threading.Event()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if Ctrl-C was pressed since the search began."""
    if _noted.is_set():
        _noted.clear()
        raise KeyboardInterrupt("query interrupted")


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
