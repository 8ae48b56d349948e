"""Without the plot extra (issue "Spark SQL access, a quiet console", item 8): what draws
says which extra to install; everything else, the HTML report's text included, works."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import sys
    sys.modules["matplotlib"] = None     # as if not installed: importing it fails
    import pandas as pd
    import uncertain_cep as uc
    from uncertain_cep.report import html_report, write_html_report

    idx = uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": "g", "t_lo": [0, 2],
                                       "t_hi": [1, 3], "x": [1.0, 5.0]}))
    q = "PATTERN SEQ(A, B) DEFINE A AS x < 3, B AS x > 3"
    res = idx.query(q)
    print("ROWS", len(res))
    for name, draw in (("plot", res.plot), ("describe", idx.describe().plot)):
        try:
            draw()
        except uc.MissingDependencyError as e:
            print("ERROR", name, isinstance(e, ImportError), e)
    page, _ = html_report(idx, q)
    write_html_report(sys.argv[1], page)
    print("REPORT", "uncertain-cep[plot]" in page, "<img" in page)
""")


def test_plots_without_matplotlib_name_the_plot_extra_and_the_report_still_writes(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "r.html")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "ROWS 1" in lines
    errors = [ln for ln in lines if ln.startswith("ERROR ")]
    assert [ln.split()[1] for ln in errors] == ["plot", "describe"]
    for line in errors:
        assert line.split()[2] == "True"
        assert "pip install 'uncertain-cep[plot]'" in line
    assert "REPORT True False" in lines
    assert (tmp_path / "r.html").is_file()
