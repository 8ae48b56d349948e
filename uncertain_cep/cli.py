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

This module runs one command: it parses the arguments (:mod:`uncertain_cep.cli_parser`),
sets up logging, runs the subcommand (:mod:`uncertain_cep.cli_commands`) and turns the
project's errors into one line and an exit code, naming keyword arguments as the command
line spells them.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from uncertain_cep.cli_commands import write_report
from uncertain_cep.cli_parser import build_parser

__all__ = ["main", "write_report"]

# Exit codes: 0 done; 1 the data, index or query is at fault (the message says where);
# 2 the command line is (an unknown flag, a missing argument, a value a flag cannot take);
# 130 interrupted (Ctrl-C).
EXIT_DATA_ERROR = 1
EXIT_USAGE_ERROR = 2
# 128 + SIGINT, as shells report a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.verbose, args.quiet)
    from uncertain_cep.errors import UncertainCepError, UsageError
    from uncertain_cep.pipeline import session

    # One job per process: no query follows a build here to find its plan warm
    # (pipeline/warm_up.py).
    session.WARM_UP = False

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


if __name__ == "__main__":
    raise SystemExit(main())
