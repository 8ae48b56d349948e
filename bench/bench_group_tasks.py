"""A Spark build's group task in process (issue 47): what a group costs as the build cuts
it into more shards' pieces.

A sharded build cuts the archive by time, and every group spanning the archive's time
range is cut with it: at 10M events (4 shards) a group of the paper's generator is 4
pieces, at 100M (25 shards) 25 pieces, each indexed and written as a group of its own
(pipeline/group_builder.py). The per-piece cost is what keeps events per second from
holding between 10M and 100M. This benchmark runs one task's work,
:func:`~uncertain_cep.pipeline.group_builder.build_partition`, on the same groups cut
into 1, 4 and 25 shards, side by side in one run, and reports events per second, pieces
and milliseconds per piece (best of ``--repeats``; no Spark: the task's own code).

Usage: ``.venv/bin/python bench/bench_group_tasks.py [--groups 200 --per-group 1000]``;
writes ``bench/results/group_tasks.json`` and the ``group_tasks`` section of
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.doc_sections import replace_section, write_json  # noqa: E402
from uncertain_cep.datasets.synthetic import generate_synthetic  # noqa: E402
from uncertain_cep.index.group_build import BuildSettings  # noqa: E402
from uncertain_cep.pipeline.group_builder import (  # noqa: E402
    FILE_COLUMN,
    ROW_COLUMN,
    GroupJob,
    build_partition,
)

RESULTS = ROOT / "bench" / "results" / "group_tasks.json"
DOC = ROOT / "docs" / "benchmarks.md"


def run(groups: int, per_group: int, shards: list[int], repeats: int) -> list[dict[str, Any]]:
    n = groups * per_group
    df = generate_synthetic(n, groups=groups, seed=1)
    df["group"] = df["group"].astype(str)
    df = df.sort_values("group", kind="stable").reset_index(drop=True)
    df[FILE_COLUMN], df[ROW_COLUMN] = "synthetic", np.arange(n)
    batches = [df.iloc[i:i + 10_000] for i in range(0, n, 10_000)]
    rows = []
    for k in shards:
        quantiles = np.quantile(df["t_lo"], np.linspace(0, 1, k + 1)[1:-1])
        cuts = tuple(int(x) for x in quantiles)
        best, pieces = float("inf"), 0
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as draft:
                job = GroupJob(draft=draft, group_by="group", time_unit=None,
                               settings=BuildSettings(), reject_rows=True, cuts=cuts)
                started = time.perf_counter()
                summary = build_partition(job, 0, 0, iter(batches))
                best = min(best, time.perf_counter() - started)
            pieces = int(sum(len(s) if s is not None else 1 for s in summary["shards"]))
        rows.append({"shards": k, "events": n, "groups": groups, "pieces": pieces,
                     "seconds": round(best, 3), "events_per_s": round(n / best),
                     "ms_per_piece": round(1000 * best / pieces, 3)})
        print(rows[-1], flush=True)
    return rows


def section(rows: list[dict[str, Any]]) -> str:
    base = rows[0]["events_per_s"]
    lines = [f"<!-- group_tasks:start (written by bench/bench_group_tasks.py on "
             f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, Python "
             f"{platform.python_version()}) -->",
             "| shards | events | pieces | seconds | events/s | ms per piece | "
             "slower than 1 shard |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['shards']} | {r['events']:,} | {r['pieces']:,} | {r['seconds']} | "
                     f"{r['events_per_s']:,} | {r['ms_per_piece']} | "
                     f"{base / r['events_per_s']:.2f}x |")
    lines.append("<!-- group_tasks:end -->")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--per-group", type=int, default=1000)
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 4, 25])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = run(args.groups, args.per_group, args.shards, args.repeats)
    write_json(RESULTS, {"machine": platform.machine(), "rows": rows}, indent=1)
    replace_section(DOC, "group_tasks", "Group tasks in process (issue 47)", section(rows))


if __name__ == "__main__":
    main()
