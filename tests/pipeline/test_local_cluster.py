"""The build and the query on a real cluster, with faults: Spark's
``local-cluster[2,1,1024]`` master starts two executor JVMs, each with its own Python
workers (from this environment's package), so nothing may depend on sharing the driver's
process or memory. While it builds, the test kills a Python worker twice from outside, as
a lost executor would: once while a group task writes its pieces into the shards, once
while a shard task finishes its shard. Spark retries those tasks (four attempts each on a
cluster), and the index must be the one an undisturbed build writes: every shard's
files checked by its manifest, no leftover of a killed attempt, and the answers of the
in-process index. The job runs in a process of its own (a second master cannot join the
test session's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from answer_checks import assert_same_answer, assert_same_pairs
from index_checks import assert_node_columns_match_forests
from spark_workers import kill_workers_at

import uncertain_cep as uc
from uncertain_cep.index.store.manifest_check import read_manifest

QUERY = ("PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -1.5, N AS a0 BETWEEN -0.1 AND 0.1, "
         "B AS a0 > 1.5 WITHIN 30 CONFIDENCE 0.05")

_JOB = """
import json, os, sys
import uncertain_cep as uc
from uncertain_cep.pipeline.session import spark_session

source, out, query = sys.argv[1:4]
spark = spark_session("local-cluster[2,1,1024]")
summary = uc.build_index_spark(source, out, spark=spark, shard_events=3000,
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


def test_a_sharded_build_and_its_query_survive_lost_workers_on_a_cluster(tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    df = generate_synthetic(12_000, groups=6, d=1, seed=5)
    df.to_parquet(tmp_path / "in.parquet", index=False)
    proc = subprocess.Popen([sys.executable, "-c", _JOB, str(tmp_path / "in.parquet"),
                             str(tmp_path / "ix"), QUERY], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    # A group task's pieces are in temporary files until it ends; a shard task writes
    # its columns before its manifest.
    killed, out, err = kill_workers_at(proc, tmp_path,
                                       [".ix.tmp-*/shards/*/*/.part-*",
                                        ".ix.tmp-*/shards/*/_work/columns/*.npy"], 420)
    assert proc.returncode == 0, err[-4000:]
    assert len(killed) == 2, f"only killed at {killed}: the build went too fast"
    got = json.loads(out.split("RESULT", 1)[1].strip().splitlines()[0])
    # Two executors, their Python workers other processes than the driver.
    assert len(got["executors"]) == 2 and "" not in got["executors"], got["executors"]
    assert got["driver"] not in got["workers"]
    root = tmp_path / "ix"
    manifest = read_manifest(root)
    assert got["shards"] == len(manifest.shards) >= 4
    assert manifest.counts.events == len(df)
    assert not [p for p in root.rglob(".*") if p.is_file()]     # no attempt left behind
    for shard in manifest.shards:
        read_manifest(root / shard.path)                       # every file as listed
        assert_node_columns_match_forests(uc.open_index(root / shard.path)._index)
    # The in-process engine on the whole archive (held to the possible-worlds baseline by
    # the property tests; these events have too many worlds to list).
    want = uc.build_index(df).query(QUERY)
    assert len(want) > 10 and (want["confidence"] < 1).any()
    assert_same_answer(uc.open_index(root).query(QUERY), want)
    assert_same_pairs(got["answer"], want)
