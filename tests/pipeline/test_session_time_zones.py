"""A Spark session's time zone never moves an instant (issue "No wrong answer at the
edges", item 1): every source, built in a session of any zone, answers the in-process
build's instants, on classic Spark and on Spark Connect."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from zone_cases import ZONES, check_every_source, check_matches_in_every_zone


def test_every_source_in_every_session_zone_answers_the_in_process_instants(spark,
                                                                             tmp_path):
    done = check_every_source(spark, tmp_path)
    assert len(done) == 4 * len(ZONES)


def test_part_b_matches_on_spark_answer_the_same_instants_in_every_session_zone(spark):
    assert check_matches_in_every_zone(spark) == len(ZONES)


CONNECT = textwrap.dedent("""
    import sys
    from pathlib import Path

    from pyspark.sql import SparkSession

    from zone_cases import check_every_source, check_matches_in_every_zone

    try:
        spark = SparkSession.builder.remote("local[1]").getOrCreate()
    except Exception as e:
        print("CANNOT-START", type(e).__name__, str(e).splitlines()[0][:300])
        sys.exit(0)
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    print("DONE", len(check_every_source(spark, Path(sys.argv[1]))),
          check_matches_in_every_zone(spark))
    spark.stop()
""")


def test_every_source_in_every_session_zone_answers_the_same_on_spark_connect(tmp_path):
    missing = [m for m in ("grpc", "grpc_status", "google.protobuf", "zstandard")
               if importlib.util.find_spec(m.split(".")[0]) is None]
    if missing:
        pytest.skip(f"Spark Connect's client needs {missing}")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]),
                                           str(Path(__file__).parent),
                                           os.environ.get("PYTHONPATH", "")]))
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run([sys.executable, "-c", CONNECT, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout.strip().splitlines()
    if out and out[-1].startswith("CANNOT-START"):
        pytest.skip(f"a local Spark Connect server cannot start here: {out[-1]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out[-1] == f"DONE {4 * len(ZONES)} {len(ZONES)}"
