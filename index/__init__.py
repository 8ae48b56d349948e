"""The index: multi-tree OI-trees per dependency group, their codes, and the R*-tree."""

# This folder is the package uncertain_cep.index. Imported by its folder name (as by
# ``pytest --doctest-modules index/...``) its modules would load twice, and numba would
# cache kernels under a module name that later runs cannot import.
if __name__ != "uncertain_cep.index":
    raise ImportError(f"{__name__!r} is the folder of the package uncertain_cep.index: import "
                      "it under that name (doctests: pytest tests/test_doctests.py)")

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
