"""The Spark pipeline: building an index from archive files, and querying an index by
time slices. Spark is imported only when a job runs."""

from uncertain_cep.pipeline.build_job import BadInputPolicy, BuildSummary, build_index_spark

__all__ = ["BadInputPolicy", "BuildSummary", "build_index_spark"]
