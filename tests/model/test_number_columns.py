"""A number column with a few bad values is numeric, its bad values bad rows at build time
(issue 44 item 11): one "abc" in a CSV column of numbers used to make the column
categorical, so that every later ``x < 5`` failed without naming the row."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.errors import InputError
from uncertain_cep.model.events import read_archive


def csv_archive(folder, x: list[object], column: str = "x") -> str:
    n = len(x)
    frame = pd.DataFrame({"event_id": range(1, n + 1), "group": "g",
                          "t_lo": range(n), "t_hi": [t + 2 for t in range(n)], column: x})
    if column == "x_lo":
        frame["x_hi"] = 10.0
    frame.to_csv(folder / "a.csv", index=False)
    return str(folder / "a.csv")


def test_one_word_in_a_csv_number_column_is_an_error_naming_row_and_column(tmp_path):
    path = csv_archive(tmp_path, [1.0, 2.5, "abc", 4.0, "n/a?"])
    with pytest.raises(InputError, match=r"event 3 \(row 2\): column 'x' = 'abc' is not a "
                                         r"number.*rows that are not: 2, 4") as err:
        uc.build_index(path)
    assert err.value.row == 2


def test_a_word_in_a_range_bound_column_names_the_row(tmp_path):
    with pytest.raises(InputError, match=r"event 2 \(row 1\): column 'x_lo' = 'abc'") as err:
        uc.build_index(csv_archive(tmp_path, [1.0, "abc", 3.0], column="x_lo"))
    assert err.value.row == 1
    assert "'string' dtype" not in str(err.value)    # a bound cannot be text


def test_columns_of_words_or_of_explicit_text_stay_categorical():
    base = {"event_id": [1, 2, 3], "group": "g", "t_lo": [0, 1, 2], "t_hi": [2, 3, 4]}
    words = read_archive(pd.DataFrame({**base, "tag": ["a", "b", "1"]}))
    digits = read_archive(pd.DataFrame({**base, "zip": ["02134", "10001", "94105"]}))
    chosen = read_archive(pd.DataFrame({**base, "code": pd.Series(["1", "2", "x"],
                                                                   dtype="string")}))
    assert (words.categorical_names, digits.categorical_names, chosen.categorical_names) \
        == (("tag",), ("zip",), ("code",))


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=8),
       st.data())
def test_a_mostly_numeric_column_reports_exactly_its_words(numbers, data):
    n_words = data.draw(st.integers(1, (len(numbers) - 1) // 2 or 1))
    if 2 * len(numbers) <= len(numbers) + n_words:
        return    # not mostly numbers: categorical, tested above
    values: list[object] = list(numbers)
    where = sorted(data.draw(st.lists(st.integers(0, len(values)), min_size=n_words,
                                      max_size=n_words)))
    for k, at in enumerate(where):
        values.insert(at + k, f"w{k}")
    bad = [i for i, v in enumerate(values) if isinstance(v, str)]
    n = len(values)
    frame = pd.DataFrame({"event_id": range(n), "group": "g", "t_lo": range(n),
                          "t_hi": range(n), "x": pd.Series(values, dtype=object)})
    with pytest.raises(InputError) as err:
        read_archive(frame)
    assert err.value.row == bad[0]
    assert f"rows that are not: {', '.join(map(str, bad))})" in str(err.value)
    assert read_archive(frame.drop(index=bad).reset_index(drop=True)).numeric_names == ("x",)
