"""Answers of any size (issue 48): one broad query answered in each form, side by side.

The workload: bench_batches.py's broad archive with twice the events (6,000 in 60 groups,
one event per group every 2 instants, 1-2 possible instants each), its attribute ``x``
drawn uniformly on [0, 10] with an uncertainty of +-0.1 (bench_batches draws x from a
standard normal, which no B or C symbol of this query would meet), and the issue's query
``SEQ(A, B, C)`` with ``A AS x BETWEEN 0 AND 3, B AS x BETWEEN 4 AND 6, C AS x BETWEEN
7 AND 10 WITHIN 30 CONFIDENCE 0.2``.

Forms, each in a fresh process (peak RSS is the process's VmHWM), alternating over the
rounds (best of them reported):

* **table**: ``idx.query(q, max_rows=None)``, the whole answer as one in-memory table;
* **out=**: ``idx.query(q, out=DIR)``, Parquet parts written as found;
* **iter**: ``idx.iter_query(q)``, record batches consumed and dropped;
* **LIMIT 10**, **LIMIT 100**: the first rows only;
* **count**: ``idx.count(q)``.

Usage: ``.venv/bin/python bench/bench_answer_forms.py [--rounds 2] [--events 6000]``.
Writes ``bench/results/answer_forms.json`` and the ``answer-forms`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
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

RESULTS = ROOT / "bench" / "results" / "answer_forms.json"
DOC = ROOT / "docs" / "benchmarks.md"

QUERY = ("PATTERN SEQ(A, B, C) DEFINE A AS x BETWEEN 0 AND 3, B AS x BETWEEN 4 AND 6, "
         "C AS x BETWEEN 7 AND 10 WITHIN 30 CONFIDENCE 0.2")
FORMS = ("table", "out=", "iter", "LIMIT 10", "LIMIT 100", "count")

_CHILD = """
import json, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[1])
import uncertain_cep as uc
import uncertain_cep.api
from bench.bench_batches import dense

form, events, query, out = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
df = dense(events, 60, 7)
x = np.random.default_rng(7).uniform(0, 10, len(df))
df["x_lo"], df["x_hi"] = x - 0.1, x + 0.1
idx = uc.build_index(df)
idx.count("PATTERN SEQ(A, B) DEFINE A AS x < 0.01, B AS x > 9.99 WITHIN 2")  # kernels loaded


def peak_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024


before = peak_mb()
t = time.perf_counter()
if form == "table":
    rows = len(idx.query(query, max_rows=None))
elif form == "out=":
    rows = idx.query(query, out=out).rows
elif form == "iter":
    rows = sum(b.num_rows for b in idx.iter_query(query))
elif form == "count":
    rows = idx.count(query)
else:
    rows = len(idx.query(query, limit=int(form.split()[1])))
seconds = time.perf_counter() - t
print("RESULT", json.dumps({"seconds": seconds, "rows": rows, "peak_mb": peak_mb(),
                           "before_mb": before}))
"""


def run(form: str, events: int, out: Path) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), form, str(events), QUERY,
                           str(out)], check=True, capture_output=True, text=True)
    result = json.loads(done.stdout.split("RESULT", 1)[1])
    if out.exists():
        result["stored_mb"] = round(sum(p.stat().st_size for p in out.rglob("*")
                                        if p.is_file()) / 2**20, 1)
    return result


def section(results: dict[str, Any]) -> str:
    best = {f: min(results["runs"][f], key=lambda r: r["seconds"]) for f in FORMS}
    peak = {f: min(r["peak_mb"] for r in results["runs"][f]) for f in FORMS}
    table = best["table"]["seconds"]
    lines = [f"<!-- answer-forms:start (written by bench/bench_answer_forms.py on "
             f"{results['date']}, {results['machine']}) -->", "",
             f"{results['events']:,} events in 60 groups, `{QUERY}`; each form in a fresh "
             f"process, best of {results['rounds']} alternating rounds (peak: the "
             "process's VmHWM, the archive and index included).", "",
             "| form | rows | seconds | / table's time | peak RSS (MB) | / LIMIT 10's peak |"
             " rows/s |", "|---|---:|---:|---:|---:|---:|---:|"]
    for f in FORMS:
        b = best[f]
        lines.append(f"| {f} | {b['rows']:,} | {b['seconds']:.1f} | "
                     f"{b['seconds'] / table:.2f} | {peak[f]:,.0f} | "
                     f"{peak[f] / peak['LIMIT 10']:.2f} | "
                     f"{b['rows'] / b['seconds']:,.0f} |")
    lines += ["", "<!-- answer-forms:end -->"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="uncertain-cep-answer-forms-"))
    runs: dict[str, list[dict[str, Any]]] = {f: [] for f in FORMS}
    try:
        for r in range(args.rounds):
            for form in (FORMS if r % 2 == 0 else FORMS[::-1]):
                runs[form].append(run(form, args.events, work / "answer"))
                print(form, runs[form][-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = {"date": time.strftime("%Y-%m-%d"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "events": args.events, "query": QUERY, "rounds": args.rounds,
               "runs": runs}
    write_json(RESULTS, results, indent=1)
    replace_section(DOC, "answer-forms", "Answers of any size (issue 48)", section(results))
    print(section(results))


if __name__ == "__main__":
    main()
