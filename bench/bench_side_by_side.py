"""Side by side with an older checkout (issue "The query wing as rooms"): the batch
engine's workloads of bench/bench_batches.py and the archive queries of
bench/bench_archive.py, answered by this tree and by ``--against`` (another checkout
of the project, e.g. a ``git worktree`` at the commit before a refactor) in alternating
fresh processes, on the same data and the same index.

Each process imports one tree (``PYTHONPATH``), builds or opens the index (not timed),
answers the query once to load the compiled kernels, then times ``--repeats`` runs and
reports the best, with a digest of the answer (rows, summed confidence) that must match
between the trees. Rounds alternate between the trees (``--rounds``) and the best of
all rounds counts, so drift of the machine hits both alike.

Usage: ``.venv/bin/python bench/bench_side_by_side.py --against /path/to/old/checkout``
(the older checkout's kernels compile into its own numba cache on its first process);
writes ``bench/results/side_by_side.json`` and the ``side_by_side`` section of
``docs/benchmarks.md``.
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

from bench.bench_archive import QUERIES as ARCHIVE_QUERIES  # noqa: E402
from bench.bench_archive import ensure_index  # noqa: E402
from bench.bench_batches import BROAD, BROAD_NOT, SELECTIVE, SKEWED, dense  # noqa: E402
from bench.doc_sections import replace_section, write_json  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "side_by_side.json"   # (or --name's)
DOC = ROOT / "docs" / "benchmarks.md"

_CHILD = """
import inspect, json, sys, time
import pandas as pd
import uncertain_cep as uc
source, query, strategy, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
if source.endswith(".parquet"):
    idx = uc.build_index(pd.read_parquet(source))
else:
    idx = uc.open_index(source)
# The whole table however large (trees since issue 48 stop at max_rows by default).
budget = {"max_rows": None} if "max_rows" in inspect.signature(idx.query).parameters else {}
res = idx.query(query, strategy=strategy, **budget)      # loads the compiled kernels
best = float("inf")
for _ in range(repeats):
    t = time.perf_counter()
    res = idx.query(query, strategy=strategy, **budget)
    best = min(best, time.perf_counter() - t)
conf = float(res["confidence"].sum()) if len(res) else 0.0
print("RESULT", json.dumps({"seconds": best, "rows": len(res), "confidence": conf}))
"""


def run(tree: Path, source: Path, query: str, strategy: str, repeats: int) -> dict[str, Any]:
    """One fresh process importing ``tree``: the best of ``repeats`` answers."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(source), query, strategy,
                           str(repeats)], check=True, capture_output=True, text=True,
                          env=env, cwd=tree)
    return json.loads(done.stdout.split("RESULT", 1)[1])


def tree_index(tree: Path, events: int, work: Path) -> Path:
    """The 1M archive's index as ``tree`` builds it (an older tree may not read this
    tree's index format): this tree's is bench_archive's; another's is built once by its
    own command line, beside it, named by its commit."""
    index = ensure_index(events, work)
    if tree == ROOT:
        return index
    rev = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                         check=True, capture_output=True, text=True).stdout.strip()
    own = work / f"index-{events}-at-{rev}"
    if not (own / "manifest.json").exists():
        subprocess.run([sys.executable, "-m", "uncertain_cep.cli", "build",
                        str(work / f"synthetic-{events}.parquet"), "--out", str(own)],
                       check=True, env=dict(os.environ, PYTHONPATH=str(tree)), cwd=tree)
    return own


def workloads(work: Path, archive_events: int) -> list[tuple[str, Path, str, str]]:
    """(name, data or index, query, strategy) for every case timed (an index: this
    tree's; :func:`tree_index` gives the other tree its own)."""
    from uncertain_cep.datasets.synthetic import generate_synthetic

    data = {"skewed": (lambda: dense(2_000, 8, 5), SKEWED),
            "broad": (lambda: dense(3_000, 60, 7), BROAD),
            "broad + NOT": (lambda: dense(3_000, 60, 7), BROAD_NOT),
            "selective": (lambda: generate_synthetic(200_000, groups=200, d=2, seed=11),
                          SELECTIVE)}
    cases = []
    for name, (make, query) in data.items():
        path = work / f"side-{name.replace(' + ', '-').replace(' ', '-')}.parquet"
        if not path.exists():
            make().to_parquet(path)
        for strategy in ("selectivity", "sequential"):
            cases.append((f"batches: {name}", path, query, strategy))
    if archive_events:
        index = ensure_index(archive_events, work)
        for k, query in enumerate(ARCHIVE_QUERIES):
            cases.append((f"archive {archive_events:,}: query {k + 1}", index, query,
                          "selectivity"))
    return cases


def measure(against: Path, work: Path, rounds: int, repeats: int,
            archive_events: int) -> list[dict[str, Any]]:
    out = []
    for name, source, query, strategy in workloads(work, archive_events):
        best: dict[str, dict[str, Any]] = {}
        for _ in range(rounds):
            for label, tree in (("before", against), ("after", ROOT)):
                data = (source if source.suffix == ".parquet"
                        else tree_index(tree, archive_events, work))
                got = run(tree, data, query, strategy, repeats)
                if label not in best or got["seconds"] < best[label]["seconds"]:
                    best[label] = got
        before, after = best["before"], best["after"]
        same = (before["rows"] == after["rows"]
                and abs(before["confidence"] - after["confidence"]) <= 1e-6 * max(
                    1.0, abs(before["confidence"])))
        row = {"case": name, "strategy": strategy, "rows": after["rows"],
               "before_seconds": before["seconds"], "after_seconds": after["seconds"],
               "ratio": after["seconds"] / before["seconds"], "same_answer": same}
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def section(results: dict[str, Any], name: str = "side_by_side") -> str:
    lines = [f"<!-- {name}:start (written by bench/bench_side_by_side.py) -->", "",
             f"Run {results['date']} on {results['machine']}: this tree ({results['after']}) "
             f"against {results['before']}, in alternating fresh processes, best of "
             f"{results['rounds']} rounds x {results['repeats']} runs each (seconds; "
             "ratio = after / before, below 1 is faster).", "",
             "| case | strategy | rows | before (s) | after (s) | ratio | same answer |",
             "|---|---|---:|---:|---:|---:|---|"]
    for r in results["cases"]:
        lines.append(f"| {r['case']} | {r['strategy']} | {r['rows']:,} | "
                     f"{r['before_seconds']:.3f} | {r['after_seconds']:.3f} | "
                     f"{r['ratio']:.3f} | {'yes' if r['same_answer'] else 'NO'} |")
    lines += ["", f"<!-- {name}:end -->"]
    return "\n".join(lines)


def _commit(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    return done.stdout.strip() or str(tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, required=True,
                        help="another checkout of the project (the 'before')")
    parser.add_argument("--work", type=Path, default=Path("/tmp/uncertain-cep-bench"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--archive-events", type=int, default=1_000_000,
                        help="the archive's size (0: skip the archive queries)")
    parser.add_argument("--name", default="side_by_side",
                        help="the results' JSON file and docs section (another name keeps "
                             "an earlier comparison's)")
    parser.add_argument("--heading", default="Side by side with the commit before a refactor",
                        help="the docs heading of a new section")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    cases = measure(args.against.resolve(), args.work, args.rounds, args.repeats,
                    args.archive_events)
    results = {"date": time.strftime("%Y-%m-%d"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                          f"{platform.python_version()}",
               "before": _commit(args.against), "after": _commit(ROOT),
               "rounds": args.rounds, "repeats": args.repeats, "cases": cases}
    write_json(RESULTS.with_name(f"{args.name}.json"), results, indent=1)
    replace_section(DOC, args.name, args.heading, section(results, args.name))


if __name__ == "__main__":
    main()
