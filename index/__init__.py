"""The index: multi-tree OI-trees per dependency group, their codes, and the R*-tree.

In three rooms, bottom to top (tests/test_layers.py holds the order): ``forests/`` makes a
group's forest (isolated subsequences, OI-trees, codes; Zhou et al. 4.1-4.2); this
package's own modules are the index in memory (indexing one group:
:mod:`~uncertain_cep.index.group_build`; the R*-tree's boxes:
:mod:`~uncertain_cep.index.rtree_boxes`; :mod:`~uncertain_cep.index.event_index`, the node
table, statistics, the summary); ``store/`` is the index on disk (layout, writer, drafts,
manifest, checksums, reader, time-ordered tables).
"""

# This folder is the package uncertain_cep.index. Imported by its folder name (as by
# ``pytest --doctest-modules index/...``) its modules would load twice, and numba would
# cache kernels under a module name that later runs cannot import.
if __name__ != "uncertain_cep.index":
    raise ImportError(f"{__name__!r} is the folder of the package uncertain_cep.index: import "
                      "it under that name (doctests: pytest tests/test_doctests.py)")

# Before any kernel is defined: importing kernel_cache tells numba where the package's
# compiled kernels are kept.
from uncertain_cep.kernel_cache import install_kernel_cache as _install  # noqa: F401

# isort: split
from uncertain_cep.index.event_index import EventIndex
from uncertain_cep.index.forests.codes import COMPACT, PAPER, code_scheme
from uncertain_cep.index.forests.forest import GroupForest
from uncertain_cep.index.forests.forest_builder import build_forest
from uncertain_cep.index.forests.oi_tree import plan_group
from uncertain_cep.index.group_build import BuildSettings, build_group_forest

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
