"""Large arrays on ordinary pages where asking for huge pages stalls.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every
array of 4 MB or more. Where the kernel's THP ``defrag`` setting is ``madvise`` or
``defer+madvise`` (``madvise`` is the kernel's default), a page fault in such a region that finds
no free huge page compacts memory on the spot instead of falling back to a small page
(numpy/numpy#31590): on a host whose memory is full of page cache, which is what an
index's working copies and Parquet reads make of it, every fresh array then costs a
stall. Measured on this project's 2-core machine (docs/benchmarks.md, "Ordinary pages"):
filling a new 92 MB array took 0.32-0.95 s with the advice and 0.045 s without; a
negation query on a 3.8M-event shard 1.43-1.73 s against 0.24-0.25 s.

:func:`use_ordinary_pages` turns numpy's advice off on such hosts (the package calls it on
import), unless the user chose with ``NUMPY_MADVISE_HUGEPAGE`` (numpy's own switch, which
it also sets, so that processes started from this one, Spark's Python workers among
them, inherit the choice). Kernels that merely allow huge pages (``always``, ``defer``,
``never``) are left alone.

Arrow's default pool in the pyarrow wheels, mimalloc, stalls the same way on such hosts
(its arenas allow huge pages): reading the 23M ``poi`` values of a 100M index's shard
from Parquet took 0.08-1.8 s with it, a steady 0.16 s with jemalloc, 0.29 s with the
system allocator; expanding that shard's node table 7.0 s against 4.4 s
(docs/benchmarks.md, "Arrow's pool"). :func:`use_steady_arrow_pool` (called on import)
picks jemalloc there, unless the user chose with ``ARROW_DEFAULT_MEMORY_POOL`` (Arrow's
own switch, which it sets, so that Spark's workers inherit the choice too).

A process that expands one shard's node table after another (a Spark worker answering
the slices of an index whose shard copies the cache cannot keep) allocates and frees the
same 1.6 GB of arrays each time. glibc hands every array above 32 MB back to the kernel
when freed, so each shard's arrays are fresh pages, faulted and zeroed one 4 KB page at a
time: 3.0M faults and 6.1 s of kernel time for three shards of a 100M index, twice that
per process with two processes at it. :func:`keep_freed_arrays` (called by such a
process) makes glibc keep freed memory for the next arrays: 1.27M faults, 2.95 s, each
slice 3.9 -> 3.0 s (docs/benchmarks.md, "Freed arrays kept").

>>> stalls_on_huge_page_advice("always defer defer+madvise [madvise] never")
True
>>> stalls_on_huge_page_advice("always [defer] defer+madvise madvise never")
False
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

__all__ = ["DEFRAG_SETTING", "KEEP_FREED_ENV", "keep_freed_arrays", "stalls_on_huge_page_advice",
           "use_ordinary_pages", "use_steady_arrow_pool"]

DEFRAG_SETTING = "/sys/kernel/mm/transparent_hugepage/defrag"
_NUMPY_SWITCH = "NUMPY_MADVISE_HUGEPAGE"
_ARROW_SWITCH = "ARROW_DEFAULT_MEMORY_POOL"
# glibc's mallopt parameters (malloc.h); a trim threshold of -1 turns trimming off.
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
# "0" keeps glibc's own choice (a process's memory then falls back between shards).
KEEP_FREED_ENV = "UNCERTAIN_CEP_KEEP_FREED"
_kept: list[bool] = []
# Arrow's pools that do not stall on a host that compacts on a fault, best first.
_STEADY_POOLS = ("jemalloc", "system")
# The defrag modes in which a region advised MADV_HUGEPAGE compacts memory synchronously.
_STALLING = frozenset({"madvise", "defer+madvise"})


def stalls_on_huge_page_advice(defrag: str) -> bool:
    """Whether the THP ``defrag`` setting (the text of :data:`DEFRAG_SETTING`, the chosen
    mode in brackets) compacts memory synchronously for regions advised huge pages."""
    chosen = [word[1:-1] for word in defrag.split() if word.startswith("[")]
    return bool(chosen) and chosen[0] in _STALLING


def _stalls(defrag_setting: str) -> bool:
    try:
        with open(defrag_setting) as fh:
            return stalls_on_huge_page_advice(fh.read())
    except OSError:
        return False        # not Linux, or no THP: nothing to turn off


def use_ordinary_pages(defrag_setting: str = DEFRAG_SETTING) -> bool:
    """Turn numpy's huge-page advice off where it stalls (see the module docstring), unless
    ``NUMPY_MADVISE_HUGEPAGE`` says otherwise; whether it is now off.
    ``defrag_setting``: the file holding the kernel's THP defrag mode."""
    if _NUMPY_SWITCH in os.environ:
        return os.environ[_NUMPY_SWITCH].strip() == "0"
    if not _stalls(defrag_setting):
        return False
    os.environ[_NUMPY_SWITCH] = "0"     # read by numpy when it is imported
    if "numpy" in sys.modules:
        # numpy was imported first: its switch is a private function (numpy._core since
        # numpy 2, numpy.core before).
        numpy = sys.modules["numpy"]
        core = getattr(numpy, "_core", None) or numpy.core
        setter = getattr(core.multiarray, "_set_madvise_hugepage", None)
        if setter is None:
            return False
        setter(False)
    return True


def use_steady_arrow_pool(defrag_setting: str = DEFRAG_SETTING) -> str | None:
    """Make Arrow allocate from jemalloc where the kernel stalls on huge-page advice (see
    the module docstring), unless ``ARROW_DEFAULT_MEMORY_POOL`` says otherwise; the pool
    chosen, or ``None`` where nothing was changed.

    Before pyarrow is imported this only sets Arrow's switch (read when Arrow first
    allocates, here and in processes started from this one; importing pyarrow would
    cost every command 0.08 s); where pyarrow was imported first, its pool is set, the
    system allocator where the build has no jemalloc (the PyPI wheels for Linux have)."""
    if _ARROW_SWITCH in os.environ or not _stalls(defrag_setting):
        return None
    chosen = _STEADY_POOLS[0]
    if "pyarrow" in sys.modules:
        pa = sys.modules["pyarrow"]
        available = set(pa.supported_memory_backends())
        chosen = next((name for name in _STEADY_POOLS if name in available), "")
        if not chosen:
            return None
        pa.set_memory_pool(pa.jemalloc_memory_pool() if chosen == "jemalloc"
                           else pa.system_memory_pool())
    os.environ[_ARROW_SWITCH] = chosen
    return chosen


def keep_freed_arrays() -> bool:
    """Make glibc's malloc keep freed memory for later allocations instead of handing it
    back to the kernel (every allocation from the heap, none mapped on its own, the
    heap never trimmed), once per process; whether it does (glibc only). For a process
    that frees and allocates the same big arrays over and over (see the module
    docstring), such as a Spark worker, which Spark stops after a minute idle: its
    memory stays at its peak. ``UNCERTAIN_CEP_KEEP_FREED=0`` turns this off."""
    if _kept:
        return _kept[0]
    done = False
    if os.environ.get(KEEP_FREED_ENV, "").strip() == "0":
        pass
    elif sys.platform == "linux" and platform.libc_ver()[0] == "glibc":
        try:
            mallopt = ctypes.CDLL(None).mallopt
            mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
            done = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, -1))
        except (OSError, AttributeError):
            done = False
    _kept.append(done)
    return done
