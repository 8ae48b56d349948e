"""R*-tree files are opened where they lie, once per process, and never written."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
from rtree import index as rtree_index

import uncertain_cep as uc
from uncertain_cep.index.rtree_boxes import rtree_properties
from uncertain_cep.index.store import rtree_files
from uncertain_cep.index.store.checksums import file_digest
from uncertain_cep.index.store.layout import RTREE, RTREE_FILES
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.index.store.rtree_files import open_rtree_file
from uncertain_cep.index.store.working_copy import sealed_checksums

QUERY = "PATTERN SEQ(A, B) DEFINE A AS x < 20, B AS x > 10 WITHIN 8 CONFIDENCE 0.01"


def _archive(n: int = 60) -> pd.DataFrame:
    return pd.DataFrame({"event_id": range(n), "group": [i % 3 for i in range(n)],
                         "t_lo": [2 * i for i in range(n)],
                         "t_hi": [2 * i + 3 for i in range(n)],
                         "x": [float(i % 30) for i in range(n)]})


def _rtree_files(cache: Path) -> dict[Path, str]:
    """Every R*-tree file of the working copies in ``cache``, with the checksum its copy
    was sealed with."""
    out = {}
    for seal in cache.glob("*/working.json"):
        copy = seal.parent
        for name, digest in sealed_checksums(copy).items():
            if name.rpartition("/")[2] in RTREE_FILES:
                out[copy / name] = digest
    return out


def test_trees_queried_until_the_process_ends_are_left_as_sealed(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(cache))
    uc.build_index(_archive(600)).save(tmp_path / "one")
    uc.build_index(_archive(600)).save(tmp_path / "sharded", shard_events=200)
    child = ("import sys, uncertain_cep as uc\n"
             "for path in sys.argv[2:]:\n"
             "    for _ in range(2):\n"
             "        assert len(uc.open_index(path).query(sys.argv[1])) > 0\n")
    subprocess.run([sys.executable, "-c", child, QUERY, str(tmp_path / "one"),
                    str(tmp_path / "sharded")], check=True, env=os.environ.copy())
    files = _rtree_files(cache)
    # One tree of the single index, three shards' in their own copies and side by side.
    assert len({p.name for p in files}) == 2 and len(files) >= 2 * 4
    assert {p: file_digest(p) for p in files} == files


def _tree_copy(tmp_path: Path, monkeypatch) -> Path:
    """The R*-tree files of an index's working copy, copied to a folder of their own."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(cache))
    # More entries than one page holds: a single-page tree's header is not rewritten.
    uc.build_index(_archive(600)).save(tmp_path / "ix")
    uc.open_index(tmp_path / "ix")
    source = next(iter(_rtree_files(cache))).parent
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in RTREE_FILES:
        shutil.copyfile(source / name, copy / name)
    return copy


def _search_all(tree: object) -> int:
    ids, _ = tree.intersection_v(np.full((2, 4), -1e18), np.full((2, 4), 1e18))
    return len(ids)


def _file_states(copy: Path) -> dict[str, tuple[str, int]]:
    """Each R*-tree file's checksum and modification time: a write shows in the time even
    when it puts back the bytes that were there."""
    return {name: (file_digest(copy / name), os.stat(copy / name).st_mtime_ns)
            for name in RTREE_FILES}


def test_libspatialindex_writes_to_the_files_of_a_tree_it_closes(tmp_path, monkeypatch):
    # Why trees are never closed: a plain open, search and close writes both files. The
    # bytes it writes differ from the bulk load's only sometimes (a page of the first
    # close after a build), so the premise is the write itself.
    copy = _tree_copy(tmp_path, monkeypatch)
    before = _file_states(copy)
    time.sleep(0.01)
    props = rtree_properties(1)
    props.overwrite = False
    tree = rtree_index.Index(str(copy / RTREE), properties=props, interleaved=False)
    assert _search_all(tree) == 2 * 600
    tree.close()
    after = _file_states(copy)
    assert all(after[name][1] != before[name][1] for name in RTREE_FILES)


def test_a_shared_tree_searched_closed_and_collected_writes_nothing(tmp_path, monkeypatch):
    copy = _tree_copy(tmp_path, monkeypatch)
    before = _file_states(copy)
    time.sleep(0.01)
    tree = open_rtree_file(copy, 1)
    assert _search_all(tree) == 2 * 600
    tree.close()
    assert _search_all(tree) == 2 * 600       # closing a shared tree leaves it open
    # Dropped from the registry and collected: still nothing written.
    for key in [k for k, v in rtree_files._OPEN.items() if v is tree]:
        del rtree_files._OPEN[key]
    del tree
    gc.collect()
    assert _file_states(copy) == before


def test_indexes_opened_from_one_file_share_its_tree_and_a_rebuilt_one_has_its_own(
        tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    uc.build_index(_archive()).save(tmp_path / "ix")
    a, b = (open_reader(tmp_path / "ix").load() for _ in range(2))
    assert a.rtree is b.rtree
    uc.build_index(_archive(61)).save(tmp_path / "ix")
    c = open_reader(tmp_path / "ix").load()
    assert c.rtree is not a.rtree and c.archive.n_events == 61


def test_threads_searching_one_shared_tree_get_every_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    uc.build_index(_archive()).save(tmp_path / "ix")
    expected = uc.open_index(tmp_path / "ix").query(QUERY)
    indexes = [uc.open_index(tmp_path / "ix") for _ in range(4)]
    answers: list[object] = [None] * len(indexes)

    def run(k: int) -> None:
        for _ in range(5):
            answers[k] = indexes[k].query(QUERY)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(indexes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a is not None and a.equals(expected) for a in answers)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_tree_whose_files_are_gone_stays_while_used_and_is_closed_once_unused(
        tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    uc.build_index(_archive()).save(tmp_path / "a")
    uc.build_index(_archive(61)).save(tmp_path / "b")
    expected = uc.build_index(_archive()).query(QUERY)      # no tree file of its own
    idx = uc.open_index(tmp_path / "a")
    tree = weakref.ref(idx.event_index.rtree)      # the test's own reference is weak
    # The working copy evicted (or its cache deleted) while the index is in use: its
    # tree files were links to the index's, which still name them...
    shutil.rmtree(tmp_path / "cache")
    assert not tree().unlinked()
    # ... until those are replaced (by copies of the same bytes here).
    for path in (tmp_path / "a").glob("rtree*"):
        shutil.copyfile(path, path.with_name(path.name + ".new"))
        os.replace(path.with_name(path.name + ".new"), path)
    assert tree().unlinked()
    _ = uc.open_index(tmp_path / "b").event_index      # opening a tree sweeps the registry
    assert tree() in rtree_files._OPEN.values()    # still used: kept, still answering
    assert idx.query(QUERY).equals(expected)
    before = _open_descriptors()
    del idx
    gc.collect()
    _ = uc.open_index(tmp_path / "b").event_index
    assert tree() is None                          # unused and unlinked: closed, dropped
    assert _open_descriptors() <= before - 4       # its two files, and the two checks


def test_a_tree_whose_files_are_still_linked_is_never_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    uc.build_index(_archive()).save(tmp_path / "a")
    uc.build_index(_archive(61)).save(tmp_path / "b")
    tree = uc.open_index(tmp_path / "a").event_index.rtree
    gc.collect()
    _ = uc.open_index(tmp_path / "b").event_index
    assert not tree.unlinked() and tree in rtree_files._OPEN.values()
    assert uc.open_index(tmp_path / "a").event_index.rtree is tree
