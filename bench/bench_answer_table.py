"""Benchmark of the answer table alone: what a query's answer rows cost once found.

The public answer table (``idx.query``) holds one tuple of event ids per row, sorted by
confidence and ids (:func:`uncertain_cep.query.evaluation.answer.answer_table`). Its cost grows with
rows times positive items, whatever engine found the rows, so it bounds how fast any
query with many answers can finish. Here it is timed on random answer rows over 5,000
events (the localization archive's size), with about 400 rows per distinct confidence
(localization n = 20 query 2's 1.18M answers have 2,972; ties are ordered by the ids):
per size, a forked child builds the rows, then the table, and reports the table's
seconds and its own peak resident memory.

Localization n = 30 query 1 of ``bench/bench_queries.py`` (27 positive items) had found
16.6M answer rows after 700 s and was still going; ``--rows 16600000 --items 27`` times
that table (about 16 GB of memory). Writes ``bench/results/answer_table.json`` and the
``answer-table`` section of ``docs/benchmarks.md``.
Run: ``.venv/bin/python bench/bench_answer_table.py [--rows R ...] [--items K ...]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import resource
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.doc_sections import replace_section, write_json  # noqa: E402
from uncertain_cep.query.evaluation.answer import Answer, answer_table  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "answer_table.json"
DOC = ROOT / "docs" / "benchmarks.md"
EVENTS = 5000


def _measure(rows: int, items: int, seed: int, out: Any) -> None:
    rng = np.random.default_rng(seed)
    events = np.empty((rows, items), dtype=np.int64)
    step = 1 << 20
    for s in range(0, rows, step):    # (in slices: sorting a whole matrix doubles it)
        part = rng.integers(0, EVENTS, size=(min(rows, s + step) - s, items))
        part.sort(axis=1)
        events[s:s + len(part)] = part
    confidences = rng.random(max(rows // 400, 1))
    answer = Answer(events, rng.choice(confidences, rows), rng.integers(0, 20000, rows),
                    rng.integers(0, 20000, rows))
    started = time.perf_counter()
    table = answer_table(answer, np.arange(EVENTS, dtype=np.int64))
    seconds = time.perf_counter() - started
    assert len(table) == rows
    out.send((seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2))


def measure(rows: int, items: int, seed: int = 0) -> dict[str, Any]:
    """The table's seconds and the child's peak memory for ``rows`` x ``items``."""
    here, there = mp.Pipe(duplex=False)
    child = mp.get_context("fork").Process(target=_measure, args=(rows, items, seed, there))
    child.start()
    seconds, peak_gb = here.recv()
    child.join()
    return {"rows": rows, "items": items, "seconds": round(seconds, 3),
            "rows_per_second": round(rows / seconds), "us_per_row": 1e6 * seconds / rows,
            "peak_rss_gb": round(peak_gb, 2)}


def report(runs: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"<!-- answer-table:start (written by bench/bench_answer_table.py on "
             f"{meta['date']}, {meta['machine']}, Python {meta['python']}) -->", "",
             "| answer rows | positive items | table s | us per row | rows/s | peak RSS GB |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        lines.append(f"| {r['rows']:,} | {r['items']} | {r['seconds']:.2f} | "
                     f"{r['us_per_row']:.2f} | {r['rows_per_second']:,} | "
                     f"{r['peak_rss_gb']:.2f} |")
    lines += ["", "<!-- answer-table:end -->"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--items", type=int, nargs="+", default=[18, 27])
    args = parser.parse_args()
    runs = [measure(rows, items) for rows in args.rows for items in args.items]
    for r in runs:
        print(r, flush=True)
    meta = {"date": datetime.now().strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()} ({mp.cpu_count()} cores)",
            "python": platform.python_version()}
    write_json(RESULTS, {"meta": meta, "runs": runs}, indent=1)
    replace_section(DOC, "answer-table", "Answer table", report(runs, meta))


if __name__ == "__main__":
    main()
