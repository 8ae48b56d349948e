"""The SparkSession every Spark job of uncertain-cep runs in.

Local mode on all cores by default; any master URL (``spark://host:7077``, ``yarn``,
``k8s://...``) runs the same jobs on a cluster, whose executors must see the index
directory at the same path (a shared filesystem). Workers use this process's interpreter,
so they import the same uncertain-cep, numpy and rtree as the driver. The driver's JVM
maps Spark's classes from a class-data-sharing archive when one was recorded
(:mod:`~uncertain_cep.pipeline.class_archive`), which saves seconds at every start.

Of any session, given or made here, the jobs read what its configuration says: its master
(:func:`master_of`) and how many tasks it runs at once (:func:`task_slots`).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from uncertain_cep.pipeline.class_archive import ClassArchive, class_archive
from uncertain_cep.pipeline.spark_errors import is_spark_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "DRIVER_MEMORY", "WARM_UP", "WORKER_DAEMON", "is_connect",
           "master_of",
           "spark_available", "spark_session", "task_slots"]

DEFAULT_MASTER = "local[*]"
# The driver's JVM heap of sessions made here (UNCERTAIN_CEP_DRIVER_MEMORY overrides it).
DRIVER_MEMORY = "2g"
# The Python worker daemon of sessions made here with UNCERTAIN_CEP_WORKER_DAEMON=1:
# pyspark's, with the query's modules loaded before it forks.
WORKER_DAEMON = "uncertain_cep.pipeline.worker_daemon"

# Whether a session made here shows Spark's stage bars and log (the CLI's -vv). Quiet by
# default: log4j at ERROR from the start (log4j2-quiet.properties), no bars.
SPARK_OUTPUT = False
# Whether sessions run the query plan once ahead (pipeline/warm_up.py); the command line,
# one job per process, turns it off.
WARM_UP = True
_QUIET_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")


def spark_available() -> bool:
    """Whether pyspark is installed (the ``spark`` extra), without importing it."""
    import importlib.util

    return importlib.util.find_spec("pyspark") is not None


def spark_session(master: str | None = None) -> SparkSession:
    """Get (or create) the SparkSession for uncertain-cep jobs.

    Parameters
    ----------
    master
        Spark master URL; ``None`` keeps a running session's master, or starts
        ``$UNCERTAIN_CEP_SPARK_MASTER`` (default ``local[*]``).

    A session already running in this process is the user's: it is returned as it is
    (never stopped, its master and ``PYSPARK_PYTHON`` untouched); asking for another
    master then is an :class:`~uncertain_cep.errors.InputError`. Only a session made
    here gets the project's settings (UTC, Arrow, this interpreter on the executors, the
    JVM class archive, the SQL functions ``uc_query`` and ``uc_match``; with
    ``UNCERTAIN_CEP_WORKER_DAEMON=1``, Python workers forked with the query's modules
    loaded by :mod:`~uncertain_cep.pipeline.worker_daemon`). Either session gets those
    functions when its configuration sets ``spark.uncertain_cep.sql.functions`` to
    ``true`` (:func:`~uncertain_cep.pipeline.sql_functions.register_if_configured`).
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        from uncertain_cep.errors import UncertainCepError

        raise UncertainCepError(
            "the Spark jobs need pyspark, an optional dependency: pip install "
            "'uncertain-cep[spark]' (and Java 17+); building and querying in this process "
            "need no Spark (uc.build_index, --engine local)") from e
    from uncertain_cep.pipeline.sql_functions import CONFIG_KEY, register_if_configured

    active = SparkSession.getActiveSession()
    if active is not None:
        # A running session is the user's: used as it is, never stopped or reconfigured.
        running = active.conf.get("spark.master", None)
        if master is None or running == master:
            register_if_configured(active)
            return active
        from uncertain_cep.errors import InputError

        raise InputError(f"a SparkSession on {running} is running in this process; pass it "
                         f"as spark= (or leave out master=), or stop it to run on {master}")
    # Executors of a session made here run the project's own interpreter, not whatever
    # `python3` is on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    url = master or os.environ.get("UNCERTAIN_CEP_SPARK_MASTER", DEFAULT_MASTER)
    # A Spark Connect session starts no JVM here.
    classes = ClassArchive() if os.environ.get("SPARK_REMOTE") else class_archive()
    java_options = [*classes.options]
    if not SPARK_OUTPUT:
        java_options.append(f"-Dlog4j2.configurationFile={_QUIET_LOG4J.as_uri()}")
    builder = SparkSession.builder
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
    if not os.environ.get("SPARK_REMOTE") and os.environ.get(
            "UNCERTAIN_CEP_WORKER_DAEMON") == "1":
        # Python workers forked with the query's modules loaded (worker_daemon.py): on
        # request only, since the session's first Python job then pays for the loading
        # (docs/benchmarks.md, "First queries of a fresh install").
        builder = builder.config("spark.python.daemon.module", WORKER_DAEMON)
    spark = (builder.master(url).appName("uncertain-cep")
             # Instants are whole units since the epoch in UTC (SEMANTICS A1).
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.ui.enabled", "false")
             # The cleaner of unused broadcasts waits for each removal by default; a
             # session stopped meanwhile interrupts it, and it logs an ERROR with a JVM
             # stack trace on a quiet terminal (seen once in CI, in the demo's stderr).
             .config("spark.cleaner.referenceTracking.blocking", "false")
             .config("spark.ui.showConsoleProgress", str(SPARK_OUTPUT).lower())
             .config("spark.sql.shuffle.partitions", str(max(4, 4 * (os.cpu_count() or 1))))
             # The JVM only reads, shuffles and hands Arrow batches over: the OI-trees
             # and queries live in the Python workers. 2g keeps a 10M-event build's whole
             # process tree under 6 GB (4g: 6.5 GB, same speed; docs/benchmarks.md).
             # An empty variable counts as unset (the JVM would not start).
             .config("spark.driver.memory",
                     os.environ.get("UNCERTAIN_CEP_DRIVER_MEMORY") or DRIVER_MEMORY)
             .config("spark.log.structuredLogging.enabled", "false")
             # SQL's uc_query and uc_match (pipeline/sql_functions.py).
             .config(CONFIG_KEY, "true")
             .getOrCreate())
    # SPARK_REMOTE in the environment makes the builder return a Spark Connect session,
    # which has no SparkContext (its server keeps its own log level).
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        spark.sparkContext.setLogLevel("ERROR")
        jvm = spark.sparkContext._jvm
        if classes.recording is not None and jvm is not None:
            classes.started(jvm.java.lang.ProcessHandle.current().pid())
    register_if_configured(spark)
    return spark


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no ``sparkContext`` there)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def master_of(spark: SparkSession) -> str | None:
    """The session's master URL, as its configuration says (on Connect, the server's)."""
    try:
        return spark.conf.get("spark.master", None)
    except Exception as e:  # a Connect server may refuse to show it
        if is_spark_error(e):
            return None
        raise


def task_slots(spark: SparkSession) -> int:
    """How many tasks the session runs at once, from its configuration (what classic
    Spark's ``defaultParallelism`` would say): ``spark.default.parallelism`` if set, the
    ``N`` of a ``local[N]`` master, the cores of ``local[*]``, workers times cores of
    ``local-cluster[W,C,M]``, else a quarter of
    ``spark.sql.shuffle.partitions`` (the session's own choice of shuffle width)."""
    conf = spark.conf
    explicit = conf.get("spark.default.parallelism", None)
    if explicit:
        return max(1, int(explicit))
    master = master_of(spark) or ""
    local = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master)
    if local:
        n = local.group(1)
        if n is None:
            return 1                      # "local": one thread
        return max(1, os.cpu_count() or 1) if n == "*" else max(1, int(n))
    cluster = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]", master)
    if cluster:
        # local-cluster[workers, cores per worker, memory]
        return max(1, int(cluster.group(1)) * int(cluster.group(2)))
    return max(1, int(conf.get("spark.sql.shuffle.partitions", "200") or 200) // 4)
