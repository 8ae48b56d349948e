"""Benchmark of the batch engine (issue "Columnar core"): partial matches as columns
against the entry-by-entry engine it replaces and the tree-traversal baseline.

Workloads, each answered by every engine in the same run (answers checked equal):

* **skewed**: 2,000 events in 8 groups, one event per group every 2 instants with 1-2
  possible instants; ``SEQ(A, B, C, D, E)``, four common items (about 84% of events)
  and a rare last one (2%), WITHIN 10, CONFIDENCE 0.3;
* **broad**: 3,000 events in 60 groups, likewise; ``SEQ(A, B, C)`` on tags each held by
  30% of events, WITHIN 12, CONFIDENCE 0.2;
* **broad + NOT**: the broad query with ``NOT D`` (a fourth tag, 10% of events) between
  its first two items;
* **selective**: the paper's synthetic generator, N events in N/1000 groups, d = 2;
  ``SEQ(A, B)`` with ``a0 < -3`` and ``a0 > 2.3``, WITHIN 50, CONFIDENCE 0.1.

Each engine runs in a forked child capped at ``--cap`` seconds (a capped run is recorded
as such). Writes ``bench/results/batches.json`` and the ``batches`` section of
``docs/benchmarks.md``. Run: ``.venv/bin/python bench/bench_batches.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import uncertain_cep as uc  # noqa: E402
from bench.doc_sections import replace_section, write_json  # noqa: E402
from uncertain_cep.datasets import generate_synthetic  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "batches.json"
DOC = ROOT / "docs" / "benchmarks.md"

SKEWED = ("PATTERN SEQ(A, B, C, D, E) DEFINE A AS x > -1, B AS x > -1, C AS x > -1, "
          "D AS x > -1, E AS x > 2 WITHIN 10 CONFIDENCE 0.3")
BROAD = ("PATTERN SEQ(A, B, C) DEFINE A AS tag = 'a', B AS tag = 'b', C AS tag = 'c' "
         "WITHIN 12 CONFIDENCE 0.2")
BROAD_NOT = ("PATTERN SEQ(A, NOT D, B, C) DEFINE A AS tag = 'a', D AS tag = 'd', "
             "B AS tag = 'b', C AS tag = 'c' WITHIN 12 CONFIDENCE 0.2")
SELECTIVE = ("PATTERN SEQ(A, B) DEFINE A AS a0 < -3, B AS a0 > 2.3 WITHIN 50 "
             "CONFIDENCE 0.1")

# engine name -> (strategy, entry by entry?)
ENGINES = {
    "batches, selectivity": ("selectivity", False),
    "batches, sequential": ("sequential", False),
    "entries, selectivity": ("selectivity", True),
    "entries, sequential": ("sequential", True),
    "tree traversal": ("tree_traversal", False),
}


def dense(n: int, groups: int, seed: int) -> pd.DataFrame:
    """One event per group every 2 instants, each with 1-2 possible instants."""
    rng = np.random.default_rng(seed)
    t = (np.arange(n) // groups) * 2 + rng.integers(0, 2, n)
    x = rng.normal(size=n)
    return pd.DataFrame({"event_id": np.arange(n), "group": np.arange(n) % groups,
                         "t_lo": t, "t_hi": t + rng.integers(0, 2, n),
                         "x_lo": x - 0.1, "x_hi": x + 0.1,
                         "tag": rng.choice(["a", "b", "c", "d"], n, p=[.3, .3, .3, .1])})


def _evaluate(idx: uc.UncertainIndex, query: str, engine: str) -> tuple[Any, ...]:
    strategy, entries = ENGINES[engine]
    started = time.perf_counter()
    # The entry-by-entry engines are the baselines query/baselines/entry_*.py.
    res = idx.query(query, strategy=f"{strategy}_entries" if entries else strategy)
    stats = res.stats
    table = pd.DataFrame(res)
    seconds = time.perf_counter() - started
    digest = (len(table), round(float(table["confidence"].sum()), 6),
              hash(tuple(sorted(map(tuple, table["events"])))))
    return seconds, stats.entries_created, len(table), digest


def _child(conn: Any, idx: uc.UncertainIndex, query: str, engine: str) -> None:
    try:
        conn.send(("ok", _evaluate(idx, query, engine)))
    except BaseException as e:  # reported to the parent, which records it
        conn.send(("error", f"{type(e).__name__}: {e}"))


def timed(idx: uc.UncertainIndex, query: str, engine: str, cap: float) -> dict[str, Any]:
    """One engine on one query in a forked child, capped at ``cap`` seconds."""
    parent, child = mp.Pipe(duplex=False)
    proc = mp.get_context("fork").Process(target=_child, args=(child, idx, query, engine))
    proc.start()
    if not parent.poll(cap):
        proc.kill()
        proc.join()
        return {"engine": engine, "capped": True, "seconds": cap}
    kind, value = parent.recv()
    proc.join()
    if kind == "error":
        return {"engine": engine, "error": value}
    seconds, entries, rows, digest = value
    return {"engine": engine, "capped": False, "seconds": seconds, "entries": entries,
            "rows": rows, "digest": list(map(str, digest))}


def workload(name: str, df: pd.DataFrame, query: str, cap: float,
             engines: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    idx = uc.build_index(df)
    build = time.perf_counter() - started
    runs = [timed(idx, query, engine, cap) for engine in engines]
    finished = [r for r in runs if not r.get("capped") and "error" not in r]
    same = len({tuple(r["digest"]) for r in finished}) <= 1
    print(f"{name}: {len(df)} events, built in {build:.1f} s; answers equal: {same}",
          flush=True)
    for r in runs:
        print("   ", r, flush=True)
    return {"name": name, "events": len(df), "groups": int(df["group"].nunique()),
            "query": query, "build_seconds": build, "same_answer": same, "runs": runs}


def _cell(run: dict[str, Any], base: float | None) -> str:
    if "error" in run:
        return "error"
    if run["capped"]:
        return f"> {run['seconds']:.0f} s (capped)"
    ratio = f" ({base / run['seconds']:.0f}x)" if base and run["seconds"] > 0 else ""
    return f"{run['seconds']:.2f} s{ratio}"


def section(results: dict[str, Any]) -> str:
    engines = list(ENGINES)
    lines = [f"<!-- batches:start (written by bench/bench_batches.py on {results['date']}, "
             f"{results['machine']}) -->", "",
             "Each cell: wall time of `idx.query` (answer table included) in a forked "
             "child; in brackets the speed-up over tree traversal. Entries created is "
             "the paper's xi for the batch engine in selectivity order.", "",
             "| workload | events | answer rows | xi | " + " | ".join(engines) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(engines)]
    for w in results["workloads"]:
        by = {r["engine"]: r for r in w["runs"]}
        tree = by.get("tree traversal", {})
        base = None if tree.get("capped", True) or "error" in tree else tree["seconds"]
        first = by.get("batches, selectivity", {})
        lines.append(f"| {w['name']} | {w['events']:,} | {first.get('rows', 0):,} | "
                     f"{first.get('entries', 0):,} | "
                     + " | ".join(_cell(by[e], base) if e in by else "" for e in engines)
                     + " |")
    lines += ["", "Answers equal across every engine that finished: "
              + ", ".join(f"{w['name']} {'yes' if w['same_answer'] else 'NO'}"
                          for w in results["workloads"]) + ".", "", "<!-- batches:end -->"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, short caps")
    parser.add_argument("--cap", type=float, default=120.0)
    parser.add_argument("--only", default=None,
                        help="rerun one workload by name, keeping the others' results")
    args = parser.parse_args()
    cap = 20.0 if args.quick else args.cap
    engines = list(ENGINES)
    # Load the compiled kernels once, before the children fork (not timed).
    uc.build_index(dense(40, 2, 0)).query(BROAD)
    n_selective = 20_000 if args.quick else 200_000
    plans = [
        ("skewed", lambda: dense(500 if args.quick else 2_000, 8, 5), SKEWED),
        ("broad", lambda: dense(1_000 if args.quick else 3_000, 60, 7), BROAD),
        ("broad + NOT", lambda: dense(1_000 if args.quick else 3_000, 60, 7), BROAD_NOT),
        ("selective", lambda: generate_synthetic(n_selective, groups=n_selective // 1000,
                                                 d=2, seed=11), SELECTIVE),
    ]
    workloads = [workload(name, make(), query, cap, engines) for name, make, query in plans
                 if args.only in (None, name)]
    if args.only is not None:
        kept = json.loads(RESULTS.read_text())["workloads"] if RESULTS.exists() else []
        fresh = {w["name"]: w for w in workloads if w["name"] == args.only}
        workloads = [fresh.pop(w["name"], w) for w in kept] + list(fresh.values())
    results = {"date": time.strftime("%Y-%m-%d"), "quick": args.quick,
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                          f"{platform.python_version()}", "cap_seconds": cap,
               "workloads": workloads}
    if args.quick:
        write_json(RESULTS.with_name("batches_quick.json"), results, indent=1)
        return
    write_json(RESULTS, results, indent=1)
    replace_section(DOC, "batches", "Batch engine: partial matches as columns",
                    section(results))


if __name__ == "__main__":
    main()
