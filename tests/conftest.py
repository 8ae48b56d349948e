"""Shared test setup: versions in the report header and hypothesis profiles.

Profiles: ``dev`` (the default, also in CI, so that CI stays within its time budget) runs
60 examples per property; ``thorough`` runs 300. Choose one with
``HYPOTHESIS_PROFILE=thorough``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("thorough", max_examples=300, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.filter_too_much])
settings.register_profile("dev", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


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
