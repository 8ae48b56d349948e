"""An index on any filesystem pyarrow knows (``s3://``, ``gs://``, ``abfs://``,
``hdfs://``): versions under one prefix, a pointer object naming the current one, and a
local mirror of what a host reads.

Object stores have no atomic rename of a directory, so a remote index is written as
Delta Lake and Iceberg write tables: each save uploads a whole new *version* under
``_versions/<id>/`` (the layout of :mod:`uncertain_cep.index.store.layout`, manifest
last), then replaces the pointer object ``_latest`` (one PUT, atomic) with that id. A
reader follows the pointer once, when it opens, and reads that version to the end: a save
meanwhile writes another version and never touches the one being read. A save killed
before its pointer leaves the old index current; the version it was uploading is never
named, and the next save deletes it. Each save keeps the version it replaces (a reader
that opened it goes on) and deletes older ones.

Reading fetches into the host's cache (:func:`~uncertain_cep.index.store.working_copy.
cache_directory`) a *mirror* of the version: opening downloads its manifest and, of a
sharded index, its statistics and the shards' manifests (a one-directory index is one
unit, fetched whole); a shard's files are fetched when a query first reads the shard
(:func:`fetch_shard`). The mirror is then an index directory like any other: checked by
its manifest's checksums, expanded into working copies, read side by side.

>>> is_remote("s3://bucket/office.idx"), is_remote("/data/office.idx"), \\
...     is_remote("file:///data/office.idx")
(True, False, False)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from uncertain_cep.errors import IndexFormatError, InputError
from uncertain_cep.index.store.checksums import CHECKSUM
from uncertain_cep.index.store.layout import MANIFEST, WORK
from uncertain_cep.index.store.working_copy import MIRROR_PREFIX, cache_directory, evict

__all__ = ["POINTER", "VERSIONS", "RemoteIndex", "VersionUpload", "fetch_shard", "fetch_top",
           "is_remote", "open_remote", "save_remote"]

POINTER = "_latest"          # the object naming the current version
VERSIONS = "_versions"       # one folder per version
_FETCHED = ".fetched"         # a shard's files are all in the mirror
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")


def is_remote(location: object) -> bool:
    """Whether ``location`` is a URI of a filesystem other than the local one."""
    if not isinstance(location, str):
        return False
    match = _SCHEME.match(location)
    return match is not None and match.group(1).lower() != "file"


@dataclass(frozen=True)
class RemoteIndex:
    """One version of a remote index (what a reader opened; it pickles, for executors)."""

    uri: str
    version: str

    def filesystem(self) -> tuple[pafs.FileSystem, str]:
        """The filesystem and the path of the version's folder in it."""
        fs, base = _filesystem(self.uri)
        return fs, f"{base}/{VERSIONS}/{self.version}"

    def mirror(self) -> Path:
        """Where this host keeps what it fetched of the version."""
        key = hashlib.sha256(f"{self.uri}\n{self.version}".encode()).hexdigest()[:40]
        return cache_directory() / f"{MIRROR_PREFIX}{key}"


def _filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    # Hadoop's names for S3 (what Spark users write) are S3 to pyarrow.
    given, uri = uri, re.sub(r"^s3[an]://", "s3://", uri, flags=re.IGNORECASE)
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
    except (pa.ArrowException, ValueError, OSError) as e:
        # An unknown scheme, or a store that cannot be reached (S3 resolves the
        # bucket's region here): pyarrow's reason says which.
        raise InputError(f"{given}: pyarrow cannot open its filesystem ({e}); give a "
                         "local path, a file: URI, or an s3://, gs://, abfs:// or hdfs:// "
                         "URI that this host can reach with its credentials") from e
    return fs, path.rstrip("/")


def _read(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as stream:
        return bytes(stream.read())


def _write(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    with fs.open_output_stream(path) as stream:
        stream.write(data)


def open_remote(uri: str) -> tuple[Path, RemoteIndex]:
    """The local mirror of the current version of the remote index ``uri`` (its manifest,
    and what opening reads, fetched now unless the host has them) and the version."""
    fs, base = _filesystem(uri)
    try:
        version = _read(fs, f"{base}/{POINTER}").decode().strip()
    except FileNotFoundError:
        raise IndexFormatError(f"{uri} is not an index (it has no {POINTER} object naming "
                               "its current version); build or save one there") from None
    except (OSError, pa.ArrowException) as e:
        raise IndexFormatError(f"{uri} cannot be read: {e}") from e
    remote = RemoteIndex(uri, version)
    fetch_top(remote)
    return remote.mirror(), remote


def fetch_top(remote: RemoteIndex) -> None:
    """Fetch the version's manifest and what opening it reads (all of a one-directory
    index; of a sharded one, the statistics and the shards' manifests) into its mirror,
    unless there already."""
    mirror = remote.mirror()
    if (mirror / MANIFEST).is_file():
        os.utime(mirror / MANIFEST)      # used now: the cache keeps what was used last
        return
    _fetch_folder(remote, "", lambda name: not name.startswith("shards/")
                  or name.endswith(f"/{MANIFEST}"))


def fetch_shard(remote: RemoteIndex, shard: str) -> None:
    """Fetch the files of the shard at ``shard`` (``shards/00003``) into the mirror,
    unless there already."""
    done = remote.mirror() / shard / _FETCHED
    if done.is_file():
        return
    _fetch_folder(remote, shard, lambda name: True)
    _place(done, b"")


def _fetch_folder(remote: RemoteIndex, folder: str, wanted: Callable[[str], bool]) -> None:
    """Download ``folder``'s manifest and the files it lists that are ``wanted`` into the
    mirror, the manifest last (a mirror without it is fetched again); each file is
    written beside its name and renamed, so processes fetching at once agree."""
    fs, root = remote.filesystem()
    source = f"{root}/{folder}".rstrip("/")
    target = remote.mirror() / folder
    try:
        manifest = _read(fs, f"{source}/{MANIFEST}")
        listed = json.loads(manifest)[CHECKSUM]
        for name in sorted(n for n in listed if wanted(n)):
            _download(fs, f"{source}/{name}", target / name)
    except FileNotFoundError as e:
        raise IndexFormatError(f"{remote.uri} (version {remote.version}) is damaged: "
                               f"{e}; save or build the index again") from None
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as e:
        raise IndexFormatError(f"{remote.uri} (version {remote.version}) cannot be read: "
                               f"{e}") from e
    _place(target / MANIFEST, manifest)
    evict(keep=remote.mirror())


def _download(fs: pafs.FileSystem, source: str, path: Path) -> None:
    """Copy one object to ``path``, streamed (not read into memory) beside its name,
    then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        pafs.copy_files(source, str(tmp), source_filesystem=fs,
                        destination_filesystem=pafs.LocalFileSystem())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _place(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def save_remote(uri: str, write: Callable[[Path], None]) -> str:
    """Save an index at the remote ``uri``: ``write(folder)`` writes it into a local
    folder, which is uploaded as a new version; the pointer is replaced last. Returns
    the version.

    Raises
    ------
    IndexFormatError
        When ``uri`` holds objects but no index (nothing is replaced then).
    """
    upload = VersionUpload.begin(uri)
    staging = Path(tempfile.mkdtemp(prefix="uncertain-cep-upload-"))
    try:
        write(staging / "index")
        upload.put_folder(staging / "index")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    upload.publish()
    return upload.version


@dataclass(frozen=True)
class VersionUpload:
    """A new version of the remote index at ``uri`` being written: its files go under
    ``_versions/<version>/`` (by this process or, in a Spark build, by executors: it
    pickles), and :meth:`publish` makes it current. Until then no reader sees it; an
    upload that is never published is deleted by the next save.

    ``_work/`` under the version holds what a build's tasks hand to later tasks; it is
    never listed by a manifest and is deleted when the version is published.
    """

    uri: str
    version: str
    previous: str | None

    @classmethod
    def begin(cls, uri: str) -> VersionUpload:
        """Start a version of ``uri`` (refusing a prefix that holds objects but no
        index)."""
        fs, base = _filesystem(uri)
        previous = _current_version(fs, base, uri)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        return cls(uri, f"{stamp}-{uuid.uuid4().hex[:8]}", previous)

    def folder(self, folder: str = "") -> tuple[pafs.FileSystem, str]:
        """The filesystem, and the path in it of ``folder`` of this version."""
        fs, base = _filesystem(self.uri)
        return fs, f"{base}/{VERSIONS}/{self.version}/{folder}".rstrip("/")

    def put_folder(self, local: Path, folder: str = "",
                   names: Iterable[str] | None = None) -> None:
        """Upload the files ``names`` of the local directory ``local`` (default: all of
        them) into ``folder`` of the version, each manifest after the files it checks."""
        fs, target = self.folder(folder)
        if names is None:
            names = (p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
        # Every shard's manifest and the index's after the files they check.
        ordered = sorted(names, key=lambda n: (Path(n).name == MANIFEST, -n.count("/"), n))
        local_fs = pafs.LocalFileSystem()
        for name in ordered:
            pafs.copy_files(str(local / name), f"{target}/{name}", source_filesystem=local_fs,
                            destination_filesystem=fs)

    def get_folder(self, folder: str, local: Path,
                   names: Iterable[str] | None = None) -> list[str]:
        """Download the objects ``names`` under ``folder`` of the version (default:
        every object there) into the local directory ``local``; the names downloaded
        (relative to ``folder``)."""
        fs, source = self.folder(folder)
        if names is None:
            names = (f.path[len(source) + 1:] for f in fs.get_file_info(
                pafs.FileSelector(source, allow_not_found=True, recursive=True))
                if f.type == pafs.FileType.File)
        names = sorted(names)
        for name in names:
            _download(fs, f"{source}/{name}", local / name)
        return names

    def discard(self) -> None:
        """Delete what was uploaded of this version (best effort: what is left is
        deleted by the next save)."""
        fs, folder = self.folder()
        with contextlib.suppress(OSError, pa.ArrowException):
            fs.delete_dir_contents(folder, missing_dir_ok=True)

    def publish(self) -> None:
        """Make this version current: replace the pointer (one PUT), then delete the
        version's ``_work/`` and the versions older than the one it replaces."""
        fs, base = _filesystem(self.uri)
        _write(fs, f"{base}/{POINTER}", self.version.encode())
        fs.delete_dir_contents(f"{base}/{VERSIONS}/{self.version}/{WORK}",
                               missing_dir_ok=True)
        _delete_versions(fs, base, keep={self.version, self.previous})


def _current_version(fs: pafs.FileSystem, base: str, uri: str) -> str | None:
    """The version the pointer names, or None where nothing is; refuse a prefix holding
    objects that are not an index."""
    try:
        return _read(fs, f"{base}/{POINTER}").decode().strip()
    except FileNotFoundError:
        pass
    found = fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=True))
    if [f for f in found if f.type == pafs.FileType.File]:
        raise IndexFormatError(f"{uri} holds objects but no {POINTER} pointer: it is not an "
                               "uncertain-cep index; refusing to write beside them: choose "
                               "another prefix")
    return None


def _delete_versions(fs: pafs.FileSystem, base: str, keep: set[str | None]) -> None:
    """Delete the versions not in ``keep`` (uploads a killed save left, older indexes)."""
    listed = fs.get_file_info(pafs.FileSelector(f"{base}/{VERSIONS}", allow_not_found=True))
    for info in listed:
        if info.type == pafs.FileType.Directory and info.base_name not in keep:
            fs.delete_dir(info.path)
