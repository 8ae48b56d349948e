"""What each subcommand of the ``uncertain-cep`` command line does, once parsed.

``demo`` builds the bundled sample archive's index (:data:`SAMPLE`) and runs
:data:`DEMO_QUERIES` over it; ``build``, ``query``, ``report`` and ``match`` call the
public API (:mod:`uncertain_cep.api`, the Spark jobs of :mod:`uncertain_cep.pipeline`)
with the parsed flags and print one line saying what was written. :func:`write_report`
writes an answer table to Parquet or CSV. The parser is
:mod:`uncertain_cep.cli_parser`; :mod:`uncertain_cep.cli` runs a command.
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import sys
from pathlib import Path

import pandas as pd

from uncertain_cep.errors import ParamEnum

__all__ = ["DEMO_QUERIES", "SAMPLE", "DemoEngine", "run_build", "run_demo", "run_match",
           "run_query", "run_report", "write_report"]

# The bundled sample archive ships in the package (datasets/sample/ in the repository).
SAMPLE = Path(str(importlib.resources.files("uncertain_cep.sample") / "office_rfid.parquet"))

DEMO_QUERIES = {
    "corridor_skip": (
        "Someone read in Room 401, then someone in Room 405 within 30 s, "
        "with no reading in Room 403 in between",
        """PATTERN SEQ(A, NOT B, C)
DEFINE A AS tag = 'Room 401', B AS tag = 'Room 403', C AS tag = 'Room 405'
WITHIN 30
CONFIDENCE 0.3"""),
    "west_to_east": (
        "A reading at the west end followed within 4 s by one at the east end",
        """PATTERN SEQ(W, E)
DEFINE W AS x < 5, E AS x >= 25
WITHIN 4
CONFIDENCE 0.2"""),
    "relay": (
        "Readings in Rooms 402, 404 and 406 in that order within 12 s",
        """PATTERN SEQ(A, B, C)
DEFINE A AS tag = 'Room 402', B AS tag = 'Room 404', C AS tag = 'Room 406'
WITHIN 12
CONFIDENCE 0.2"""),
}


class DemoEngine(ParamEnum):
    """Where ``uncertain-cep demo`` builds the sample's index."""

    auto = "auto"
    spark = "spark"
    local = "local"


def run_demo(args: argparse.Namespace) -> int:
    import uncertain_cep as uc

    out = Path(args.out)
    archive = pd.read_parquet(SAMPLE)
    print(f"sample archive: {SAMPLE} ({len(archive)} readings of "
          f"{archive['person'].nunique()} people)")
    engine = DemoEngine.get_value(args.engine)
    if engine == "auto":
        from uncertain_cep.pipeline.session import spark_available

        engine = "spark" if spark_available() else "local"
        if engine == "local":
            print("pyspark is not installed (pip install 'uncertain-cep[spark]'): building "
                  "the index in this process")
    if engine == "spark":
        summary = uc.build_index_spark(SAMPLE, out / "index", group_by="person",
                                       max_speed=2.0, master=args.master)
        print(f"Spark build: {summary}")
    else:
        uc.build_index(SAMPLE, group_by="person", max_speed=2.0).save(out / "index")
        print("built in this process")
    idx = uc.open_index(out / "index")
    print(f"opened {idx} from {out / 'index'}")
    for name, (title, text) in DEMO_QUERIES.items():
        res = idx.query(text)
        stats = res.stats
        print(f"\n== {title}\n{text}\n-> {len(res)} matches "
              f"({stats.entries_created} candidate entries, {stats.seconds:.2f} s"
              + (f"; kernels compiled for this machine first, {stats.compile_seconds:.0f} s"
                 if stats.compile_seconds else "") + ")")
        if len(res):
            shown = pd.concat([res.head(5), res.tail(3)]) if len(res) > 8 else res
            print(shown.to_string(index=False))
        write_report(res, out / f"{name}.csv")
    from uncertain_cep.report import html_report, write_html_report

    name, (_title, text) = next(iter(DEMO_QUERIES.items()))
    page, _ = html_report(idx, text, source=str(out / "index"), table_file=f"{name}.csv")
    write_html_report(out / "report.html", page)
    print(f"\nreports written to {out}/*.csv; an HTML report of {name} to "
          f"{out / 'report.html'}")
    return 0


def run_build(args: argparse.Namespace) -> int:
    import uncertain_cep as uc
    from uncertain_cep.api import EngineName

    coordinates = tuple(args.coordinates.split(","))
    columns = _merged_columns(args.columns)
    if EngineName.get_value(args.engine) == "local":
        idx = uc.build_index(args.input, group_by=args.group_by, max_speed=args.max_speed,
                             coordinates=coordinates, time_unit=args.time_unit,
                             codes=args.codes, node_budget=args.node_budget,
                             columns=columns)
        idx.save(args.out, shard_events=args.shard_events)
        print(f"{idx} written to {args.out}")
        return 0
    summary = uc.build_index_spark(
        args.input, args.out, group_by=args.group_by, time_unit=args.time_unit,
        max_speed=args.max_speed, coordinates=coordinates, codes=args.codes,
        node_budget=args.node_budget, on_bad_rows=args.on_bad_rows,
        on_bad_groups=args.on_bad_groups, master=args.master, partitions=args.partitions,
        columns=columns, shard_events=args.shard_events)
    print(f"{summary}; index written to {args.out}")
    return 0


def _merged_columns(given: list[dict[str, str]] | None) -> dict[str, str] | None:
    """The mappings of repeated ``--columns`` as one, refusing a name given twice."""
    if not given:
        return None
    from uncertain_cep.errors import UsageError

    merged: dict[str, str] = {}
    for mapping in given:
        for name, column in mapping.items():
            if name in merged:
                raise UsageError(f"--columns gives {name} twice ({name}={merged[name]} and "
                                 f"{name}={column}); give each name once")
            merged[name] = column
    return merged


def run_query(args: argparse.Namespace) -> int:
    import uncertain_cep as uc
    from uncertain_cep.api import EngineName
    from uncertain_cep.errors import UsageError

    text = _query_text(args.query)
    if args.out and args.out.endswith(("/", os.sep)):
        if args.explain:
            raise UsageError("--explain needs the answer on this machine; leave it out with "
                             "--out DIRECTORY/, or write a .parquet or .csv file")
        streamed = uc.query_index(args.index, text, strategy=args.strategy,
                                  engine=args.engine, master=args.master,
                                  verify=args.verify, limit=args.limit, out=args.out)
        by = ("by the Spark executors" if EngineName.get_value(args.engine) == "spark"
              else "as found; sorted within row groups")
        print(f"{streamed.rows} matches written to {args.out} ({streamed.parts} Parquet "
              f"parts, {by})")
        return 0
    if args.count:
        if EngineName.get_value(args.engine) != "local" or args.explain or args.out:
            raise UsageError("--count prints a number: it runs with --engine local, "
                             "without --explain or --out")
        print(uc.open_index(args.index, verify=args.verify).count(
            text, strategy=args.strategy))
        return 0
    if args.explain and EngineName.get_value(args.engine) == "local":
        explanation = uc.open_index(args.index, verify=args.verify).explain(
            text, strategy=args.strategy, limit=args.limit)
        assert explanation.answer is not None
        res = explanation.answer
    else:
        res = uc.query_index(args.index, text, strategy=args.strategy, engine=args.engine,
                             master=args.master, verify=args.verify, limit=args.limit,
                             max_rows=args.max_rows)
        explanation = uc.Explanation(text, len(res), res.stats, res)
    if args.explain:
        print(explanation)
        print()
    if args.out:
        write_report(res, args.out)
        print(f"{len(res)} matches written to {args.out}")
    else:
        print(res.to_string(index=False))
    return 0


def _query_text(arg: str) -> str:
    if not arg.startswith("@"):
        return arg
    from uncertain_cep.errors import InputError

    try:
        return Path(arg[1:]).read_text()
    except OSError as e:
        raise InputError(f"cannot read the query from {arg[1:]!r}: {e.strerror}") from e


def run_report(args: argparse.Namespace) -> int:
    import uncertain_cep as uc
    from uncertain_cep.query.language.parse import parse_query
    from uncertain_cep.report import html_report, write_html_report

    text = _query_text(args.query)
    # Everything that can be checked without the index fails here, before it is read.
    parse_query(text)
    out = Path(args.out)
    page, res = html_report(uc.open_index(args.index), text, args.strategy, top=args.top,
                            source=str(args.index), table_file=args.table)
    if args.table is not None:
        write_report(res, args.table)
    write_html_report(out, page)
    print(f"{res.summary()}; report written to {out}"
          + (f", full answer to {args.table}" if args.table else ""))
    return 0


def run_match(args: argparse.Namespace) -> int:
    from uncertain_cep.interval.language import parse_temporal_query

    text = _query_text(args.query)
    # Everything that can be checked without data fails here, before Spark starts.
    parse_temporal_query(text)
    from uncertain_cep.pipeline.match_job import match_spark_pandas

    res = match_spark_pandas(args.input, text, engine=args.engine, time_column=args.time_column,
                      time_unit=args.time_unit, tick=_whole(args.tick),
                      symbol_column=args.symbol_column, master=args.master,
                      log=lambda msg: print(msg, file=sys.stderr))
    write_report(res, args.out)
    print(f"{len(res)} matches written to {args.out}")
    return 0


def _whole(value: float) -> float | int:
    """An integral tick as an int, so that integer times stay integers."""
    return int(value) if float(value).is_integer() else value


def write_report(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write an answer table to Parquet or CSV atomically: a query's answer as
    :meth:`QueryResult.to_file <uncertain_cep.results.QueryResult.to_file>` does, any
    other table as it is (:mod:`uncertain_cep.answer_files`)."""
    from uncertain_cep.answer_files import write_answer
    from uncertain_cep.results import QueryResult

    if isinstance(frame, QueryResult):
        frame.to_file(path)
    else:
        write_answer(frame, path)
