"""Event ids come back as they went in (issue 44 item 5), for every id type the build
accepts: through query answers (every strategy), answer files (Parquet and CSV),
save/open, and ``order_instance_fraction``.

Unsigned ids past int64's largest value used to be cast to int64 and come back negative.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.model.events import read_archive

QUERY = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0"
STRATEGIES = ("selectivity", "sequential", "tree_traversal", "possible_worlds")
INTEGER_TYPES = [np.int8, np.int16, np.int32, np.int64,
                 np.uint8, np.uint16, np.uint32, np.uint64]


def archive(ids: list[object], dtype: object) -> pd.DataFrame:
    """One group of overlapping events, one per id."""
    n = len(ids)
    return pd.DataFrame({"event_id": pd.Series(ids, dtype=dtype), "group": "g",
                         "t_lo": np.arange(n), "t_hi": np.arange(n) + 2,
                         "x": np.arange(1.0, n + 1)})


def answered_ids(answer: pd.DataFrame) -> set[object]:
    return {e for row in answer["events"] for e in row}


def test_a_uint64_id_past_2_63_comes_back_unchanged():
    big = 2**63 + 5
    idx = uc.build_index(archive([big, 7], np.uint64))
    assert answered_ids(idx.query(QUERY)) == {big, 7}
    assert idx.order_instance_fraction({big: 0}) == pytest.approx(3 / 7)


@st.composite
def typed_ids(draw: st.DrawFn) -> tuple[list[int], type]:
    """Two to four distinct ids of one integer type, its extreme values likely."""
    dtype = draw(st.sampled_from(INTEGER_TYPES))
    info = np.iinfo(dtype)
    values = st.one_of(st.sampled_from([int(info.min), int(info.max), 0,
                                        int(info.max) - 1, int(info.min) + 1]),
                       st.integers(int(info.min), int(info.max)))
    ids = draw(st.lists(values, min_size=2, max_size=4, unique=True))
    return ids, dtype


@given(typed_ids())
def test_integer_ids_of_every_type_round_trip_through_answers_and_answer_files(
        tmp_path_factory, typed):
    ids, dtype = typed
    idx = uc.build_index(archive(ids, dtype))
    expected = idx.query(QUERY, strategy="possible_worlds")
    assert answered_ids(expected) <= set(ids)
    assert len(expected)    # consecutive events overlap: some tuple always matches
    for strategy in STRATEGIES[:3]:
        answer = idx.query(QUERY, strategy=strategy)
        assert answer["events"].tolist() == expected["events"].tolist(), strategy
    for e, t in zip(ids, range(len(ids))):
        assert 0 < idx.order_instance_fraction({e: t}) <= 1
    folder = tmp_path_factory.mktemp("ids")
    for suffix in (".parquet", ".csv"):
        expected.to_file(folder / f"a{suffix}")
        back = uc.read_answer(folder / f"a{suffix}")
        assert back["events"].tolist() == expected["events"].tolist(), suffix
        assert all(isinstance(e, int) for row in back["events"] for e in row), suffix


@pytest.mark.parametrize("dtype", INTEGER_TYPES, ids=lambda t: np.dtype(t).name)
def test_extreme_ids_of_every_integer_type_survive_save_and_open(tmp_path, dtype):
    info = np.iinfo(dtype)
    ids = [int(info.max), int(info.min), int(info.max) - 1]
    idx = uc.build_index(archive(ids, dtype))
    idx.save(tmp_path / "ix")
    reopened = uc.open_index(tmp_path / "ix")
    assert sorted(reopened.archive.event_ids.tolist()) == sorted(ids)
    expected = idx.query(QUERY)["events"].tolist()
    assert answered_ids(idx.query(QUERY)) == set(ids)
    for strategy in STRATEGIES:
        assert reopened.query(QUERY, strategy=strategy)["events"].tolist() == expected
    assert reopened.order_instance_fraction({ids[0]: 0}) == \
        idx.order_instance_fraction({ids[0]: 0})


def test_a_float_id_past_the_int64_range_is_refused_not_wrapped():
    with pytest.raises(InputError, match=r"row 1: event_id 1e\+19 .*int64 range"):
        read_archive(archive([1.0, 1e19], float))


def test_spark_refuses_uint64_ids_it_cannot_hold_instead_of_wrapping_them():
    pytest.importorskip("pyspark")
    from uncertain_cep.errors import PlanningError
    from uncertain_cep.pipeline.answer_forms import answer_schema

    with pytest.raises(PlanningError, match=r"past 2\*\*63 - 1 .*engine='local'"):
        answer_schema(read_archive(archive([2**63 + 5, 7], np.uint64)))
    assert answer_schema(read_archive(archive([5, 7], np.uint64)))["events"]
