"""An index's working copy: its compact stored files expanded into the flat columns and the
R*-tree file the query engine maps, kept in a local cache with a size limit.

An index stores each table once, compact (:mod:`uncertain_cep.index.store.packed_nodes`;
the events table, compressed), and its R*-tree's files as libspatialindex reads them:
what travels to and sits on storage. The batch engine gathers from flat columns,
memory-mapped so that every process of a host shares their pages; the copy's R*-tree
files are links to the stored ones (copies where the cache is on another filesystem), so
a host holds the tree once. The first open of an index on a host expands it
(:func:`working_copy`) into the cache directory (:func:`cache_directory`), under a name
that is the digest of the index's manifest: a rebuilt index never meets the copy of its
predecessor, and an unchanged one is expanded once per host, whoever opens it. A copy is
written beside its final name and renamed into place, by one process of the host at a
time: another that needs the same copy meanwhile waits for it (a lock file beside it) and
maps it. Its files' checksums are
sealed in :data:`SEAL` and checked when they are mapped, as the stored files are; a copy
found damaged is deleted and made again (:func:`verified_copy`).

A build leaves the copy it made on the way (:func:`adopt`): opening an index just written
on the same host expands nothing.

The cache holds at most :func:`cache_limit` bytes: after a copy is added, the copies used
longest ago are deleted, but none that a process is opening: an open holds a shared
``flock`` on each copy it takes (:func:`copies_in_use`) until its files are open, and
eviction deletes only a copy it can lock alone. Once open, a copy may go (a process
still mapping a deleted one keeps its pages: the files are only unlinked). A copy used a
moment ago but not being opened is no longer kept past the limit: at 100M events shard
copies are made every ten seconds or so, and a minute of them held the cache at 38 GB
against a 20 GiB limit.

>>> import os, tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> from uncertain_cep.index.store.reader import open_reader
>>> before = os.environ.get(CACHE_ENV)
>>> with tempfile.TemporaryDirectory() as tmp:
...     os.environ[CACHE_ENV] = tmp + "/cache"
...     uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
...                                  "t_hi": [2, 2]})).save(tmp + "/ix")
...     reader = open_reader(tmp + "/ix")
...     copy = working_copy(reader.root, reader.manifest, verified=True)
...     sealed = (copy / SEAL).is_file() and copy.parent == cache_directory()
>>> if before is None: del os.environ[CACHE_ENV]
... else: os.environ[CACHE_ENV] = before
>>> sealed
True
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.node_table import column_dtype, id_dtype
from uncertain_cep.index.store.checksums import file_digest, verify_files
from uncertain_cep.index.store.event_columns import write_event_columns
from uncertain_cep.index.store.host_checks import STAMP, file_identity
from uncertain_cep.index.store.layout import (
    COLUMNS,
    EVENT_ARRAYS,
    EVENT_COLUMNS,
    EVENTS,
    MANIFEST,
    PACKED,
    rtree_files,
    table_files,
)
from uncertain_cep.index.store.manifest import Manifest, manifest_digest
from uncertain_cep.index.store.manifest_records import IndexCounts
from uncertain_cep.index.store.packed_nodes import (
    expand_node_columns,
    group_labels,
    node_columns_in_memory,
)
from uncertain_cep.index.store.weighted_nodes import derive_probabilities, weighted_probabilities

__all__ = [
    "CACHE_ENV",
    "DEFAULT_CACHE_LIMIT",
    "LIMIT_ENV",
    "MIRROR_PREFIX",
    "SEAL",
    "adopt",
    "cache_directory",
    "cache_limit",
    "cached",
    "copies_in_use",
    "copy_bytes",
    "discard",
    "expand_stored",
    "holds_whole",
    "link_or_copy",
    "node_table_in_memory",
    "node_tables_thrash",
    "passing_copies",
    "seal",
    "sealed_checksums",
    "sealed_here",
    "verified_copy",
    "working_copy",
]

_T = TypeVar("_T")
# Copies this process sealed and has not mapped yet (by path: the identities of the
# files hashed), and the stored index directories (root, manifest digest) whose
# files it hashed to make a copy: neither is hashed again by the same process.
_JUST_SEALED: dict[str, dict[str, list[int] | None]] = {}
_STORED_VERIFIED: set[tuple[str, str]] = set()
# Mirrors of remote indexes used within this many seconds are never deleted to make room
# (an open may be reading one; working copies are locked instead: copies_in_use).
_IN_USE_SECONDS = 60.0
# The copies held by the opens running in this process (copies_in_use), each a list of
# descriptors holding a shared flock on a copy's directory.
_OPENS: list[list[int]] = []
# The cache's folders that mirror remote indexes (index/store/remote.py).
MIRROR_PREFIX = "remote-"
# The name's end of a working copy without the node table (working_copy(node_columns=False)).
_EVENTS_ONLY = "-events"
CACHE_ENV = "UNCERTAIN_CEP_CACHE"
LIMIT_ENV = "UNCERTAIN_CEP_CACHE_LIMIT"
DEFAULT_CACHE_LIMIT = 20 * 2**30
# A working copy's own checksums and size, written last.
SEAL = "working.json"
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
# The working copy's own layout, part of every copy's name: a copy of another layout (an
# older version's int64 columns, say) is never taken for one of this.
_LAYOUT = "w2"
# The node table's columns with one value per node (the others are per tree, per group,
# or child and row slots) and an event's R*-tree entry (libspatialindex's files, measured).
_PER_NODE_COLUMNS = ("group", "row", "instant", "tree", "poi", "code", "code_end", "kind",
                     "parent", "cond", "depth", "child_start", "child_root")
_RTREE_BYTES_PER_EVENT = 120


def cache_directory() -> Path:
    """Where working copies are kept: ``$UNCERTAIN_CEP_CACHE``, else
    ``~/.cache/uncertain-cep/working-copies`` (``$XDG_CACHE_HOME`` respected)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "uncertain-cep" / "working-copies"


def cache_limit() -> int:
    """The cache's size limit in bytes: ``$UNCERTAIN_CEP_CACHE_LIMIT`` (a number of bytes,
    or with a unit: ``500M``, ``20G``), else :data:`DEFAULT_CACHE_LIMIT` (20 GiB).

    >>> before = os.environ.get(LIMIT_ENV)
    >>> os.environ[LIMIT_ENV] = "1.5G"; cache_limit() == 3 * 2**29
    True
    >>> if before is None: del os.environ[LIMIT_ENV]
    ... else: os.environ[LIMIT_ENV] = before
    """
    text = os.environ.get(LIMIT_ENV, "").strip()
    if not text:
        return DEFAULT_CACHE_LIMIT
    match = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)i?[bB]?", text)
    if match is None:
        raise IndexFormatError(f"${LIMIT_ENV} is {text!r}: give a number of bytes, or one "
                               "with a unit (500M, 20G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def copy_bytes(counts: IndexCounts, event_columns: int) -> int:
    """About how many bytes the working copy of an index of ``counts`` whose events table
    has ``event_columns`` columns takes: per node its 13 columns, a child slot and a row
    slot; per tree 5 columns; per event a column per stored one and its R*-tree entry
    (about 120 bytes).

    >>> from uncertain_cep.index.store.manifest_records import IndexCounts
    >>> counts = IndexCounts(events=200_000, groups=400, trees=200_148, nodes=1_102_714)
    >>> round(copy_bytes(counts, 13) / 123_183_486, 2)    # what that index's copy took
    1.01
    """
    ids = id_dtype(counts.nodes, counts.events)
    per_node = sum(column_dtype(c, ids).itemsize for c in _PER_NODE_COLUMNS) + 2 * ids.itemsize
    return (counts.nodes * per_node + counts.trees * 5 * ids.itemsize
            + counts.events * (8 * event_columns + _RTREE_BYTES_PER_EVENT))


def holds_whole(manifest: Manifest) -> bool:
    """Whether the cache may hold the working copy of the whole index ``manifest``
    describes (:func:`copy_bytes` within :func:`cache_limit`): then every time slice of
    a Spark query on a host maps that one copy (made once per host, its pages shared by
    the host's processes) instead of putting its own few shards side by side, whose sets
    overlap (each slice's halo meets the next slice's shard) and, at 100M events, could
    not all be kept."""
    return copy_bytes(manifest.counts, len(manifest.schema)) <= cache_limit()


def link_or_copy(source: Path, target: Path) -> bool:
    """``target`` made another name of ``source`` (a hard link: no second copy on disk),
    or a copy of it where the two are on different filesystems; whether it is a link."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
        return False
    return True


def expand_stored(root: Path, manifest: Manifest, into: Path, *,
                  node_columns: bool = True) -> dict[str, str]:
    """Write the working files of the index directory ``root`` into ``into``: the node
    table's (unless not ``node_columns``: see :func:`node_table_in_memory`) and the
    events table's columns and the R*-tree's files; the checksums the manifest gives of
    the R*-tree files linked (the stored files themselves, under another name)."""
    packed = root / PACKED
    events = [root / f for f in table_files(root, EVENTS)]
    if node_columns:
        expand_node_columns(packed, into / COLUMNS, n_rows=manifest.counts.events)
        if not (into / COLUMNS / "poi.npy").is_file() and \
                not derive_probabilities(into / COLUMNS, events):
            raise _unweighted(packed)
    write_event_columns(into / EVENT_ARRAYS, events,
                        group_by=manifest.group_by, numeric=manifest.attributes.numeric,
                        layout_columns=EVENT_COLUMNS, keys=group_labels(packed))
    # Stored as libspatialindex reads it: linked, so the host holds it once.
    listed = dict(manifest.checksums)
    linked = {}
    for name in rtree_files(manifest.rtree.chunks):
        if link_or_copy(root / name, into / name) and name in listed:
            linked[name] = listed[name]
    return linked


def _unweighted(packed: Path) -> IndexFormatError:
    return IndexFormatError(f"{packed} is damaged: it stores no node probabilities and its "
                            "events table no instant weights; rebuild the index")


def node_table_in_memory(root: Path, manifest: Manifest, *, verified: bool,
                         groups: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The node table of the index directory ``root`` (its checked ``manifest``; its
    stored files checked too), expanded in memory, every column of
    :data:`~uncertain_cep.index.store.packed_nodes.NODE_TABLE_COLUMNS`: for a working copy
    made without it (``working_copy(..., node_columns=False)``), where the cache cannot
    keep the copies a query's slices make (:func:`node_tables_thrash`); ``verified``:
    whether its stored files were hashed when the index was opened. With ``groups``, the
    table of those groups alone
    (:func:`~uncertain_cep.index.store.packed_nodes.node_columns_in_memory`)."""
    packed = root / PACKED
    if not verified and _stored_key(root, manifest) not in _STORED_VERIFIED:
        # Read again by every process that needs them (a copy on disk is hashed once),
        # unless this one hashed them when it made the events' copy.
        _verify_stored(root, manifest, (f"{PACKED}/", f"{EVENTS}/"), rtree=False)
    arrays = node_columns_in_memory(packed, n_rows=manifest.counts.events, groups=groups)
    if "poi" not in arrays:
        found = weighted_probabilities(arrays.__getitem__,
                                       [root / f for f in table_files(root, EVENTS)],
                                       str(packed))
        if found is None:
            raise _unweighted(packed)
        arrays["poi"], arrays["cond"] = found
    return arrays


def node_tables_thrash(manifest: Manifest) -> bool:
    """Whether the working copies of the whole index ``manifest`` describes exceed the
    cache's limit (not :func:`holds_whole`): a query whose slices meet every shard would
    evict each shard's copy before another query uses it again, so its node tables are
    better expanded in memory than written (a 100M-event index: 26 shard copies of about
    1.9 GB each against a 20 GiB cache)."""
    return not holds_whole(manifest)


def seal(directory: Path, linked: dict[str, str] | None = None) -> list[str]:
    """Record the checksums and size of a working copy's files (its last file);
    ``linked``: the checksums of files linked to stored files hashed against them just
    now (the R*-tree's: not hashed a second time). Returns the files' names."""
    files = sorted(p for p in directory.rglob("*")
                   if p.is_file() and p.name not in (SEAL, STAMP))
    known = linked or {}
    digests = {}
    for p in files:
        name = p.relative_to(directory).as_posix()
        digests[name] = known[name] if name in known else file_digest(p)
    sizes = {p.relative_to(directory).as_posix(): p.stat() for p in files}
    # Files that are other names of stored ones (the R*-tree's links) take no space of
    # the cache's own while the stored file is there (evict counts them when not).
    record = {"files": digests, "bytes": sum(st.st_size for st in sizes.values()),
              "linked": {name: st.st_size for name, st in sizes.items() if st.st_nlink > 1}}
    (directory / SEAL).write_text(json.dumps(record))
    return list(digests)


def _identities(directory: Path, names: Iterable[str]) -> dict[str, list[int] | None]:
    return {name: file_identity(directory / name) for name in names}


def sealed_here(copy: Path, names: Iterable[str]) -> bool:
    """Whether this process sealed the working copy ``copy`` just now (its files
    ``names`` hashed from what it had written, unchanged since): the first mapping of
    a copy this process made need not hash it again. Asked once per copy made."""
    made = _JUST_SEALED.pop(str(copy), None)
    return made is not None and all(
        identity is not None and made.get(name) == identity
        for name, identity in _identities(copy, names).items())


def sealed_checksums(directory: Path) -> dict[str, str]:
    """The checksums :func:`seal` recorded."""
    try:
        return dict(json.loads((directory / SEAL).read_text())["files"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise IndexFormatError(f"the working copy {directory} is damaged ({e}); delete it "
                               "and open the index again") from e


def _key(manifest: Manifest) -> str:
    return manifest_digest(manifest.to_json())


def _named(key: str) -> str:
    return f"{key}-{_LAYOUT}"


def working_copy(root: Path, manifest: Manifest, *, verified: bool,
                 node_columns: bool = True) -> Path:
    """The working copy of the index directory ``root`` (its checked ``manifest``), made
    now if the cache does not hold it; ``verified``: whether the stored files were hashed
    when the index was opened (else they are hashed before they are expanded). Without
    ``node_columns``: a copy of its events and R*-tree only, under a name of its own,
    whose node table :func:`node_table_in_memory` gives."""
    key = _key(manifest) if node_columns else f"{_key(manifest)}{_EVENTS_ONLY}"
    return cached(key, lambda into: _expand(root, manifest, into, verified=verified,
                                            node_columns=node_columns))


def passing_copies(parts: Sequence[tuple[Path, Manifest, bool]], *, ahead: int = 2
                   ) -> Iterator[Path]:
    """The working copy of each index directory of ``parts`` (its root, its checked
    manifest, whether its stored files were hashed when it was opened), one after
    another: the cache's if it holds one, else expanded into a temporary folder of the
    cache (same filesystem: its files can be linked elsewhere) deleted when the caller
    asks for the next. For what is read once to make another copy (shards side by side):
    keeping them would hold the same columns twice on the host's disk.

    The next ``ahead`` are expanded meanwhile, in threads (numpy and Arrow release the
    GIL while they work: the host's other cores expand while the caller writes); at most
    ``ahead + 1`` temporary folders exist at a time."""

    def make(k: int) -> tuple[Path, bool]:
        root, manifest, verified = parts[k]
        copy = cache_directory() / _named(_key(manifest))
        if _held(copy):
            return copy, False
        tmp = _beside(copy)
        try:
            _expand(root, manifest, tmp, verified=verified)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return tmp, True

    def drop(made: Future[tuple[Path, bool]]) -> None:
        # A part the caller will not ask for (it stopped early): its folder goes.
        if made.cancel():
            return
        try:
            path, temporary = made.result()
        except BaseException:
            return
        if temporary:
            shutil.rmtree(path, ignore_errors=True)

    with ThreadPoolExecutor(max_workers=max(1, ahead),
                            thread_name_prefix="uncertain-cep-expand") as pool:
        made: dict[int, Future[tuple[Path, bool]]] = {}
        try:
            for k in range(len(parts)):
                for j in range(k, min(len(parts), k + ahead + 1)):
                    if j not in made:
                        made[j] = pool.submit(make, j)
                path, temporary = made.pop(k).result()
                try:
                    yield path
                finally:
                    if temporary:
                        shutil.rmtree(path, ignore_errors=True)
        finally:
            for future in made.values():
                drop(future)


@contextlib.contextmanager
def copies_in_use() -> Iterator[None]:
    """While an index is being opened: every copy the cache hands out meanwhile stays
    locked against eviction (a shared ``flock`` on its directory) until the block ends,
    when its files are open."""
    held: list[int] = []
    _OPENS.append(held)
    try:
        yield
    finally:
        _OPENS.remove(held)
        for fd in held:
            os.close(fd)


def _held(copy: Path) -> bool:
    """Whether the cache holds ``copy`` whole; if so it is marked used now and, inside
    :func:`copies_in_use`, locked against eviction."""
    try:
        fd = os.open(copy, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    # Locked before the seal is looked at: an eviction either deleted the seal first, or
    # waits for this lock and then finds the copy in use.
    fcntl.flock(fd, fcntl.LOCK_SH)
    if not (copy / SEAL).is_file():
        os.close(fd)
        return False
    os.utime(copy / SEAL)
    if _OPENS:
        _OPENS[-1].append(fd)
    else:
        os.close(fd)
    return True


def _discard_unused(copy: Path) -> bool:
    """Delete ``copy`` unless a process is opening it (holds its lock); whether it went."""
    try:
        fd = os.open(copy, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        discard(copy)
        return True
    finally:
        os.close(fd)


def _beside(copy: Path) -> Path:
    """A temporary folder's name beside ``copy``, this process's own (hidden: no copy)."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    return copy.parent / f".{copy.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _expand(root: Path, manifest: Manifest, into: Path, *, verified: bool,
            node_columns: bool = True) -> dict[str, str]:
    """:func:`expand_stored`, the stored files hashed first unless ``verified``."""
    if not verified:
        _verify_stored(root, manifest, (f"{PACKED}/", f"{EVENTS}/"), rtree=True)
        # The node table expanded in memory later reads these same files.
        _STORED_VERIFIED.add(_stored_key(root, manifest))
    return expand_stored(root, manifest, into, node_columns=node_columns)


def _stored_key(root: Path, manifest: Manifest) -> tuple[str, str]:
    """The key of an index directory's stored files in :data:`_STORED_VERIFIED`."""
    return str(root), manifest_digest(manifest.to_json())


def _verify_stored(root: Path, manifest: Manifest, prefixes: tuple[str, ...], *,
                   rtree: bool) -> None:
    """Hash the stored files of ``root`` under ``prefixes`` (and its R*-tree's) against
    ``manifest``."""
    listed = dict(manifest.checksums)
    trees = set(rtree_files(manifest.rtree.chunks)) if rtree else set()
    verify_files(root, {name: digest for name, digest in listed.items()
                        if name.startswith(prefixes) or name in trees})


def cached(key: str, make: Callable[[Path], dict[str, str] | None]) -> Path:
    """The cache's copy named ``key``, made now by ``make(folder)`` if the cache does not
    hold it: written beside its name, sealed, renamed into place (another process's copy,
    renamed first, is taken instead); then the cache is brought within its limit."""
    final = cache_directory() / _named(key)
    if _held(final):
        return final
    # One process of the host makes it; the others wait for it, then map it (two making
    # the same copy at once would need the host's disk twice: at 100M events a copy of
    # the whole index is about 49 GB).
    with _making(final):
        if _held(final):
            return final
        tmp = _beside(final)
        try:
            names = seal(tmp, make(tmp))
            identities = _identities(tmp, names)
            _rename_into(tmp, final)
            if not tmp.exists():    # renamed: this process's copy, not another's
                _JUST_SEALED[str(final)] = identities
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        # Taken (locked) before another process's eviction may see it; one that came
        # between the rename and the lock leaves no seal: made again.
        if not _held(final):
            return cached(key, make)
    evict(keep=final)
    return final


@contextlib.contextmanager
def _making(copy: Path) -> Iterator[None]:
    """Hold the host's lock on making ``copy`` (a hidden lock file beside it, locked with
    ``flock``: released when its holder ends, however it ends). Once the copy is in
    place the lock file is deleted: whoever waits on it, or comes later, finds the copy."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    path = copy.parent / f".{copy.name}.lock"
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if (copy / SEAL).is_file():
                path.unlink(missing_ok=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


def discard(copy: Path) -> None:
    """Delete a working copy (its seal first: a half-deleted copy is never taken for a
    whole one)."""
    (copy / SEAL).unlink(missing_ok=True)
    shutil.rmtree(copy, ignore_errors=True)


def verified_copy(get: Callable[[], Path], check: Callable[[Path], _T]) -> tuple[Path, _T]:
    """The copy ``get()`` gives (from the cache, or made) and what ``check(copy)`` returns;
    a copy ``check`` finds damaged (an :class:`~uncertain_cep.errors.IndexFormatError`)
    is deleted and made again, once."""
    copy = get()
    try:
        return copy, check(copy)
    except IndexFormatError:
        discard(copy)
    copy = get()
    return copy, check(copy)


def adopt(work: Path, manifest: Manifest) -> None:
    """Keep ``work``, the working files a build made for the index ``manifest`` describes,
    as its working copy when the cache is on the same filesystem (a rename); else delete
    it."""
    cache = cache_directory()
    final = cache / _named(_key(manifest))
    try:
        seal(work)
        cache.mkdir(parents=True, exist_ok=True)
        _rename_into(work, final)
    except OSError:
        pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if final.is_dir():
        evict(keep=final)


def _rename_into(tmp: Path, final: Path) -> None:
    """Rename ``tmp`` to ``final`` unless another process got there first."""
    try:
        os.rename(tmp, final)
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST) or not (final / SEAL).is_file():
            raise


def _own_bytes(copy: Path, record: dict) -> int:
    """The bytes of the disk the working copy ``copy`` (its seal's ``record``) takes: its
    files' but those still linked to a stored file (at 100M events, counting a shard's
    R*-tree links, 0.4 of its 0.8 GB, held the events' copies of 26 shards past a 20 GiB
    cache: each query evicted and made all of them again, 30 of its 65 s)."""
    size = int(record["bytes"])
    for name, linked in record.get("linked", {}).items():
        with contextlib.suppress(OSError):
            if (copy / name).stat().st_nlink > 1:
                size -= int(linked)
    return size


def evict(keep: Path) -> None:
    """Delete the copies used longest ago until the cache is within its limit (never
    ``keep``, the copy just made or used)."""
    cache = keep.parent
    copies = []
    for seal_file in cache.glob(f"*/{SEAL}"):
        try:
            size = _own_bytes(seal_file.parent, json.loads(seal_file.read_text()))
            copies.append((seal_file.stat().st_mtime, size, seal_file.parent, False))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    # Mirrors of remote indexes (index/store/remote.py) count too: their manifest's time
    # is when they were last opened.
    for manifest in cache.glob(f"{MIRROR_PREFIX}*/{MANIFEST}"):
        try:
            size = sum(p.stat().st_size for p in manifest.parent.rglob("*") if p.is_file())
            copies.append((manifest.stat().st_mtime, size, manifest.parent, True))
        except OSError:
            continue
    total, limit = sum(size for _, size, _, _ in copies), cache_limit()
    # A mirror used a moment ago may be in use (an open reading it): kept, whatever the
    # limit. A working copy is kept while a process is opening it (its lock).
    recent = time.time() - _IN_USE_SECONDS
    for used, size, directory, mirror in sorted(copies, key=lambda c: c[:2]):
        if total <= limit:
            break
        if directory == keep or (mirror and used > recent):
            continue
        if mirror:
            discard(directory)
        elif not _discard_unused(directory):
            continue
        total -= size
