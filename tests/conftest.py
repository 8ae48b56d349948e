"""Shared test setup: versions in the report header and hypothesis profiles.

Profiles: ``dev`` (the default, also in CI, so that CI stays within its time budget) runs
20 examples per property; ``thorough`` runs 300. Choose one with
``HYPOTHESIS_PROFILE=thorough``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from hypothesis import HealthCheck, settings

# Fixtures every test module may ask for: ``s3``, an S3-compatible server on 127.0.0.1.
pytest_plugins = ["s3_server", "wheel_build"]

settings.register_profile("thorough", max_examples=300, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.filter_too_much])
# 15 examples per property test (hypothesis' default is 100; 40 until the shard tests, a
# real cluster with lost workers among them, took CI past 10 minutes; 30 until the Spark
# build to S3 with lost workers did; 20 until the answer forms' tests, top-k, counts and
# streams against the oracle, did) keep a fresh CI run near 10 minutes on 2 cores;
# HYPOTHESIS_PROFILE=thorough runs 300, derandomised.
# Properties that ask for more examples of their own were halved on 2026-12-07
# (300 -> 100, 60 -> 30, 40 -> 20): the suite took 612 s on 2 cores with them.
settings.register_profile("dev", max_examples=15, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The Spark sessions the tests start, and the commands they run, use the JVM class archive
# (pipeline/class_archive.py) where users' sessions keep it, in the user's cache: it is
# recorded once per Java build and Spark installation of the machine (about 15 s of one
# core, after the first session's JVM exits), and every later JVM start maps it. Measured
# on three files of Spark subprocess tests: 66.6 s without it, 53.0 s with it.
# tests/pipeline/test_class_archive.py records one in a folder of its own and checks a
# session maps it.

# Working copies of the indexes the tests write go to a folder of the test run's own
# (set before any Spark session starts, so executors inherit it), not the user's cache.
if "UNCERTAIN_CEP_CACHE" not in os.environ:
    _cache = tempfile.mkdtemp(prefix="uncertain-cep-test-cache-")
    os.environ["UNCERTAIN_CEP_CACHE"] = _cache
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)


def pytest_report_header(config: object) -> list[str]:
    import pyarrow
    import rtree

    try:
        import pyspark

        spark = pyspark.__version__
    except ImportError:
        spark = "not installed"
    sidx = rtree.core.rt.SIDX_Version().decode()
    return [f"uncertain-cep: Spark {spark}, pyarrow {pyarrow.__version__}, "
            f"rtree {rtree.__version__}, libspatialindex {sidx}"]


import pytest  # noqa: E402


@pytest.fixture(scope="module")
def shared():
    """The shared real data sets (tests/shared_data.py); skips when they are absent."""
    from shared_data import SHARED

    if not SHARED.is_dir():
        pytest.skip(f"the shared UCI data sets are not at {SHARED} (they sit beside the "
                    "repository, in ../shared/datasets)")
    return SHARED


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session: each xdist worker is a session
    of its own, so at most one per worker, started by the first test that needs it."""
    from uncertain_cep.pipeline.session import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


# The slowest tests (each 10 s or more: real processes, Spark jobs, many examples) run
# first, so that the two workers end on short tests (with --dist worksteal the idle one
# takes over half of the other's queue) instead of one waiting for the other's last
# long test.
_SLOW_FIRST = (   # longest first (a run's --durations list)
    "test_executors_with_empty_kernel_caches_answer_from_the_wheels_kernels",
    "test_a_sharded_build_and_its_query_survive_lost_workers_on_a_cluster",
    "test_a_spark_build_to_s3_survives_lost_workers_publishes_last_and_a_killed_one_changes_nothing",
    "test_build_query_and_match_run_on_spark_connect",
    "test_builds_and_queries_on_spark_print_no_error_and_no_java_trace",
    "test_demo_runs_as_a_quiet_process_and_writes_reports_equal_to_the_api",
    "test_a_real_session_records_the_archive_and_the_next_one_maps_it",
    "test_a_build_killed_mid_write_leaves_nothing_that_opens",
    "test_every_source_in_sessions_of_any_zone_answers_the_in_process_instants",
    "test_spark_index_equals_the_in_process_index",
    "test_query_spark_takes_a_file_uri",
    "test_a_worker_without_the_package_names_the_missing_module_and_the_fix",
    "test_a_sharded_spark_index_answers_as_the_in_process_index",
    "test_cli_match_on_parquet_equals_uc_match",
    "test_uc_query_answers_query_spark_rows_in_its_order_and_schema",
    "test_ctrl_c_anywhere_in_a_query_is_a_prompt_keyboard_interrupt_and_the_index_answers",
    "test_first_and_last_instants_kept_from_the_parent_equal_possible_worlds",
    "test_part_b_matches_on_spark_answer_the_same_instants_in_every_session_zone",
    "test_ctrl_c_on_the_command_line_prints_one_line_and_exits_130",
    "test_answers_do_not_depend_on_where_batches_are_cut",
    "test_a_slice_with_its_halo_reads_the_rows_the_old_engine_read",
    "test_opens_during_rebuilds_get_a_whole_old_or_new_index",
)
_SLOW_RANK = {name: rank for rank, name in enumerate(_SLOW_FIRST)}


def pytest_collection_modifyitems(config: object, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: _SLOW_RANK.get(getattr(item, "originalname", item.name),
                                               len(_SLOW_RANK)))
