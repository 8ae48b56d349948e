"""A session's first Spark query at about its warm speed (issue "No compile wait"): the
package's warm-up runs the query job's plan once ahead, with no data
(uncertain_cep/pipeline/warm_up.py), once per session, in the background; a build warms
its session when it ends, ``uc.warm_up_spark`` on request; a query waits for a running
warm-up rather than competing with it; the command line and
``UNCERTAIN_CEP_SPARK_WARM_UP=0`` turn the automatic ones off. What it is for is
measured in bench/bench_first_query.py (docs/benchmarks.md), not timed here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pandas as pd
import pytest
from answer_checks import assert_same_pairs

import uncertain_cep as uc
from uncertain_cep.pipeline import session as session_module
from uncertain_cep.pipeline import warm_up
from uncertain_cep.pipeline.query_job import query_spark_rows

QUERY = "PATTERN SEQ(A, NOT N, B) DEFINE A AS x < 2, N AS x = 2, B AS x > 2 WITHIN 6"
ARCHIVE = pd.DataFrame({"event_id": range(8), "group": [0, 0, 0, 0, 1, 1, 1, 1],
                        "t_lo": [1, 2, 3, 5, 1, 2, 4, 6], "t_hi": [2, 4, 5, 6, 3, 3, 5, 8],
                        "x": [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 1.0]})


@pytest.fixture
def never_warmed(monkeypatch):
    """The shared session as if no warm-up had ever started on it (an earlier test's
    build may have warmed it)."""
    monkeypatch.setattr(warm_up, "_warm_ups", weakref.WeakKeyDictionary())
    monkeypatch.delenv(warm_up.WARM_UP_ENV, raising=False)
    monkeypatch.setattr(session_module, "WARM_UP", True)


def test_a_warm_up_runs_the_query_plan_without_an_index(spark):
    assert warm_up.warm_up(spark) > 0


def test_a_session_warms_up_once_and_its_next_query_waits_for_it(spark, never_warmed,
                                                                   tmp_path):
    index = uc.build_index(ARCHIVE)
    index.save(tmp_path / "ix")
    thread = warm_up.start_warm_up(spark)
    assert thread is not None and thread.daemon
    assert warm_up.start_warm_up(spark) is None          # once per session
    rows, _ = query_spark_rows(tmp_path / "ix", QUERY, spark=spark)
    assert not thread.is_alive()                         # the query waited for it
    assert warm_up.wait_for_warm_up(spark) == 0.0
    expected = index.query(QUERY)
    assert len(expected) > 0
    assert_same_pairs([(list(r[0]), r[1]) for r in rows], expected)


def test_a_build_warms_its_session_when_it_ends(spark, never_warmed, tmp_path):
    uc.build_index_spark(ARCHIVE, tmp_path / "ix", spark=spark, log=lambda _: None)
    assert spark in warm_up._warm_ups
    warm_up.wait_for_warm_up(spark)


def test_the_environment_and_the_command_line_turn_the_automatic_warm_ups_off(
        spark, never_warmed, monkeypatch):
    for off in ("0", "false", " OFF ", "no"):
        monkeypatch.setenv(warm_up.WARM_UP_ENV, off)
        assert not warm_up.warm_up_enabled()
        assert warm_up.start_warm_up(spark) is None
    assert spark not in warm_up._warm_ups
    # Asked for, it runs anyway.
    assert uc.warm_up_spark(spark, wait=True) >= 0.0
    assert spark in warm_up._warm_ups
    monkeypatch.setenv(warm_up.WARM_UP_ENV, "1")
    assert warm_up.warm_up_enabled()
    from uncertain_cep.cli import main

    assert main(["datasets", "list"]) == 0
    assert session_module.WARM_UP is False and not warm_up.warm_up_enabled()


# A session of its own, one task slot: its one Python worker, reused by every job, shows
# what it holds before and after the warm-up.
_JOB = """
import json, sys
import uncertain_cep as uc
from uncertain_cep.pipeline.session import spark_session

def probe(batches):
    import os, sys
    import pandas as pd
    loaded = 0
    if "numba" in sys.modules:
        from numba.core.dispatcher import Dispatcher
        for name, module in list(sys.modules.items()):
            if name.startswith("uncertain_cep.") and module is not None:
                loaded += sum(1 for v in vars(module).values()
                              if isinstance(v, Dispatcher) and v.overloads)
    for batch in batches:
        yield pd.DataFrame({"pid": [os.getpid()] * len(batch),
                            "modules": ["uncertain_cep.pipeline.time_slices" in sys.modules]
                                       * len(batch),
                            "kernels": [loaded] * len(batch)})

spark = spark_session("local[1]")
schema = "pid long, modules boolean, kernels long"
before = spark.range(1, numPartitions=1).mapInPandas(probe, schema).collect()[0]
seconds = uc.warm_up_spark(spark, wait=True)
after = spark.range(1, numPartitions=1).mapInPandas(probe, schema).collect()[0]
print("RESULT", json.dumps({"before": list(before), "after": list(after),
                            "seconds": seconds}))
spark.stop()
"""


def test_a_warmed_up_python_worker_holds_the_query_modules_and_their_kernels(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]),
               UNCERTAIN_CEP_WORKER_DAEMON="0")
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run([sys.executable, "-c", _JOB], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.split("RESULT", 1)[1].strip().splitlines()[0])
    (pid, modules, kernels), after = got["before"], got["after"]
    assert not modules and kernels == 0       # pyspark's daemon: a bare worker
    assert after[0] == pid                    # the same worker, reused
    assert after[1] and after[2] > 0, got     # the query's modules, kernels loaded
    assert got["seconds"] > 0
