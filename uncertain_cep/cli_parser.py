"""The ``uncertain-cep`` command line's parser: its subcommands, flags, types and help.

:func:`build_parser` makes the parser :func:`uncertain_cep.cli.main` runs: every
(sub)command shows its flags' defaults and the exit codes in its help, takes ``-v`` and
``-q`` anywhere, and checks its values as it parses (a ``.html`` report, ``--columns``
pairs, a ``--time-unit`` number or duration, an answer file or directory). Each
subcommand's ``run`` is in :mod:`uncertain_cep.cli_commands`; ``datasets`` comes from
:mod:`uncertain_cep.dataset_commands`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from uncertain_cep.cli_commands import (
    DemoEngine,
    run_build,
    run_demo,
    run_match,
    run_query,
    run_report,
)
from uncertain_cep.dataset_commands import (
    add_datasets_parser,
    count_argument,
    table_path_argument,
)
from uncertain_cep.errors import DEFAULT_MAX_ROWS, ParamEnum

__all__ = ["DESCRIPTION", "EPILOG", "build_parser"]

DESCRIPTION = ("Answer pattern queries over archives of events whose timestamps are "
               "uncertain, and match temporal patterns over interval events.")
EPILOG = """exit status:
  0  success
  1  the data, the index or the query is at fault (the message says where and what to do)
  2  usage error: an unknown or missing argument, or a value a flag cannot take"""


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``uncertain-cep`` and its subcommands, each with its ``run``."""
    from uncertain_cep.api import EngineName
    from uncertain_cep.index.forests.codes import CodeSchemeName
    from uncertain_cep.interval.api import MatchEngine
    from uncertain_cep.pipeline.build_job import BadInputPolicy
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
    demo.set_defaults(run=run_demo)

    build = sub.add_parser("build", help="validate an archive and write its index (Spark)")
    build.add_argument("input", help="Parquet or CSV file of events, or a directory of them")
    build.add_argument("--out", required=True,
                       help="index directory to write, or an s3://, gs://, abfs:// or "
                            "hdfs:// URI")
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
    build.add_argument("--shard-events", type=count_argument(1), default=None,
                       help="events per shard: a larger archive is cut by time into shards "
                            "of about that many, each built by a task of its own (Spark's "
                            "default 4,000,000; in this process, one directory unless given)")
    build.add_argument("--columns", type=_column_mapping, action="append", default=None,
                       metavar="NAME=COLUMN[,NAME=COLUMN...]",
                       help="the input's columns for the archive's event_id, t_lo, t_hi "
                            "or t, e.g. event_id=reading_id,t_lo=start,t_hi=end (may be "
                            "repeated)")
    build.set_defaults(run=run_build)

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
    query.add_argument("--out", default=None, type=_answer_path,
                       help="write the answer to .parquet or .csv; a path ending in / is "
                            "a directory of Parquet parts written as the answer is found "
                            "(with --engine spark, by the executors): any size")
    query.add_argument("--verify", action="store_true",
                       help="hash every file of the index before answering (by default "
                            "only the files opening reads are hashed)")
    query.add_argument("--limit", type=count_argument(1), default=None, metavar="K",
                       help="only the K most confident rows (as LIMIT K in the query)")
    query.add_argument("--count", action="store_true",
                       help="print the number of answer rows only (none is made)")
    query.add_argument("--max-rows", type=count_argument(1), default=DEFAULT_MAX_ROWS,
                       metavar="N",
                       help="stop with an error once the answer holds more than N rows "
                            f"(default {DEFAULT_MAX_ROWS:,}); --limit, --count or --out "
                            "DIRECTORY/ ask for less or stream it")
    query.set_defaults(run=run_query)

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
    reporter.set_defaults(run=run_report)

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
    matcher.set_defaults(run=run_match)

    add_datasets_parser(sub)
    _add_verbosity(parser)
    return parser


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


def _time_unit(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


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
