"""The paper's query experiments (Zhou et al. 6.3): sequential vs selectivity-ordered
evaluation vs tree traversal.

Data sets, as the paper prepares them (first 5,000 events, timestamps normalised to 20,000
instants, f in [2, 6], values widened into ranges; events spread over dependency groups at
random): the Dodgers loop sensor and the localization data for person activity from
``../shared/datasets``, and the paper's synthetic sequence (5,000 events, 2 Gaussian
attributes, uniform timestamps over 50,000 instants, f in [2, 6]).

Queries as in 6.1: each item's condition covers 20% of the attribute space at a random
centre; 10% of the items (never the first or last) are negated. Four experiments:

* dependency groups 1..8 (n = 5), with tree traversal (capped per query);
* pattern length n = 5..30;
* window L from n to 5n (n = 10);
* confidence 0.4..0.8 (n = 10).

Unless varied, L is drawn from [2n, 5n], theta from [0.6, 0.8], and there are 4 groups.
Measured per query and strategy: the paper's xi (entries ever created), wall time, and
R*-tree node reads (the query's search boxes replayed on a counting copy of its R*-tree,
:mod:`uncertain_cep.index.store.node_reads`). Answers of strategies that finish are checked
identical. A run over the per-query time cap is recorded as such, never averaged in as if it
had finished.

Writes ``bench/results/queries.json``, ``bench/results/queries_<experiment>.png`` and the
tables of ``docs/benchmarks.md`` (between the ``queries`` markers).
Run: ``.venv/bin/python bench/bench_queries.py [--quick] [--per-point Q] [--cap S]``.
Re-measure some experiments alone with ``--datasets D --experiments E --tt-cap S``
(the other saved runs are kept), then write the report with ``--from-runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
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
from uncertain_cep.datasets import (  # noqa: E402
    generate_synthetic,
    load_dodgers,
    load_localization,
)
from uncertain_cep.index.store.node_reads import NodeReadCounter  # noqa: E402

SHARED = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "bench" / "results" / "queries.json"
PLOTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
STRATEGIES = ("sequential", "selectivity", "tree_traversal")


# ---------------------------------------------------------------- data and queries

def dataset(name: str, groups: int, seed: int) -> pd.DataFrame:
    if name == "dodgers":
        return load_dodgers(SHARED / "dodgers" / "Dodgers.data", groups=groups, seed=seed)
    if name == "localization":
        path = next((SHARED / "localization-person-activity").glob("ConfLongDemo_JSI*.csv"))
        return load_localization(path, groups=groups, seed=seed)
    return generate_synthetic(5000, groups=groups, d=2, f=(2, 6), seed=seed)


def random_query(rng: np.random.Generator, df: pd.DataFrame, n: int, *,
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
    inner = list(range(1, n - 1))
    for i in rng.choice(inner, size=min(len(inner), round(0.1 * n)), replace=False):
        items[int(i)] = "NOT " + items[int(i)]
    L = int(rng.integers(2 * n, 5 * n + 1)) if window is None else window
    theta = float(rng.uniform(0.6, 0.8)) if theta is None else theta
    return (f"PATTERN SEQ({', '.join(items)}) DEFINE {', '.join(defs)} "
            f"WITHIN {L} CONFIDENCE {theta:.3f}")


# ---------------------------------------------------------------- measuring

class _Timeout(Exception):
    pass


_fired = [False]


def _alarm(signum: int, frame: Any) -> None:
    # Raised wherever Python is; inside a ctypes call the exception arrives wrapped in
    # another type, so the flag says what really happened.
    _fired[0] = True
    raise _Timeout


def measure(idx: uc.UncertainIndex, counter: NodeReadCounter, text: str, strategy: str,
            cap: float) -> tuple[dict[str, Any], pd.DataFrame | None]:
    ei = idx.event_index
    ei.search_log = [] if strategy != "tree_traversal" else None
    signal.signal(signal.SIGALRM, _alarm)
    _fired[0] = False
    signal.setitimer(signal.ITIMER_REAL, cap)
    started = time.perf_counter()
    try:
        res = idx.query(text, strategy=strategy)
    except Exception as e:
        signal.setitimer(signal.ITIMER_REAL, 0)
        ei.search_log = None
        if not _fired[0]:
            # Recorded, not raised: one failing query must not lose a data set's runs.
            # It counts as not finished within the cap.
            return {"strategy": strategy, "timed_out": True, "seconds": cap, "cap": cap,
                    "error": f"{type(e).__name__}: {e}"}, None
        return {"strategy": strategy, "timed_out": True, "seconds": cap, "cap": cap}, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    seconds = time.perf_counter() - started
    log, ei.search_log = ei.search_log, None
    stats = res.stats
    return {"strategy": strategy, "timed_out": False, "seconds": seconds, "cap": cap,
            "entries": stats.entries_created, "range_queries": stats.range_queries,
            "node_reads": counter.replay(log) if log is not None else None,
            "matches": len(res)}, res


def same_answer(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """The same tuples with confidences equal to 1e-9 (the contract). Row order is not
    compared: rows whose confidences differ by rounding noise (1e-12 on long chains)
    may sort either way."""
    if len(a) != len(b) or set(a["events"]) != set(b["events"]):
        return False
    mine = dict(zip(a["events"], a["confidence"]))
    return bool(np.allclose([mine[e] for e in b["events"]], b["confidence"], atol=1e-9,
                            rtol=0))


def run_point(idx: uc.UncertainIndex, counter: NodeReadCounter, texts: list[str],
              strategies: tuple[str, ...], cap: float, tt_cap: float) -> list[dict[str, Any]]:
    rows = []
    for q, text in enumerate(texts):
        answers = {}
        for strategy in strategies:
            row, res = measure(idx, counter, text, strategy,
                               tt_cap if strategy == "tree_traversal" else cap)
            row["query"] = q
            rows.append(row)
            if res is not None:
                answers[strategy] = res
        if answers:
            ref = next(iter(answers.values()))
            for name, res in answers.items():
                if not same_answer(res, ref):
                    raise AssertionError(f"{name} disagrees on {text}")
    return rows


def experiments(quick: bool) -> dict[str, dict[str, Any]]:
    n_values = [5, 10] if quick else [5, 10, 15, 20, 25, 30]
    return {
        "groups": {"values": [1, 2, 4, 8] if quick else [1, 2, 4, 6, 8],
                   "strategies": STRATEGIES},
        "n": {"values": n_values, "strategies": STRATEGIES[:2]},
        "window": {"values": [1, 3, 5] if quick else [1, 2, 3, 4, 5],
                   "strategies": STRATEGIES[:2]},
        "confidence": {"values": [0.4, 0.8] if quick else [0.4, 0.5, 0.6, 0.7, 0.8],
                       "strategies": STRATEGIES[:2]},
    }


def run(names: list[str], per_point: int, cap: float, tt_cap: float, quick: bool,
        seed: int, only: list[str] | None = None) -> list[dict[str, Any]]:
    """Measure every experiment (or those in ``only``) on each data set. A data set's
    runs are saved as soon as they are done; with ``only``, its saved runs of the other
    experiments are kept beside the new ones (report them with --from-runs)."""
    out: list[dict[str, Any]] = []
    plan = experiments(quick)
    for name in names:
        built: dict[int, tuple[pd.DataFrame, uc.UncertainIndex, NodeReadCounter]] = {}
        for experiment, spec in plan.items():
            if only is not None and experiment not in only:
                continue
            rng = np.random.default_rng([seed, len(experiment)])
            for value in spec["values"]:
                groups = value if experiment == "groups" else 4
                if groups not in built:
                    df = dataset(name, groups, seed)
                    idx = uc.build_index(df)
                    built[groups] = (df, idx, NodeReadCounter(idx.event_index))
                df, idx, counter = built[groups]
                texts = []
                for _ in range(per_point):
                    if experiment == "n":
                        texts.append(random_query(rng, df, value))
                    elif experiment == "window":
                        texts.append(random_query(rng, df, 10, window=10 * value))
                    elif experiment == "confidence":
                        texts.append(random_query(rng, df, 10, theta=value))
                    else:
                        texts.append(random_query(rng, df, 5))
                started = time.perf_counter()
                for row in run_point(idx, counter, texts, spec["strategies"], cap, tt_cap):
                    out.append({"dataset": name, "experiment": experiment, "value": value,
                                **row})
                print(f"{name:12s} {experiment:10s} {value:>5}: "
                      f"{time.perf_counter() - started:6.1f} s", flush=True)
        # Each data set's runs are kept as soon as they are done (a later failure or a
        # rerun of other data sets keeps them: see --from-runs).
        part = PLOTS / f"queries_runs_{name}.json"
        kept = ([r for r in json.loads(part.read_text()) if r["experiment"] not in only]
                if only is not None and part.exists() else [])
        write_json(part, kept + [r for r in out if r["dataset"] == name], default=float)
    return out


# ---------------------------------------------------------------- reporting

def point_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Per data set, experiment, value and strategy: queries finished, mean xi, time and
    node reads over the queries every compared strategy finished."""
    df = pd.DataFrame(rows)
    keys = ["dataset", "experiment", "value"]
    out = []
    for key, part in df.groupby(keys, sort=False):
        # Compare sequential and selectivity on the queries both finished.
        core = part[part.strategy.isin(["sequential", "selectivity"])]
        done = core.groupby("query")["timed_out"].apply(lambda s: not s.any())
        both = set(done[done].index)
        for strategy, sub in part.groupby("strategy", sort=False):
            fin = sub[~sub.timed_out]
            common = sub[sub["query"].isin(both) & ~sub.timed_out]
            out.append({**dict(zip(keys, key)), "strategy": strategy,
                        "queries": len(sub), "finished": len(fin),
                        "entries": common["entries"].mean() if len(common) else np.nan,
                        "seconds": (common if strategy != "tree_traversal" else fin)[
                            "seconds"].mean() if len(fin) else np.nan,
                        "node_reads": common["node_reads"].mean() if len(common) else np.nan,
                        "seconds_incl_caps": sub["seconds"].mean()})
    return pd.DataFrame(out)


def ratios(table: pd.DataFrame) -> pd.DataFrame:
    """Sequential / selectivity for xi, time and node reads, and tree traversal /
    selectivity time (a lower bound where tree traversal hit its cap)."""
    wide = table.pivot_table(index=["dataset", "experiment", "value"], columns="strategy",
                             values=["entries", "seconds", "node_reads", "seconds_incl_caps"],
                             aggfunc="first", sort=False)
    out = pd.DataFrame(index=wide.index)
    out["xi seq/sel"] = wide["entries"]["sequential"] / wide["entries"]["selectivity"]
    out["time seq/sel"] = wide["seconds"]["sequential"] / wide["seconds"]["selectivity"]
    out["reads seq/sel"] = wide["node_reads"]["sequential"] / wide["node_reads"]["selectivity"]
    if ("seconds_incl_caps", "tree_traversal") in wide.columns:
        out["time tt/sel"] = (wide["seconds_incl_caps"]["tree_traversal"]
                              / wide["seconds_incl_caps"]["selectivity"])
    return out.reset_index()


def plot(table: pd.DataFrame) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    labels = {"groups": "dependency groups", "n": "pattern items n",
              "window": "window L / n (n = 10)", "confidence": "confidence threshold"}
    for experiment, part in table.groupby("experiment", sort=False):
        datasets = list(dict.fromkeys(part["dataset"]))
        fig, axes = plt.subplots(len(datasets), 3, figsize=(12, 3.2 * len(datasets)),
                                 squeeze=False)
        for r, name in enumerate(datasets):
            sub = part[part.dataset == name]
            for c, (col, title) in enumerate([("entries", "entries created (xi)"),
                                              ("seconds_incl_caps", "query time (s)"),
                                              ("node_reads", "R*-tree node reads")]):
                ax = axes[r][c]
                for strategy, s in sub.groupby("strategy", sort=False):
                    if s[col].notna().any():
                        ax.plot(s["value"], s[col], marker="o", label=strategy)
                ax.set_yscale("log")
                ax.set_title(f"{name}: {title}", fontsize=9)
                ax.set_xlabel(labels[str(experiment)], fontsize=8)
                ax.grid(alpha=0.3)
                if r == 0 and c == 0:
                    ax.legend(fontsize=8)
        fig.tight_layout()
        path = PLOTS / f"queries_{experiment}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path.name)
    return files


def summarise(results: dict[str, Any]) -> str:
    table = pd.DataFrame(results["points"])
    ratio = pd.DataFrame(results["ratios"])
    meta = results["meta"]
    # Runs re-measured alone (--experiments) may have had another tree-traversal cap.
    others = sorted({(r["dataset"], r["experiment"], r["cap"]) for r in results["runs"]
                     if r["strategy"] == "tree_traversal"
                     and r.get("cap", meta["tt_cap"]) != meta["tt_cap"]})
    tt_cap = f"{meta['tt_cap']} s" + "".join(f", {c} s for {d} varying {e}"
                                             for d, e, c in others)
    lines = ["<!-- queries:start (written by bench/bench_queries.py) -->", "",
             f"Run {meta['date']} on {meta['cpus']} CPUs ({meta['machine']}), "
             f"{meta['per_point']} queries per point, cap {meta['cap']} s per query "
             f"(tree traversal: {tt_cap}), {meta.get('jobs', 1)} data set(s) "
             "measured at a time. Means over the queries both "
             "sequential and selectivity finished; `finished` counts those within the cap. "
             "Plots: " + ", ".join(f"`bench/results/{f}`" for f in results["plots"]) + ".",
             ""]
    for experiment, part in table.groupby("experiment", sort=False):
        lines += [f"#### Varying {experiment}", "",
                  "| data set | value | strategy | finished | xi | time (s) | node reads |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for _, r in part.iterrows():
            lines.append(f"| {r.dataset} | {r.value} | {r.strategy} | "
                         f"{r.finished}/{r.queries} | {_num(r.entries)} | "
                         f"{_num(r.seconds, 3)} | {_num(r.node_reads)} |")
        lines.append("")
        sub = ratio[ratio.experiment == experiment]
        cols = [c for c in ("xi seq/sel", "time seq/sel", "reads seq/sel", "time tt/sel")
                if c in sub.columns and sub[c].notna().any()]
        lines += ["| data set | value | " + " | ".join(cols) + " |",
                  "|---|---:|" + "---:|" * len(cols)]
        for _, r in sub.iterrows():
            lines.append(f"| {r.dataset} | {r.value} | "
                         + " | ".join(_num(r[c], 2) for c in cols) + " |")
        lines.append("")
    lines.append("<!-- queries:end -->")
    return "\n".join(lines)


def _num(x: Any, digits: int = 0) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return f"{x:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="few points, for a smoke run")
    parser.add_argument("--datasets", nargs="+",
                        default=["dodgers", "localization", "synthetic"])
    parser.add_argument("--per-point", type=int, default=3, help="queries per point")
    parser.add_argument("--cap", type=float, default=20.0, help="seconds per query")
    parser.add_argument("--tt-cap", type=float, default=20.0,
                        help="seconds per tree-traversal query")
    parser.add_argument("--jobs", type=int, default=1,
                        help="data sets measured in parallel, one process each")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--experiments", nargs="+", choices=list(experiments(False)),
                        help="measure only these (the saved runs of the others are kept; "
                             "then report all with --from-runs)")
    parser.add_argument("--from-runs", action="store_true",
                        help="report from the saved per-data-set runs without measuring")
    args = parser.parse_args()
    started = time.time()
    if not args.from_runs:
        # Times are of compiled kernels (setup compiles them; this is a look at one file
        # unless a kernel was edited since).
        subprocess.run([sys.executable, "-m", "uncertain_cep.kernel_build"], check=True)
    if args.from_runs:
        rows = [r for d in args.datasets
                for r in json.loads((PLOTS / f"queries_runs_{d}.json").read_text())]
    elif args.jobs > 1:
        # One data set per process; each measures on one core, strategies side by side.
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs) as pool:
            parts = pool.map(run, [[d] for d in args.datasets],
                             *zip(*[(args.per_point, args.cap, args.tt_cap, args.quick,
                                     args.seed, args.experiments)] * len(args.datasets)))
            rows = [row for part in parts for row in part]
    else:
        rows = run(args.datasets, args.per_point, args.cap, args.tt_cap, args.quick,
                   args.seed, args.experiments)
    if args.experiments and not args.from_runs:
        print(f"saved the runs of {', '.join(args.experiments)}; write the report from "
              "every data set's runs with --from-runs")
        return
    table = point_table(rows)
    PLOTS.mkdir(parents=True, exist_ok=True)
    results = {
        "meta": {"date": time.strftime("%Y-%m-%d"), "machine": platform.machine(),
                 "cpus": os.cpu_count(), "python": platform.python_version(),
                 "per_point": args.per_point, "cap": args.cap, "tt_cap": args.tt_cap,
                 "seed": args.seed, "jobs": args.jobs,
                 "wall_seconds": round(time.time() - started, 1)},
        "runs": rows,
        "points": table.replace({np.nan: None}).to_dict("records"),
        "ratios": ratios(table).replace({np.nan: None}).to_dict("records"),
        "plots": plot(table),
    }
    write_json(RESULTS, results, indent=2, default=float)
    replace_section(DOC, "queries", "Query evaluation: the paper's section 6.3",
                    summarise(results))
    print(f"wrote {RESULTS}, {len(results['plots'])} plots and {DOC}")


if __name__ == "__main__":
    main()
