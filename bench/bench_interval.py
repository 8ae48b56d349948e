"""Interval matchers against SQL and nested loops (issue 5; TPStream 6.2.3; PieStream).

Three workloads, each measured side by side in one run:

* **aggressive drivers** -- TPStream's Listing 1 (SEMANTICS C) on the connected-car stream
  of :func:`uncertain_cep.datasets.generate_connected_car` (speed and acceleration per car
  per second), 1M and 10M point events, rows sorted by car (an archive) and by time (a
  live feed);
* **TPStream's pattern families** (6.2.3) -- Equal, Meets, Chain, Star, Combined over 4 to
  10 situation streams of TPStream's random generator (situations of 10-100 s, gaps of
  10-50 s, one event per second: :func:`uncertain_cep.datasets.generate_piestream`),
  window 2,000 s, relations of Chain/Star/Combined drawn at random from Allen's 13;
* **PieStream's benchmark** -- symbols ``Ai AS a_i = 1``, consecutive pairs related by
  ``meets; overlaps; overlapped-by; starts; started-by; contains``, ``WITHIN 10000``,
  4 to 24 symbols, on the shared 100k-row CSV and generated inputs of 1M and 10M rows.

Engines: ``join`` (TPStream 5.2/5.4, the default of ``uc.match``), ``automata`` (Chen et
al. 3.2-3.3), and the baselines of :mod:`interval_baselines`: ``duckdb`` (the pattern as
one SQL query over the situation tables, DuckDB with one thread, as our engines use one
core) and ``nested_loop`` (no index, every candidate checked). Situations are derived once
by our code and every engine matches the same tables; derivation is timed on its own and
``end to end`` is ``uc.match`` from the point-event DataFrame (derivation + join). Each
run happens in a forked child with a time cap; a capped run is reported as such. Answers
are compared by row count and an order-independent hash of all columns: every engine
that finishes must give the join engine's answer.

Writes ``bench/results/interval.json``, ``bench/results/interval_*.png`` and the tables of
``docs/benchmarks.md`` between the ``interval`` markers.
Run: ``.venv/bin/python bench/bench_interval.py [--quick] [--cap S] [--workloads W ...
[--merge]]`` (``--merge`` keeps the saved rows of workloads not run again).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from interval_baselines import match_duckdb, match_nested_loop  # noqa: E402

import uncertain_cep as uc  # noqa: E402
from bench.doc_sections import replace_section, write_json  # noqa: E402
from uncertain_cep.datasets.connected_car import AGGRESSIVE_DRIVERS, generate_connected_car  # noqa: E402
from uncertain_cep.datasets.piestream import (  # noqa: E402
    generate_piestream,
    piestream_query,
    read_piestream,
)
from uncertain_cep.interval.automata_join import match_automata  # noqa: E402
from uncertain_cep.interval.join import match_join  # noqa: E402
from uncertain_cep.interval.language import parse_temporal_query  # noqa: E402
from uncertain_cep.interval.relations import ALLEN_RELATIONS  # noqa: E402
from uncertain_cep.interval.situations import derive_situations  # noqa: E402

SHARED = ROOT.parent / "shared" / "datasets"
PIESTREAM_CSV = SHARED / "piestream" / "events_col4_row100000.csv"
RESULTS = ROOT / "bench" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
ENGINES = ("join", "automata", "duckdb", "nested_loop")

# PieStream's committed results (seconds for 10M events, by symbols) and the issue's
# measurement of PieStream on this machine (3.4 s for 1M events at 4 symbols).
PIESTREAM_PUBLISHED_10M = {4: 25.1, 8: 49.6, 16: 116.0, 24: 268.0}
PIESTREAM_HERE_1M_4 = 3.4
FAMILIES = ("Equal", "Meets", "Chain", "Star", "Combined")


# ----------------------------------------------------------------------------- running


def digest(frame: pd.DataFrame) -> str:
    """Row count and an order-independent hash of every row (all columns as float)."""
    values = frame.astype({c: "float64" for c in frame.columns
                           if pd.api.types.is_numeric_dtype(frame[c])})
    hashed = pd.util.hash_pandas_object(values, index=False).to_numpy(dtype=np.uint64)
    return f"{len(frame)}:{int(hashed.sum(dtype=np.uint64)):016x}"


def _child(task: Callable[[], dict[str, Any]], pipe: Any) -> None:
    try:
        pipe.send(task())
    except BaseException as error:  # report, never hang the parent
        pipe.send({"error": f"{type(error).__name__}: {error}"})
    finally:
        pipe.close()


def isolated(task: Callable[[], dict[str, Any]], cap: float) -> dict[str, Any]:
    """Run ``task`` in a forked child (it sees the parent's data for free), killed
    after ``cap`` seconds."""
    context = mp.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(task, send))
    child.start()
    send.close()
    out: dict[str, Any] = {"capped": True, "cap_s": cap}
    if receive.poll(cap):
        try:
            out = receive.recv()
        except EOFError:
            out = {"error": "the child died (out of memory?)"}
    child.kill()
    child.join()
    return out


def timed(call: Callable[[], pd.DataFrame], repeats: int = 3,
          quick_below: float = 1.0) -> dict[str, Any]:
    """Best of up to ``repeats`` runs (only runs under ``quick_below`` seconds repeat)."""
    best, answer = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        answer = call()
        best = min(best, time.perf_counter() - started)
        if best >= quick_below:
            break
    assert answer is not None
    return {"seconds": best, "matches": len(answer), "digest": digest(answer)}


def engine_call(engine: str, situations: dict[str, pd.DataFrame], pattern: Any,
                time_unit: float | None) -> Callable[[], pd.DataFrame]:
    if engine == "join":
        return lambda: match_join(situations, pattern, time_unit=time_unit)
    if engine == "automata":
        return lambda: match_automata(situations, pattern, time_unit=time_unit)
    if engine == "duckdb":
        import duckdb

        def run_duckdb() -> pd.DataFrame:
            with duckdb.connect(config={"threads": 1}) as connection:
                return match_duckdb(situations, pattern, time_unit=time_unit,
                                    connection=connection)
        return run_duckdb
    if engine == "nested_loop":
        return lambda: match_nested_loop(situations, pattern, time_unit=time_unit)
    raise ValueError(engine)


def measure_workload(events: pd.DataFrame, text: str, engines: tuple[str, ...], cap: float,
                     *, time_column: str = "time", time_unit: float | None = None,
                     label: dict[str, Any]) -> list[dict[str, Any]]:
    """End to end with ``uc.match``, derivation alone, then every engine on the same
    situation tables; one row per measurement."""
    pattern = parse_temporal_query(text)
    rows = []
    end_to_end = isolated(lambda: timed(lambda: uc.match(
        events, pattern, time_column=time_column, time_unit=time_unit)), cap)
    rows.append({**label, "engine": "join", "phase": "end_to_end", **end_to_end})
    derive = isolated(lambda: {"seconds": _best(lambda: derive_situations(
        events, pattern, time_column=time_column, time_unit=time_unit))}, cap)
    rows.append({**label, "engine": "derive", "phase": "derive", **derive})
    situations = derive_situations(events, pattern, time_column=time_column,
                                   time_unit=time_unit)
    label = {**label, "situations": int(sum(len(t) for t in situations.values()))}
    for row in rows:
        row["situations"] = label["situations"]
    for engine in engines:
        call = engine_call(engine, situations, pattern, time_unit)
        result = isolated(lambda call=call: timed(call), cap)  # type: ignore[misc]
        rows.append({**label, "engine": engine, "phase": "match", **result})
        _say(rows[-1])
    reference = next((r["digest"] for r in rows if r.get("engine") == "join"
                      and r["phase"] == "match" and "digest" in r), None)
    for row in rows:
        if "digest" in row:
            row["same_answer"] = row["digest"] == reference
    return rows


def _best(call: Callable[[], object], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
        if best >= 1.0:
            break
    return best


def _say(row: dict[str, Any]) -> None:
    what = ", ".join(f"{k}={row[k]}" for k in ("workload", "events", "layout", "family",
                                                "symbols") if k in row)
    took = ("capped" if row.get("capped") else row.get("error")
            or f"{row['seconds']:.3f}s, {row['matches']} matches")
    print(f"  {what} {row['engine']}: {took}", flush=True)


# ----------------------------------------------------------------------------- workloads


def aggressive_drivers(sizes: list[tuple[int, int]], cap: float,
                       engines: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = []
    for cars, seconds in sizes:
        for layout in ("by_car", "by_time"):
            events = generate_connected_car(cars, seconds, seed=1,
                                            interleave=layout == "by_time")
            label = {"workload": "aggressive", "events": len(events), "layout": layout,
                     "cars": cars}
            print(f"aggressive drivers: {len(events):,} events, {layout}", flush=True)
            rows += measure_workload(events, AGGRESSIVE_DRIVERS, engines, cap,
                                     time_unit=1.0, label=label)
    return rows


def family_query(family: str, n: int, rng: np.random.Generator, window: int = 2000) -> str:
    """TPStream 6.2.3: S1 r1 S2 ... for Equal/Meets/Chain, S1 ri S(i+1) for Star, the
    first n/2 as a chain and the rest as a star around S1 for Combined."""
    names = [f"S{i}" for i in range(1, n + 1)]

    def drawn() -> str:
        return str(ALLEN_RELATIONS[int(rng.integers(len(ALLEN_RELATIONS)))].value)

    chain = [(names[i], names[i + 1]) for i in range(n - 1)]
    star = [(names[0], names[i]) for i in range(1, n)]
    half = n // 2
    pairs = {"Equal": chain, "Meets": chain, "Chain": chain, "Star": star,
             "Combined": chain[:half - 1] + [(names[0], names[i]) for i in range(half, n)]}
    fixed = {"Equal": "equals", "Meets": "meets"}
    constraints = " AND ".join(f"{a} {fixed.get(family) or drawn()} {b}"
                               for a, b in pairs[family])
    define = ", ".join(f"S{i} AS a_{i} = 1" for i in range(1, n + 1))
    return f"DEFINE {define}\nPATTERN {constraints}\nWITHIN {window}"


def families(rows_per_input: int, sizes: list[int], cap: float,
             engines: tuple[str, ...], seed: int) -> list[dict[str, Any]]:
    out = []
    for n in sizes:
        events = generate_piestream(rows_per_input, n, seed=seed + n)
        for index, family in enumerate(FAMILIES):
            text = family_query(family, n, np.random.default_rng(seed * 100 + n * 10 + index))
            print(f"family {family}, {n} symbols: {text.splitlines()[1]}", flush=True)
            label = {"workload": "families", "family": family, "symbols": n,
                     "events": len(events), "query": text}
            out += measure_workload(events, text, engines, cap, time_column="t1",
                                    label=label)
    return out


def piestream(inputs: list[int], symbols: list[int], cap: float, engines: tuple[str, ...],
              slow_engines_up_to: int) -> list[dict[str, Any]]:
    out = []
    if PIESTREAM_CSV.exists():
        events = read_piestream(PIESTREAM_CSV)
        print(f"PieStream CSV: {len(events):,} rows, 4 symbols", flush=True)
        out += measure_workload(events, piestream_query(4), engines, cap, time_column="t1",
                                label={"workload": "piestream", "input": "shared CSV",
                                       "symbols": 4, "events": len(events)})
    for rows in inputs:
        widest = generate_piestream(rows, max(symbols), seed=3)
        for k in symbols:
            events = widest[["id", *(f"a_{i}" for i in range(1, k + 1)), "t1", "t2"]]
            chosen = engines if rows <= slow_engines_up_to else tuple(
                e for e in engines if e in ("join", "automata"))
            print(f"PieStream shape: {rows:,} rows, {k} symbols", flush=True)
            out += measure_workload(events, piestream_query(k), chosen, cap,
                                    time_column="t1",
                                    label={"workload": "piestream", "input": "generated",
                                           "symbols": k, "events": rows})
    return out


# ----------------------------------------------------------------------------- reporting


def _seconds(rows: list[dict[str, Any]], **where: Any) -> float | None:
    for row in rows:
        if all(row.get(k) == v for k, v in where.items()):
            return row.get("seconds")
    return None


def _cell(seconds: float | None, capped_at: float) -> str:
    return f">{capped_at:.0f}" if seconds is None else f"{seconds:.3f}"


def _ratio(slow: float | None, fast: float | None, cap: float) -> str:
    if fast is None or fast <= 0:
        return "-"
    if slow is None:
        return f">{cap / fast:.0f}x"
    return f"{slow / fast:.1f}x"


def _agree(rows: list[dict[str, Any]]) -> str:
    finished = [r for r in rows if "same_answer" in r]
    return "yes" if finished and all(r["same_answer"] for r in finished) else "NO"


def _engine_cells(group: list[dict[str, Any]], cap: float) -> list[str]:
    """Match seconds per engine, DuckDB's and the nested loop's ratio to the join engine,
    the number of matches and whether the engines agree."""
    join = _seconds(group, engine="join", phase="match")
    return ([_cell(_seconds(group, engine=e, phase="match"), cap) for e in ENGINES]
            + [_ratio(_seconds(group, engine="duckdb", phase="match"), join, cap),
               _ratio(_seconds(group, engine="nested_loop", phase="match"), join, cap),
               str(next((r["matches"] for r in group if "matches" in r), "-")),
               _agree(group)])


def report(results: dict[str, Any]) -> str:
    cap = results["cap_s"]
    lines = ["<!-- interval:start (written by bench/bench_interval.py) -->", "",
             f"Run {results['date']} on {results['machine']} (Python {results['python']}, "
             f"DuckDB {results['duckdb']}), {results['seconds']:.0f} s in all; cap "
             f"{cap:.0f} s per run (`>cap` = did not finish). Seconds are the best of up to "
             "3 runs; each engine matched the same situation tables on one core (DuckDB "
             "with `threads=1`). *agree*: every engine that finished gave the join "
             "engine's answer (row count and hash of all columns).", ""]
    agg = [r for r in results["rows"] if r["workload"] == "aggressive"]
    if agg:
        lines += ["### Aggressive drivers (TPStream Listing 1), connected-car stream", "",
                  "| events | rows sorted by | end to end s | events/s | derive s | join s "
                  "| automata s | DuckDB s | nested loop s | DuckDB/join | nested/join "
                  "| matches | agree |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for (events, layout), group in _groups(agg, "events", "layout"):
            e2e = _seconds(group, phase="end_to_end")
            row = [f"{events:,}", "car" if layout == "by_car" else "time",
                   _cell(e2e, cap), f"{events / e2e / 1e6:.1f}M" if e2e else "-",
                   _cell(_seconds(group, phase="derive"), cap)]
            lines.append("| " + " | ".join(row + _engine_cells(group, cap)) + " |")
        lines.append("")
    fam = [r for r in results["rows"] if r["workload"] == "families"]
    if fam:
        events = fam[0]["events"]
        lines += [f"### TPStream 6.2.3 pattern families, {events:,} events, window 2,000 s",
                  "", "End to end is `uc.match` (join engine) from the point events; the engine "
                  "columns are the match phase only, on the same situation tables.", "",
                  "| family | symbols | situations | end to end s | events/s | derive s "
                  "| join s | automata s | DuckDB s | nested loop s | DuckDB/join "
                  "| nested/join | matches | agree |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for (family, n), group in _groups(fam, "family", "symbols"):
            e2e = _seconds(group, phase="end_to_end")
            row = [family, str(n), f"{group[0]['situations']:,}", _cell(e2e, cap),
                   f"{group[0]['events'] / e2e / 1e6:.1f}M" if e2e else "-",
                   _cell(_seconds(group, phase="derive"), cap)]
            lines.append("| " + " | ".join(row + _engine_cells(group, cap)) + " |")
        lines.append("")
    pie = [r for r in results["rows"] if r["workload"] == "piestream"]
    if pie:
        lines += ["### PieStream's benchmark (`Ai AS a_i = 1`, chains of meets; overlaps; "
                  "overlapped-by; starts; started-by; contains, WITHIN 10000)", "",
                  "PieStream's throughput: its committed results for 10M events (25.1 s at "
                  "4 symbols, 49.6 s at 8, 116 s at 16, 268 s at 24) and, at 4 symbols, the "
                  "issue's 3.4 s for 1M measured on this machine. Ours is end to end "
                  "(`uc.match` from the point events).", "",
                  "| input | events | symbols | end to end s | events/s | vs PieStream "
                  "| join s | automata s | DuckDB s | nested loop s | matches | agree |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for (source, events, k), group in _groups(pie, "input", "events", "symbols"):
            e2e = _seconds(group, phase="end_to_end")
            ours = events / e2e if e2e else None
            theirs = []
            if k in PIESTREAM_PUBLISHED_10M:
                theirs.append(1e7 / PIESTREAM_PUBLISHED_10M[k])
            if k == 4:
                theirs.append(1e6 / PIESTREAM_HERE_1M_4)
            versus = (" / ".join(f"{ours / t:.0f}x" for t in theirs)
                      if ours and theirs else "-")
            row = [source, f"{events:,}", str(k), _cell(e2e, cap),
                   f"{ours / 1e6:.2f}M" if ours else "-", versus]
            row += [_cell(_seconds(group, engine=e, phase="match"), cap)
                    if any(r["engine"] == e for r in group) else "n/a" for e in ENGINES]
            row += [str(next((r["matches"] for r in group if "matches" in r), "-")),
                    _agree(group)]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    lines.append("<!-- interval:end -->")
    return "\n".join(lines)


def _groups(rows: list[dict[str, Any]], *keys: str) -> list[tuple[Any, list[dict[str, Any]]]]:
    out: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(tuple(row.get(k) for k in keys), []).append(row)
    return [(k if len(keys) > 1 else k[0], v) for k, v in out.items()]


def plot(results: dict[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fam = [r for r in results["rows"] if r["workload"] == "families" and r["phase"] == "match"]
    if fam:
        figure, axes = plt.subplots(1, len(FAMILIES), figsize=(4 * len(FAMILIES), 3.6),
                                    sharey=True)
        for axis, family in zip(axes, FAMILIES):
            for engine in ENGINES:
                points = sorted((r["symbols"], r["seconds"]) for r in fam
                                if r["family"] == family and r["engine"] == engine
                                and "seconds" in r)
                if points:
                    axis.plot(*zip(*points), marker="o", label=engine)
            axis.set_title(family)
            axis.set_xlabel("situation streams")
            axis.set_yscale("log")
        axes[0].set_ylabel("match seconds (log)")
        axes[0].legend(fontsize=8)
        figure.tight_layout()
        path = RESULTS / "interval_families.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(str(path.relative_to(ROOT)))
    pie = [r for r in results["rows"] if r["workload"] == "piestream"
           and r["phase"] == "end_to_end" and r.get("input") == "generated" and "seconds" in r]
    if pie:
        figure, axis = plt.subplots(figsize=(5.5, 3.6))
        for events in sorted({r["events"] for r in pie}):
            points = sorted((r["symbols"], r["events"] / r["seconds"]) for r in pie
                            if r["events"] == events)
            axis.plot(*zip(*points), marker="o", label=f"join, {events:,} events")
        published = sorted((k, 1e7 / s) for k, s in PIESTREAM_PUBLISHED_10M.items())
        axis.plot(*zip(*published), marker="s", linestyle="--", label="PieStream (published)")
        axis.set_yscale("log")
        axis.set_xlabel("symbols")
        axis.set_ylabel("events/s (log)")
        axis.legend(fontsize=8)
        figure.tight_layout()
        path = RESULTS / "interval_piestream.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(str(path.relative_to(ROOT)))
    return written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small inputs, for a smoke run")
    parser.add_argument("--cap", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--workloads", nargs="+",
                        default=["aggressive", "families", "piestream"])
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--merge", action="store_true",
                        help="keep the saved rows of the workloads not run this time")
    args = parser.parse_args()
    started = time.time()
    quick = args.quick
    rows: list[dict[str, Any]] = []
    if "aggressive" in args.workloads:
        sizes = [(100, 1000)] if quick else [(1000, 1000), (2000, 5000)]
        rows += aggressive_drivers(sizes, args.cap, ENGINES)
    if "families" in args.workloads:
        rows += families(20_000 if quick else 1_000_000, [4, 6] if quick else [4, 6, 8, 10],
                         args.cap, ENGINES, args.seed)
    if "piestream" in args.workloads:
        rows += piestream([50_000] if quick else [1_000_000, 10_000_000],
                          [4, 8] if quick else [4, 8, 12, 16, 20, 24], args.cap, ENGINES,
                          slow_engines_up_to=1_000_000)
    import duckdb

    out = RESULTS / ("interval_quick.json" if quick else "interval.json")
    if args.merge and out.exists():
        saved = json.loads(out.read_text())
        rows = [r for r in saved["rows"] if r["workload"] not in args.workloads] + rows
        rows.sort(key=lambda r: ["aggressive", "families", "piestream"].index(r["workload"]))
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, "
               f"{os.cpu_count()} cores", "python": platform.python_version(),
               "duckdb": duckdb.__version__, "cap_s": args.cap, "quick": quick,
               "seconds": time.time() - started, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_json(out, results, indent=1, default=str)
    section = report(results)
    print(section)
    if not quick:
        print("plots:", ", ".join(plot(results)))
        replace_section(DOC, "interval", "Interval matchers: TPStream and PieStream workloads",
                        section)


if __name__ == "__main__":
    main()
