"""The Python workers of the Spark jobs a test runs (to kill one, as a lost executor
would)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["python_workers"]


def python_workers(under: int | None = None) -> list[int]:
    """PIDs of PySpark's forked Python workers (children of a ``pyspark.daemon``); with
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
        if b"pyspark.daemon" in cmd:
            daemons.add(int(entry))

    def descends(pid: int) -> bool:
        while pid > 1:
            if pid == under:
                return True
            pid = parent.get(pid, 0)
        return False

    return [pid for pid, ppid in parent.items() if ppid in daemons and pid in daemons
            and (under is None or descends(pid))]
