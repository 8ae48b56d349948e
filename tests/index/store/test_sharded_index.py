"""A sharded index on disk (format 9): saved as shards of a few events, reopened and
queried, it answers as the possible-worlds baseline does on the whole archive, and its
manifest checks every shard."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from answer_checks import assert_same_answer, cases
from hypothesis import event, given, settings
from hypothesis import strategies as st

import uncertain_cep as uc
from uncertain_cep.index.store.manifest_check import read_manifest


# Each example saves and reopens an index (about 0.4 s); the cut itself is held to the
# oracle on 40 examples per strategy in tests/index/shards/.
@settings(max_examples=20)
@given(case=cases(condition2=False), shard_events=st.integers(1, 6),
       verify=st.booleans())
def test_a_reopened_sharded_index_answers_as_the_whole_archive(case, shard_events,
                                                              verify) -> None:
    df, pattern, _, codes, layout = case
    whole = uc.build_index(df, codes=codes, multi_tree=layout == "multi")
    with tempfile.TemporaryDirectory() as tmp:
        whole.save(Path(tmp) / "ix", shard_events=shard_events)
        manifest = read_manifest(Path(tmp) / "ix")
        event(f"shards: {min(len(manifest.shards), 4)}")
        reopened = uc.open_index(Path(tmp) / "ix", verify=verify)
        assert reopened.n_nodes == manifest.counts.nodes
        assert_same_answer(reopened.query(pattern),
                           whole.query(pattern, strategy="possible_worlds"))


def _saved(tmp: Path, shard_events: int = 2) -> tuple[Path, pd.DataFrame]:
    df = pd.DataFrame({"event_id": range(8), "group": [0, 0, 1, 1, 0, 0, 1, 1],
                       "t_lo": [0, 1, 0, 2, 10, 11, 12, 12], "t_hi": [2, 3, 1, 3, 11, 12, 13, 14],
                       "x": np.arange(8.0)})
    uc.build_index(df).save(tmp / "ix", shard_events=shard_events)
    return tmp / "ix", df


def test_the_manifest_lists_shards_by_time_and_adds_up_their_counts(tmp_path) -> None:
    path, df = _saved(tmp_path)
    manifest = read_manifest(path)
    assert len(manifest.shards) >= 2
    assert manifest.counts.events == len(df) == sum(s.counts.events for s in manifest.shards)
    starts = [s.start for s in manifest.shards]
    assert starts[0] is None and all(a < b for a, b in pairwise(starts[1:]))
    assert [s.end for s in manifest.shards[:-1]] == starts[1:]
    assert manifest.statistics.to_json()["events"] == len(df)
    summary = uc.open_index(path).describe()
    assert summary.provenance["shards"] == len(manifest.shards)
    assert ("shards", f"{len(manifest.shards)} (groups are counted once per shard holding "
                      "their events)") in summary.rows()


def test_a_damaged_shard_is_refused_naming_its_file(tmp_path) -> None:
    path, _ = _saved(tmp_path)
    victim = path / "shards/00001/packed/nodes.parquet"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(uc.IndexFormatError,
                       match=r"shards/00001 is damaged: packed/nodes\.parquet"):
        uc.open_index(path, verify=True)


def test_an_edited_shard_manifest_is_refused_by_the_index_manifest(tmp_path) -> None:
    path, _ = _saved(tmp_path)
    shard = path / "shards/00000/manifest.json"
    data = json.loads(shard.read_text())
    data["counts"]["events"] += 1
    shard.write_text(json.dumps(data))
    with pytest.raises(uc.IndexFormatError, match=r"shards/00000/manifest\.json"):
        uc.open_index(path)


def test_a_missing_shard_is_refused(tmp_path) -> None:
    path, _ = _saved(tmp_path)
    shutil.rmtree(path / "shards/00001")
    with pytest.raises(uc.IndexFormatError, match="00001"):
        uc.open_index(path)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_shard_events_must_be_a_positive_int(tmp_path, bad) -> None:
    idx = uc.build_index(pd.DataFrame({"event_id": [1], "group": 0, "t_lo": [0],
                                       "t_hi": [1]}))
    with pytest.raises(uc.InputError, match="shard_events"):
        idx.save(tmp_path / "ix", shard_events=bad)


def test_a_sharded_index_is_replaced_by_a_new_save_and_foreign_files_are_kept(tmp_path):
    path, df = _saved(tmp_path)
    uc.build_index(df).save(path, shard_events=3)        # over the sharded one
    assert len(read_manifest(path).shards) >= 2
    uc.build_index(df).save(path)                        # one directory again
    assert not read_manifest(path).shards and not (path / "shards").exists()
    uc.build_index(df).save(path, shard_events=2)
    (path / "shards" / "00000" / "notes.txt").write_text("mine")
    with pytest.raises(uc.IndexFormatError, match=r"shards/00000/notes\.txt"):
        uc.build_index(df).save(path, shard_events=2)


@settings(max_examples=15)
@given(case=cases(condition2=False), shard_events=st.integers(1, 6),
       subset=st.lists(st.integers(0, 5), min_size=1, max_size=4), every=st.booleans())
def test_shards_side_by_side_are_mapped_and_equal_the_shards_merged_in_memory(
        case, shard_events, subset, every) -> None:
    # A query over several shards maps one working copy of them (no copy in memory),
    # holding exactly what merging the shards' own indexes in memory gives.
    from uncertain_cep.index.shards.merge import merge_indexes
    from uncertain_cep.index.store.node_columns import NODE_TABLE_COLUMNS
    from uncertain_cep.index.store.reader import open_reader
    from uncertain_cep.index.store.working_copy import cache_directory

    df, _, _, codes, _ = case
    with tempfile.TemporaryDirectory() as tmp:
        uc.build_index(df, codes=codes).save(Path(tmp) / "ix", shard_events=shard_events)
        reader = open_reader(Path(tmp) / "ix")
        n = max(len(reader.manifest.shards), 1)
        which = list(range(n)) if every else sorted({k % n for k in subset})
        opened = reader.load(shards=which)
        parts = [r.load() for r in reader.shards(which if reader.manifest.is_sharded
                                                 else None) if r.manifest.counts.events]
        merged = merge_indexes(parts) if parts else opened
        assert opened.archive.event_ids.tolist() == merged.archive.event_ids.tolist()
        assert opened.archive.group_labels.tolist() == merged.archive.group_labels.tolist()
        for column in NODE_TABLE_COLUMNS:
            np.testing.assert_array_equal(getattr(opened.node_table, column),
                                          getattr(merged.node_table, column), err_msg=column)
        assert isinstance(opened.node_table.poi, np.memmap)
        assert isinstance(opened.archive.t_lo, np.memmap)
        # The time extent the scan-or-tree rule weighs, from the manifests: the instants'.
        if opened.archive.n_events:
            assert opened._time_extent == (float(np.min(opened.layout.t_min)),
                                           float(np.max(opened.layout.t_max)))
        # The same candidates for every event's own box.
        boxes = merged.boxes()
        if len(boxes[0]):
            a = opened.rtree.intersection_v(boxes[0], boxes[1])
            b = merged.rtree.intersection_v(boxes[0], boxes[1])
            assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
        # A second open maps the same copy: nothing is made again (a cache of its own:
        # other test processes write into the shared one).
        before = os.environ["UNCERTAIN_CEP_CACHE"]
        os.environ["UNCERTAIN_CEP_CACHE"] = str(Path(tmp) / "cache")
        try:
            fresh = open_reader(Path(tmp) / "ix").load(shards=which)
            made = sorted(p.name for p in cache_directory().iterdir())
            again = open_reader(Path(tmp) / "ix").load(shards=which)
            assert sorted(p.name for p in cache_directory().iterdir()) == made
            # Every shard side by side is made from the shards expanded one at a time
            # and deleted: the cache holds that copy alone. Some of them (a Spark
            # slice's) keep each shard's own copy for the next slice.
            if len(parts) > 1:
                every = len(which) == n
                event(f"side by side: {'every shard' if every else 'some shards'}")
                assert sum("-side-by-side" in name for name in made) == 1, made
                assert len(made) == (1 if every else 1 + len(parts)), made
            for column in NODE_TABLE_COLUMNS:
                np.testing.assert_array_equal(getattr(fresh.node_table, column),
                                              getattr(merged.node_table, column),
                                              err_msg=column)
        finally:
            os.environ["UNCERTAIN_CEP_CACHE"] = before
        assert again.archive.event_ids.tolist() == opened.archive.event_ids.tolist()


def test_every_shard_side_by_side_keeps_no_shard_copy_and_some_shards_keep_theirs(
        tmp_path, monkeypatch) -> None:
    # The whole index side by side is the only copy its later opens need; a Spark
    # slice's few shards keep their own copies for the slice next to it.
    from uncertain_cep.index.store.reader import open_reader

    n = 12
    df = pd.DataFrame({"event_id": range(n), "group": [i % 2 for i in range(n)],
                       "t_lo": [3 * i for i in range(n)], "t_hi": [3 * i + 1 for i in range(n)],
                       "x": [float(i) for i in range(n)]})
    uc.build_index(df).save(tmp_path / "ix", shard_events=3)
    shards = len(open_reader(tmp_path / "ix").manifest.shards)
    assert shards >= 3
    for name, which, kept in (("every", None, 1), ("some", [0, 1], 3)):
        monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / f"cache-{name}"))
        index = open_reader(tmp_path / "ix").load(shards=which)
        made = sorted(p.name for p in (tmp_path / f"cache-{name}").iterdir())
        assert len(made) == kept and sum("-side-by-side" in m for m in made) == 1, made
        assert index.archive.n_events == (n if which is None else 6)
