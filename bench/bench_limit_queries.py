"""The paper's pattern-length experiment (bench_queries.py, n = 5..30) asked as
``LIMIT 1000`` (issue 48): every query within the 20 s cap on the batch engine in
selectivity order, and beside it the full answer's row count from ``idx.count`` (its
own cap), where that finishes.

The queries are bench_queries.py's own (the same data sets, seed and random queries of
its ``n`` experiment), so the table reads beside its "pattern length" rows: a query that
hit the cap there because its answer was too large to make finishes here.

Usage: ``.venv/bin/python bench/bench_limit_queries.py [--cap 20] [--count-cap 60]``.
Writes ``bench/results/limit_queries.json`` and the ``limit-queries`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import uncertain_cep as uc  # noqa: E402

# The cap's alarm is bench_queries' own: its flag says whether the cap fired.
from bench.bench_queries import (  # noqa: E402
    _alarm,
    _fired,
    dataset,
    experiments,
    random_query,
)
from bench.doc_sections import replace_section, write_json  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "limit_queries.json"
DOC = ROOT / "docs" / "benchmarks.md"
LIMIT = 1000


def capped(work: Any, cap: float) -> tuple[Any, float | None, str | None]:
    """``work()``'s value and seconds, or None seconds past ``cap`` (and the error of a
    run that failed otherwise)."""
    signal.signal(signal.SIGALRM, _alarm)
    _fired[0] = False
    signal.setitimer(signal.ITIMER_REAL, cap)
    started = time.perf_counter()
    try:
        value = work()
    except Exception as e:
        return None, None, None if _fired[0] else f"{type(e).__name__}: {e}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return value, time.perf_counter() - started, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["dodgers", "localization", "synthetic"])
    parser.add_argument("--per-point", type=int, default=3)
    parser.add_argument("--cap", type=float, default=20.0)
    parser.add_argument("--count-cap", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for name in args.datasets:
        df = dataset(name, 4, args.seed)
        idx = uc.build_index(df)
        rng = np.random.default_rng([args.seed, len("n")])   # bench_queries' n experiment
        for n in experiments(False)["n"]["values"]:
            for q in range(args.per_point):
                text = random_query(rng, df, n)
                top, seconds, error = capped(
                    lambda t=text, ix=idx: ix.query(t, limit=LIMIT), args.cap)
                count, count_seconds, count_error = capped(
                    lambda t=text, ix=idx: ix.count(t), args.count_cap)
                row = {"dataset": name, "n": n, "query": q, "seconds": seconds,
                       "rows": None if top is None else len(top), "error": error,
                       "count": count, "count_seconds": count_seconds,
                       "count_error": count_error}
                rows.append(row)
                print(row, flush=True)
    results = {"date": time.strftime("%Y-%m-%d"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "cap": args.cap, "count_cap": args.count_cap, "per_point": args.per_point,
               "rows": rows}
    write_json(RESULTS, results, indent=1, default=float)
    replace_section(DOC, "limit-queries", "Pattern length as LIMIT 1000 (issue 48)",
                    section(results))
    print(section(results))


def section(results: dict[str, Any]) -> str:
    frame = pd.DataFrame(results["rows"])
    lines = [f"<!-- limit-queries:start (written by bench/bench_limit_queries.py on "
             f"{results['date']}, {results['machine']}) -->", "",
             f"bench_queries.py's pattern-length queries ({results['per_point']} per point, "
             f"4 groups) as `LIMIT {LIMIT}`, selectivity order, cap {results['cap']:.0f} s; "
             f"the full answer's rows from `idx.count` (cap {results['count_cap']:.0f} s; "
             "`-` past it). Seconds are the slowest query of the point.", "",
             "| data set | n | LIMIT 1000 within cap | slowest (s) | rows | full answer rows "
             "(count) | count (s) |", "|---|---:|---:|---:|---|---|---:|"]
    for (name, n), sub in frame.groupby(["dataset", "n"], sort=False):
        done = sub["seconds"].notna()
        slowest = sub["seconds"].max() if done.all() else float("nan")
        counts = ", ".join("-" if pd.isna(c) else f"{int(c):,}" for c in sub["count"])
        count_s = sub["count_seconds"].max() if sub["count_seconds"].notna().all() else None
        lines.append(f"| {name} | {n} | {int(done.sum())}/{len(sub)} | "
                     f"{'-' if np.isnan(slowest) else f'{slowest:.2f}'} | "
                     f"{', '.join('-' if pd.isna(r) else str(int(r)) for r in sub['rows'])} | "
                     f"{counts} | {'-' if count_s is None else f'{count_s:.1f}'} |")
    lines += ["", "<!-- limit-queries:end -->"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
