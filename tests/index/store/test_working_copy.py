"""The host's cache of working copies: made once per index, kept within its size limit
by deleting the copies used longest ago, never the one in use."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.index.store.reader import open_reader
from uncertain_cep.index.store.working_copy import SEAL, cache_limit, evict, working_copy


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
    # Room for about two copies: making one more deletes a and c, not b. (A copy's
    # R*-tree files are links to the stored ones: no room of the cache's own.)
    size = sum(f.stat().st_size for f in copies[0].rglob("*")
               if f.is_file() and f.stat().st_nlink == 1)
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE_LIMIT", str(int(2.5 * size)))
    d = _index(tmp_path, "d", 33)
    made = working_copy(*d, verified=True)
    assert not copies[0].exists() and not copies[2].exists()
    assert copies[1].exists() and made.exists()
    # Opening a again makes its copy again; the answers never change.
    assert uc.open_index(tmp_path / "a").query("PATTERN SEQ(A) DEFINE A AS x > 28").shape[0] == 1


def test_a_copys_links_to_stored_files_count_against_the_limit_only_once_alone(
        tmp_path, monkeypatch):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    root, manifest = _index(tmp_path, "a", 40)
    copy = working_copy(root, manifest, verified=True)
    files = [f for f in copy.rglob("*") if f.is_file() and f.name != SEAL]
    linked = [f for f in files if f.stat().st_nlink > 1]
    assert linked and all(f.name.startswith("rtree") for f in linked)
    own = sum(f.stat().st_size for f in files if f.stat().st_nlink == 1)
    # A limit between the copy's own bytes and its bytes with the links keeps it.
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE_LIMIT", str(own + 1 + sum(
        f.stat().st_size for f in linked) // 2))
    evict(keep=tmp_path / "cache" / "none")
    assert (copy / SEAL).is_file()
    # Once the stored index is gone, the links are the copy's alone: counted, evicted.
    shutil.rmtree(root)
    evict(keep=tmp_path / "cache" / "none")
    assert not copy.exists()


def _open_and_hold(cache: str, root: str, taken, release) -> None:
    os.environ["UNCERTAIN_CEP_CACHE"] = cache
    from uncertain_cep.index.store.reader import open_reader
    from uncertain_cep.index.store.working_copy import copies_in_use

    reader = open_reader(root)
    with copies_in_use():
        working_copy(reader.root, reader.manifest, verified=True)
        taken.set()
        release.wait(60)


def test_a_copy_being_opened_is_never_evicted_and_one_used_a_moment_ago_may_be(
        tmp_path, monkeypatch):
    # Copies used in the last minute used to be kept whatever the limit: at 100M events
    # the cache reached 38 GB against 20 GiB. Only a copy an open holds is kept now.
    # The builds leave their copies in a cache of their own.
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "built"))
    a, b, c = (_index(tmp_path, name, n) for name, n in (("a", 30), ("b", 31), ("c", 32)))
    cache = tmp_path / "cache"
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(cache))
    context = multiprocessing.get_context("spawn")
    taken, release = context.Event(), context.Event()
    holder = context.Process(target=_open_and_hold,
                             args=(str(cache), str(a[0]), taken, release))
    holder.start()
    try:
        assert taken.wait(60)
        held = next(cache.glob("*-w2"))
        used = working_copy(*b, verified=True)
        size = sum(f.stat().st_size for f in held.rglob("*") if f.is_file())
        monkeypatch.setenv("UNCERTAIN_CEP_CACHE_LIMIT", str(int(1.5 * size)))
        made = working_copy(*c, verified=True)
        # a is the oldest but being opened: b goes, used a moment ago.
        assert held.exists() and made.exists() and not used.exists()
    finally:
        release.set()
        holder.join(60)
    assert holder.exitcode == 0
    working_copy(*b, verified=True)
    assert not held.exists()


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


def _make_slowly(into) -> None:
    """A copy that takes a moment to make, recording who made it."""
    into.mkdir(parents=True)
    with open(into.parent.parent / "made.log", "a") as log:
        log.write(f"{os.getpid()}\n")
    time.sleep(0.5)
    (into / "part.npy").write_bytes(b"columns")


def _take_copy(cache: str, queue) -> None:
    os.environ["UNCERTAIN_CEP_CACHE"] = cache
    from uncertain_cep.index.store.working_copy import cached

    queue.put(str(cached("shared", _make_slowly)))


def test_processes_needing_one_copy_at_once_make_it_once_and_all_map_it(tmp_path):
    # Two making the same copy would need the host's disk twice (a whole 100M index's copy
    # is about 49 GB): the first makes it, the others wait for it.
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_take_copy, args=(str(tmp_path / "cache"), queue))
               for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    copies = {queue.get(timeout=5) for _ in workers}
    assert len(copies) == 1
    assert len((tmp_path / "made.log").read_text().split()) == 1
    assert (Path(copies.pop()) / "part.npy").read_bytes() == b"columns"


@pytest.fixture
def hashed_files(monkeypatch) -> list[str]:
    """The names of the files opening an index hashes, as it hashes them."""
    from uncertain_cep.index.store import reader as reader_module

    hashed: list[str] = []
    verify = reader_module.verify_files

    def counting(copy, checksums, opened=None):
        hashed.extend(checksums)
        return verify(copy, checksums, opened)

    monkeypatch.setattr(reader_module, "verify_files", counting)
    return hashed


def test_a_copy_checked_by_one_process_is_not_hashed_again_until_a_file_changes(
        tmp_path, monkeypatch, hashed_files):
    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    root, _ = _index(tmp_path, "ix", 12)
    hashed = hashed_files
    query = "PATTERN SEQ(A, B) DEFINE A AS x < 5, B AS x > 5 WITHIN 6"

    def answer() -> list:
        # A reader of its own each time: what another process does.
        return uc.open_index(root).query(query)["events"].tolist()

    first = answer()
    assert any(name.startswith("columns/") for name in hashed)
    assert any(name.startswith("event_columns/") for name in hashed)
    hashed.clear()
    assert answer() == first and hashed == []
    # A file rewritten since (another identity) is checked again: here found damaged and
    # the copy made again, whose answers are the index's.
    copy = next((tmp_path / "cache").glob("*-w2"))
    column = copy / "columns" / "code.npy"
    codes = np.load(column)
    codes[:] = 0
    np.save(column, codes)
    assert answer() == first
    assert any(name.startswith("columns/") for name in hashed)


def test_shards_expanded_ahead_come_in_order_and_leave_no_folder_behind(tmp_path,
                                                                        monkeypatch):
    from uncertain_cep.index.store.working_copy import passing_copies

    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    n = 15
    df = pd.DataFrame({"event_id": range(n), "group": [i % 2 for i in range(n)],
                       "t_lo": [3 * i for i in range(n)], "t_hi": [3 * i + 1 for i in range(n)],
                       "x": [float(i) for i in range(n)]})
    uc.build_index(df).save(tmp_path / "ix", shard_events=3)
    shards = open_reader(tmp_path / "ix").shards()
    assert len(shards) >= 4
    shutil.rmtree(tmp_path / "cache")       # the copies the save left
    parts = [(r.root, r.manifest, False) for r in shards]
    seen = [len(np.load(p / "event_columns" / "t_lo.npy")) for p in passing_copies(parts)]
    assert seen == [r.manifest.counts.events for r in shards]
    assert not list((tmp_path / "cache").iterdir())
    # Stopped after the first: the ones expanded ahead are deleted too.
    ahead = passing_copies(parts, ahead=2)
    assert next(ahead).is_dir()
    ahead.close()
    assert not list((tmp_path / "cache").iterdir())


def test_a_copy_this_process_made_is_not_hashed_again_at_its_first_mapping(
        tmp_path, monkeypatch, hashed_files):
    # The seal hashed what this process had just written; the R*-tree's files are the
    # stored ones linked, their checksums the manifest's (hashed when the copy was made).
    import json

    from uncertain_cep.index.store.checksums import file_digest
    from uncertain_cep.index.store.working_copy import sealed_here

    monkeypatch.setenv("UNCERTAIN_CEP_CACHE", str(tmp_path / "cache"))
    root, manifest = _index(tmp_path, "ix", 12)
    shutil.rmtree(tmp_path / "cache")       # the copy the save adopted
    hashed = hashed_files
    reader = open_reader(root, verify_all=False)
    index = reader.load()
    assert not any(name.startswith("event_columns/") for name in hashed)
    copy = next((tmp_path / "cache").glob("*-w2"))
    sealed = json.loads((copy / SEAL).read_text())["files"]
    assert sealed == {name: file_digest(copy / name) for name in sealed}
    assert any(name.startswith("rtree") for name in sealed)
    # Asked once per copy made, by its first mapping (done above).
    assert index.archive.n_events == 12
    assert sealed_here(copy, list(sealed)) is False
    # A copy made again and changed before its first mapping is hashed as any other.
    shutil.rmtree(copy)
    copy = working_copy(root, manifest, verified=True)
    column = next(name for name in sealed if name.startswith("event_columns/"))
    (copy / column).write_bytes((copy / column).read_bytes() + b"\0")
    assert sealed_here(copy, list(sealed)) is False
