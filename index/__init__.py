"""The index: multi-tree OI-trees per dependency group, their codes, and the R*-tree."""

from uncertain_cep.index.codes import COMPACT, PAPER, code_scheme
from uncertain_cep.index.event_index import BuildSettings, EventIndex, build_group_forest
from uncertain_cep.index.forest import GroupForest
from uncertain_cep.index.forest_builder import build_forest
from uncertain_cep.index.oi_tree import plan_group

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
