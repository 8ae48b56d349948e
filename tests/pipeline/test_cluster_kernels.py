"""Spark workers never compile (issue "No compile wait", item 2): under
``local-cluster[2,1,1024]``, with the package installed from its wheel
(tests/wheel_build.py) and, per executor, a kernel cache directory that nothing has
used, the executors' Python workers answer a query's slices, with NOT among its items,
loading the kernels the wheel ships: the slices' counters report no second of compiling,
and the answer is the in-process one. With UNCERTAIN_CEP_WORKER_DAEMON=1 the workers
were forked by the package's daemon (uncertain_cep/pipeline/worker_daemon.py), which
had loaded the query's modules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from answer_checks import assert_same_pairs

import uncertain_cep as uc

QUERY = ("PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -1, N AS a0 BETWEEN -0.1 AND 0.1, "
         "B AS a0 > 1 WITHIN 20 CONFIDENCE 0.05")

_JOB = """
import json, sys
import uncertain_cep as uc
from uncertain_cep.pipeline.session import spark_session

index, query = sys.argv[1:3]
spark = spark_session("local-cluster[2,1,1024]")
answer = uc.query_index(index, query, engine="spark")

def where(batches):
    import os
    import pandas as pd
    import uncertain_cep
    from uncertain_cep import kernel_cache
    # The process that forked this worker: the package's daemon, still itself (it
    # replaces itself with pyspark's where it cannot fork safely).
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        daemon = f.read().replace(b"\\0", b" ").decode()
    for batch in batches:
        yield pd.DataFrame({"package": [uncertain_cep.__file__] * len(batch),
                            "cache": [str(kernel_cache.kernel_cache_dir().resolve())]
                                     * len(batch),
                            "cwd": [os.getcwd()] * len(batch), "daemon": daemon})

seen = spark.range(4, numPartitions=4).mapInPandas(
    where, "package string, cache string, cwd string, daemon string")
print("RESULT", json.dumps({
    "compile_seconds": answer.stats.compile_seconds, "slices": answer.stats.slices,
    "places": sorted({(r[0], r[1], r[2]) for r in seen.distinct().collect()}),
    "daemons": sorted({r[3] for r in seen.collect()}),
    "answer": [[list(map(int, e)), c] for e, c in zip(answer["events"],
                                                     answer["confidence"])]}))
"""


def test_executors_with_empty_kernel_caches_answer_from_the_wheels_kernels(installed,
                                                                             tmp_path):
    from uncertain_cep.datasets.synthetic import generate_synthetic

    df = generate_synthetic(3000, groups=4, d=1, seed=7)
    idx = uc.build_index(df)
    idx.save(tmp_path / "ix")
    # The executors inherit the driver's environment (local-cluster starts them from its
    # JVM): the installed wheel ahead of the checkout, and a relative cache directory,
    # which each executor's Python workers find in their executor's own working folder
    # (a new one per application and executor): one cache per executor, nothing in it.
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(installed),
               UNCERTAIN_CEP_KERNEL_CACHE="kernels", UNCERTAIN_CEP_WORKER_DAEMON="1")
    proc = subprocess.run([sys.executable, "-c", _JOB, str(tmp_path / "ix"), QUERY],
                          capture_output=True, text=True, timeout=480, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    got = json.loads(proc.stdout.split("RESULT", 1)[1].strip().splitlines()[0])
    # The workers ran the wheel's package, each with its executor's cache (new with the
    # application, now holding the wheel's copy), never the driver's.
    places = got["places"]
    try:
        assert places and all(package.startswith(str(installed)) for package, _, _ in places)
        for _, folder, cwd in places:
            assert Path(folder).parent == Path(cwd) / "kernels" != tmp_path / "kernels"
            assert any(Path(folder).iterdir()), folder
    finally:
        for _, _, cwd in places:
            shutil.rmtree(Path(cwd) / "kernels", ignore_errors=True)
    assert got["slices"] >= 2
    assert got["daemons"] and all("uncertain_cep.pipeline.worker_daemon" in d
                                  for d in got["daemons"]), got["daemons"]
    assert "running pyspark's daemon instead" not in proc.stderr
    assert got["compile_seconds"] == 0.0
    assert "compiling the query kernels" not in proc.stderr
    want = idx.query(QUERY)
    assert len(want) > 0
    assert_same_pairs(got["answer"], want)
