"""Opening a sharded index (issue 47: "opening any index in at most 1 s"): this tree
against another checkout (``--against``, e.g. a ``git worktree`` of the commit before),
on the same Spark-built index, in alternating fresh processes.

Each tree has its own working-copy cache (``UNCERTAIN_CEP_CACHE``), so that three cases
can be timed apart, each in a fresh process that opens the index and answers one query
twice:

* **cold**: an empty cache (a host that never opened the index: every shard expanded
  from its stored files, then the shards written side by side);
* **after build**: the shards' working copies are there, their side-by-side copy is not
  (what the host that built the index sees at its first open);
* **warm**: everything in the cache.

Usage::

    git worktree add --detach /tmp/old 74a54ac
    .venv/bin/python bench/bench_open.py --against /tmp/old --n 4000000 --shard-events 1000000

Writes ``bench/results/open.json`` and the ``open`` section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_archive import QUERIES, ensure_index  # noqa: E402
from bench.doc_sections import replace_section, write_json  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "open.json"
DOC = ROOT / "docs" / "benchmarks.md"

_CHILD = """
import json, sys, time
import uncertain_cep as uc
import uncertain_cep.api
t = time.perf_counter()
idx = uc.open_index(sys.argv[1])
opened = time.perf_counter() - t
runs = []
for _ in range(2):
    t = time.perf_counter()
    res = idx.query(sys.argv[2])
    runs.append(time.perf_counter() - t)
print("RESULT", json.dumps({"open": opened, "first_query": runs[0], "query": runs[1],
                           "rows": len(res)}))
"""

CASES = ("cold", "after build", "warm")


def run(tree: Path, index: Path, cache: Path, case: str) -> dict[str, Any]:
    """One fresh process of ``tree`` opening ``index`` with the cache prepared for
    ``case``."""
    if case == "cold":
        shutil.rmtree(cache, ignore_errors=True)
    elif case == "after build":
        for copy in cache.glob("*-side-by-side"):
            shutil.rmtree(copy)
    env = {**os.environ, "PYTHONPATH": str(tree), "UNCERTAIN_CEP_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(index), QUERIES[0]],
                          check=True, capture_output=True, text=True, env=env, cwd=tree)
    return json.loads(done.stdout.split("RESULT", 1)[1])


def section(results: dict[str, Any]) -> str:
    lines = [f"<!-- open:start (written by bench/bench_open.py on {results['date']}, "
             f"{results['machine']}) -->", "",
             f"{results['events']:,} events in {results['shards']} shards (Spark-built), "
             f"query `{results['query'][:60]}...`; best of {results['rounds']} "
             "alternating rounds, each case a fresh process; seconds.", "",
             "| case | tree | open | first query | second query | open + first query, "
             "this / other |",
             "|---|---|---:|---:|---:|---:|"]
    for case in CASES:
        best = {t: {k: min(r[k] for r in results["runs"][t][case])
                    for k in ("open", "first_query", "query")} for t in ("this", "other")}
        for t in ("this", "other"):
            b = best[t]
            ratio = (f"{_first_answer(best['this']) / _first_answer(best['other']):.2f}x"
                     if t == "this" else "")
            lines.append(f"| {case} | {t if t == 'this' else results['against']} | "
                         f"{b['open']:.2f} | {b['first_query']:.2f} | {b['query']:.2f} | "
                         f"{ratio} |")
    lines += ["", "<!-- open:end -->"]
    return "\n".join(lines)


def _first_answer(best: dict[str, float]) -> float:
    """Seconds from opening to the first answer: an index opened lazily maps its shards
    at its first query, so opening alone compares trees unfairly."""
    return best["open"] + best["first_query"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True)
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--shard-events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "work")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    index = ensure_index(args.n, args.work, args.shard_events)
    trees = {"this": ROOT, "other": args.against.resolve()}
    caches = {t: args.work / f"open-cache-{t}" for t in trees}
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        t: {c: [] for c in CASES} for t in trees}
    for r in range(args.rounds):
        for t in (("this", "other") if r % 2 == 0 else ("other", "this")):
            for case in CASES:
                runs[t][case].append(run(trees[t], index, caches[t], case))
                print(t, case, runs[t][case][-1], flush=True)
    for t in trees:
        shutil.rmtree(caches[t], ignore_errors=True)
    manifest = json.loads((index / "manifest.json").read_text())
    against = subprocess.run(["git", "-C", str(args.against), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or str(args.against)
    results = {"date": time.strftime("%Y-%m-%d"),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "events": args.n, "shards": len(manifest["shards"]), "query": QUERIES[0],
               "rounds": args.rounds, "against": against, "runs": runs}
    write_json(RESULTS, results, indent=1)
    replace_section(DOC, "open", "Opening a sharded index (issue 47)", section(results))
    print(section(results))


if __name__ == "__main__":
    main()
