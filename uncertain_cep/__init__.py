"""uncertain-cep: sequence pattern queries over events with uncertain timestamps.

The public API (SEMANTICS.md defines every answer):

    import uncertain_cep as uc
    idx = uc.build_index(df, group_by="group", max_speed=None)   # pandas, pyarrow, DuckDB
    idx = uc.build_index(table, columns={"event_id": "reading_id"})  # the input's names
    res = idx.query("PATTERN SEQ(A, B) DEFINE ... WITHIN 6 CONFIDENCE 0.2")
    idx.save(path); idx2 = uc.open_index(path)        # a path, or s3://, gs://, ...
    uc.copy_index(path, "s3://bucket/office.idx")     # publish a saved index
    print(idx.describe())                             # groups, OI-trees, codes, time
    uc.match(events, "PARTITION BY car DEFINE A AS ..., B AS ... PATTERN A meets B")

    uc.build_index_spark("archive/", "index/")        # the Spark batch job (a path, a
                                                      # URI, a table, a DataFrame, or
                                                      # a pandas or Arrow table)
    uc.query_spark("index/", "PATTERN ...")           # a lazy pyspark DataFrame
    uc.match_spark(events_df, "PARTITION BY ...")     # a lazy pyspark DataFrame
    uc.query_index("index/", "PATTERN ...", engine="spark")   # pandas, for notebooks
    uc.register(spark)                                # SQL: uc_query(...), uc_match(...)
    uc.warm_up_spark(spark)                           # a session's first query warm

Names are loaded on first use, for start-up time: ``import uncertain_cep`` takes about
0.05 s, loading every name (pandas, scipy, rtree, lark, matplotlib) about 1.4 s, which
``uncertain-cep --help`` and scripts that need one corner should not pay. The package is
layered bottom-up (errors, model, index, query and interval, pipeline, this facade;
tests/test_layers.py), so eager imports would work too.
"""

from __future__ import annotations

import importlib
from importlib import metadata as _metadata
from typing import TYPE_CHECKING, Any

from uncertain_cep.memory_pages import use_ordinary_pages as _use_ordinary_pages
from uncertain_cep.memory_pages import use_steady_arrow_pool as _use_steady_arrow_pool

# Before numpy is imported: big arrays on ordinary pages where the kernel would stall on
# numpy's huge-page advice (memory_pages.py; a negation query 6x faster here), and
# Arrow's buffers from a pool that does not (a shard's node table 1.6x faster to read).
_use_ordinary_pages()
_use_steady_arrow_pool()

if TYPE_CHECKING:
    from uncertain_cep.answer_files import read_answer
    from uncertain_cep.answer_streams import StreamedAnswer
    from uncertain_cep.api import (
        UncertainIndex,
        build_index,
        copy_index,
        open_index,
        query_index,
    )
    from uncertain_cep.durations import Duration
    from uncertain_cep.errors import (
        AnswerTooLargeError,
        FileWriteError,
        IndexBuildError,
        IndexFormatError,
        InputError,
        InvalidOptionError,
        MissingDependencyError,
        PlanningError,
        QueryError,
        QueryParseError,
        UncertainCepError,
        UsageError,
    )
    from uncertain_cep.index.summary import IndexSummary
    from uncertain_cep.interval.api import match
    from uncertain_cep.model.events import read_archive
    from uncertain_cep.model.feasibility import MaxSpeed, PairPredicate
    from uncertain_cep.model.time_axis import TimeAxis
    from uncertain_cep.pipeline.build_job import BuildSummary, build_index_spark
    from uncertain_cep.pipeline.match_job import match_spark, match_spark_pandas
    from uncertain_cep.pipeline.query_job import query_spark
    from uncertain_cep.pipeline.sql_functions import register
    from uncertain_cep.pipeline.warm_up import warm_up_spark
    from uncertain_cep.query.evaluation.explain import Explanation
    from uncertain_cep.query.language.parse import parse_query
    from uncertain_cep.query.language.patterns import (
        Between,
        Comparison,
        InSet,
        PatternItem,
        SequencePattern,
        Symbol,
    )
    from uncertain_cep.results import QueryResult

try:  # One source of truth: the version in pyproject.toml, as installed.
    __version__ = _metadata.version("uncertain-cep")
except _metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
    __version__ = "0+unknown"

_EXPORTS = {
    "build_index": "uncertain_cep.api",
    "open_index": "uncertain_cep.api",
    "UncertainIndex": "uncertain_cep.api",
    "query_index": "uncertain_cep.api",
    "copy_index": "uncertain_cep.api",
    "read_answer": "uncertain_cep.answer_files",
    "match": "uncertain_cep.interval.api",
    "build_index_spark": "uncertain_cep.pipeline.build_job",
    "BuildSummary": "uncertain_cep.pipeline.build_job",
    "query_spark": "uncertain_cep.pipeline.query_job",
    "match_spark": "uncertain_cep.pipeline.match_job",
    "match_spark_pandas": "uncertain_cep.pipeline.match_job",
    "register": "uncertain_cep.pipeline.sql_functions",
    "warm_up_spark": "uncertain_cep.pipeline.warm_up",
    "read_archive": "uncertain_cep.model.events",
    "MaxSpeed": "uncertain_cep.model.feasibility",
    "PairPredicate": "uncertain_cep.model.feasibility",
    "TimeAxis": "uncertain_cep.model.time_axis",
    "Duration": "uncertain_cep.durations",
    "parse_query": "uncertain_cep.query.language.parse",
    "SequencePattern": "uncertain_cep.query.language.patterns",
    "Explanation": "uncertain_cep.query.evaluation.explain",
    "QueryResult": "uncertain_cep.results",
    "StreamedAnswer": "uncertain_cep.answer_streams",
    "IndexSummary": "uncertain_cep.index.summary",
    "PatternItem": "uncertain_cep.query.language.patterns",
    "Symbol": "uncertain_cep.query.language.patterns",
    "Between": "uncertain_cep.query.language.patterns",
    "Comparison": "uncertain_cep.query.language.patterns",
    "InSet": "uncertain_cep.query.language.patterns",
    "UncertainCepError": "uncertain_cep.errors",
    "InputError": "uncertain_cep.errors",
    "IndexBuildError": "uncertain_cep.errors",
    "IndexFormatError": "uncertain_cep.errors",
    "QueryParseError": "uncertain_cep.errors",
    "QueryError": "uncertain_cep.errors",
    "PlanningError": "uncertain_cep.errors",
    "InvalidOptionError": "uncertain_cep.errors",
    "UsageError": "uncertain_cep.errors",
    "AnswerTooLargeError": "uncertain_cep.errors",
    "FileWriteError": "uncertain_cep.errors",
    "MissingDependencyError": "uncertain_cep.errors",
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
