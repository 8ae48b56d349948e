"""The Spark pipeline: building an index from archive files, and querying an index by
time slices. Spark is imported only when a job runs.

The jobs' names are loaded on first use (PEP 562): a Spark worker that unpickles a
query task imports :mod:`~uncertain_cep.pipeline.query_job` through this package, and
need not import the build job with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uncertain_cep.pipeline.build_job import BadInputPolicy, BuildSummary, build_index_spark

__all__ = ["BadInputPolicy", "BuildSummary", "build_index_spark"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("uncertain_cep.pipeline.build_job"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
