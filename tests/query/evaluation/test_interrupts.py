"""Ctrl-C during a long query (issue "No wrong answer at the edges", item 9): a plain
KeyboardInterrupt within about a second, wherever the search is (in a compiled kernel,
on a spare thread, between steps), and the index answers afterwards; the command line
prints one line and exits 130.

Each case runs in a child process that receives a real SIGINT, as a terminal sends it."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# A dense archive whose SEQ(A, B, C) runs for minutes: time enough to interrupt it
# anywhere.
ARCHIVE = textwrap.dedent("""
    import numpy as np, pandas as pd, uncertain_cep as uc
    rng = np.random.default_rng(0)
    n = 2000
    lo = rng.integers(0, 2000, n)
    archive = pd.DataFrame({"event_id": range(n), "group": rng.integers(0, 200, n),
                            "t_lo": lo, "t_hi": lo + rng.integers(0, 20, n),
                            "x": rng.uniform(0, 10, n)})
    LONG = "PATTERN SEQ(A, B, C) DEFINE A AS x < 5, B AS x >= 2, C AS x > 3 WITHIN 50"
""")

CHILD = ARCHIVE + textwrap.dedent("""
    import sys, time
    idx = uc.build_index(archive)
    for _ in range(int(sys.argv[1])):
        print("started", flush=True)
        try:
            idx.query(LONG)
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    short = idx.query("PATTERN SEQ(A, B) DEFINE A AS x < 1, B AS x > 9 WITHIN 5")
    print("answers", len(short), flush=True)
""")

# Seconds after a query starts at which Ctrl-C comes: early (planning, first steps) and
# deep in the search (kernels on every core, the spare thread busy).
DELAYS = (0.5, 2.0, 3.5, 5.0)
# "About a second", with room for a CI machine running two test workers.
PROMPT = 5.0


def _env() -> dict[str, str]:
    root = str(Path(__file__).parents[3])
    return dict(os.environ, PYTHONPATH=os.pathsep.join([root,
                                                         os.environ.get("PYTHONPATH", "")]))


class _Child:
    """A child process whose output lines are read by a thread into a queue: waiting for
    one with a timeout must not depend on how much of the pipe a reader has buffered."""

    def __init__(self, args: list[str]) -> None:
        # Python leaves SIGINT ignored when its parent ignored it (as a shell does for
        # background jobs): give the child the default disposition, as a terminal would.
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())

    def line(self, timeout: float) -> str:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"no line from the child within {timeout} s") from None


def test_ctrl_c_anywhere_in_a_query_is_a_prompt_keyboard_interrupt_and_the_index_answers():
    child = _Child([sys.executable, "-c", CHILD, str(len(DELAYS))])
    proc = child.proc
    try:
        for delay in DELAYS:
            assert child.line(120) == "started"
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            sent = time.perf_counter()
            line = child.line(PROMPT)
            assert line == "interrupted", (delay, line)
            assert time.perf_counter() - sent < PROMPT
        assert child.line(60).startswith("answers ")
        assert proc.wait(60) == 0
        stderr = proc.stderr.read()
        assert "SystemError" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    finally:
        proc.kill()


def test_ctrl_c_on_the_command_line_prints_one_line_and_exits_130(tmp_path):
    script = ARCHIVE + f"uc.build_index(archive).save({str(tmp_path / 'ix')!r})\n"
    subprocess.run([sys.executable, "-c", script], env=_env(), check=True, timeout=300)
    query = ("PATTERN SEQ(A, B, C) DEFINE A AS x < 5, B AS x >= 2, C AS x > 3 "
             "WITHIN 50")
    proc = subprocess.Popen([sys.executable, "-m", "uncertain_cep.cli", "query",
                             str(tmp_path / "ix"), query], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(6.0)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=PROMPT + 10)
        assert proc.returncode == 130, stderr[-3000:]
        assert stderr == "interrupted\n"
    finally:
        proc.kill()
