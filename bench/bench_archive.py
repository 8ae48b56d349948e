"""Archive-scale benchmark (issue "Columnar core"): opening an index of millions of events
and answering selective queries on it in one process.

For each size N: the paper's generator (``uncertain-cep datasets generate synthetic --n N
--groups N/1000 --d 2``), built once with the Spark job (kept in ``--work`` and reused),
then opened and queried in a fresh process that reports wall time and its peak resident
memory after each step (``ru_maxrss``: pages of the memory-mapped node table that a query
touched count too). Queries: the issue's selective ``SEQ(A, B)`` (A about 0.1% of
events, B about 1%), a second one on the other attribute, and the first with a negation.

Usage: ``.venv/bin/python bench/bench_archive.py [--sizes 1000000 10000000]``; writes
``bench/results/archive.json`` and the ``archive`` section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_pipeline import generate  # noqa: E402
from bench.doc_sections import replace_section, write_json  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "archive.json"
DOC = ROOT / "docs" / "benchmarks.md"
QUERIES = [
    "PATTERN SEQ(A, B) DEFINE A AS a0 < -3, B AS a0 > 2.3 WITHIN 50 CONFIDENCE 0.1",
    "PATTERN SEQ(A, B) DEFINE A AS a1 > 3, B AS a0 < -2.5 WITHIN 100 CONFIDENCE 0.2",
    "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -3, N AS a1 > 2, B AS a0 > 2.3 "
    "WITHIN 50 CONFIDENCE 0.1",
]

_CHILD = """
import json, resource, sys, time
t = time.perf_counter()
import uncertain_cep as uc
import uncertain_cep.api
imported = time.perf_counter() - t
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
out = {"import_seconds": imported}
t = time.perf_counter()
idx = uc.open_index(sys.argv[1])
out["open_seconds"] = time.perf_counter() - t
out["open_peak_rss_mb"] = rss()
out["queries"] = []
for q in json.loads(sys.argv[2]):
    runs = []
    for _ in range(2):   # the first run also loads the compiled kernels from their cache
        t = time.perf_counter()
        res = idx.query(q)
        runs.append(time.perf_counter() - t)
    out["queries"].append({"first_seconds": runs[0], "seconds": runs[1], "rows": len(res),
                           "entries": res.stats.entries_created, "peak_rss_mb": rss()})
print("RESULT", json.dumps(out))
"""


def ensure_index(n: int, work: Path, shard_events: int | None = None) -> Path:
    """The Spark-built index of the synthetic archive of ``n`` events (built if absent),
    in shards of about ``shard_events`` (default: the build's). The archive is
    bench_pipeline's (above 10M events, pieces of whole groups: one piece at a time in
    memory; the generator's single table of 100M events needs more than 24 GB)."""
    index = work / (f"index-{n}" if shard_events is None else f"index-{n}-{shard_events}")
    if (index / "manifest.json").exists():
        return index
    data = generate(n, work)
    t = time.perf_counter()
    shards = [] if shard_events is None else ["--shard-events", str(shard_events)]
    subprocess.run([sys.executable, "-m", "uncertain_cep.cli", "build", str(data),
                    "--out", str(index), *shards], check=True)
    print(f"built {n:,} events in {time.perf_counter() - t:.0f} s", flush=True)
    return index


def measure(n: int, work: Path) -> dict[str, Any]:
    index = ensure_index(n, work)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(index), json.dumps(QUERIES)],
                          check=True, capture_output=True, text=True)
    out = json.loads(done.stdout.split("RESULT", 1)[1])
    manifest = json.loads((index / "manifest.json").read_text())
    out.update(events=n, groups=manifest["counts"]["groups"],
               nodes=manifest["counts"]["nodes"],
               index_mb=round(sum(f.stat().st_size for f in index.rglob("*") if f.is_file())
                              / 2**20))
    print(json.dumps(out), flush=True)
    return out


def section(results: dict[str, Any]) -> str:
    lines = ["<!-- archive:start (written by bench/bench_archive.py) -->", "",
             f"Run {results['date']} on {results['machine']}. An index built by the Spark "
             "job, opened and queried in a fresh process; times in seconds (the second run "
             "of each query; the first also loads the compiled kernels), memory is the "
             "process's peak RSS.", "",
             "| events | nodes | index (MB) | open (s) | RSS after open (MB) | query | rows "
             "| entries | query (s) | first run (s) | peak RSS (MB) |",
             "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in results["sizes"]:
        for k, q in enumerate(r["queries"]):
            head = (f"| {r['events']:,} | {r['nodes']:,} | {r['index_mb']:,} | "
                    f"{r['open_seconds']:.2f} | {r['open_peak_rss_mb']:,} " if k == 0
                    else "| | | | | ")
            lines.append(f"{head}| `{QUERIES[k][8:60]}...` | {q['rows']} | {q['entries']} | "
                         f"{q['seconds']:.3f} | {q['first_seconds']:.3f} | "
                         f"{q['peak_rss_mb']:,} |")
    lines += ["", "Targets (issue \"Columnar core\"): 1M events open in <= 3 s and <= 1.5 GB, "
              "each selective query in <= 0.5 s; 10M events open and answer in one process "
              "within 8 GB.", "",
              "Opening hashes (xxh3_64) every file it reads or maps, the node and event "
              "columns included, and checks the ids the kernels index with (see "
              "\"Checking every file on open\"); `uc.open_index(path, verify=True)` also "
              "hashes the nodes and trees tables. Peak RSS counts the pages of the "
              "memory-mapped node table a query touched: they are clean file pages the "
              "kernel can drop, which is most of the growth of the negation query (it "
              "walks the OI-trees of every group holding a negated event).", "",
              "<!-- archive:end -->"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--work", default="/tmp/uncertain-cep-bench")
    parser.add_argument("--add", action="store_true",
                        help="keep the other sizes of the last run's results (a size too "
                             "large to keep beside the others on one disk)")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    measured = [measure(n, work) for n in args.sizes]
    kept = []
    if args.add and RESULTS.is_file():
        kept = [r for r in json.loads(RESULTS.read_text())["sizes"]
                if r["events"] not in args.sizes]
    results = {"date": time.strftime("%Y-%m-%d"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                          f"{platform.python_version()}",
               "sizes": sorted([*kept, *measured], key=lambda r: r["events"])}
    write_json(RESULTS, results, indent=1)
    replace_section(DOC, "archive", "Archive scale: open and query millions of events",
                    section(results))


if __name__ == "__main__":
    main()
