"""Terminal work done on spare cores while the search goes on.

A complete tuple's probability with negation (its negation programme,
:func:`~uncertain_cep.query.engine.kernels.tuples.negated_probabilities`) feeds nothing but the
answer, and its kernel runs without the GIL. Much of the search itself keeps one core
busy only (numpy over whole batches, the engine's own Python). So the batch engine hands
such work to spare threads (one fewer than numba's) and goes on with its steps. Measured
on localization n = 20 query 2 (two cores): one core idle for about 10 of the query's
22 s, while its negation programmes took 4 s on both.

* The spare threads run at the lowest priority (Linux niceness is per thread), so they
  take idle cores only and never slow the search's own kernels, which use every core.
  At normal priority they won 1 s of those 4, at the lowest 2.4 s.
* The searching thread alone reads the results (:meth:`Background.finished`, between
  steps), so every counter keeps one writer.
* Once the search ends it runs what is still queued itself, beside the spare threads,
  and then a copy of what they are still running (:meth:`Background.finish`): a spare
  thread starved by a busy machine never holds up the answer (the work is pure, the
  copy that finishes first counts).
* Tasks queue up to ``most_queued``; past that the searching thread runs the oldest
  itself, so what waits is bounded, and memory with it.

>>> work = Background(threads=1)
>>> work.submit(lambda: 6 * 7, "answer")
>>> [(tag, result) for tag, result, _ in work.finish()]
[('answer', 42)]
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba

__all__ = ["Background", "spare_threads"]


def spare_threads() -> int:
    """Threads for background work: one fewer than numba's (which the search's own
    kernels use)."""
    return max(0, numba.get_num_threads() - 1)


def _nothing() -> None:
    pass


@dataclass(eq=False)
class _Task:
    work: Callable[[], Any]
    tag: Any
    done: bool = False
    copied: bool = False


class Background:
    """Work run by ``threads`` spare threads (none: at once, by the caller), its results
    collected by the one thread that submits it."""

    def __init__(self, threads: int, most_queued: int = 4,
                 check: Callable[[], None] | None = None) -> None:
        self._cond = threading.Condition()
        # Called between tasks and while waiting (it may raise, e.g. on Ctrl-C).
        self._check = check or _nothing
        self._queued: deque[_Task] = deque()
        self._running: list[_Task] = []
        self._done: deque[tuple[_Task, Any, float]] = deque()
        self._waiting = 0           # submitted and not yet collected (submitter only)
        self._most = max(1, most_queued)
        self._closed = False
        self._threads = [threading.Thread(target=self._serve, daemon=True,
                                          name=f"uncertain-cep-background-{i}")
                         for i in range(max(0, threads))]
        for thread in self._threads:
            thread.start()

    @property
    def threads(self) -> int:
        """How many spare threads run the work (0: the submitter, at once)."""
        return len(self._threads)

    def submit(self, work: Callable[[], Any], tag: Any) -> None:
        """Queue ``work`` (no arguments, no side effects); its result comes back with
        ``tag``."""
        task = _Task(work, tag)
        self._waiting += 1
        if not self._threads:
            self._run(task)
            return
        with self._cond:
            self._queued.append(task)
            self._cond.notify()
        if self._waiting > self._most:
            self._help(copy=False)

    def finished(self) -> list[tuple[Any, Any, float]]:
        """The results done so far (``(tag, result, seconds it took)``), without
        waiting; the work's exception is raised here."""
        with self._cond:
            done, self._done = list(self._done), deque()
        self._waiting -= len(done)
        for _, result, _ in done:
            if isinstance(result, _Failed):
                self.close()
                raise result.error
        return [(task.tag, result, seconds) for task, result, seconds in done]

    def finish(self) -> list[tuple[Any, Any, float]]:
        """Every remaining result, helping with the work left; then the threads stop."""
        out = self.finished()
        while self._waiting > 0:
            self._check()
            if not self._help(copy=True):
                with self._cond:
                    while not self._done:
                        # Woken by a finished task, or each tenth of a second to check.
                        self._cond.wait(0.1)
                        self._check()
            out.extend(self.finished())
        self.close()
        return out

    def close(self) -> None:
        """Stop the threads once their current work is done. Queued work is dropped: a
        search that failed or was interrupted wants none of it."""
        with self._cond:
            self._closed = True
            self._queued.clear()
            self._cond.notify_all()

    # ------------------------------------------------------------ internals
    def _serve(self) -> None:
        _yield_to_others()
        while True:
            with self._cond:
                while not self._queued and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                task = self._queued.popleft()
                self._running.append(task)
            self._run(task)

    def _help(self, copy: bool) -> bool:
        """Run the oldest queued task in this thread, or with ``copy`` a copy of one a
        spare thread is running; False if there is none."""
        with self._cond:
            if self._queued:
                task = self._queued.popleft()
            else:
                running = [t for t in self._running if not t.copied] if copy else []
                if not running:
                    return False
                task = running[0]
                task.copied = True
        self._run(task)
        return True

    def _run(self, task: _Task) -> None:
        started = time.perf_counter()
        try:
            result = task.work()
        except BaseException as e:  # handed to the submitting thread, raised there
            result = _Failed(e)
        seconds = time.perf_counter() - started
        with self._cond:
            if task.done:           # its copy finished first
                return
            task.done = True
            if task in self._running:
                self._running.remove(task)
            self._done.append((task, result, seconds))
            self._cond.notify_all()


def _yield_to_others() -> None:
    """Give this thread the lowest priority: it is to take idle cores only."""
    # (Elsewhere than Linux this may fail: the same work, less overlap.)
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error
