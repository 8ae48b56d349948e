"""A build task killed in the middle of its work and retried by Spark yields the same
index as an undisturbed build: a group task writing its pieces into the shards, or a
shard task finishing its shard (issue 47, item 6). The builds run in processes of their
own (``local[1,3]``: one task at a time, three attempts each); the test kills the Python
worker running the task once, from outside, as a lost executor would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import uncertain_cep as uc
from uncertain_cep.index.store.manifest_check import read_manifest

SHARD_EVENTS = "4000"
QUERY = "PATTERN SEQ(A, B) DEFINE A AS a0 < -1.5, B AS a0 > 1.5 WITHIN 20"


def _build(source: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "uncertain_cep.cli", "build", str(source), "--out", str(out),
         "--master", "local[1,3]", "--shard-events", SHARD_EVENTS],
        env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _python_workers() -> list[int]:
    """PIDs of PySpark's forked Python workers (children of a ``pyspark.daemon``)."""
    daemons, parent = set(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        if b"pyspark.daemon" in cmd:
            daemons.add(int(entry))
    return [pid for pid, ppid in parent.items() if ppid in daemons and pid in daemons]


def _shard_files(root: Path) -> dict[str, str]:
    """Every shard's files and their checksums, from the shards' own manifests."""
    return {f"{s.path}/{name}": digest for s in read_manifest(root).shards
            for name, digest in read_manifest(root / s.path).checksums}


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The archive and its index built without a hitch (shared by both cases)."""
    from uncertain_cep.datasets.synthetic import generate_synthetic

    root = tmp_path_factory.mktemp("retry")
    generate_synthetic(12_000, groups=6, d=1, seed=5).to_parquet(root / "in.parquet")
    calm = _build(root / "in.parquet", root / "calm")
    assert calm.wait(timeout=300) == 0, calm.stderr.read().decode()[-3000:]
    return root


@pytest.mark.parametrize("stage", ["group task", "shard task"])
def test_a_task_killed_once_and_retried_gives_the_undisturbed_index(undisturbed, tmp_path,
                                                                   stage):
    calm = undisturbed / "calm"
    proc = _build(undisturbed / "in.parquet", tmp_path / "ix")
    # A group task's pieces are in temporary files until it ends; a shard task writes
    # its columns before its manifest.
    pattern = ("shards/*/*/.part-*" if stage == "group task" else "shards/*/columns/*.npy")
    killed = None
    deadline = time.monotonic() + 300
    try:
        while killed is None and time.monotonic() < deadline and proc.poll() is None:
            if any(tmp_path.glob(f".ix.tmp-*/{pattern}")):
                workers = _python_workers()
                if workers:
                    killed = max(workers)
                    os.kill(killed, signal.SIGKILL)
            time.sleep(0.01)
        assert killed is not None, "the build finished before a task could be killed"
        assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert len(read_manifest(tmp_path / "ix").shards) >= 2
    assert _shard_files(tmp_path / "ix") == _shard_files(calm)
    got, want = (uc.open_index(p).query(QUERY) for p in (tmp_path / "ix", calm))
    assert json.dumps(got.to_dict("list"), default=str) == json.dumps(
        want.to_dict("list"), default=str)
