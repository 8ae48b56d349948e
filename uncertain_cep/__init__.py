"""uncertain-cep: sequence pattern queries over events with uncertain timestamps.

The public API (SEMANTICS.md defines every answer):

    import uncertain_cep as uc
    idx = uc.build_index(df, group_by="group", max_speed=None)
    res = idx.query("PATTERN SEQ(A, B) DEFINE ... WITHIN 6 CONFIDENCE 0.2")
    idx.save(path); idx2 = uc.open_index(path)
    print(idx.describe())                             # groups, OI-trees, codes, time
    uc.match(events, "PARTITION BY car DEFINE A AS ..., B AS ... PATTERN A meets B")

    uc.build_index_spark("archive/", "index/")        # the Spark batch job
    uc.query_index("index/", "PATTERN ...", engine="spark")

Names are loaded on first use: the ``index`` and ``query`` packages import this package's
model, so importing them eagerly here would make the import graph cyclic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from index.summary import IndexSummary
    from query.explain import Explanation
    from query.language import parse_query
    from query.patterns import Between, Comparison, InSet, PatternItem, SequencePattern, Symbol
    from uncertain_cep.api import UncertainIndex, build_index, open_index, query_index
    from uncertain_cep.errors import (
        IndexBuildError,
        IndexFormatError,
        InputError,
        InvalidOptionError,
        PlanningError,
        QueryError,
        QueryParseError,
        UncertainCepError,
    )
    from uncertain_cep.interval.api import match
    from uncertain_cep.model.events import read_archive
    from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate
    from uncertain_cep.pipeline.build_job import BuildSummary, build_index_spark
    from uncertain_cep.results import QueryResult

__version__ = "0.1.0"

_EXPORTS = {
    "build_index": "uncertain_cep.api",
    "open_index": "uncertain_cep.api",
    "UncertainIndex": "uncertain_cep.api",
    "query_index": "uncertain_cep.api",
    "match": "uncertain_cep.interval.api",
    "build_index_spark": "uncertain_cep.pipeline.build_job",
    "BuildSummary": "uncertain_cep.pipeline.build_job",
    "read_archive": "uncertain_cep.model.events",
    "MaxSpeed": "uncertain_cep.model.feasibility",
    "PairPredicate": "uncertain_cep.model.feasibility",
    "parse_query": "query.language",
    "SequencePattern": "query.patterns",
    "Explanation": "query.explain",
    "QueryResult": "uncertain_cep.results",
    "IndexSummary": "index.summary",
    "PatternItem": "query.patterns",
    "Symbol": "query.patterns",
    "Between": "query.patterns",
    "Comparison": "query.patterns",
    "InSet": "query.patterns",
    "UncertainCepError": "uncertain_cep.errors",
    "InputError": "uncertain_cep.errors",
    "IndexBuildError": "uncertain_cep.errors",
    "IndexFormatError": "uncertain_cep.errors",
    "QueryParseError": "uncertain_cep.errors",
    "QueryError": "uncertain_cep.errors",
    "PlanningError": "uncertain_cep.errors",
    "InvalidOptionError": "uncertain_cep.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'uncertain_cep' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
