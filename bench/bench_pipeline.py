"""Spark pipeline benchmark: build throughput and peak memory, and Spark vs local queries.

Archives come from the paper's generator (uniform timestamps over 10N instants, two
Gaussian attributes, f in [2, 6] possible instants per event) with one dependency group
per 1,000 events. Each build runs as its own process (``uncertain-cep build``, Spark local
mode on every core) so that peak memory is that of the whole process tree: the driver,
the JVM and the Python workers, sampled every 0.2 s from /proc, as RSS and as PSS (which
counts a page shared by several processes once: the Spark engine's workers each
memory-map the index). The query comparison runs
on the largest index: the local engine (open the index, then query) against the Spark
engine (time slices in executors), answers checked equal.

Usage: ``.venv/bin/python bench/bench_pipeline.py [--sizes 100000 1000000 5000000]``;
writes ``bench/results/pipeline.json`` and the table in ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from uncertain_cep.datasets.synthetic import generate_synthetic  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "pipeline.json"
DOCS = ROOT / "docs" / "benchmarks.md"
# Selective queries (A holds for about 0.1% of events, B for 1%). At 1M events and 1,000
# groups every "any other group" range query of the sequential strategy visits about one
# R*-tree leaf per group (~3 ms a box), so broad queries take many minutes on either engine.
QUERIES = [
    "PATTERN SEQ(A, B) DEFINE A AS a0 < -3, B AS a0 > 2.3 WITHIN 10 CONFIDENCE 0.5",
    "PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 < -3, N AS a1 > 2, B AS a0 > 2.3 "
    "WITHIN 10 CONFIDENCE 0.3",
]
# The local engine runs under this address-space limit, so that an index too large for
# one process fails with MemoryError instead of exhausting the machine.
LOCAL_LIMIT_GB = 16


def _tree_memory(pid: int) -> tuple[int, int]:
    """Resident and proportional (PSS) bytes of a process and all its descendants.

    RSS counts a shared page once per process that maps it: the Spark engine's Python
    workers each memory-map the index, so their RSS adds the same file pages up several
    times. PSS splits each shared page among the processes sharing it, so its sum is the
    memory the process tree really holds."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    rss = pss = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        stack.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith(("Rss:", "Pss:")):
                        kb = int(line.split()[1]) * 1024
                        if line.startswith("Rss:"):
                            rss += kb
                        else:
                            pss += kb
        except OSError:   # gone meanwhile
            continue
    return rss, pss


def _run_measured(cmd: list[str], env: dict[str, str] | None = None
                  ) -> tuple[float, int, int, str]:
    """Wall seconds, peak RSS and peak PSS of the process tree (bytes), and the output."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=None if env is None else {**os.environ, **env})
    peak_rss = peak_pss = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_rss, peak_pss
        while not done.is_set():
            rss, pss = _tree_memory(proc.pid)
            peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
            # Reading smaps of every process of the tree costs CPU (about 30% of a core
            # every 0.2 s during the 100M build, whose phases are minutes long).
            time.sleep(1.0)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out[-3000:]}")
    return time.perf_counter() - started, peak_rss, peak_pss, out


# Archives larger than this are generated in pieces of whole groups (each over the whole
# archive's time domain), one Parquet file each, so that generating 100M events needs
# the memory of 10M.
_PIECE_EVENTS = 10_000_000


def generate(n: int, work: Path) -> Path:
    """The synthetic archive of ``n`` events (one group per 1,000), generated once: one
    Parquet file, or a directory of pieces of whole groups above :data:`_PIECE_EVENTS`."""
    groups = max(1, n // 1000)
    if n <= _PIECE_EVENTS:
        data = work / f"synthetic-{n}.parquet"
        if not data.exists():
            t = time.perf_counter()
            generate_synthetic(n, groups=groups, f=(2, 6), seed=n).to_parquet(data,
                                                                              index=False)
            print(f"generated {n} events in {time.perf_counter() - t:.1f} s", flush=True)
        return data
    data = work / f"synthetic-{n}"
    pieces = -(-n // _PIECE_EVENTS)
    if not (data / "_SUCCESS").exists():
        t = time.perf_counter()
        data.mkdir(exist_ok=True)
        for k in range(pieces):
            events = n // pieces + (k < n % pieces)
            part = generate_synthetic(events, groups=groups // pieces, f=(2, 6),
                                      seed=n + k, domain=10 * n)
            part["event_id"] += k * (n // pieces + 1)
            part["group"] += k * (groups // pieces)
            part.to_parquet(data / f"part-{k:05d}.parquet", index=False)
            print(f"generated piece {k + 1} of {pieces}", flush=True)
        (data / "_SUCCESS").touch()
        print(f"generated {n} events in {time.perf_counter() - t:.1f} s", flush=True)
    return data


def build(n: int, work: Path, shard_events: int | None = None) -> dict[str, object]:
    data = generate(n, work)
    out = _index_path(work, n, shard_events)
    seconds, peak, peak_pss, log = _run_measured(
        [sys.executable, "-c", "import sys, json, uncertain_cep as uc; "
         "s = uc.build_index_spark(sys.argv[1], sys.argv[2], log=lambda m: None, "
         "shard_events=json.loads(sys.argv[3])); "
         "print('SUMMARY', json.dumps(s.__dict__)); "
         # The driver's Python process alone (not the JVM, not the Python workers), as
         # VmHWM: ru_maxrss keeps the high-water mark of the process before exec (this
         # benchmark's, holding the archive it generated: 2.7 GB read at 10M).
         "print('DRIVER', open('/proc/self/status').read().split('VmHWM:')[1].split()[0])",
         str(data), str(out), json.dumps(shard_events)])
    summary = json.loads(log.split("SUMMARY", 1)[1].strip().splitlines()[0])
    driver_kb = int(log.split("DRIVER", 1)[1].split()[0])
    # What the index stores (its working copy, in the host's cache, is not counted).
    stored = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    row = {"events": n, "groups": summary["groups"], "nodes": summary["nodes"],
           "shards": summary.get("shards", 1), "shard_events": shard_events,
           "wall_seconds": round(seconds, 1), "job_seconds": round(summary["seconds"], 1),
           "events_per_second": round(n / seconds), "peak_rss_mb": round(peak / 2**20),
           "peak_pss_mb": round(peak_pss / 2**20),
           "driver_peak_rss_mb": round(driver_kb / 1024),
           "phases": {k: round(v, 1) for k, v in summary["phases"].items()},
           "index_mb": round(stored / 2**20), "index_bytes_per_event": round(stored / n)}
    print(row, flush=True)
    return row


_ENGINE_RUN = """
import json, resource, sys, time
engine, path, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
queries = json.loads(sys.argv[4])
import uncertain_cep as uc
out = {"open_seconds": None, "queries": []}
if engine.startswith("local"):
    resource.setrlimit(resource.RLIMIT_AS, (limit << 30, limit << 30))
    t = time.perf_counter()
    try:
        idx = uc.open_index(path)
    except MemoryError:
        print("RESULT", json.dumps({"error": "MemoryError while opening"}))
        raise SystemExit(0)
    out["open_seconds"] = time.perf_counter() - t
else:
    from uncertain_cep.pipeline.session import spark_session
    t = time.perf_counter()
    spark_session()
    out["open_seconds"] = time.perf_counter() - t   # starting Spark
for q in queries:
    t = time.perf_counter()
    try:
        if engine.startswith("local"):
            res = idx.query(q)
        else:
            res = uc.query_index(path, q, engine="spark")
    except MemoryError:
        out["queries"].append({"error": "MemoryError"})
        continue
    out["queries"].append({"seconds": time.perf_counter() - t, "matches": len(res),
                           "answer": [[list(map(str, e)), c] for e, c in
                                      zip(res["events"], res["confidence"])],
                           # the counters flat; the shard numbers opened beside them,
                           # a list, as a sharded index's Spark slices each open a few
                           "stats": {k: v for k, v in vars(res.stats).items()
                                     if k not in ("steps", "shards_read")},
                           "shards_read": res.stats.shards_read})
print("RESULT", json.dumps(out))
"""


def _index_path(work: Path, n: int, shard_events: int | None) -> Path:
    return work / (f"index-{n}" if shard_events is None else f"index-{n}-{shard_events}")


ENGINES = ("local", "local-cold", "spark", "spark-no-archive")


def compare_engines(n: int, work: Path, shard_events: int | None = None,
                    engines: tuple[str, ...] = ENGINES, queries: list[str] | None = None
                    ) -> list[dict[str, object]]:
    """Each engine in its own process (peak memory of its process tree). The local engine
    also runs on a host without the index's working copy (``local-cold``: an empty cache
    of its own, so opening expands the stored files), and the Spark engine with the JVM
    class archive off (``spark-no-archive``), for its session start and first query.
    ``engines``: those to run (an index whose whole working copy does not fit the disk
    runs the Spark engine alone); ``queries``: default :data:`QUERIES`."""
    queries = queries or QUERIES
    path = _index_path(work, n, shard_events)
    runs: dict[str, tuple[dict[str, Any], int | None, int | None]] = {}
    cold_cache = Path(tempfile.mkdtemp(prefix="uncertain-cep-cold-cache-"))
    envs = {"spark-no-archive": {"UNCERTAIN_CEP_JVM_CACHE": "off"},
            "local-cold": {"UNCERTAIN_CEP_CACHE": str(cold_cache)}}
    for engine in engines:
        seconds, peak, peak_pss, log = _run_measured(
            [sys.executable, "-c", _ENGINE_RUN, engine, str(path), str(LOCAL_LIMIT_GB),
             json.dumps(queries)], env=envs.get(engine))
        runs[engine] = (json.loads(log.split("RESULT", 1)[1].strip().splitlines()[0]), peak,
                        peak_pss)
        print(engine, round(seconds, 1), "s,", round(peak / 2**20), "MB RSS,",
              round(peak_pss / 2**20), "MB PSS", flush=True)
    shutil.rmtree(cold_cache, ignore_errors=True)
    not_run: tuple[dict[str, Any], int | None, int | None] = ({"error": "not run"}, None,
                                                              None)
    (local, local_peak, local_pss) = runs.get("local", not_run)
    (spark, spark_peak, spark_pss) = runs["spark"]
    rows = []
    for k, q in enumerate(queries):
        lq: dict[str, Any] = (local["queries"][k] if "queries" in local
                              else {"error": local.get("error")})
        sq = spark["queries"][k]
        same = (lq.get("answer") == sq.get("answer")) if "answer" in lq else None
        rows.append({
            "events": n, "query": q, "matches": sq.get("matches"),
            "local_open_seconds": _round(local.get("open_seconds")),
            "local_query_seconds": _round(lq.get("seconds")),
            "local_peak_rss_mb": _mib(local_peak),
            "local_peak_pss_mb": _mib(local_pss),
            "local_error": lq.get("error"),
            "spark_start_seconds": _round(spark.get("open_seconds")),
            "spark_query_seconds": _round(sq.get("seconds")),
            "spark_peak_rss_mb": _mib(spark_peak),
            "spark_peak_pss_mb": _mib(spark_pss),
            "spark_slices": sq.get("stats", {}).get("slices"),
            "entries_local": lq.get("stats", {}).get("entries_created"),
            "entries_spark": sq.get("stats", {}).get("entries_created"),
            "same_answers": same})
        if "spark-no-archive" in runs:
            plain = runs["spark-no-archive"][0]
            rows[-1].update({
                "no_archive_start_seconds": _round(plain.get("open_seconds")),
                "no_archive_query_seconds": _round(plain["queries"][k].get("seconds")),
                "no_archive_same_answers":
                    plain["queries"][k].get("answer") == sq.get("answer")})
        if "local-cold" in runs:
            cold, cold_peak, _ = runs["local-cold"]
            rows[-1].update({
                "cold_open_seconds": _round(cold.get("open_seconds")),
                "cold_query_seconds": _round(cold["queries"][k].get("seconds")),
                "cold_peak_rss_mb": _mib(cold_peak),
                "cold_same_answers": cold["queries"][k].get("answer") == lq.get("answer")})
        print(rows[-1], flush=True)
    return rows


def _mib(x: int | None) -> int | None:
    return None if x is None else round(x / 2**20)


def _mb(x: object) -> str:
    """Megabytes with thousands separators; '-' for rows measured before PSS was."""
    return "-" if x is None else f"{x:,}"


def _round(x: object) -> object:
    return round(x, 1) if isinstance(x, float) else x


def _table(results: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| events | shards | groups | nodes | wall (s) | events/s | peak RSS (MB) "
             "| peak PSS (MB) | driver Python peak RSS (MB) | index (MB) | index (B/event) "
             "| read+dups (s) | count+cut (s) | index groups (s) | R*-tree+stats (s) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results["build"]:
        ph = r["phases"]
        lines.append(f"| {r['events']:,} | {r.get('shards', 1)} | {r['groups']:,} | "
                     f"{r['nodes']:,} | "
                     f"{r['wall_seconds']} | {r['events_per_second']:,} | {r['peak_rss_mb']:,} "
                     f"| {_mb(r.get('peak_pss_mb'))} | {_mb(r.get('driver_peak_rss_mb'))} "
                     f"| {r['index_mb']:,} | "
                     f"{r.get('index_bytes_per_event', '-')} | "
                     f"{ph['read_and_check_duplicates']} | {ph.get('count_and_cut', '-')} | "
                     f"{ph['validate_index_write_groups']} | {ph['rtree_stats_manifest']} |")
    lines += ["", "| events | query | matches | local: open (s) | local: query (s) "
              "| local peak RSS / PSS (MB) | Spark engine: query (s) "
              "| Spark peak RSS / PSS (MB) | slices | same answers |",
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results["query"]:
        local = r["local_query_seconds"] if not r["local_error"] else r["local_error"]
        same = "-" if r["same_answers"] is None else r["same_answers"]
        lines.append(f"| {r['events']:,} | `{r['query'][8:56]}...` | {r['matches']} | "
                     f"{_mb(r['local_open_seconds'])} | {local} | "
                     f"{_mb(r['local_peak_rss_mb'])} / "
                     f"{_mb(r.get('local_peak_pss_mb'))} | {r['spark_query_seconds']} | "
                     f"{r['spark_peak_rss_mb']:,} / {_mb(r.get('spark_peak_pss_mb'))} | "
                     f"{r['spark_slices']} | {same} |")
    lines += _section(
        "Spark engine with and without the JVM class archive (`UNCERTAIN_CEP_JVM_CACHE=off`), "
        "each in a fresh process:",
        ["events", "query", "archive: session start (s)", "archive: query (s)",
         "no archive: session start (s)", "no archive: query (s)", "same answers"],
        "|---:|---|---:|---:|---:|---:|---|",
        [[f"{r['events']:,}", f"`{r['query'][8:56]}...`", r["spark_start_seconds"],
          r["spark_query_seconds"], r["no_archive_start_seconds"],
          r["no_archive_query_seconds"], r["no_archive_same_answers"]]
         for r in results["query"] if "no_archive_start_seconds" in r])
    lines += _section(
        "Local engine on a host without the index's working copy (an empty cache: opening "
        "expands the stored files), against the copy the build left:",
        ["events", "query", "warm: open (s)", "warm: query (s)", "cold: open (s)",
         "cold: query (s)", "cold peak RSS (MB)", "same answers"],
        "|---:|---|---:|---:|---:|---:|---:|---|",
        [[f"{r['events']:,}", f"`{r['query'][8:56]}...`", r["local_open_seconds"],
          r["local_query_seconds"], r["cold_open_seconds"], r["cold_query_seconds"],
          f"{r['cold_peak_rss_mb']:,}", r["cold_same_answers"]]
         for r in results["query"] if "cold_open_seconds" in r])
    return "\n".join(lines)


def _section(intro: str, header: list[str], align: str, rows: list[list[object]]
             ) -> list[str]:
    """An introduced Markdown table, or nothing without rows."""
    if not rows:
        return []
    return ["", intro, "", "| " + " | ".join(header) + " |", align,
            *("| " + " | ".join(map(str, row)) + " |" for row in rows)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 5_000_000])
    parser.add_argument("--work", default="/tmp/uncertain-cep-bench")
    parser.add_argument("--compare", type=int, nargs="+", default=None,
                        help="index sizes to compare the engines on (default: the largest)")
    parser.add_argument("--shard-events", type=int, default=None,
                        help="events per shard of the builds (default: the build's own)")
    parser.add_argument("--compare-only", action="store_true",
                        help="keep the build rows of the last run; compare engines again")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES),
                        help="the engines to compare (spark among them; default all)")
    parser.add_argument("--archive-queries", action="store_true",
                        help="compare on bench_archive.py's selective queries")
    parser.add_argument("--build-only", action="store_true",
                        help="build, and keep the engine comparisons of the last run (an "
                             "index whose working copy does not fit the disk)")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    # Rows of sizes this run does not measure are kept from the last run.
    results: dict[str, list[dict[str, Any]]] = (
        json.loads(RESULTS.read_text()) if RESULTS.exists() else {"build": [], "query": []})
    built = [] if args.compare_only else args.sizes
    compared = [] if args.build_only else args.compare or [max(args.sizes)]
    # A size built with other shards is another row.
    results["build"] = [r for r in results["build"]
                        if (r["events"], r.get("shard_events")) not in
                        {(n, args.shard_events) for n in built}]
    results["query"] = [r for r in results["query"] if r["events"] not in compared]
    for n in built:
        results["build"].append(build(n, work, args.shard_events))
        results["build"].sort(key=lambda r: r["events"])
        RESULTS.write_text(json.dumps(results, indent=2))
    # Sessions map the JVM class archive, as they do once one was recorded on a machine.
    from uncertain_cep.pipeline.class_archive import record_class_archive

    if compared:
        print("JVM class archive:", record_class_archive(), flush=True)
    for n in compared:
        if "spark" not in args.engines:
            parser.error("--engines must include spark")
        from bench.bench_archive import QUERIES as ARCHIVE_QUERIES

        results["query"] += compare_engines(
            n, work, args.shard_events, tuple(args.engines),
            ARCHIVE_QUERIES if args.archive_queries else None)
        results["query"].sort(key=lambda r: r["events"])
        RESULTS.write_text(json.dumps(results, indent=2))
    RESULTS.write_text(json.dumps(results, indent=2))
    write_table(results)


def write_table(results: dict[str, list[dict[str, Any]]]) -> None:
    """The results' tables into their section of docs/benchmarks.md."""
    write_marked(DOCS, "pipeline", _table(results), heading="## Spark pipeline")
    print(_table(results))


def write_marked(docs: Path, name: str, table: str, *, heading: str) -> None:
    """``table`` between the markers ``<!-- name:begin/end -->`` of ``docs``, or at its
    end under ``heading`` where it has none yet."""
    text = docs.read_text()
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    marked = f"{begin}\n{table}\n{end}"
    if begin in text:
        text = text.split(begin)[0] + marked + text.split(end, 1)[1]
    else:
        text += f"\n{heading}\n\n{marked}\n"
    docs.write_text(text)


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    main()
