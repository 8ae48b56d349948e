"""What Spark SQL's table functions cost against the Python API (issue 45, item 4).

In one local session (``--master``, default ``local[2]``), side by side:

* part A: ``SELECT * FROM uc_query(...)`` (one Python worker) against
  ``uc.query_spark`` (time slices over the task slots) and the in-process engine, on a
  synthetic archive of ``--events`` events;
* part B: ``SELECT * FROM uc_match(TABLE(cars), ...)`` (rows one at a time into the
  function) against ``uc.match_spark`` (Arrow batches), on ``--rows`` point events of
  ``--keys`` partition keys.

Each Spark side is timed to a full count of its answer (``.count()`` after a warm-up
run of each), best of ``--runs``; every side must give the same number of rows.

Usage::

    .venv/bin/python bench/bench_sql_functions.py --events 200000 --rows 400000

Writes ``bench/results/sql_functions.json`` and the ``sql-functions`` section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql.functions import udtf  # noqa: E402
from pyspark.sql.udtf import UserDefinedTableFunction  # noqa: E402

import uncertain_cep as uc  # noqa: E402
from bench.doc_sections import replace_section, write_json  # noqa: E402
from uncertain_cep.datasets.synthetic import generate_synthetic  # noqa: E402
from uncertain_cep.pipeline.session import spark_session  # noqa: E402
from uncertain_cep.pipeline.sql_functions import MatchFunction, QueryFunction  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "sql_functions.json"
DOC = ROOT / "docs" / "benchmarks.md"
QUERY = ("PATTERN SEQ(A, B) DEFINE A AS a0 < -1.5, B AS a0 > 1.5 WITHIN 20 "
         "CONFIDENCE 0.05")
MATCH = "PARTITION BY car DEFINE A AS accel > 8, B AS speed > 70 PATTERN A overlaps B"


def _best(run: Callable[[], int], runs: int) -> tuple[float, int]:
    run()                                  # warm-up: workers started, kernels loaded
    times, rows = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        rows = run()
        times.append(time.perf_counter() - t)
    return min(times), rows


def _cars(rows: int, keys: int) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    per = rows // keys
    return pd.DataFrame({"car": np.repeat(np.arange(keys), per),
                         "time": np.tile(np.arange(per), keys),
                         "accel": rng.integers(0, 12, per * keys),
                         "speed": rng.integers(40, 90, per * keys)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    spark = spark_session(args.master)
    # The functions as registered, and Arrow-optimised twins for comparison.
    for name, cls in (("uc_query_arrow", QueryFunction), ("uc_match_arrow", MatchFunction)):
        spark.udtf.register(name, cast(UserDefinedTableFunction, udtf(cls, useArrow=True)))
    out: dict[str, Any] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores",
                           "python": platform.python_version(), "master": args.master,
                           "date": date.today().isoformat()}
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "ix"
        archive = generate_synthetic(args.events, groups=max(1, args.events // 1000),
                                     f=(2, 6), seed=1)
        idx = uc.build_index(archive)
        idx.save(index)
        local_s, local_rows = _best(lambda: len(idx.query(QUERY)), args.runs)
        api_s, api_rows = _best(
            lambda: uc.query_spark(str(index), QUERY, spark=spark).count(), args.runs)
        sql_s, sql_rows = _best(
            lambda: spark.sql(f"SELECT * FROM uc_query('{index}', '{QUERY}')").count(),
            args.runs)
        arrow_s, arrow_rows = _best(
            lambda: spark.sql(f"SELECT * FROM uc_query_arrow('{index}', '{QUERY}')").count(),
            args.runs)
        assert local_rows == api_rows == sql_rows == arrow_rows, (local_rows, api_rows,
                                                                 sql_rows, arrow_rows)
        out["query"] = {"events": args.events, "rows": sql_rows, "local_seconds": local_s,
                        "query_spark_seconds": api_s, "uc_query_seconds": sql_s,
                        "uc_query_arrow_seconds": arrow_s}
        print(out["query"], flush=True)

        frame = spark.createDataFrame(_cars(args.rows, args.keys))
        frame.createOrReplaceTempView("bench_cars")
        frame.cache().count()
        api_s, api_rows = _best(lambda: uc.match_spark(frame, MATCH, spark=spark).count(),
                                args.runs)
        sql_s, sql_rows = _best(
            lambda: spark.sql(f"SELECT * FROM uc_match(TABLE(bench_cars), '{MATCH}')")
            .count(), args.runs)
        arrow_s, arrow_rows = _best(
            lambda: spark.sql(f"SELECT * FROM uc_match_arrow(TABLE(bench_cars), '{MATCH}')")
            .count(), args.runs)
        assert api_rows == sql_rows == arrow_rows, (api_rows, sql_rows, arrow_rows)
        out["match"] = {"rows": args.rows, "keys": args.keys, "matches": sql_rows,
                        "match_spark_seconds": api_s, "uc_match_seconds": sql_s,
                        "uc_match_arrow_seconds": arrow_s}
        print(out["match"], flush=True)
    write_json(RESULTS, out, indent=2)
    q, m = out["query"], out["match"]
    section = (
        f"<!-- sql-functions:start (written by bench/bench_sql_functions.py on {out['date']}, "
        f"{out['machine']}, Python {out['python']}, {args.master}) -->\n"
        f"Best of {args.runs} runs after a warm-up, each to a full `.count()` in one session; "
        "every side counts the same rows.\n\n"
        "| work | Python API | SQL function | SQL / API | Arrow-optimised SQL function |\n"
        "|---|---:|---:|---:|---:|\n"
        f"| part A, {q['events']:,} events, {q['rows']:,} answers | "
        f"`query_spark` {q['query_spark_seconds']:.2f} s (in process: "
        f"{q['local_seconds']:.2f} s) | `uc_query` {q['uc_query_seconds']:.2f} s | "
        f"{q['uc_query_seconds'] / q['query_spark_seconds']:.2f} | "
        f"{q['uc_query_arrow_seconds']:.2f} s |\n"
        f"| part B, {m['rows']:,} rows of {m['keys']} keys, {m['matches']:,} matches | "
        f"`match_spark` {m['match_spark_seconds']:.2f} s | `uc_match` "
        f"{m['uc_match_seconds']:.2f} s | "
        f"{m['uc_match_seconds'] / m['match_spark_seconds']:.2f} | "
        f"{m['uc_match_arrow_seconds']:.2f} s |\n"
        "<!-- sql-functions:end -->")
    replace_section(DOC, "sql-functions", "Spark SQL's table functions", section)
    spark.stop()


if __name__ == "__main__":
    main()
