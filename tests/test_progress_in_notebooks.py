"""Progress bars in a Jupyter kernel (issue "Spark SQL access, a quiet console", item 5):
stderr is no terminal there, yet a long build or query shows tqdm's notebook widget;
outside a terminal or notebook nothing is shown."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from notebook_kernels import kernelspec

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("ipywidgets")

WIDGET = "application/vnd.jupyter.widget-view+json"

# A query whose search runs a few seconds: longer than the bar's delay.
LONG_QUERY = textwrap.dedent("""
    import numpy as np, pandas as pd, uncertain_cep as uc
    rng = np.random.default_rng(0)
    n = 700
    lo = rng.integers(0, 1400, n)
    idx = uc.build_index(pd.DataFrame({"event_id": range(n), "group": rng.integers(0, 70, n),
                                       "t_lo": lo, "t_hi": lo + rng.integers(0, 20, n),
                                       "x": rng.uniform(0, 10, n)}))
    res = idx.query("PATTERN SEQ(A, B, C) DEFINE A AS x < 5, B AS x >= 2, C AS x > 3 "
                    "WITHIN 50")
    print(len(res), "rows in", round(res.stats.seconds, 1), "s")
""")
QUICK_QUERY = textwrap.dedent("""
    quick = idx.query("PATTERN SEQ(A, B) DEFINE A AS x < 1, B AS x > 9 WITHIN 5")
    print(len(quick), "rows")
""")


def test_a_long_query_in_a_notebook_shows_a_widget_and_a_quick_one_shows_none(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(kernelspec(tmp_path / "jupyter")))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(LONG_QUERY), nbformat.v4.new_code_cell(QUICK_QUERY)]
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    long_cell, quick_cell = nb.cells
    seconds = float(long_cell.outputs[-1]["text"].split(" in ")[1].split()[0])
    widgets = [o for o in long_cell.outputs if WIDGET in o.get("data", {})]
    if seconds >= 1.5:        # the bar shows after a second of search
        assert widgets, long_cell.outputs
    assert not [o for o in quick_cell.outputs if WIDGET in o.get("data", {})]
    assert not [o for o in long_cell.outputs + quick_cell.outputs if o.get("name") == "stderr"]


def test_a_long_query_in_a_pipe_prints_no_progress():
    # Half the archive: still past the bar's one-second delay, in a quarter of the time.
    script = LONG_QUERY.replace("n = 700", "n = 350").replace("0, 1400, n", "0, 700, n")
    assert script != LONG_QUERY
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""
