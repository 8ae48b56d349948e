"""R*-tree searches from several threads of one process (libspatialindex is not
thread-safe, even for reads)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_searches_from_several_threads_at_once_neither_crash_nor_differ():
    # In a fresh interpreter: without the index's lock this crashes the process
    # (double free or segmentation fault), which must not take a test worker with it.
    script = textwrap.dedent("""
        import threading
        import numpy as np
        import pandas as pd
        import uncertain_cep as uc

        rng = np.random.default_rng(0)
        n = 3000
        df = pd.DataFrame({"event_id": range(n), "group": rng.integers(0, 50, n),
                           "t_lo": np.arange(n), "t_hi": np.arange(n) + 2,
                           "x": rng.normal(size=n)})
        idx = uc.build_index(df).event_index
        boxes = [(None, (float(s), float(s) + 30), None) for s in rng.integers(0, n, 500)]
        want = idx.search_many(boxes, {"x": (-1.0, 1.0)})
        differ = []

        def search():
            for _ in range(10):
                got = idx.search_many(boxes, {"x": (-1.0, 1.0)})
                differ.extend(i for i, (a, b) in enumerate(zip(got, want))
                              if not np.array_equal(a, b))

        threads = [threading.Thread(target=search) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not differ, differ[:5]
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
