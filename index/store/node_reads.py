"""Counting R*-tree node reads: the paper's I/O measure (Zhou et al. 6.3, "disk page
accesses").

libspatialindex keeps its statistics to itself, so the count comes from storage: the same
boxes are bulk-loaded into an R*-tree over ``rtree``'s custom storage, which hands every
page (node) read to Python, and a query's logged search boxes
(:attr:`~uncertain_cep.index.event_index.EventIndex.search_log`) are replayed against it. The
searches
are deterministic, so the reads are those the query's own R*-tree made, with a buffer of
one page (every node visited is a page read unless it was the last one read).

>>> import numpy as np
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> idx = uc.build_index(pd.DataFrame({"event_id": range(500), "group": 0,
...     "t_lo": np.arange(500) * 3, "t_hi": np.arange(500) * 3 + 1}))
>>> counter = NodeReadCounter(idx.event_index)
>>> ei = idx.event_index
>>> ei.search_log = []
>>> _ = ei.search(None, (0, 30), None, {})
>>> counter.replay(ei.search_log) >= 2   # the root and at least one leaf
True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from rtree import index as rtree_index

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.rtree_boxes import rtree_properties

__all__ = ["NodeReadCounter"]


class _PageStore(rtree_index.CustomStorage):
    """Pages in a dict; counts every read."""

    def __init__(self) -> None:
        self.pages: dict[int, bytes] = {}
        self.reads = 0
        super().__init__()

    def create(self, returnError: Any) -> None:
        pass

    def destroy(self, returnError: Any) -> None:
        pass

    def clear(self) -> None:
        self.pages.clear()

    def flush(self, returnError: Any) -> None:
        pass

    def loadByteArray(self, page: int, returnError: Any) -> bytes | None:
        self.reads += 1
        data = self.pages.get(page)
        if data is None:
            returnError.contents.value = self.InvalidPageError
        return data

    def storeByteArray(self, page: int, data: bytes, returnError: Any) -> int:
        if page == self.NewPage:
            page = len(self.pages)
            while page in self.pages:
                page += 1
        self.pages[page] = data
        return page

    def deleteByteArray(self, page: int, returnError: Any) -> None:
        if self.pages.pop(page, None) is None:
            returnError.contents.value = self.InvalidPageError

    hasData = property(lambda self: bool(self.pages))


class NodeReadCounter:
    """An R*-tree with the same entries as ``index``'s, over counting storage."""

    def __init__(self, index: EventIndex) -> None:
        self._store = _PageStore()
        props = rtree_properties(len(index.attributes))
        # libspatialindex insists on a buffer; one page is the least it takes, so a node
        # read twice in a row counts once.
        props.buffering_capacity = 1
        n = index.archive.n_events
        mins, maxs = index.boxes()
        coords = np.empty((n, 2 * mins.shape[1]))
        coords[:, 0::2], coords[:, 1::2] = mins, maxs
        # The same stream bulk load as the index's own file (rtree_and_statistics.py), so
        # the same tree.
        stream = ((i, tuple(c), None) for i, c in enumerate(coords.tolist()))
        self._tree = rtree_index.Index(self._store, stream, properties=props,
                                       interleaved=False)
        self._dims = mins.shape[1]

    def replay(self, log: Iterable[tuple[np.ndarray, np.ndarray]]) -> int:
        """Node reads of the logged batches of search boxes."""
        before = self._store.reads
        for mins, maxs in log:
            self._tree.intersection_v(mins, maxs)
        return self._store.reads - before
