"""Top-k answers on Spark (issue 48): each slice keeps its best k, the driver (or Spark's
own sort) the best of those: the first k rows of the in-process answer, ties included."""

from __future__ import annotations

import pandas as pd
from top_rows import assert_first_rows_of

import uncertain_cep as uc

# Many ties: groups of the same shape give tuples of equal confidence, ranked by ids.
QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 3, B AS x >= 2 WITHIN 5"


def _archive() -> pd.DataFrame:
    n = 60
    return pd.DataFrame({"event_id": [f"e{(37 * i) % n:02d}" for i in range(n)],
                         "group": [i % 5 for i in range(n)],
                         "t_lo": [2 * (i // 5) + i % 2 for i in range(n)],
                         "t_hi": [2 * (i // 5) + i % 2 + 2 for i in range(n)],
                         "x": [float(i % 5) for i in range(n)]})


def test_a_top_k_query_on_spark_is_the_first_k_rows_of_the_in_process_answer(spark, tmp_path):
    uc.build_index(_archive()).save(tmp_path / "ix", shard_events=20)
    full = uc.open_index(tmp_path / "ix").query(QUERY)
    assert len(full) > 20 and full["confidence"].duplicated().any()
    for k in (1, 7, len(full) + 3):
        got = uc.query_index(tmp_path / "ix", QUERY, engine="spark", limit=k)
        assert_first_rows_of(got, full, k)
        # Each slice looked at its rows of confidence 1 first: the stats say so.
        assert got.stats.certain_pass is not None
        assert "first pass (LIMIT)" in str(got.stats)
    # Beyond the certain rows: the slices' thresholds rose, and the stats say so.
    k = int((full["confidence"] >= 1 - 1e-9).sum()) + 2
    got = uc.query_index(tmp_path / "ix", QUERY, engine="spark", limit=k)
    assert_first_rows_of(got, full, k)
    assert got.stats.threshold_rises and "slices its own" in str(got.stats), got.stats
    lazy = uc.query_spark(tmp_path / "ix", QUERY + " LIMIT 7", spark=spark).toPandas()
    assert [tuple(e) for e in lazy["events"]] == list(full["events"].head(7))
    assert lazy["confidence"].tolist() == full["confidence"].head(7).tolist()
