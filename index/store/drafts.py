"""Writing an index safely: a draft directory beside the target, flushed to disk, then
swapped into place.

A write goes to a temporary sibling directory (an :class:`IndexDraft`); every file is
flushed to disk (:func:`write_durably`, :func:`fsync_files`) and the manifest is written
last; the directory is then swapped into place (:func:`swap_into_place`). An interrupted
write therefore never leaves a directory that the reader accepts. A draft's name says
whose it is (``.NAME.tmp-HOST-PID-...``), so a later build removes the drafts of killed
processes (:func:`remove_abandoned_drafts`), and a target is replaced only when it holds
nothing but an index's own files (:func:`check_replaceable`).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     draft = IndexDraft(Path(tmp) / "ix")
...     named = draft.path.name.startswith(".ix.tmp-")
...     draft.discard()
...     left = list(Path(tmp).iterdir())
>>> named, left
(True, [])
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.files import (
    check_write_target,
    current_umask,
    process_alive,
    replace_directory,
    writing_to,
)
from uncertain_cep.index.store.checksums import CHECKSUM
from uncertain_cep.index.store.layout import MANIFEST, REJECTED_ROW_SCHEMA, REJECTED_ROWS, SHARDS

__all__ = [
    "IndexDraft",
    "check_replaceable",
    "fsync_dir",
    "fsync_file",
    "fsync_files",
    "remove_abandoned_drafts",
    "swap_into_place",
    "write_durably",
    "write_rejected_rows",
]


class IndexDraft:
    """A temporary directory beside ``target`` that becomes the index when finished."""

    def __init__(self, target: str | os.PathLike[str]) -> None:
        target = Path(target)
        # A link to an index directory: the directory is replaced, the link stays.
        if target.is_symlink():
            target = Path(os.path.realpath(target))
        self.target = target
        check_write_target(target, "index")
        check_replaceable(target)
        with writing_to(target, "index"):
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_abandoned_drafts(target)
            self.path = Path(tempfile.mkdtemp(prefix=_draft_prefix(target, "tmp"),
                                              dir=target.parent))
        # mkdtemp makes the directory private (0700); an index is as readable as any
        # directory made under the user's umask.
        os.chmod(self.path, 0o777 & ~current_umask())

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def staging(self, name: str) -> Path:
        """A scratch directory in the draft (not yet created) for another writer's files,
        such as Spark's; :meth:`adopt_rejected_rows` moves them into place."""
        # A leading underscore: readers of Parquet directories skip such paths.
        return self.path / f"_{name}"

    def adopt_rejected_rows(self, staging: Path, name: str) -> None:
        """Move the Parquet part files a writer left in ``staging`` (columns
        :data:`REJECTED_ROW_COLUMNS`) into the rejected-rows table as ``name-NNNNN``, and
        remove ``staging``."""
        target = self.path / REJECTED_ROWS
        target.mkdir(exist_ok=True)
        for k, part in enumerate(sorted(staging.glob("part-*.parquet"))):
            os.replace(part, target / f"{name}-{k:05d}.parquet")
        shutil.rmtree(staging)


def write_rejected_rows(batches: Iterable[pd.DataFrame], root: Path, name: str) -> str:
    """Write rows set aside (columns :data:`REJECTED_ROW_COLUMNS`, in ``batches``) into the
    rejected-rows table under ``root`` as one file ``name-00000``; its path in ``root``."""
    target = f"{REJECTED_ROWS}/{name}-00000.parquet"
    (root / REJECTED_ROWS).mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(root / target, REJECTED_ROW_SCHEMA) as writer:
        for batch in batches:
            writer.write_table(pa.Table.from_pandas(batch, REJECTED_ROW_SCHEMA,
                                                    preserve_index=False))
    return target


def write_durably(table: pa.Table, path: Path) -> None:
    """Write ``table`` as the Parquet file ``path`` and flush it to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def fsync_files(directory: Path) -> None:
    """Flush every file of ``directory`` (of its subdirectories too), and the
    directories themselves, to disk."""
    for path in directory.iterdir():
        if path.is_dir():
            fsync_files(path)
        else:
            fsync_file(path)
    fsync_dir(directory)


def fsync_file(path: Path) -> None:
    """Flush one file's contents to disk."""
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries to disk (a rename in it survives a crash)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _host() -> str:
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"


def _draft_prefix(target: Path, kind: str) -> str:
    """``.NAME.tmp-HOST-PID-`` (or ``old``): whose draft it is, so that a later build can
    tell one abandoned by a killed process from one still being written."""
    return f".{target.name}.{kind}-{_host()}-{os.getpid()}-"


def remove_abandoned_drafts(target: Path) -> list[Path]:
    """Remove the drafts (and half-swapped old indexes) of ``target`` left by processes of
    this host that no longer run (a build killed by SIGKILL cannot clean up after itself).
    Drafts of running processes and of other hosts are left alone. Returns what was
    removed."""
    removed = []
    host = _host()
    for kind in ("tmp", "old"):
        for path in target.parent.glob(f".{target.name}.{kind}-{host}-*"):
            pid_text = path.name[len(f".{target.name}.{kind}-{host}-"):].split("-")[0]
            if not pid_text.isdigit() or process_alive(int(pid_text)):
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def check_replaceable(target: Path) -> None:
    """Refuse to write an index to ``target`` unless it is absent, empty, or an index this
    project wrote holding nothing but its own files: replacing it must never delete
    anything else (a web site with a ``manifest.json``, the input archive itself).

    Raises
    ------
    IndexFormatError
        Naming what is there and what to do.
    """
    if not target.exists():
        return
    if not target.is_dir():
        raise IndexFormatError(f"{target} exists and is a file, not an index directory; "
                               "choose another --out")
    where = f"{target} exists and is not an uncertain-cep index"
    advice = "choose another --out, or move its contents away first"
    if not (target / MANIFEST).is_file():
        # Stop at the first file: the directory may be a whole file system.
        first = next((p for p in target.rglob("*") if p.is_file() or p.is_symlink()), None)
        if first is None:
            return
        raise IndexFormatError(f"{where} (it holds files, e.g. "
                               f"{first.relative_to(target).as_posix()}); refusing to "
                               f"replace it: {advice}")
    files = {p.relative_to(target).as_posix() for p in target.rglob("*")
             if p.is_file() or p.is_symlink()}
    # Read leniently: an index of an older format version is still ours to replace (up to
    # version 7 its files were listed with their SHA-256).
    try:
        data = json.loads((target / MANIFEST).read_text())
        listed = data[CHECKSUM] if CHECKSUM in data else data["sha256"]
        if not (isinstance(data.get("format_version"), int) and isinstance(listed, dict)
                and all(isinstance(k, str) for k in listed)):
            raise ValueError(f"no format_version and {CHECKSUM} list")
    except (ValueError, KeyError, TypeError, OSError) as e:
        raise IndexFormatError(f"{where}: its manifest.json is not an index manifest "
                               f"({e}); refusing to replace it: {advice}") from e
    known = set(listed) | {MANIFEST}
    for shard in data.get("shards", []) if isinstance(data.get("shards"), list) else []:
        known |= _shard_files(target, shard, files)
    foreign = sorted(files - known)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more"
                                          if len(foreign) > 3 else "")
        raise IndexFormatError(f"{target} is an index but also holds files that are not "
                               f"part of it ({shown}); refusing to replace it and delete "
                               f"them: {advice}")


def _shard_files(target: Path, shard: object, files: set[str]) -> set[str]:
    """The files of one shard a sharded index lists: those its own manifest lists, or,
    when that manifest cannot be read (a damaged index being rebuilt), every file in the
    shard's directory, which the index's manifest names as its own."""
    path = shard.get("path") if isinstance(shard, dict) else None
    if not isinstance(path, str) or not path.startswith(f"{SHARDS}/") or ".." in path:
        return set()
    try:
        data = json.loads((target / path / MANIFEST).read_text())
        listed = data[CHECKSUM]
        if not isinstance(listed, dict):
            raise ValueError("no file list")
        return {f"{path}/{name}" for name in (*listed, MANIFEST)}
    except (ValueError, KeyError, TypeError, OSError):
        return {f for f in files if f.startswith(f"{path}/")}


def swap_into_place(tmp: Path, target: Path) -> None:
    """Replace ``target`` by the finished draft ``tmp`` (checked replaceable again first)."""
    # Files may have appeared in the target while the index was being written.
    check_replaceable(target)
    # One atomic exchange where the system has it: the path never goes missing for a
    # process opening it meanwhile (which then reads the old index or the new one).
    replace_directory(tmp, target, old_prefix=_draft_prefix(target, "old"))
