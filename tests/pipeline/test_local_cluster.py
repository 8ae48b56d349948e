"""The build and the query on a real cluster: Spark's ``local-cluster[2,1,1024]`` master
starts two executor JVMs, each with its own Python workers (from this environment's
package), so nothing may depend on sharing the driver's process or memory. The job runs
in a process of its own (a second master cannot join the test session's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
from answer_checks import assert_same_answer

import uncertain_cep as uc
from uncertain_cep.index.store.manifest_check import read_manifest

QUERY = ("PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -1, N AS a0 BETWEEN -0.2 AND 0.2, "
         "B AS a0 > 1 WITHIN 30 CONFIDENCE 0.05")

_JOB = """
import json, os, sys
import uncertain_cep as uc
from uncertain_cep.pipeline.session import spark_session

source, out, query = sys.argv[1:4]
spark = spark_session("local-cluster[2,1,1024]")
summary = uc.build_index_spark(source, out, spark=spark, shard_events=150,
                               log=lambda _: None)
answer = uc.query_index(out, query, engine="spark")

def where(batches):
    # The Python worker's JVM: up from the worker (forked by pyspark.daemon) to the
    # executor process that started the daemon, and its --executor-id.
    import os
    import pandas as pd

    def parent(pid):
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])

    pid, executor = os.getpid(), ""
    for _ in range(4):
        pid = parent(pid)
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            words = fh.read().split(b"\\0")
        if b"--executor-id" in words:
            executor = words[words.index(b"--executor-id") + 1].decode()
            break
    for batch in batches:
        yield pd.DataFrame({"pid": [os.getpid()] * len(batch),
                            "executor": [executor] * len(batch)})

seen = spark.range(8, numPartitions=8).mapInPandas(where, "pid bigint, executor string")
places = seen.distinct().collect()
print("RESULT", json.dumps({
    "shards": summary.shards, "driver": os.getpid(),
    "workers": sorted({int(r[0]) for r in places}),
    "executors": sorted({r[1] for r in places}),
    "answer": [[list(map(int, e)), c] for e, c in zip(answer["events"], answer["confidence"])]}))
"""


def test_a_sharded_build_and_its_query_run_on_separate_executor_processes(tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    df = generate_synthetic(600, groups=4, d=1, seed=11)
    df.to_parquet(tmp_path / "in.parquet", index=False)
    done = subprocess.run([sys.executable, "-c", _JOB, str(tmp_path / "in.parquet"),
                           str(tmp_path / "ix"), QUERY], capture_output=True, text=True,
                          timeout=480, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.split("RESULT", 1)[1].strip().splitlines()[0])
    # Two executors, their Python workers other processes than the driver.
    assert len(got["executors"]) == 2 and "" not in got["executors"], got["executors"]
    assert got["driver"] not in got["workers"]
    assert got["shards"] == len(read_manifest(tmp_path / "ix").shards) >= 3
    # The in-process engine on the whole archive (held to the possible-worlds baseline by
    # the property tests; 600 events have too many worlds to list).
    want = uc.build_index(df).query(QUERY)
    assert len(want) > 20 and (want["confidence"] < 1).any()
    answer = pd.DataFrame({"events": [tuple(e) for e, _ in got["answer"]],
                           "confidence": [c for _, c in got["answer"]]})
    local = uc.open_index(tmp_path / "ix").query(QUERY)
    assert_same_answer(local, want)
    assert sorted(map(tuple, answer["events"])) == sorted(map(tuple, want["events"]))
    for e, c in zip(answer["events"], answer["confidence"]):
        assert abs(c - dict(zip(want["events"], want["confidence"]))[tuple(e)]) <= 1e-9
