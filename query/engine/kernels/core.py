"""How the batch engine's compiled kernels use threads.

The extension, merge-key, row-hash and segment-grouping kernels run their independent
rows on every core (numba ``parallel=True``; 1.7x on two cores for a query creating 8M
entries). Numba picks one threading layer per process at the first parallel call, and the
default on pip installs is GNU OpenMP, which kills any process that forks afterwards
("fork() called from a process already using GNU OpenMP"): a notebook using
``multiprocessing``, a Spark worker. So, unless the user chose a layer
(``NUMBA_THREADING_LAYER``), this module asks for numba's own ``workqueue`` layer, which
is fork-safe; it is not safe for two threads entering kernels at once, so kernel calls
hold :data:`KERNEL_LOCK` (queries from several threads still run, their kernels in turn).

>>> KERNEL_LOCK.acquire(); KERNEL_LOCK.release()
True
"""

from __future__ import annotations

import os
import threading

import numba

__all__ = ["KERNEL_LOCK"]

KERNEL_LOCK = threading.RLock()

if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]
