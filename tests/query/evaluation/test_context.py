"""A query's reported time is its own: seconds numba spends compiling kernels meanwhile
(their first use on a machine: uncertain_cep/kernel_cache.py) are reported apart."""

from __future__ import annotations

import pandas as pd

import uncertain_cep as uc
from uncertain_cep.query.evaluation import context

QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 3, B AS x > 4 WITHIN 10 CONFIDENCE 0.1"


def test_seconds_spent_compiling_kernels_are_reported_apart_from_the_query_time(
        monkeypatch):
    idx = uc.build_index(pd.DataFrame({
        "event_id": range(6), "group": ["a"] * 3 + ["b"] * 3, "t_lo": [0, 3, 6, 9, 12, 15],
        "t_hi": [2, 5, 8, 11, 14, 17], "x": [1.0, 5, 2, 6, 3, 7]}))
    idx.query(QUERY)       # whatever it compiles, once
    plain = idx.query(QUERY)
    assert plain.stats.compile_seconds == 0.0
    assert "kernels compiled" not in repr(plain.stats)
    # numba's clock of compilations, as if 42 s of compiling happened during the query.
    calls = []
    monkeypatch.setattr(context, "compile_seconds", lambda: 42.0 * bool(calls.append(1)
                                                                        or len(calls) > 1))
    res = idx.query(QUERY)
    assert len(calls) == 2
    assert res.stats.compile_seconds == 42.0
    assert 0.0 <= res.stats.seconds < 42.0
    assert res.equals(plain)
    assert "kernels compiled      42.0 s (their first use on this machine; not in the time " \
        "above)" in repr(res.stats)
