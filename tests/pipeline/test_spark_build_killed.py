"""A Spark build killed mid-write leaves nothing that opens. The build runs in its own
process (and JVM), so this test needs no shared session and runs on any test worker."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from spark_workers import kill_job_when

import uncertain_cep as uc
from uncertain_cep.errors import IndexFormatError


# A sharded build's draft is the same draft (its shards inside): one case, the sharded
# one (tests/pipeline/test_local_cluster.py kills tasks of a sharded build, not the driver).
@pytest.mark.parametrize("shard_events", [4000])
def test_a_build_killed_mid_write_leaves_nothing_that_opens(tmp_path, shard_events):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    generate_synthetic(20_000, groups=8, seed=3).to_parquet(tmp_path / "in.parquet")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    shards = ["--shard-events", str(shard_events)] if shard_events else []
    proc = subprocess.Popen([sys.executable, "-m", "uncertain_cep.cli", "build",
                             str(tmp_path / "in.parquet"), "--out", str(tmp_path / "ix"),
                             "--master", "local[1]", *shards], env=env,
                            start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Where tasks write table files into the draft (a sharded build: into its shards).
    where = ".ix.tmp-*/shards/*/*" if shard_events else ".ix.tmp-*/*"
    # Kill it once tasks have started writing table files into the draft.
    kill_job_when(proc, lambda: any(tmp_path.glob(f"{where}/*.parquet*")) or any(
        tmp_path.glob(f"{where}/.part-*")), 240)
    assert not (tmp_path / "ix").exists()
    with pytest.raises(IndexFormatError):
        uc.open_index(tmp_path / "ix")
    drafts = list(tmp_path.glob(".ix.tmp-*"))
    assert drafts and all(not (d / "manifest.json").exists() for d in drafts)
    with pytest.raises(IndexFormatError, match=r"no manifest\.json"):
        uc.open_index(drafts[0])


