"""The index: multi-tree OI-trees per dependency group, their codes, and the R*-tree."""

from index.codes import COMPACT, PAPER, code_scheme
from index.event_index import BuildSettings, EventIndex, build_group_forest
from index.forest import GroupForest, build_forest
from index.oi_tree import plan_group

__all__ = [
           "COMPACT",
           "PAPER",
           "BuildSettings",
           "EventIndex",
           "GroupForest",
           "build_forest",
           "build_group_forest",
           "code_scheme",
           "plan_group",
]
