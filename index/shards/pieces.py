"""An archive indexed as shards in this process: one index per shard over the group
pieces it holds (:mod:`.cuts`), each built as any index is.

>>> import pandas as pd
>>> from uncertain_cep.index.group_build import BuildSettings
>>> from uncertain_cep.model.events import read_archive
>>> archive = read_archive(pd.DataFrame({"event_id": [1, 2, 3, 4], "group": [0, 0, 1, 1],
...                                      "t_lo": [1, 7, 2, 3], "t_hi": [2, 8, 9, 4]}))
>>> [(k, p.archive.event_ids.tolist())
...  for k, p in index_shards(archive, BuildSettings(), np.array([5]))]
[(0, [1, 3, 4]), (1, [2])]
"""

from __future__ import annotations

import numpy as np

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.group_build import BuildSettings
from uncertain_cep.index.shards.cuts import shard_of_rows
from uncertain_cep.model.events import Archive

__all__ = ["index_shards"]


def index_shards(archive: Archive, settings: BuildSettings, cuts: np.ndarray
                 ) -> list[tuple[int, EventIndex]]:
    """``(k, index)`` for each shard ``k`` that holds events, in time order, each index
    over its rows of ``archive`` in their order (shard ``k``: the clusters starting in
    ``[cuts[k-1], cuts[k])``, :func:`~uncertain_cep.index.shards.cuts.shard_of_rows`)."""
    shard = shard_of_rows(archive, cuts, settings.condition2)
    return [(k, EventIndex(archive.take_rows(np.flatnonzero(shard == k)), settings))
            for k in np.unique(shard).tolist()]
