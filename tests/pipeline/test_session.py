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


class _Configured:
    """A session's configuration alone (all task_slots reads)."""

    def __init__(self, **conf: str) -> None:
        self.conf = self
        self._conf = {k.replace("_", "."): v for k, v in conf.items()}

    def get(self, key: str, default: object = None) -> object:
        return self._conf.get(key, default)


@pytest.mark.parametrize(("master", "slots"), [("local[3]", 3), ("local", 1),
                                               ("local-cluster[2,1,1024]", 2),
                                               ("local-cluster[3, 2, 512]", 6),
                                               ("spark://h:7077", 50)])
def test_task_slots_follow_the_master(master, slots) -> None:
    from uncertain_cep.pipeline.session import task_slots

    assert task_slots(_Configured(spark_master=master)) == slots  # type: ignore[arg-type]
