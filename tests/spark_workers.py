"""Faults for the Spark jobs a test runs in processes of their own: a Python worker
killed at given moments (as a lost executor would lose it), or the whole job killed
(as a driver's host would be lost)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["kill_job_when", "kill_workers_at", "python_workers"]


def kill_workers_at(proc: subprocess.Popen, folder: Path, moments: list[str],
                    seconds: float) -> tuple[list[str], str, str]:
    """Run ``proc`` (started with pipes, in a session of its own) to its end; for each of
    ``moments`` in turn (glob patterns under ``folder``), as soon as a file matches,
    kill the newest Python worker of its job. Returns the moments killed at, and the
    job's output and errors; a job still running after ``seconds`` is killed."""
    pending, killed = list(moments), []
    deadline = time.monotonic() + seconds
    try:
        while pending and time.monotonic() < deadline and proc.poll() is None:
            if any(folder.glob(pending[0])) and (workers := python_workers(proc.pid)):
                os.kill(max(workers), signal.SIGKILL)
                killed.append(pending.pop(0))
            time.sleep(0.01)
        out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return killed, out or "", err or ""


def kill_job_when(proc: subprocess.Popen, ready: Callable[[], bool], seconds: float) -> None:
    """Kill ``proc`` and everything it started (its session: the driver, its JVM, the
    workers) once ``ready()`` holds; fails the test if the job ended first."""
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and proc.poll() is None and not ready():
            time.sleep(0.05)
        assert proc.poll() is None, "the build finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()


def python_workers(under: int | None = None) -> list[int]:
    """PIDs of PySpark's forked Python workers (children of a ``pyspark.daemon``, or of
    the package's ``uncertain_cep.pipeline.worker_daemon``); with
    ``under``, only those descended from that process (a job the test started, not the
    Spark sessions of tests running beside it)."""
    daemons, parent = set(), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        if b"pyspark.daemon" in cmd or b"uncertain_cep.pipeline.worker_daemon" in cmd:
            daemons.add(int(entry))

    def descends(pid: int) -> bool:
        while pid > 1:
            if pid == under:
                return True
            pid = parent.get(pid, 0)
        return False

    return [pid for pid, ppid in parent.items() if ppid in daemons and pid in daemons
            and (under is None or descends(pid))]
