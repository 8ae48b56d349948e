"""Benchmark of instants with a distribution (issue "Instants with a distribution",
SEMANTICS A6): the same archives with and without normal instant weights on every event,
side by side in one run.

* bench_batches.py's workloads (skewed, broad, broad + NOT, selective), each event given
  ``t_mu`` uniform in its interval and ``t_sigma`` 0.7 instants;
* the 1M-event synthetic archive of bench_archive.py (the paper's generator, 1,000 groups,
  d = 2) with ``weights="normal"`` (its generator's option), built in process, saved and
  opened again; bench_archive.py's three selective queries on both indexes.

Every query runs on both indexes in turn (the batch engine, selectivity order), best of
``--repeat``; the ratio is weighted over unweighted. Also the build time and the saved
index's size of each. Writes ``bench/results/weighted.json`` and the ``weighted``
section of ``docs/benchmarks.md``. Run: ``.venv/bin/python bench/bench_weighted.py``
(``--events 200000`` for a shorter run).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import uncertain_cep as uc  # noqa: E402
from bench.bench_archive import QUERIES  # noqa: E402
from bench.bench_batches import BROAD, BROAD_NOT, SELECTIVE, SKEWED, dense  # noqa: E402
from bench.doc_sections import replace_section, write_json  # noqa: E402
from uncertain_cep.datasets import generate_synthetic  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "weighted.json"
DOC = ROOT / "docs" / "benchmarks.md"
WEIGHT_COLUMNS = ["t_mu", "t_sigma", "t_weights"]


def with_normals(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``df`` with a normal around a random point of each event's interval."""
    rng = np.random.default_rng(seed)
    width = (df["t_hi"] - df["t_lo"] + 1).to_numpy()
    return df.assign(t_mu=df["t_lo"].to_numpy() + rng.uniform(0, width), t_sigma=0.7)


def best(idx: uc.UncertainIndex, query: str, repeat: int) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        rows = len(idx.query(query, max_rows=None))
        times.append(time.perf_counter() - t)
    return min(times), rows


def side_by_side(name: str, plain: uc.UncertainIndex, weighted: uc.UncertainIndex,
                 queries: list[str], repeat: int) -> list[dict[str, Any]]:
    out = []
    for q in queries:
        plain.query(q, max_rows=None)
        weighted.query(q, max_rows=None)       # first runs untimed (kernels, pages)
        runs: dict[str, list[float]] = {"plain": [], "weighted": []}
        rows = {}
        for _ in range(repeat):    # alternating, so drift hits both
            for label, idx in (("plain", plain), ("weighted", weighted)):
                s, rows[label] = best(idx, q, 1)
                runs[label].append(s)
        p, w = min(runs["plain"]), min(runs["weighted"])
        out.append({"workload": name, "query": q, "plain_s": p, "weighted_s": w,
                    "ratio": w / p, "plain_rows": rows["plain"],
                    "weighted_rows": rows["weighted"]})
        print(f"{name:12s} {p:8.3f} s {w:8.3f} s  {w / p:5.2f}x  rows {rows['plain']} / "
              f"{rows['weighted']}", flush=True)
    return out


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def archive_run(n: int, repeat: int, work: Path) -> dict[str, Any]:
    weighted_df = generate_synthetic(n, groups=max(1, n // 1000), d=2, seed=1,
                                     weights="normal")
    plain_df = weighted_df.drop(columns=[c for c in WEIGHT_COLUMNS if c in weighted_df])
    out: dict[str, Any] = {"events": n}
    for label, df in (("plain", plain_df), ("weighted", weighted_df)):
        t = time.perf_counter()
        idx = uc.build_index(df)
        out[f"{label}_build_s"] = time.perf_counter() - t
        t = time.perf_counter()
        idx.save(work / label)
        out[f"{label}_save_s"] = time.perf_counter() - t
        out[f"{label}_bytes"] = size(work / label)
        out[f"{label}_parts"] = {f.name: size(f) if f.is_dir() else f.stat().st_size
                                 for f in (work / label).iterdir()}
        print(label, {k: round(v / n, 1) for k, v in out[f"{label}_parts"].items()})
        del idx
        print(f"{label}: built in {out[f'{label}_build_s']:.1f} s, saved "
              f"{out[f'{label}_bytes'] / n:.0f} bytes per event", flush=True)
    plain, weighted = uc.open_index(work / "plain"), uc.open_index(work / "weighted")
    name = f"{n // 1_000_000}M archive" if n >= 1_000_000 else f"{n // 1000}k archive"
    out["queries"] = side_by_side(name, plain, weighted, QUERIES, repeat)
    out["size_ratio"] = out["weighted_bytes"] / out["plain_bytes"]
    return out


def section(results: dict[str, Any]) -> str:
    lines = ["<!-- weighted:start (generated by bench/bench_weighted.py) -->", "",
             f"Run {results['date']} on {results['machine']}: `.venv/bin/python "
             f"bench/bench_weighted.py{results['args']}`. Normal weights on every event, "
             "the batch engine in selectivity order, best of "
             f"{results['repeat']} alternating runs. Target: each query within 1.5x, "
             "the 1M index within 1.2x the size.", "",
             "| workload | query | rows (plain / weighted) | plain (s) | weighted (s) | ratio |",
             "|---|---|---:|---:|---:|---:|"]
    rows = results["batches"] + results["archive"]["queries"]
    for r in rows:
        lines.append(f"| {r['workload']} | `{r['query'][8:58]}...` | {r['plain_rows']} / "
                     f"{r['weighted_rows']} | {r['plain_s']:.3f} | {r['weighted_s']:.3f} | "
                     f"{r['ratio']:.2f}x |")
    a = results["archive"]
    lines += ["", "| archive | events | build (s) | save (s) | index (bytes/event) |",
              "|---|---:|---:|---:|---:|"]
    for label in ("plain", "weighted"):
        lines.append(f"| {label} | {a['events']:,} | {a[f'{label}_build_s']:.1f} | "
                     f"{a[f'{label}_save_s']:.1f} | {a[f'{label}_bytes'] / a['events']:.0f} |")
    lines += ["", f"Index size weighted / plain: {a['size_ratio']:.3f}x; build time "
              f"{a['weighted_build_s'] / a['plain_build_s']:.2f}x.", "", "<!-- weighted:end -->"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    uc.build_index(dense(40, 2, 0)).query(BROAD)       # kernels loaded, not timed
    plans = [("skewed", dense(2_000, 8, 5), SKEWED), ("broad", dense(3_000, 60, 7), BROAD),
             ("broad + NOT", dense(3_000, 60, 7), BROAD_NOT),
             ("selective", generate_synthetic(200_000, groups=200, d=2, seed=11), SELECTIVE)]
    batches = []
    for name, df, query in plans:
        batches += side_by_side(name, uc.build_index(df),
                                uc.build_index(with_normals(df, 3)), [query], args.repeat)
    work = Path(tempfile.mkdtemp(prefix="bench-weighted-"))
    try:
        archive = archive_run(args.events, args.repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    extra = "" if args.events == 1_000_000 else f" --events {args.events}"
    results = {"date": time.strftime("%Y-%m-%d"), "repeat": args.repeat, "args": extra,
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                          f"{platform.python_version()}",
               "batches": batches, "archive": archive}
    write_json(RESULTS, results, indent=1)
    if args.events == 1_000_000:
        replace_section(DOC, "weighted", "Instants with a distribution (SEMANTICS A6)",
                        section(results))


if __name__ == "__main__":
    main()
