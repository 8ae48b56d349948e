"""R*-tree files opened where they lie, once per process, never written while readable.

libspatialindex keeps its tree's header (root page, levels, and counters of reads and
query results) in the first page of ``rtree.dat`` and writes it back when the tree is
destroyed, even when nothing was inserted: closing a tree that answered queries changes
bytes of that page, which would break the working copy's sealed checksums and race with
other processes reading the same file. Opening used to copy both files to a private
directory first, which cost about a second per gigabyte at every open (1 s of the 1.2 s
an open of a 4M-event index took, 1.2 GB per open at 10M events).

Here a tree is opened in place and its destructor is disarmed, so libspatialindex never
writes: the file stays byte for byte as sealed (tested). The price is that the tree is not
closed while its files can be read: its file descriptors and its page map (a few MB per GB
of tree) stay. So each file is opened once per process and shared by every index opened
from it (:func:`open_rtree_file`), with a lock, since libspatialindex is not thread-safe
even for reads. Once a tree's files are linked nowhere
(its working copy evicted or deleted) and no index of the process uses it any more, it is
closed for real when the next tree is opened: the header it writes then goes to files
nobody can read, and its descriptors and disk are given back.

>>> import tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.index.store.reader import open_reader
>>> with tempfile.TemporaryDirectory() as tmp:
...     uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
...                                  "t_hi": [2, 2]})).save(tmp + "/ix")
...     a = open_reader(tmp + "/ix").load().rtree
...     b = open_reader(tmp + "/ix").load().rtree
>>> a is b
True
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
from rtree import index as rtree_index

from uncertain_cep.index.rtree_boxes import merged_by_box, rtree_properties
from uncertain_cep.index.store.layout import RTREE, rtree_base

__all__ = ["RTreeChunks", "SharedRTree", "open_rtree", "open_rtree_file"]


class SharedRTree:
    """A disk R*-tree opened in place for reading: searches take turns (a lock), and the
    tree is destroyed only by :meth:`release`, once nobody can read its files
    (libspatialindex writes its header page when destroyed)."""

    access = "R*-tree search"

    def __init__(self, tree: rtree_index.Index, files: list[int]) -> None:
        """``files``: descriptors of the tree's files, opened here before the tree, by
        which :meth:`unlinked` sees whether any name still leads to them."""
        # An instance attribute shadows the handle's class-level destroy function: when
        # the handle is collected (or the interpreter exits) nothing is written.
        tree.handle._destroy = _never_destroyed
        self._tree = tree
        self._files = files
        self._lock = threading.Lock()

    def unlinked(self) -> bool:
        """Whether no name leads to the tree's files any more (so nobody else can read
        what closing it writes)."""
        return bool(self._files) and all(os.fstat(fd).st_nlink == 0 for fd in self._files)

    def release(self) -> None:
        """Close the tree for real (its files must be :meth:`unlinked`, and no index may
        use it)."""
        del self._tree.handle._destroy
        self._tree.close()
        for fd in self._files:
            os.close(fd)
        self._files = []

    def intersection_v(self, mins: np.ndarray, maxs: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """rtree's bulk search: the ids meeting each box, and how many per box."""
        with self._lock:
            return self._tree.intersection_v(mins, maxs)

    def close(self) -> None:
        """Nothing: the tree stays open for the other indexes of this process that
        share it, and closing would write its header."""


# Open trees by file identity (device, inode, size, modification time): a rebuilt or
# recopied file is another file.
_OPEN: dict[tuple[int, int, int, int, int], SharedRTree] = {}
_OPENING = threading.Lock()


class RTreeChunks:
    """An R*-tree stored as chunks of consecutive event rows, one tree each (ids are the
    events' rows, as in one tree; :func:`~uncertain_cep.index.store.rtree_and_statistics.
    rtree_chunks`): each query box asked of every chunk, the rows found per box in chunk
    order."""

    access = "R*-tree search"

    def __init__(self, trees: list[SharedRTree]) -> None:
        self._trees = trees
        self.access = f"R*-tree search, in each of its {len(trees)} chunks"

    def intersection_v(self, mins: np.ndarray, maxs: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """rtree's bulk search over every chunk: the ids meeting each box, and how many
        per box."""
        return merged_by_box([tree.intersection_v(mins, maxs) for tree in self._trees],
                             len(mins))

    def close(self) -> None:
        """Nothing, as for each chunk's :class:`SharedRTree`."""


def open_rtree(root: Path, n_attributes: int, chunks: int) -> SharedRTree | RTreeChunks:
    """The R*-tree of ``chunks`` chunks whose files are in ``root``
    (:func:`~uncertain_cep.index.store.layout.rtree_files`), each file opened once per
    process and shared (:func:`open_rtree_file`)."""
    trees = [open_rtree_file(root, n_attributes, rtree_base(k)) for k in range(max(chunks, 1))]
    return trees[0] if len(trees) == 1 else RTreeChunks(trees)


def open_rtree_file(root: Path, n_attributes: int, base: str = RTREE) -> SharedRTree:
    """The R*-tree whose files ``<base>.dat`` and ``<base>.idx`` (default ``rtree``) are
    in ``root``, opened once per process and shared.

    Raises what libspatialindex or the filesystem raise for a missing or damaged file
    (``rtree.exceptions.RTreeError``, ``OSError``)."""
    names = (f"{base}.dat", f"{base}.idx")
    stat = os.stat(root / names[0])
    key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, n_attributes)
    with _OPENING:
        _release_unused()
        tree = _OPEN.get(key)
        if tree is None:
            files = [os.open(root / name, os.O_RDONLY) for name in names]
            try:
                props = rtree_properties(n_attributes)
                props.overwrite = False
                index = rtree_index.Index(str(root / base), properties=props,
                                          interleaved=False)
            except BaseException:
                for fd in files:
                    os.close(fd)
                raise
            if any(os.fstat(fd).st_ino != os.stat(root / name).st_ino
                   for fd, name in zip(files, names)):
                # Replaced while it was opened: which file the tree holds is not known,
                # so it is never closed.
                for fd in files:
                    os.close(fd)
                files = []
            tree = SharedRTree(index, files)
            _OPEN[key] = tree
        return tree


def _release_unused() -> None:
    """Close the trees whose files are linked nowhere and that no index uses: the
    registry's is then their only reference (and the call's own)."""
    for key in [k for k, tree in _OPEN.items() if tree.unlinked()]:
        if sys.getrefcount(_OPEN[key]) <= 2:
            _OPEN.pop(key).release()


def _never_destroyed(pointer: object) -> None:
    """Stands for ``Index_Destroy``: leaves the C++ tree (and its open files) to the
    process's end."""
