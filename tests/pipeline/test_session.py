"""The user's SparkSession is respected: returned as it is, never stopped or moved."""

from __future__ import annotations

import os

import pytest

from uncertain_cep.errors import InputError
from uncertain_cep.pipeline.session import spark_session


def test_a_running_session_is_used_as_it_is_and_never_stopped(spark, monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/their/python")
    assert spark_session() is spark
    assert spark_session(spark.conf.get("spark.master")) is spark
    with pytest.raises(InputError, match="is running in this process"):
        spark_session("local[1]")
    assert spark.range(3).count() == 3          # still running
    assert os.environ["PYSPARK_PYTHON"] == "/their/python"
