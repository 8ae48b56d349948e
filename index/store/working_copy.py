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
written beside its final name and renamed into place; two processes expanding the same
index at once each write their own and the first rename wins. Its files' checksums are
sealed in :data:`SEAL` and checked when they are mapped, as the stored files are; a copy
found damaged is deleted and made again (:func:`verified_copy`).

A build leaves the copy it made on the way (:func:`adopt`): opening an index just written
on the same host expands nothing.

The cache holds at most :func:`cache_limit` bytes: after a copy is added, the copies used
longest ago are deleted, but none used in the last minute, which may be in use (a process
still mapping a deleted one keeps its pages: the files are only unlinked).

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
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.store.checksums import file_digest, verify_files
from uncertain_cep.index.store.event_columns import write_event_columns
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
from uncertain_cep.index.store.packed_nodes import expand_node_columns, group_labels
from uncertain_cep.index.store.weighted_nodes import derive_probabilities

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
    "discard",
    "expand_stored",
    "link_or_copy",
    "passing_copy",
    "seal",
    "sealed_checksums",
    "verified_copy",
    "working_copy",
]

_T = TypeVar("_T")
# Copies used within this many seconds are never deleted to make room.
_IN_USE_SECONDS = 60.0
# The cache's folders that mirror remote indexes (index/store/remote.py).
MIRROR_PREFIX = "remote-"
CACHE_ENV = "UNCERTAIN_CEP_CACHE"
LIMIT_ENV = "UNCERTAIN_CEP_CACHE_LIMIT"
DEFAULT_CACHE_LIMIT = 20 * 2**30
# A working copy's own checksums and size, written last.
SEAL = "working.json"
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
# The working copy's own layout, part of every copy's name: a copy of another layout (an
# older version's int64 columns, say) is never taken for one of this.
_LAYOUT = "w2"


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


def link_or_copy(source: Path, target: Path) -> None:
    """``target`` made another name of ``source`` (a hard link: no second copy on disk),
    or a copy of it where the two are on different filesystems."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def expand_stored(root: Path, manifest: Manifest, into: Path) -> None:
    """Write the working files of the index directory ``root`` into ``into``: the node
    table's and the events table's columns and the R*-tree's files."""
    packed = root / PACKED
    events = [root / f for f in table_files(root, EVENTS)]
    expand_node_columns(packed, into / COLUMNS, n_rows=manifest.counts.events)
    if not (into / COLUMNS / "poi.npy").is_file() and \
            not derive_probabilities(into / COLUMNS, events):
        raise IndexFormatError(f"{packed} is damaged: it stores no node probabilities and "
                               "its events table no instant weights; rebuild the index")
    write_event_columns(into / EVENT_ARRAYS, events,
                        group_by=manifest.group_by, numeric=manifest.attributes.numeric,
                        layout_columns=EVENT_COLUMNS, keys=group_labels(packed))
    # Stored as libspatialindex reads it: linked, so the host holds it once.
    for name in rtree_files(manifest.rtree.chunks):
        link_or_copy(root / name, into / name)


def seal(directory: Path) -> None:
    """Record the checksums and size of a working copy's files (its last file)."""
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.name != SEAL)
    record = {"files": {p.relative_to(directory).as_posix(): file_digest(p) for p in files},
              "bytes": sum(p.stat().st_size for p in files)}
    (directory / SEAL).write_text(json.dumps(record))


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


def working_copy(root: Path, manifest: Manifest, *, verified: bool) -> Path:
    """The working copy of the index directory ``root`` (its checked ``manifest``), made
    now if the cache does not hold it; ``verified``: whether the stored files were hashed
    when the index was opened (else they are hashed before they are expanded)."""

    return cached(_key(manifest), lambda into: _expand(root, manifest, into,
                                                         verified=verified))


@contextlib.contextmanager
def passing_copy(root: Path, manifest: Manifest, *, verified: bool) -> Iterator[Path]:
    """The working copy of the index directory ``root`` for the length of a ``with``
    block: the cache's if it holds one, else expanded now into a temporary folder of the
    cache (same filesystem: its files can be linked elsewhere) deleted when the block
    ends. For what is read once to make another copy (shards side by side): keeping it
    would hold the same columns twice on the host's disk."""
    copy = cache_directory() / _named(_key(manifest))
    if _held(copy):
        yield copy
        return
    tmp = _beside(copy)
    try:
        _expand(root, manifest, tmp, verified=verified)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _held(copy: Path) -> bool:
    """Whether the cache holds ``copy`` whole; if so it is marked used now."""
    if not (copy / SEAL).is_file():
        return False
    os.utime(copy / SEAL)
    return True


def _beside(copy: Path) -> Path:
    """A temporary folder's name beside ``copy``, this process's own (hidden: no copy)."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    return copy.parent / f".{copy.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _expand(root: Path, manifest: Manifest, into: Path, *, verified: bool) -> None:
    if not verified:
        listed = dict(manifest.checksums)
        rtree = set(rtree_files(manifest.rtree.chunks))
        verify_files(root, {name: digest for name, digest in listed.items()
                            if name.startswith((f"{PACKED}/", f"{EVENTS}/"))
                            or name in rtree})
    expand_stored(root, manifest, into)


def cached(key: str, make: Callable[[Path], None]) -> Path:
    """The cache's copy named ``key``, made now by ``make(folder)`` if the cache does not
    hold it: written beside its name, sealed, renamed into place (another process's copy,
    renamed first, is taken instead); then the cache is brought within its limit."""
    final = cache_directory() / _named(key)
    if _held(final):
        return final
    tmp = _beside(final)
    try:
        make(tmp)
        seal(tmp)
        _rename_into(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    evict(keep=final)
    return final


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


def evict(keep: Path) -> None:
    """Delete the copies used longest ago until the cache is within its limit (never
    ``keep``, the copy just made or used)."""
    cache = keep.parent
    copies = []
    for seal_file in cache.glob(f"*/{SEAL}"):
        try:
            size = int(json.loads(seal_file.read_text())["bytes"])
            copies.append((seal_file.stat().st_mtime, size, seal_file.parent))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    # Mirrors of remote indexes (index/store/remote.py) count too: their manifest's time
    # is when they were last opened.
    for manifest in cache.glob(f"{MIRROR_PREFIX}*/{MANIFEST}"):
        try:
            size = sum(p.stat().st_size for p in manifest.parent.rglob("*") if p.is_file())
            copies.append((manifest.stat().st_mtime, size, manifest.parent))
        except OSError:
            continue
    total, limit = sum(size for _, size, _ in copies), cache_limit()
    # What was used a moment ago may be in use (a mirror an open is reading, the copies
    # a query maps): kept, whatever the limit.
    recent = time.time() - _IN_USE_SECONDS
    for used, size, directory in sorted(copies):
        if total <= limit:
            break
        if directory == keep or used > recent:
            continue
        discard(directory)
        total -= size
