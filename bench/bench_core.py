"""Benchmarks of the uncertain-archive core (issue: core index and exact evaluation).

Measures, side by side in one run:

1. single tree vs multi-tree build (time, nodes) on the paper's worst case for the single
   tree (Table 5: n events with 2 possible instants each, f**n order instances), and on
   random sequences of f in [2, 5];
2. multi-tree build for 10 .. 10,000 events, uniform and clustered timestamps (6.1), with
   the largest code of both code schemes;
3. query time and counters of sequential evaluation (compact and paper codes) vs tree
   traversal on a synthetic 5,000-event archive, n = 3..5, L in [2n, 5n], theta in
   [0.6, 0.8] (answers checked identical);
4. all of those vs the possible-worlds baseline on archives small enough for it, growing
   until it stops being feasible.

Writes ``bench/results/core.json`` and the tables of ``docs/benchmarks.md`` (between the
``core`` markers). Run: ``.venv/bin/python bench/bench_core.py [--quick]``.
"""

from __future__ import annotations

import argparse
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
from uncertain_cep.datasets import disjoint_sequence, generate_synthetic  # noqa: E402
from uncertain_cep.index.forests.forest import REAL  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "core.json"
DOC = ROOT / "docs" / "benchmarks.md"


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


# ---------------------------------------------------------------- 1. single vs multi

def single_vs_multi(lengths: list[int], single_limit_s: float) -> list[dict]:
    rows = []
    for kind in ("disjoint f=2", "random f in [2,5]"):
        single_too_slow = False
        for n in lengths:
            df = (disjoint_sequence(n) if kind.startswith("disjoint")
                  else generate_synthetic(n, seed=n))
            multi, t_multi = timed(uc.build_index, df)
            row = {"sequence": kind, "length": n, "multi_seconds": t_multi,
                   "multi_nodes": multi.n_nodes, "multi_trees": multi.n_trees,
                   "order_instances": str(multi.forest(0).n_order_instances)}
            if single_too_slow:
                row.update(single_seconds=None, single_nodes=None)
            else:
                try:
                    single, t_single = timed(uc.build_index, df, multi_tree=False,
                                             node_budget=3_000_000)
                    row.update(single_seconds=t_single, single_nodes=single.n_nodes)
                    single_too_slow = t_single > single_limit_s
                except uc.IndexBuildError:
                    row.update(single_seconds=None, single_nodes=">3,000,000 (budget)")
                    single_too_slow = True
            rows.append(row)
            print("single/multi", row, flush=True)
    return rows


# ---------------------------------------------------------------- 2. multi-tree scaling

def multi_scaling(sizes: list[int]) -> list[dict]:
    rows = []
    for clustered, spread in ((False, 0.0), (True, 1 / 20), (True, 1 / 40)):
        label = f"clustered, sd {spread:.3f} of domain" if clustered else "uniform"
        for n in sizes:
            df = generate_synthetic(n, clustered=clustered, cluster_spread=spread or 1 / 40,
                                    seed=7)
            try:
                idx, secs = timed(uc.build_index, df, codes="paper")
            except uc.IndexBuildError as e:
                rows.append({"timestamps": label, "events": n, "error": str(e)[:120]})
                continue
            forests = idx._index.forests
            real = [np.flatnonzero(f.kind == REAL) for f in forests]
            max_paper = max(max(f.paper_code[i] for i in r) for f, r in zip(forests, real))
            max_compact = max(int(f.compact_code[r].max()) for f, r in zip(forests, real))
            row = {"timestamps": label, "events": n,
                   "seconds": secs, "events_per_second": n / secs, "nodes": idx.n_nodes,
                   "trees": idx.n_trees,
                   "max_tree_height": max(int(f.tree_height.max()) for f in forests),
                   "largest_paper_code_bits": int(max_paper).bit_length(),
                   "largest_compact_code": max_compact}
            rows.append(row)
            print("scaling", row, flush=True)
    return rows


# ---------------------------------------------------------------- 3./4. queries

def random_query(rng: np.random.Generator, df: pd.DataFrame, n: int, negation: bool,
                 window: int | None = None, theta: float | None = None) -> str:
    """Each item's condition covers 20% of the attribute space (the paper's 6.1)."""
    attrs = sorted({c[:-3] for c in df.columns if c.endswith("_lo") and c != "t_lo"})
    side = 0.2 ** (1 / len(attrs))
    defs = []
    for i in range(n):
        preds = []
        for a in attrs:
            lo, hi = float(df[f"{a}_lo"].min()), float(df[f"{a}_hi"].max())
            width = side * (hi - lo)
            start = rng.uniform(lo, hi - width)
            preds.append(f"{a} BETWEEN {start:.4f} AND {start + width:.4f}")
        defs.append(f"S{i} AS " + " AND ".join(preds))
    items = [f"S{i}" for i in range(n)]
    if negation and n >= 3:
        items[n // 2] = "NOT " + items[n // 2]
    L = int(rng.integers(2 * n, 5 * n + 1)) if window is None else window
    theta = float(rng.uniform(0.6, 0.8)) if theta is None else theta
    return (f"PATTERN SEQ({', '.join(items)}) DEFINE {', '.join(defs)} "
            f"WITHIN {L} CONFIDENCE {theta:.3f}")


def run_query(idx: uc.UncertainIndex, text: str, strategy: str) -> tuple[pd.DataFrame, float]:
    res, secs = timed(idx.query, text, strategy=strategy)
    return res, secs


def same_answer(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return (list(a["events"]) == list(b["events"])
            and np.allclose(a["confidence"], b["confidence"], atol=1e-9, rtol=0))


def query_comparison(events: int, groups: int, per_n: int, seed: int,
                     tree_traversal_per_n: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    df = generate_synthetic(events, groups=groups, seed=seed)
    compact, t_compact = timed(uc.build_index, df, codes="compact")
    paper, t_paper = timed(uc.build_index, df, codes="paper")
    print(f"query archive: {events} events, {groups} groups; build compact {t_compact:.2f}s "
          f"paper {t_paper:.2f}s", flush=True)
    rows = []
    for n in (3, 4, 5):
        for k in range(per_n):
            text = random_query(rng, df, n, negation=(k % 3 == 2))
            seq, t_seq = run_query(compact, text, "sequential")
            seq_p, t_seq_p = run_query(paper, text, "sequential")
            assert same_answer(seq, seq_p), text
            t_tt = None
            if k < tree_traversal_per_n:
                tt, t_tt = run_query(compact, text, "tree_traversal")
                assert same_answer(seq, tt), text
            rows.append({
                "n": n, "negation": k % 3 == 2, "matches": len(seq),
                "sequential_compact_s": t_seq, "sequential_paper_s": t_seq_p,
                "tree_traversal_s": t_tt,
                "entries": seq.stats.entries_created,
                "range_queries_compact": seq.stats.range_queries,
                "range_queries_paper": seq_p.stats.range_queries})
        print("queries n =", n, flush=True)
    return rows


def possible_worlds_limit(sizes: list[int], limit_s: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for events in sizes:
        df = generate_synthetic(events, groups=2, seed=seed, f=(2, 4))
        # Squeeze the time domain so events overlap and groups have many order instances.
        df = df.assign(t_lo=df.t_lo // 8, t_hi=df.t_lo // 8 + (df.t_hi - df.t_lo))
        try:
            idx = uc.build_index(df)
        except uc.InputError:
            continue
        text = random_query(rng, df, 3, negation=True, window=12, theta=0.05)
        seq, t_seq = run_query(idx, text, "sequential")
        tt, t_tt = run_query(idx, text, "tree_traversal")
        row: dict[str, Any] = {"events": events, "order_instances": [str(f.n_order_instances)
                                                     for f in idx._index.forests],
               "sequential_s": t_seq, "tree_traversal_s": t_tt}
        try:
            pw, t_pw = run_query(idx, text, "possible_worlds")
            assert same_answer(seq, pw) and same_answer(seq, tt)
            row["possible_worlds_s"] = t_pw
        except uc.PlanningError as e:
            row["possible_worlds_s"] = None
            row["possible_worlds_error"] = str(e)[:100]
        rows.append(row)
        print("possible worlds", row, flush=True)
        if row["possible_worlds_s"] is None or row["possible_worlds_s"] > limit_s:
            break
    return rows


# ---------------------------------------------------------------- report

def summarise(results: dict) -> str:
    lines = ["<!-- core:start (generated by bench/bench_core.py) -->", ""]
    meta = results["meta"]
    lines += [f"Run {meta['date']} on {meta['machine']} ({meta['cpus']} cores), "
              f"Python {meta['python']}. Times in seconds.", ""]
    lines += ["### Single tree vs multi-tree build", "",
              "| sequence | length | OIs | single s | single nodes | multi s | multi nodes |"
              " multi trees |", "|---|---|---|---|---|---|---|---|"]
    for r in results["single_vs_multi"]:
        s = "-" if r["single_seconds"] is None else f"{r['single_seconds']:.3f}"
        lines.append(f"| {r['sequence']} | {r['length']} | {r['order_instances']} | {s} | "
                     f"{r['single_nodes'] if r['single_nodes'] is not None else '-'} | "
                     f"{r['multi_seconds']:.3f} | {r['multi_nodes']} | {r['multi_trees']} |")
    lines += ["", "### Multi-tree build scaling (f in [2, 5])", "",
              "| timestamps | events | s | events/s | nodes | trees | max height |"
              " paper code bits | largest compact code |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results["multi_scaling"]:
        if "error" in r:
            lines.append(f"| {r['timestamps']} | {r['events']} | {r['error']} |||||||")
            continue
        lines.append(f"| {r['timestamps']} | {r['events']} | {r['seconds']:.2f} | "
                     f"{r['events_per_second']:.0f} | {r['nodes']} | {r['trees']} | "
                     f"{r['max_tree_height']} | {r['largest_paper_code_bits']} | "
                     f"{r['largest_compact_code']} |")
    q = pd.DataFrame(results["queries"])
    lines += ["", f"### Queries on {results['query_archive']}", "",
              "Medians over the random queries of each n (a third with a negation); tree "
              "traversal on the first few of each n (count in brackets), its ratio over "
              "those same queries. Answers of all strategies identical.", "",
              "| n | queries | matches | sequential compact s | sequential paper s | "
              "tree traversal s | TT / seq | entries (xi) | range queries compact | "
              "range queries paper |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n, g in q.groupby("n"):
        tt = g.dropna(subset=["tree_traversal_s"])
        ratio = (tt.tree_traversal_s / tt.sequential_compact_s).median()
        lines.append(f"| {n} | {len(g)} | {g.matches.median():.0f} | "
                     f"{g.sequential_compact_s.median():.4f} | {g.sequential_paper_s.median():.4f}"
                     f" | {tt.tree_traversal_s.median():.4f} ({len(tt)}) | {ratio:.1f}x | "
                     f"{g.entries.median():.0f} | {g.range_queries_compact.median():.0f} | "
                     f"{g.range_queries_paper.median():.0f} |")
    lines += ["", "### Against the possible-worlds baseline (2 groups, squeezed time)", "",
              "| events | OIs per group | sequential s | tree traversal s | possible worlds s |",
              "|---|---|---|---|---|"]
    for r in results["possible_worlds"]:
        pw = (f"{r['possible_worlds_s']:.3f}" if r["possible_worlds_s"] is not None
              else "infeasible: " + r.get("possible_worlds_error", ""))
        lines.append(f"| {r['events']} | {', '.join(r['order_instances'])} | "
                     f"{r['sequential_s']:.3f} | {r['tree_traversal_s']:.3f} | {pw} |")
    lines += ["", "<!-- core:end -->"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    quick = args.quick
    results = {
        "meta": {"date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
                 "cpus": os.cpu_count(), "python": platform.python_version()},
        "single_vs_multi": single_vs_multi([5, 10] if quick else [5, 10, 15, 20],
                                           single_limit_s=120),
        "multi_scaling": multi_scaling([10, 100] if quick else [10, 100, 1000, 10000]),
        "query_archive": "synthetic, 5,000 events, 4 groups, f in [2, 5]",
        "queries": query_comparison(500 if quick else 5000, 4, 3 if quick else 9, seed=11,
                                    tree_traversal_per_n=2 if quick else 3),
        "possible_worlds": possible_worlds_limit([6, 8, 10, 12, 14, 16, 18, 20, 24, 28],
                                                 limit_s=60, seed=5),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    write_json(RESULTS, results, indent=2)
    replace_section(DOC, "core", "Core: index build and query evaluation", summarise(results))
    print(f"wrote {RESULTS} and {DOC}")


if __name__ == "__main__":
    main()
