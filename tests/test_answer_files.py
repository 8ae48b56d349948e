"""Answer files give back every id as it went in (issue 44 item 7): a CSV answer used to
read string ids such as "nan", "NULL", "N/A" and "" back as NaN, and text ids that look
like numbers as numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep import cli
from uncertain_cep.answer_files import read_answer

QUERY = "PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0"
NA_LOOKING = ["nan", "NaN", "NULL", "null", "N/A", "NA", "", "None", "#N/A", "-nan", "1.#IND"]


def answer_of(ids: list[object]) -> pd.DataFrame:
    """The answer of QUERY over one group of overlapping events, one per id."""
    n = len(ids)
    idx = uc.build_index(pd.DataFrame({"event_id": ids, "group": "g",
                                       "t_lo": np.arange(n), "t_hi": np.arange(n) + 2,
                                       "x": 1.0}))
    return idx.query(QUERY)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_na_looking_string_ids_come_back_as_the_strings(tmp_path, suffix):
    answer = answer_of(NA_LOOKING)
    answer.to_file(tmp_path / f"a{suffix}")
    back = read_answer(tmp_path / f"a{suffix}")
    assert back["events"].tolist() == answer["events"].tolist()
    assert {e for row in back["events"] for e in row} == set(NA_LOOKING)


def test_ids_holding_a_nul_byte_come_back_whole_from_csv(tmp_path):
    # pandas' C parser ends a field at NUL (found by the property test below).
    answer = answer_of(["nan", "\x00", "a\x00b"])
    answer.to_file(tmp_path / "a.csv")
    assert read_answer(tmp_path / "a.csv")["events"].tolist() == answer["events"].tolist()


def test_string_ids_that_look_like_numbers_stay_strings_in_csv(tmp_path):
    answer = answer_of(["12", "007", "-3", "1e5"])
    answer.to_file(tmp_path / "a.csv")
    assert read_answer(tmp_path / "a.csv")["events"].tolist() == answer["events"].tolist()


def test_the_cli_csv_answer_keeps_na_looking_ids(tmp_path):
    pd.DataFrame({"event_id": ["NULL", "nan", "N/A"], "group": "g", "t_lo": [0, 1, 2],
                  "t_hi": [2, 3, 4], "x": 1.0}).to_parquet(tmp_path / "events.parquet")
    assert cli.main(["build", str(tmp_path / "events.parquet"), "--out",
                     str(tmp_path / "ix"), "--engine", "local"]) == 0
    assert cli.main(["query", str(tmp_path / "ix"), QUERY, "--out",
                     str(tmp_path / "a.csv")]) == 0
    events = read_answer(tmp_path / "a.csv")["events"].tolist()
    assert {e for row in events for e in row} == {"NULL", "nan", "N/A"}


# Text of any character a file can hold: NA spellings, spaces, separators, quotes, newlines.
TEXT_IDS = st.one_of(st.sampled_from(NA_LOOKING + [" ", " x ", ",", '"', "'", "\n", "\r\n",
                                                   "a,b", 'say "hi"', "12", "-0",
                                                   "\x00", "a\x00b"]),
                     st.text(st.characters(blacklist_categories=("Cs",)), max_size=6))
INT_IDS = st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(2**63, 2**64 - 1))


@given(st.one_of(st.lists(TEXT_IDS, min_size=2, max_size=4, unique=True),
                 st.lists(st.integers(-2**63, 2**63 - 1), min_size=2, max_size=4, unique=True),
                 st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=4, unique=True)))
def test_every_id_round_trips_through_a_csv_answer(tmp_path_factory, ids):
    dtype = np.uint64 if any(i >= 2**63 for i in ids if isinstance(i, int)) else None
    answer = answer_of(list(pd.Series(ids, dtype=dtype)) if dtype else ids)
    path = tmp_path_factory.mktemp("csv") / "a.csv"
    answer.to_file(path)
    back = read_answer(path)
    assert back["events"].tolist() == answer["events"].tolist()
    assert [type(e) for row in back["events"] for e in row] == \
        [type(e) for row in answer["events"] for e in row]
    assert back["confidence"].tolist() == answer["confidence"].tolist()
