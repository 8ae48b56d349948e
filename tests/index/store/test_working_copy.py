"""The host's cache of working copies: made once per index, kept within its size limit
by deleting the copies used longest ago, never the one in use."""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.index.store.working_copy import SEAL, cache_limit, working_copy


def _index(tmp_path, name: str, n: int) -> tuple[object, object]:
    df = pd.DataFrame({"event_id": range(n), "group": [i % 3 for i in range(n)],
                       "t_lo": [2 * i for i in range(n)], "t_hi": [2 * i + 1 for i in range(n)],
                       "x": [float(i) for i in range(n)]})
    uc.build_index(df).save(tmp_path / name)
    reader = open_reader(tmp_path / name)
    return reader.root, reader.manifest


def test_the_cache_keeps_within_its_limit_deleting_the_copies_used_longest_ago(
        tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    a, b, c = (_index(tmp_path, name, n) for name, n in (("a", 30), ("b", 31), ("c", 32)))
    copies = [working_copy(root, m, verified=True) for root, m in (a, b, c)]
    assert all((p / SEAL).is_file() for p in copies)
    now = time.time()
    # a used longest ago, then c, then b, none in the last minute
    for copy, ago in zip(copies, (300, 100, 200)):
        os.utime(copy / SEAL, (now - ago, now - ago))
    # Room for about two copies: making one more deletes a and c, not b.
    size = sum(f.stat().st_size for f in copies[0].rglob("*") if f.is_file())
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE_LIMIT", str(int(2.5 * size)))
    d = _index(tmp_path, "d", 33)
    made = working_copy(*d, verified=True)
    assert not copies[0].exists() and not copies[2].exists()
    assert copies[1].exists() and made.exists()
    # Opening a again makes its copy again; the answers never change.
    assert uc.open_index(tmp_path / "a").query("PATTERN SEQ(A) DEFINE A AS x > 28").shape[0] == 1


def test_a_limit_that_is_not_a_size_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE_LIMIT", "lots")
    with pytest.raises(uc.IndexFormatError, match="UNCERTAIN_CEP_CACHE_LIMIT is 'lots'"):
        cache_limit()


def test_a_copy_of_another_layout_is_never_taken_for_this_one(tmp_path, monkeypatch):
    # An older version's copy of the same index (its int64 columns under the bare manifest
    # digest) sits in the cache: this version makes and maps its own beside it.
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    root, manifest = _index(tmp_path, "a", 30)
    made = working_copy(root, manifest, verified=True)
    older = made.parent / made.name.rsplit("-", 1)[0]
    assert older != made
    os.rename(made, older)
    again = working_copy(root, manifest, verified=True)
    assert again == made and (again / SEAL).is_file() and (older / SEAL).is_file()
    assert uc.open_index(tmp_path / "a").query("PATTERN SEQ(A) DEFINE A AS x > 28").shape[0] == 1
