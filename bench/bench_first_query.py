"""A fresh install's first queries (issue "No compile wait"): the README's notebook example
in a new process with an empty kernel cache, from a wheel as every build makes it
(``pip wheel``: the kernels compiled inside it, build_backend/uncertain_cep_build.py) and
from one built with ``-C kernels=none`` (compiled on first use), side by side in one run.

Each wheel is installed into a folder of its own (``pip install --no-deps --target``; its
dependencies from this environment), and each run is a new process with a new, empty
``UNCERTAIN_CEP_KERNEL_CACHE``: what a notebook kernel on a new machine, or an executor
of a new node, meets. Timed: the build of the sample's index, the first query, the first
query with a NOT item, and each query again (warm); counted: the kernels the process
compiled and the seconds it spent compiling (uncertain_cep/kernel_cache.py).

Usage: ``.venv/bin/python bench/bench_first_query.py``; writes
``bench/results/first_query.json`` and the ``first_query`` section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.doc_sections import replace_section, write_json  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "first_query.json"
DOC = ROOT / "docs" / "benchmarks.md"
SAMPLE = ROOT / "datasets" / "sample" / "office_rfid.parquet"
QUERY = "PATTERN SEQ(W, E) DEFINE W AS x < 5, E AS x >= 25 WITHIN 4 CONFIDENCE 0.2"
NOT_QUERY = ("PATTERN SEQ(W, NOT M, E) DEFINE W AS x < 5, M AS x BETWEEN 10 AND 20, "
             "E AS x >= 25 WITHIN 4 CONFIDENCE 0.2")

# The README's notebook example, timed step by step.
_CHILD = """
import json, sys, time
t = time.perf_counter()
import pandas as pd, uncertain_cep as uc
from uncertain_cep import kernel_cache
out = {"import_s": time.perf_counter() - t}
t = time.perf_counter()
idx = uc.build_index(pd.read_parquet(sys.argv[1]), group_by="person", max_speed=2.0)
out["build_s"] = time.perf_counter() - t
for name, q in (("first_query", sys.argv[2]), ("first_not_query", sys.argv[3])):
    for run in ("", "_warm"):
        t = time.perf_counter()
        res = idx.query(q)
        out[name + run + "_s"] = time.perf_counter() - t
        out[name + run + "_rows"] = len(res)
        out[name + run + "_reported_s"] = res.stats.seconds
out["kernels_compiled"] = kernel_cache.kernels_compiled()
out["compile_s"] = kernel_cache.compile_seconds()
out["installed_at"] = uc.__file__
print("RESULT " + json.dumps(out))
"""


def build_wheels(work: Path) -> dict[str, Path]:
    """The wheel of scripts/build_wheel.sh and one without kernels, each built from a copy of
    this checkout (setuptools writes build/ and egg-info beside the sources)."""
    for kind in ("shipped", "plain"):
        source = work / f"source-{kind}"
        shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "out", "__pycache__", ".hypothesis", "*.egg-info",
            "_kernels", "dist"))
        if kind == "shipped":
            subprocess.run(["bash", str(source / "scripts" / "build_wheel.sh"),
                            str(work / kind)], check=True, capture_output=True,
                           env={**os.environ, "PYTHON": sys.executable})
        else:
            subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-C", "kernels=none", "-q", "-w",
                            str(work / kind), str(source)], check=True, capture_output=True)
    return {kind: next((work / kind).glob("uncertain_cep-*.whl"))
            for kind in ("shipped", "plain")}


def first_queries(wheel: Path, work: Path, kind: str) -> dict[str, Any]:
    site = work / f"site-{kind}"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, capture_output=True)
    cache = Path(tempfile.mkdtemp(prefix=f"kernels-{kind}-", dir=work))
    env = {**os.environ, "PYTHONPATH": str(site), "UNCERTAIN_CEP_KERNEL_CACHE": str(cache)}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(SAMPLE), QUERY, NOT_QUERY],
                          cwd=work, env=env, capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["installed_at"].startswith(str(site)), result["installed_at"]
    result.update(wheel=kind, process_s=time.perf_counter() - started,
                  wheel_mb=round(wheel.stat().st_size / 1e6, 2),
                  said_compiling="compiling the query kernels" in proc.stderr)
    return result


# The same two queries on Spark under local-cluster[2,1,1024] (real executor processes),
# each executor with a new, empty kernel cache of its own (a relative
# UNCERTAIN_CEP_KERNEL_CACHE, resolved in each executor's new working folder): the
# session's executors up, then its first Python job, timed apart as "session ready":
# either Spark's own start of the Python workers (a job that touches its rows, what any
# PySpark job pays first) or the package's warm-up (uc.warm_up_spark, waited for: it
# starts the workers too, and runs the query's plan once with no data); then each query
# first and again (warm), timed on the driver; compiling as the slices count it.
_SPARK_CHILD = """
import json, sys, time
import pandas as pd, uncertain_cep as uc
from uncertain_cep.pipeline.session import spark_session
uc.build_index(pd.read_parquet(sys.argv[1]), group_by="person",
               max_speed=2.0).save(sys.argv[4], shard_events=120)
spark = spark_session("local-cluster[2,1,1024]")
spark.range(4, numPartitions=4).count()     # executors up before the first query
out = {}
def touch(batches):
    for batch in batches:
        yield batch
t = time.perf_counter()
if sys.argv[5] == "warm-up":
    uc.warm_up_spark(spark, wait=True)
else:
    spark.range(8, numPartitions=8).mapInPandas(touch, "id long").count()
out["python_workers_s"] = time.perf_counter() - t
for name, q in (("first_query", sys.argv[2]), ("first_not_query", sys.argv[3])):
    for run in ("", "_warm"):
        t = time.perf_counter()
        res = uc.query_index(sys.argv[4], q, engine="spark")
        out[name + run + "_s"] = time.perf_counter() - t
        out[name + run + "_rows"] = len(res)
        out[name + run + "_compile_s"] = res.stats.compile_seconds
        out[name + run + "_slices"] = res.stats.slices
# Spark stops Python workers idle for a minute (PythonWorkerFactory): the next query's
# workers are new ones, forked by the executors' daemons.
time.sleep(75)
t = time.perf_counter()
uc.query_index(sys.argv[4], sys.argv[2], engine="spark")
out["after_idle_s"] = time.perf_counter() - t
out["installed_at"] = uc.__file__
print("RESULT " + json.dumps(out))
spark.stop()
"""


def spark_first_queries(wheel: Path, work: Path, kind: str, daemon: bool = True,
                        run_name: str = "", warm_up: bool = True) -> dict[str, Any]:
    """Both queries on Spark, from the installed ``wheel``, executors' caches empty;
    ``daemon``: the package's worker daemon (else pyspark's); ``warm_up``: the session
    made ready by the package's warm-up (else by Spark's own start of its workers)."""
    site = work / f"site-{kind}"
    env = {**os.environ, "PYTHONPATH": str(site), "UNCERTAIN_CEP_KERNEL_CACHE": "kernels",
           "UNCERTAIN_CEP_WORKER_DAEMON": "1" if daemon else "0"}
    ready = "warm-up" if warm_up else "workers"
    run = work / (f"spark-{kind}-{'package' if daemon else 'pyspark'}-daemon-{ready}"
                  f"{run_name}")
    run.mkdir()
    proc = subprocess.run([sys.executable, "-c", _SPARK_CHILD, str(SAMPLE), QUERY, NOT_QUERY,
                           str(run / "index"), ready], cwd=run, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    result = json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])
    assert result["installed_at"].startswith(str(site)), result["installed_at"]
    result["wheel"] = kind
    result["daemon"] = "package's" if daemon else "pyspark's"
    result["ready"] = "package's warm-up" if warm_up else "Spark's workers started"
    return result


def spark_section(rows: list[dict[str, Any]]) -> str:
    lines = [f"<!-- first_query_spark:start (written by bench/bench_first_query.py on "
             f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
             "local-cluster[2,1,1024]) -->",
             "| wheel | worker daemon | session made ready by | ready s | first query s | "
             "warm s "
             "| first / warm | compiling s (slices) | first NOT query s | warm s | "
             "first / warm | compiling s (slices) | first query after 75 s idle s |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        cells = [r["wheel"], r.get("daemon", "pyspark's"),
                 r.get("ready", "Spark's workers started"), f"{r['python_workers_s']:.2f}"]
        for name in ("first_query", "first_not_query"):
            first, warm = r[name + "_s"], r[name + "_warm_s"]
            cells += [f"{first:.2f}", f"{warm:.2f}", f"{first / warm:.2f}",
                      f"{r[name + '_compile_s']:.1f}"]
        cells.append(f"{r['after_idle_s']:.2f}" if "after_idle_s" in r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("<!-- first_query_spark:end -->")
    return "\n".join(lines)


def section(rows: list[dict[str, Any]]) -> str:
    lines = [f"<!-- first_query:start (written by bench/bench_first_query.py on "
             f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}) -->",
             "| wheel | MB | build s | first query s (reported) | first NOT query s "
             "(reported) | warm query s | warm NOT query s | kernels compiled | "
             "compiling s | whole process s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['wheel']} | {r['wheel_mb']} | {r['build_s']:.2f} | "
            f"{r['first_query_s']:.2f} ({r['first_query_reported_s']:.2f}) | "
            f"{r['first_not_query_s']:.2f} ({r['first_not_query_reported_s']:.2f}) | "
            f"{r['first_query_warm_s']:.3f} | {r['first_not_query_warm_s']:.3f} | "
            f"{r['kernels_compiled']} | {r['compile_s']:.1f} | {r['process_s']:.1f} |")
    lines.append("<!-- first_query:end -->")
    return "\n".join(lines)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="uncertain-cep-first-query-") as tmp:
        work = Path(tmp)
        wheels = build_wheels(work)
        rows = [first_queries(wheels[kind], work, kind) for kind in ("shipped", "plain")]
        # The package's worker daemon against pyspark's, each with and without the
        # package's warm-up, side by side, twice each.
        spark_rows = [spark_first_queries(wheels["shipped"], work, "shipped", daemon,
                                          f"-{i}", warm_up)
                      for i in range(2) for daemon in (True, False)
                      for warm_up in (True, False)]
        spark_rows.append(spark_first_queries(wheels["plain"], work, "plain",
                                              warm_up=False))
    for r in [*rows, *spark_rows]:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    assert rows[0]["first_query_rows"] == rows[1]["first_query_rows"]
    assert rows[0]["first_not_query_rows"] == rows[1]["first_not_query_rows"]
    write_json(RESULTS, {"machine": platform.machine(), "rows": rows, "spark": spark_rows},
               indent=1)
    replace_section(DOC, "first_query", "First queries of a fresh install (issue 49)",
                    section(rows))
    replace_section(DOC, "first_query_spark", "First queries of a fresh install (issue 49)",
                    spark_section(spark_rows))


if __name__ == "__main__":
    main()
