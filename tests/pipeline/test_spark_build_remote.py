"""A Spark build writing straight to object storage, against a real S3-compatible server
(moto's server mode) on 127.0.0.1: the executors upload their pieces and shards, the
driver publishes the version last. A build killed on the driver leaves the old index
current, and the next build deletes what it uploaded; tasks that lose their Python
worker midway are retried and the index is the one an undisturbed build writes.

The builds run as the command line, in processes of their own: their Spark (and its
Python workers) start with the environment that points them at the server, as a
cluster's executors are given credentials for the store."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from answer_checks import assert_same_answer
from spark_workers import kill_job_when, kill_workers_at

import uncertain_cep as uc
from uncertain_cep.index.store.manifest_check import read_manifest
from uncertain_cep.index.store.reader import open_reader

pafs = pytest.importorskip("pyarrow.fs")
QUERY = ("PATTERN SEQ(A, NOT C, B) DEFINE A AS x > 0.5, B AS x < -0.5, C AS x > 1.5 "
         "WITHIN 40 CONFIDENCE 0.05")


def _archive(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 20 * n, n))
    return pd.DataFrame({"event_id": range(n), "group": rng.integers(0, 12, n), "t_lo": t,
                         "t_hi": t + rng.integers(0, 6, n), "x": rng.normal(size=n)})


def _build(source, out: str, *more: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "uncertain_cep.cli", "build", str(source),
                             "--out", out, "--master", "local[2]", *more],
                            env=dict(os.environ, PYTHONUNBUFFERED="1"),
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _objects(fs, prefix: str) -> list[str]:
    return sorted(f.path[len(prefix) + 1:] for f in fs.get_file_info(
        pafs.FileSelector(prefix, allow_not_found=True, recursive=True))
        if f.type == pafs.FileType.File)


def test_a_spark_build_to_s3_survives_lost_workers_publishes_last_and_a_killed_one_changes_nothing(
        s3, monkeypatch, tmp_path):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    old_df, df = _archive(1, 600), _archive(2, 6000)
    # A repeated event id: its rows, set aside by the driver's check, uploaded from a task.
    df.loc[[10, 11], "event_id"] = 5
    df.to_parquet(tmp_path / "in.parquet")
    old = uc.build_index(old_df)
    old.save("s3://bucket/ix")
    before = _objects(s3, "bucket/ix")

    # Killed on the driver once its tasks have uploaded pieces of the new version.
    proc = _build(tmp_path / "in.parquet", "s3://bucket/ix", "--shard-events", "1500",
                  "--on-bad-rows", "report")
    kill_job_when(proc, lambda: any("/_work/" in n for n in _objects(s3, "bucket/ix")), 240)
    after = _objects(s3, "bucket/ix")
    assert set(before) < set(after)          # a new version's pieces, never named
    assert s3.open_input_stream("bucket/ix/_latest").read() == \
        _pointer_of(before, s3)
    assert_same_answer(uc.open_index("s3://bucket/ix").query(QUERY), old.query(QUERY))

    # Built to the end: executors upload the shards, the driver the manifest and pointer;
    # in the same session, an empty index (one directory). A Python worker is killed in
    # a group task and in a shard task (each retried once: local[2,2]); the tasks'
    # scratch directories are in a folder of the test's own.
    (tmp_path / "empty").mkdir()
    df.head(0).to_parquet(tmp_path / "empty" / "part-0.parquet")
    (tmp_path / "scratch").mkdir()
    proc = subprocess.Popen([sys.executable, "-c", _JOB, str(tmp_path)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1",
                                     TMPDIR=str(tmp_path / "scratch")))
    # A group task's pieces are in temporary files until it ends; a shard task writes
    # its columns before its manifest.
    killed, out, _ = kill_workers_at(proc, tmp_path / "scratch",
                                     ["uncertain-cep-task-*/shards/*/*/.part-*",
                                      "uncertain-cep-task-*/_work/columns/*.npy"], 300)
    assert proc.returncode == 0, out[-4000:]
    assert len(killed) == 2, f"only killed at {killed}: the build went too fast"
    names = _objects(s3, "bucket/ix")
    assert not [n for n in names if "/_work/" in n]
    versions = {n.split("/")[1] for n in names if n.startswith("_versions/")}
    assert len(versions) == 2                # the new one and the one it replaced
    manifest = read_manifest(open_reader("s3://bucket/ix").root)
    assert len(manifest.shards) >= 3 and manifest.rejected.rows == 3
    expected = uc.build_index(df.drop(index=[5, 10, 11]))
    assert_same_answer(uc.open_index("s3://bucket/ix").query(QUERY), expected.query(QUERY))
    # One directory (no shards): finished by one task, from everything under _work/.
    empty = read_manifest(open_reader("s3://bucket/empty").root)
    assert not empty.shards and empty.counts.events == 0
    assert len(uc.open_index("s3://bucket/empty").query(QUERY)) == 0


_JOB = """
import sys
import uncertain_cep as uc
from uncertain_cep.pipeline.session import spark_session

folder = sys.argv[1]
spark = spark_session("local[2,2]")
for out, more in [("ix", {"shard_events": 1500}), ("empty", {})]:
    source = folder + ("/empty" if out == "empty" else "/in.parquet")
    uc.build_index_spark(source, "s3://bucket/" + out, spark=spark, on_bad_rows="report",
                         log=lambda _: None, **more)
"""


def _pointer_of(names: list[str], fs) -> bytes:
    """The pointer as it was (the one version among ``names``)."""
    (version,) = {n.split("/")[1] for n in names if n.startswith("_versions/")}
    return version.encode()
