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

>>> stalls_on_huge_page_advice("always defer defer+madvise [madvise] never")
True
>>> stalls_on_huge_page_advice("always [defer] defer+madvise madvise never")
False
"""

from __future__ import annotations

import os
import sys

__all__ = ["DEFRAG_SETTING", "stalls_on_huge_page_advice", "use_ordinary_pages"]

DEFRAG_SETTING = "/sys/kernel/mm/transparent_hugepage/defrag"
_NUMPY_SWITCH = "NUMPY_MADVISE_HUGEPAGE"
# The defrag modes in which a region advised MADV_HUGEPAGE compacts memory synchronously.
_STALLING = frozenset({"madvise", "defer+madvise"})


def stalls_on_huge_page_advice(defrag: str) -> bool:
    """Whether the THP ``defrag`` setting (the text of :data:`DEFRAG_SETTING`, the chosen
    mode in brackets) compacts memory synchronously for regions advised huge pages."""
    chosen = [word[1:-1] for word in defrag.split() if word.startswith("[")]
    return bool(chosen) and chosen[0] in _STALLING


def use_ordinary_pages(defrag_setting: str = DEFRAG_SETTING) -> bool:
    """Turn numpy's huge-page advice off where it stalls (see the module docstring), unless
    ``NUMPY_MADVISE_HUGEPAGE`` says otherwise; whether it is now off.
    ``defrag_setting``: the file holding the kernel's THP defrag mode."""
    if _NUMPY_SWITCH in os.environ:
        return os.environ[_NUMPY_SWITCH].strip() == "0"
    try:
        with open(defrag_setting) as fh:
            stalls = stalls_on_huge_page_advice(fh.read())
    except OSError:
        return False        # not Linux, or no THP: nothing to turn off
    if not stalls:
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
