"""A Spark build killed mid-write leaves nothing that opens. The build runs in its own
process (and JVM), so this test needs no shared session and runs on any test worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

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
    deadline = time.monotonic() + 240
    # Where tasks write table files into the draft (a sharded build: into its shards).
    where = ".ix.tmp-*/shards/*/*" if shard_events else ".ix.tmp-*/*"
    try:
        # Kill it once tasks have started writing table files into the draft.
        while time.monotonic() < deadline and proc.poll() is None:
            if any(tmp_path.glob(f"{where}/*.parquet*")) or any(
                    tmp_path.glob(f"{where}/.part-*")):
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the build finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert not (tmp_path / "ix").exists()
    with pytest.raises(IndexFormatError):
        uc.open_index(tmp_path / "ix")
    drafts = list(tmp_path.glob(".ix.tmp-*"))
    assert drafts and all(not (d / "manifest.json").exists() for d in drafts)
    with pytest.raises(IndexFormatError, match=r"no manifest\.json"):
        uc.open_index(drafts[0])


