"""The ``uncertain-cep`` command line.

Subcommands:

* ``demo``: build the bundled sample archive's index and run a few meaningful queries,
  writing the index and the reports under ``--out`` (default ``out/demo``);
* ``build INPUT --out DIR``: validate an archive (a Parquet/CSV file or a directory of
  them) and write its index with the Spark batch job (``--master URL`` for a cluster) or
  in this process (``--engine local``); ``--columns event_id=reading_id,t_lo=start``
  names the input's columns for the archive's;
* ``query DIR "QUERY"``: answer a query over a saved index, in this process or by time
  slices on Spark (``--engine spark``), printing the table or writing it to
  ``--out report.parquet|.csv`` (with ``--engine spark``, ``--out answers/`` is a
  directory of Parquet files written by the executors);
* ``report DIR "QUERY" --out report.html [--table answer.parquet]``: a standalone HTML
  report of one query (the query, the plan and its counters, the answer's top rows, the
  timeline of the matched events as an embedded PNG, the index's summary);
* ``match INPUT "QUERY" --out FILE``: a temporal pattern query (part B) over point or
  interval events in a Parquet/CSV file or directory, per PARTITION BY key on Spark,
  written to ``FILE`` (``.parquet`` or ``.csv``);
* ``datasets list``: the archive generators and real-data loaders with their options;
* ``datasets generate NAME --out FILE``: write a generated archive (``office-rfid``,
  ``synthetic``, ``connected-car``, ``piestream``) to ``.parquet`` or ``.csv`` (for
  ``piestream``, a headerless CSV in PieStream's layout ``id,a_1..a_k,t1,t2``);
* ``datasets convert NAME INPUT --out FILE``: turn an original UCI file (``dodgers``,
  ``localization``, ``icu``) into an uncertain archive in ``.parquet`` or ``.csv``.
"""

from __future__ import annotations

import argparse
import importlib.resources
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from uncertain_cep.dataset_commands import (
    add_datasets_parser,
    count_argument,
    table_path_argument,
)
from uncertain_cep.errors import ParamEnum

__all__ = ["main", "write_report"]

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


# Exit codes: 0 done; 1 the data, index or query is at fault (the message says where);
# 2 the command line is (an unknown flag, a missing argument, a value a flag cannot take);
# 130 interrupted (Ctrl-C).
EXIT_DATA_ERROR = 1
EXIT_USAGE_ERROR = 2
# 128 + SIGINT, as shells report a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 130

DESCRIPTION = ("Answer pattern queries over archives of events whose timestamps are "
               "uncertain, and match temporal patterns over interval events.")
EPILOG = """exit status:
  0  success
  1  the data, the index or the query is at fault (the message says where and what to do)
  2  usage error: an unknown or missing argument, or a value a flag cannot take"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose, args.quiet)
    from uncertain_cep.errors import UncertainCepError, UsageError

    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        # Ctrl-C: one line, no traceback, and the shell's code for an interrupt.
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as e:
        print(f"error: {_as_typed(str(e))}", file=sys.stderr)
        return EXIT_USAGE_ERROR
    except UncertainCepError as e:
        print(f"error: {_as_typed(str(e))}", file=sys.stderr)
        return EXIT_DATA_ERROR
    except Exception as e:
        # A Spark failure the jobs did not name: one line, never a py4j traceback.
        from uncertain_cep.pipeline.spark_errors import is_spark_error, spark_failure

        if not is_spark_error(e):
            raise
        print(f"error: {spark_failure(e, 'the Spark job')}", file=sys.stderr)
        return EXIT_DATA_ERROR


def _configure_logging(verbose: int, quiet: bool) -> None:
    """The project's loggers on stderr: warnings by default, progress with ``-v`` (and
    Spark's own progress bars and log with ``-vv``), errors only with ``-q``."""
    import logging

    level = (logging.ERROR if quiet else logging.INFO if verbose
             else logging.WARNING)
    logger = logging.getLogger("uncertain_cep")
    logger.setLevel(level)
    if not any(getattr(h, "_uncertain_cep_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._uncertain_cep_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    from uncertain_cep.pipeline import session

    session.SPARK_OUTPUT = verbose >= 2 and not quiet


def _add_verbosity(parser: argparse.ArgumentParser) -> None:
    """``-v/--verbose`` and ``-q/--quiet`` on every (sub)command, so they go anywhere."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="count", default=0,
                       help="say what the job does (-vv: also Spark's progress and log)")
    group.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                _add_verbosity(sub)


# Keyword arguments the library's messages name, as this command line spells them.
_KEYWORD = re.compile(r"\b(time_unit|group_by|max_speed|node_budget|on_bad_rows|"
                      r"on_bad_groups|time_column|symbol_column|tick|columns)=")
# A columns= mapping written out in a message, and its pairs.
_MAPPING = re.compile(r"\bcolumns=\{([^{}]*)\}")
_PAIR = re.compile(r"'([^']*)': '([^']*)'")


def _as_typed(message: str) -> str:
    """A library message naming ``time_unit=`` names ``--time-unit`` instead.

    >>> _as_typed("pass time_unit= (e.g. '1s')")
    "pass --time-unit (e.g. '1s')"
    >>> _as_typed("time_unit='1s' is a duration")
    "--time-unit '1s' is a duration"
    >>> _as_typed("pass columns={'t_lo': '<its name>', 't_hi': 'end'}")
    'pass --columns t_lo=<its name>,t_hi=end'
    """
    def flag(m: re.Match[str]) -> str:
        rest = message[m.end():m.end() + 1]
        return "--" + m.group(1).replace("_", "-") + ("" if rest in (" ", "") else " ")

    def mapping(m: re.Match[str]) -> str:
        pairs = _PAIR.findall(m.group(1))
        if ", ".join(f"'{k}': '{v}'" for k, v in pairs) != m.group(1):
            return m.group(0)          # names the pairs cannot spell: left as written
        return "--columns " + ",".join(f"{k}={v}" for k, v in pairs)

    return _KEYWORD.sub(flag, _MAPPING.sub(mapping, message))


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows each flag's default (unless its text already names it)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (default is None or default is False or default is argparse.SUPPRESS
                or "default" in text or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """Every (sub)command's parser: defaults in the help, the exit codes below it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault("epilog", EPILOG)
        super().__init__(*args, **kwargs)


def _choices(enum: type[ParamEnum]) -> list[str]:
    return [str(member.value) for member in enum]


def _parser() -> argparse.ArgumentParser:
    from uncertain_cep.api import EngineName
    from uncertain_cep.index.forests.codes import CodeSchemeName
    from uncertain_cep.interval.api import MatchEngine
    from uncertain_cep.pipeline.build_job import BadInputPolicy
    from uncertain_cep.pipeline.time_slices import SliceReads
    from uncertain_cep.query.strategies import StrategyName

    parser = _Parser(prog="uncertain-cep", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=_version())
    # Subcommands' parsers are _Parsers too (argparse makes them of the parent's class).
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the main job on the bundled sample archive")
    demo.add_argument("--out", default="out/demo", help="output directory")
    demo.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    demo.add_argument("--engine", default="auto", choices=_choices(DemoEngine),
                      help="where the index is built: spark, local (this process), or auto "
                           "(Spark if pyspark is installed, else this process)")
    demo.set_defaults(run=_demo)

    build = sub.add_parser("build", help="validate an archive and write its index (Spark)")
    build.add_argument("input", help="Parquet or CSV file of events, or a directory of them")
    build.add_argument("--out", required=True, help="index directory to write")
    build.add_argument("--group-by", default="group", help="dependency-group column")
    build.add_argument("--time-unit", type=_time_unit, default=None,
                       help="a number for numeric times, or a duration such as 1s for "
                            "timestamps")
    build.add_argument("--max-speed", type=float, default=None,
                       help="Condition 2: largest speed between a group's events")
    build.add_argument("--coordinates", default="x,y", help="comma-separated, for --max-speed")
    build.add_argument("--codes", default="compact", choices=_choices(CodeSchemeName),
                       help="OI-tree node codes")
    build.add_argument("--node-budget", type=count_argument(1), default=2_000_000,
                       help="largest number of OI-tree nodes one group may need")
    build.add_argument("--on-bad-rows", default="error", choices=_choices(BadInputPolicy),
                       help="fail on bad rows, or index the rest and report them")
    build.add_argument("--on-bad-groups", default="error", choices=_choices(BadInputPolicy),
                       help="fail on groups that cannot be indexed, or index the rest and "
                            "report them")
    build.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    build.add_argument("--partitions", type=count_argument(1), default=None,
                       help="number of build tasks")
    build.add_argument("--engine", default="spark", choices=_choices(EngineName),
                       help="build with Spark, or in this process (local)")
    build.add_argument("--columns", type=_column_mapping, action="append", default=None,
                       metavar="NAME=COLUMN[,NAME=COLUMN...]",
                       help="the input's columns for the archive's event_id, t_lo, t_hi "
                            "or t, e.g. event_id=reading_id,t_lo=start,t_hi=end (may be "
                            "repeated)")
    build.set_defaults(run=_build)

    query = sub.add_parser("query", help="answer a query over a saved index")
    query.add_argument("index", help="index directory")
    query.add_argument("query", help="query text (or @file to read it from a file)")
    query.add_argument("--strategy", default="selectivity", choices=_choices(StrategyName),
                       help="evaluation strategy")
    query.add_argument("--explain", action="store_true",
                       help="print the plan and counters per step before the answer")
    query.add_argument("--engine", default="local", choices=_choices(EngineName),
                       help="local: load the index here; spark: by time slices")
    query.add_argument("--master", default=None, help="Spark master URL for --engine spark")
    query.add_argument("--slice-reads", default="mapped", choices=_choices(SliceReads),
                       help="with --engine spark, how each time slice reads the index: the "
                            "whole index memory-mapped per executor process, or only its "
                            "time range's row groups (counted by --explain)")
    query.add_argument("--out", default=None, type=_answer_path,
                       help="write the answer to .parquet or .csv; with --engine spark, a "
                            "path ending in / is a directory of Parquet files the executors "
                            "write")
    query.add_argument("--verify", action="store_true",
                       help="hash every file of the index before answering (by default "
                            "only the files opening reads are hashed)")
    query.set_defaults(run=_query)

    reporter = sub.add_parser("report", help="a standalone HTML report of one query over a "
                                             "saved index (query, plan, answer, timeline)")
    reporter.add_argument("index", help="index directory (written by build)")
    reporter.add_argument("query", help="query text (or @file to read it from a file)")
    reporter.add_argument("--out", required=True, type=_html_path, help="the report, .html")
    reporter.add_argument("--strategy", default="selectivity",
                          choices=_choices(StrategyName), help="evaluation strategy")
    reporter.add_argument("--table", default=None, type=table_path_argument,
                          help="also write the full answer to .parquet or .csv")
    reporter.add_argument("--top", type=count_argument(1), default=100,
                          help="answer rows shown in the page")
    reporter.set_defaults(run=_report)

    matcher = sub.add_parser("match", help="match a temporal pattern (part B) on Spark")
    matcher.add_argument("input", help="Parquet or CSV file of point or interval events, or "
                                       "a directory of them")
    matcher.add_argument("query", help="query text (or @file to read it from a file)")
    matcher.add_argument("--out", required=True, type=table_path_argument,
                         help="answer file, .parquet or .csv")
    matcher.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    matcher.add_argument("--engine", default="join", choices=_choices(MatchEngine),
                         help="how matches are found (every engine gives the same answer)")
    matcher.add_argument("--time-column", default="time", help="point events' time column")
    matcher.add_argument("--time-unit", type=_time_unit, default=None,
                         help="seconds per data time unit (a number) or a duration such as "
                              "1s; needed when the query writes units (5s, 2 MINUTES)")
    matcher.add_argument("--tick", type=float, default=1,
                         help="one time unit of point events: a run still true at a "
                              "partition's last event ends this long after it")
    matcher.add_argument("--symbol-column", default="symbol",
                         help="interval events' column naming each row's symbol")
    matcher.set_defaults(run=_match)

    add_datasets_parser(sub)
    _add_verbosity(parser)
    return parser


def _whole(value: float) -> float | int:
    """An integral tick as an int, so that integer times stay integers."""
    return int(value) if float(value).is_integer() else value


def _html_path(text: str) -> str:
    if Path(text).suffix.lower() not in (".html", ".htm"):
        raise argparse.ArgumentTypeError(f"{text} must end in .html")
    return text


def _column_mapping(text: str) -> dict[str, str]:
    """An argparse type: ``event_id=reading_id,t_lo=start`` as ``{"event_id":
    "reading_id", "t_lo": "start"}``, its names checked (the columns are checked when the
    input is read).

    >>> _column_mapping("event_id=reading_id,t_lo=start")
    {'event_id': 'reading_id', 't_lo': 'start'}
    >>> _column_mapping("reading_id")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'reading_id' is not NAME=COLUMN; ...
    """
    from uncertain_cep.errors import InvalidOptionError
    from uncertain_cep.input_tables import ArchiveColumn

    mapping: dict[str, str] = {}
    for part in text.split(","):
        name, equals, column = part.partition("=")
        if not equals or not name or not column:
            raise argparse.ArgumentTypeError(
                f"{part!r} is not NAME=COLUMN; write the archive's name, '=' and the "
                "input's column, pairs separated by commas, e.g. "
                "event_id=reading_id,t_lo=start")
        try:
            ArchiveColumn.get_value(name)
        except InvalidOptionError as e:
            raise argparse.ArgumentTypeError(f"in {part!r}: {e}") from None
        if name in mapping:
            raise argparse.ArgumentTypeError(f"{name} is given twice ({name}={mapping[name]} "
                                             f"and {part}); give each name once")
        mapping[name] = column
    return mapping


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


def _time_unit(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


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


def _version() -> str:
    """The package's version, with the Python and Spark it runs with."""
    import platform

    from uncertain_cep import __version__
    from uncertain_cep.pipeline.session import spark_available

    spark = "not installed"
    if spark_available():
        from importlib.metadata import version

        spark = version("pyspark")
    return (f"uncertain-cep {__version__} (Python {platform.python_version()}, "
            f"pyspark {spark})")


def _demo(args: argparse.Namespace) -> int:
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
              f"({stats.entries_created} candidate entries, {stats.seconds:.2f} s)")
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


class DemoEngine(ParamEnum):
    """Where ``uncertain-cep demo`` builds the sample's index."""

    auto = "auto"
    spark = "spark"
    local = "local"


def _build(args: argparse.Namespace) -> int:
    import uncertain_cep as uc
    from uncertain_cep.api import EngineName

    coordinates = tuple(args.coordinates.split(","))
    columns = _merged_columns(args.columns)
    if EngineName.get_value(args.engine) == "local":
        idx = uc.build_index(args.input, group_by=args.group_by, max_speed=args.max_speed,
                             coordinates=coordinates, time_unit=args.time_unit,
                             codes=args.codes, node_budget=args.node_budget,
                             columns=columns)
        idx.save(args.out)
        print(f"{idx} written to {args.out}")
        return 0
    summary = uc.build_index_spark(
        args.input, args.out, group_by=args.group_by, time_unit=args.time_unit,
        max_speed=args.max_speed, coordinates=coordinates, codes=args.codes,
        node_budget=args.node_budget, on_bad_rows=args.on_bad_rows,
        on_bad_groups=args.on_bad_groups, master=args.master, partitions=args.partitions,
        columns=columns)
    print(f"{summary}; index written to {args.out}")
    return 0


def _query_text(arg: str) -> str:
    if not arg.startswith("@"):
        return arg
    from uncertain_cep.errors import InputError

    try:
        return Path(arg[1:]).read_text()
    except OSError as e:
        raise InputError(f"cannot read the query from {arg[1:]!r}: {e.strerror}") from e


def _answer_path(text: str) -> str:
    """An argparse type: a table file to write (``.parquet``, ``.csv``) or a directory
    (ending in ``/``)."""
    if text.endswith(("/", os.sep)):
        return text
    try:
        return table_path_argument(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"{text} must end in .parquet or .csv (or in / for a directory of Parquet "
            "files written by the Spark executors, with --engine spark)") from None


def _query(args: argparse.Namespace) -> int:
    import uncertain_cep as uc
    from uncertain_cep.api import EngineName
    from uncertain_cep.errors import UsageError
    from uncertain_cep.query.strategies import StrategyName

    text = _query_text(args.query)
    if args.out and args.out.endswith(("/", os.sep)):
        if EngineName.get_value(args.engine) != "spark":
            raise UsageError(f"--out {args.out} is a directory, which only --engine spark "
                             "writes; give a .parquet or .csv file")
        if args.explain:
            raise UsageError("--explain needs the answer on this machine; leave it out with "
                             "--out DIRECTORY/, or write a .parquet or .csv file")
        from uncertain_cep.pipeline.query_job import query_spark, write_answer_directory

        answer = query_spark(args.index, text, StrategyName.get_value(args.strategy),
                             master=args.master, verify=args.verify, reads=args.slice_reads)
        rows = write_answer_directory(answer, args.out)
        print(f"{rows} matches written to {args.out} (Parquet, by the Spark executors)")
        return 0
    if args.slice_reads != "mapped" and EngineName.get_value(args.engine) == "local":
        raise UsageError(f"--slice-reads {args.slice_reads} is for --engine spark; the local "
                         "engine opens the whole index")
    if args.explain and EngineName.get_value(args.engine) == "local":
        explanation = uc.open_index(args.index, verify=args.verify).explain(
            text, strategy=args.strategy)
        assert explanation.answer is not None
        res = explanation.answer
    else:
        res = uc.query_index(args.index, text, strategy=args.strategy, engine=args.engine,
                             master=args.master, verify=args.verify,
                             slice_reads=args.slice_reads)
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


def _report(args: argparse.Namespace) -> int:
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


def _match(args: argparse.Namespace) -> int:
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


if __name__ == "__main__":
    raise SystemExit(main())
