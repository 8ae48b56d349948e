"""Saving an index that was opened from disk (issue 44, item 8): the forests it reads back
hold every stored field, so it writes the same index again."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from random_archives import archives, patterns

import uncertain_cep as uc


def _listing(path: Path) -> dict[str, str]:
    """The manifest's checksum of every file of the index at ``path``."""
    data = json.loads((path / "manifest.json").read_text())
    return {k: v for k, v in data.items() if k in ("sha256", "xxh3_64")}


def _provenance(idx: uc.UncertainIndex) -> dict[str, object]:
    return {k: v for k, v in idx.describe().provenance.items() if k != "path"}


def test_an_opened_index_of_three_events_saves_again(tmp_path):
    df = pd.DataFrame({"event_id": [1, 2, 3], "group": ["g", "g", "h"], "t_lo": [0, 1, 2],
                       "t_hi": [2, 3, 4], "x": [1.0, 2.0, 3.0]})
    uc.build_index(df).save(tmp_path / "a")
    uc.open_index(tmp_path / "a").save(tmp_path / "b")
    again = uc.open_index(tmp_path / "b", verify=True)
    assert again.n_events == 3
    assert _listing(tmp_path / "b") == _listing(tmp_path / "a")


# Each example writes and opens three indexes per code scheme (about 3 s).
@settings(max_examples=5)
@given(df=archives(max_groups=3, max_events=7), pattern=patterns())
def test_save_reopen_save_again_gives_the_same_index(tmp_path_factory, df, pattern):
    root = tmp_path_factory.mktemp("ix")
    for codes in ("compact", "paper"):
        first = uc.build_index(df, codes=codes)
        first.save(root / "a")
        a = uc.open_index(root / "a")
        a.save(root / "b")
        b = uc.open_index(root / "b", verify=True)
        b.save(root / "c")
        c = uc.open_index(root / "c", verify=True)
        want = first.query(pattern)
        for idx in (a, b, c):
            pd.testing.assert_frame_equal(idx.query(pattern), want)
            assert idx.describe() == first.describe()
            assert _provenance(idx) == _provenance(a)
        # Byte for byte the same files, so the same checksums.
        assert _listing(root / "b") == _listing(root / "a") == _listing(root / "c")
