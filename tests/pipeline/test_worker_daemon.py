"""The Python worker daemon of sessions made by the package
(uncertain_cep/pipeline/worker_daemon.py) loads the query's modules and stays a process
of one thread, which pyspark's daemon needs before it forks; where it is not, it runs
pyspark's daemon instead. (Its workers on a real cluster:
tests/pipeline/test_cluster_kernels.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from uncertain_cep.pipeline import worker_daemon


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})


@pytest.mark.skipif(worker_daemon.thread_count() is None, reason="no /proc")
def test_after_loading_the_worker_modules_the_daemon_holds_one_thread():
    # As Spark starts it: one core a task (OMP_NUM_THREADS=1).
    # It has also loaded the kernels that run on one thread from the machine's cache
    # (compiled by the setup), and none of the parallel ones, whose loading starts threads.
    done = _run("import sys\n"
                "from uncertain_cep.pipeline import worker_daemon as w\n"
                "w.preload()\n"
                "from uncertain_cep import kernel_cache\n"
                "from uncertain_cep.query.engine.kernels import negation, tuples\n"
                "print(w.thread_count(), 'uncertain_cep.query.engine.batch_engine' in "
                "sys.modules, len(tuples._extremes.overloads) > 0, "
                "len(negation.group_factor.overloads) > 0, "
                "len(tuples._probabilities.overloads), kernel_cache.kernels_compiled())",
                OMP_NUM_THREADS="1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "True", "True", "True", "0", "0"]


@pytest.mark.skipif(worker_daemon.thread_count() is None, reason="no /proc")
def test_a_daemon_with_threads_after_loading_runs_pyspark_s_daemon_instead():
    # pyarrow's allocator thread left on: the daemon must not fork from that process. It
    # replaces itself with pyspark's daemon, which starts listening (and writes its port),
    # and says why.
    done = subprocess.run(
        [sys.executable, "-m", "uncertain_cep.pipeline.worker_daemon"],
        capture_output=True, timeout=120, input=b"",
        env={**os.environ, "OMP_NUM_THREADS": "1",
             "JE_ARROW_MALLOC_CONF": "background_thread:true"})
    assert b"threads after loading; running pyspark's daemon instead" in done.stderr
    assert len(done.stdout) >= 4      # the port pyspark's daemon wrote
