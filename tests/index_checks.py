"""Checks of an index's stored structures shared by several test modules."""

from __future__ import annotations

import numpy as np

from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.node_table import node_table
from uncertain_cep.index.store.node_columns import NODE_TABLE_COLUMNS

__all__ = ["assert_node_columns_match_forests"]


def assert_node_columns_match_forests(index: EventIndex) -> None:
    """The node table an index holds (memory-mapped from disk, derived from the Parquet
    tables) equals the one built from its forests, column by column and dtype by dtype."""
    stored = index.node_table
    built = node_table(index.forests, index.members, index.archive.n_events)
    for column in NODE_TABLE_COLUMNS:
        a, b = getattr(stored, column), getattr(built, column)
        assert a.dtype == b.dtype, column
        np.testing.assert_array_equal(a, b, err_msg=column)
