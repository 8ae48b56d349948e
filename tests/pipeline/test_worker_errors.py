"""A failing Python worker's own exception reaches the user (issue "Spark SQL access,
a quiet console", item 2): an executor interpreter that lacks the package names the
missing module and what to do, not only "An exception was thrown from the Python
worker"."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import os, sys
    import pandas as pd
    from pyspark.sql import SparkSession
    import uncertain_cep as uc

    d = sys.argv[1]
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    rows = pd.DataFrame({"event_id": range(6), "group": "g", "t_lo": range(6),
                         "t_hi": range(2, 8), "x": 1.0})
    try:
        uc.build_index_spark(spark.createDataFrame(rows), os.path.join(d, "ix"),
                             spark=spark, log=lambda _: None)
    except uc.UncertainCepError as e:
        print("ERROR", e)
""")


def test_a_worker_without_the_package_names_the_missing_module_and_the_fix(tmp_path):
    # The executors' interpreter: this one without its site-packages (no uncertain_cep,
    # as on a cluster where the package was never installed).
    worker = tmp_path / "python-without-packages"
    worker.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    worker.chmod(0o755)
    env = dict(os.environ, PYSPARK_PYTHON=str(worker),
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2]),
                                           os.environ.get("PYTHONPATH", "")]))
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ERROR ")]
    assert lines, (proc.stdout[-2000:], proc.stderr[-3000:])
    message = lines[-1]
    assert "ModuleNotFoundError: No module named" in message
    assert "PYSPARK_PYTHON" in message and "install uncertain-cep" in message
