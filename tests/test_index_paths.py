"""Every function that takes an index takes the same forms (issue "Spark SQL access, a
quiet console", item 3): a path, or a ``file:`` URI; another URI is a clear error."""

from __future__ import annotations

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.errors import InputError

ROWS = pd.DataFrame({"event_id": range(6), "group": ["g", "g", "g", "h", "h", "h"],
                     "t_lo": [0, 2, 4, 1, 3, 5], "t_hi": [1, 3, 5, 2, 4, 6],
                     "x": [1.0, 5.0, 9.0, 2.0, 6.0, 8.0]})
QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 3, B AS x > 4 WITHIN 6"


def test_a_file_uri_names_an_index_wherever_a_path_does(tmp_path):
    want = uc.build_index(ROWS).query(QUERY)
    uri = (tmp_path / "my index.idx").as_uri()     # percent-escaped space
    uc.build_index(ROWS).save(uri)
    assert (tmp_path / "my index.idx" / "manifest.json").is_file()
    for got in (uc.open_index(uri).query(QUERY), uc.query_index(uri, QUERY)):
        pd.testing.assert_frame_equal(pd.DataFrame(got), pd.DataFrame(want))


@pytest.mark.parametrize("call", ["open_index", "query_index", "save"])
def test_an_index_at_a_scheme_pyarrow_does_not_know_is_refused_saying_what_to_give(
        call, tmp_path):
    # s3://, gs://, abfs://, hdfs:// are read and written (tests/index/store/
    # test_remote_index.py, against an S3 server).
    uri = "nosuchfs://bucket/office.idx"
    with pytest.raises(InputError, match=r"nosuchfs://bucket/office\.idx: pyarrow cannot "
                                         r"open its filesystem.*file: URI"):
        if call == "save":
            uc.build_index(ROWS).save(uri)
        else:
            getattr(uc, call)(uri, *([QUERY] if call == "query_index" else []))


def test_query_spark_takes_a_file_uri(spark, tmp_path):
    uri = (tmp_path / "ix").as_uri()
    uc.build_index_spark(spark.createDataFrame(ROWS), uri, spark=spark, log=lambda _: None)
    want = uc.build_index(ROWS).query(QUERY)
    got = uc.query_spark(uri, QUERY, spark=spark).toPandas()
    assert [list(e) for e in got["events"]] == [list(e) for e in want["events"]]
    collected = uc.query_index(uri, QUERY, engine="spark")
    assert collected["confidence"].tolist() == want["confidence"].tolist()
