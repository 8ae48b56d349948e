"""How a Spark query's time slices open a sharded index, side by side in one run:
``shards``, slices that follow the shards (each maps one shard's own working copy, the
seams at the boundaries indexed in memory: what the engine does now), against slices of
equal events that straddle the boundaries (what it did before), which map one working
copy of the whole index per host (``whole``: what a cache that can hold it gets) or put
each slice's few shards side by side (``sets``: what a smaller cache gets).

For each way, on an empty cache of its own (a host that has never seen the index): a
session's first query and the two after it, then a second session on the same cache
(what a later job on that host gets). Each session is its own process (Spark local[2]),
its peak memory the whole process tree's, as RSS and PSS (bench_pipeline's sampler).
Queries: bench_archive's three selective ones; answers checked equal between the ways.

Usage: ``.venv/bin/python bench/bench_slice_copies.py --events 10000000`` (the index
bench_pipeline built: ``/tmp/uncertain-cep-bench/index-<events>``; ``--ways sets`` where
the whole copy does not fit the disk); writes ``bench/results/slice_copies.json`` and
its table in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_archive import QUERIES  # noqa: E402
from bench.bench_pipeline import (  # noqa: E402
    _ENGINE_RUN,
    LOCAL_LIMIT_GB,
    _run_measured,
    write_marked,
)
from uncertain_cep.index.store.reader import open_reader  # noqa: E402
from uncertain_cep.index.store.working_copy import cache_limit, copy_bytes  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "slice_copies.json"
DOCS = ROOT / "docs" / "benchmarks.md"
WAYS = ("shards", "whole", "sets")
# The ways before slices followed the shards: the driver plans slices of equal events.
_BY_EVENTS = ("from uncertain_cep.pipeline import time_slices\n"
              "time_slices._slices_by_shard = lambda *args: None\n")


def _session(path: Path, cache: Path, limit: int, queries: list[str], way: str
             ) -> dict[str, Any]:
    """One Spark session's queries on ``cache`` with the cache limit ``limit``."""
    env = {"UNCERTAIN_CEP_CACHE": str(cache), "UNCERTAIN_CEP_CACHE_LIMIT": str(limit)}
    run = _ENGINE_RUN if way == "shards" else _BY_EVENTS + _ENGINE_RUN
    seconds, peak, peak_pss, log = _run_measured(
        [sys.executable, "-c", run, "spark", str(path), str(LOCAL_LIMIT_GB),
         json.dumps(queries)], env=env)
    out = json.loads(log.split("RESULT", 1)[1].strip().splitlines()[0])
    cached = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
    return {"wall_seconds": round(seconds, 1), "start_seconds": round(out["open_seconds"], 2),
            "queries": [round(q["seconds"], 2) for q in out["queries"]],
            "matches": [q["matches"] for q in out["queries"]],
            "answers": [q["answer"] for q in out["queries"]],
            "peak_rss_mb": round(peak / 2**20), "peak_pss_mb": round(peak_pss / 2**20),
            "cache_mb": round(cached / 2**20)}


def run_way(way: str, path: Path, work: Path, queries: list[str]) -> dict[str, Any]:
    manifest = open_reader(path).manifest
    whole = copy_bytes(manifest.counts, len(manifest.schema))
    # The limit just above the whole copy, or half of it: the rule of holds_whole
    # (the shards' way under the default limit, as a user gets it).
    limit = {"whole": whole + 2**30, "sets": whole // 2}.get(way, cache_limit())
    cache = Path(tempfile.mkdtemp(prefix=f"uncertain-cep-{way}-", dir=work))
    try:
        first = _session(path, cache, limit, queries, way)
        print(way, "first session", {k: v for k, v in first.items() if k != "answers"},
              flush=True)
        later = _session(path, cache, limit, queries[:1], way)
        print(way, "later session", {k: v for k, v in later.items() if k != "answers"},
              flush=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"way": way, "events": manifest.counts.events, "shards": len(manifest.shards),
            "cache_limit_gb": round(limit / 2**30, 1), "first": first, "later": later}


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["| events | shards | slices open | first query (s) | next (s) "
             "| later session's first (s) | peak PSS first / later (MB) | cache (MB) "
             "| same answers |", "|---:|---:|---|---:|---|---:|---|---:|---|"]
    for r in rows:
        f, later = r["first"], r["later"]
        lines.append(
            f"| {r['events']:,} | {r['shards']} | {r['way']} | {f['queries'][0]} | "
            f"{', '.join(map(str, f['queries'][1:]))} | {later['queries'][0]} | "
            f"{f['peak_pss_mb']:,} / {later['peak_pss_mb']:,} | {f['cache_mb']:,} | "
            f"{'-' if r.get('same_answers') is None else r['same_answers']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--work", default="/tmp/uncertain-cep-bench")
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--queries", type=int, default=len(QUERIES),
                        help="how many of the queries the first session runs")
    args = parser.parse_args()
    work = Path(args.work)
    path = work / f"index-{args.events}"
    rows = [run_way(way, path, work, QUERIES[:args.queries]) for way in args.ways]
    answers = [r["first"]["answers"] for r in rows]
    for r in rows:
        r["same_answers"] = all(a == answers[0] for a in answers) if len(rows) > 1 else None
        for session in ("first", "later"):
            r[session].pop("answers")
    kept = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    kept = [r for r in kept if (r["events"], r["way"]) not in
            {(x["events"], x["way"]) for x in rows}]
    results = sorted(kept + rows, key=lambda r: (r["events"], r["way"]))
    RESULTS.write_text(json.dumps(results, indent=2))
    write_marked(DOCS, "slice-copies", _table(results),
                 heading="## How Spark slices open a sharded index")
    print(_table(results))


if __name__ == "__main__":
    main()
