"""Checking an index directory before anything is read from it: :func:`read_manifest`.

The manifest is read and validated (:class:`~uncertain_cep.index.store.manifest.Manifest`),
its own checksum compared, every file it lists looked for, and the files' checksums
compared (:mod:`uncertain_cep.index.store.checksums`): all of them, or only those opening
an index reads or maps, the rest being hashed before their first read. Any failure is an
:class:`~uncertain_cep.errors.IndexFormatError` saying what is wrong and to rebuild.

>>> import tempfile
>>> import pandas as pd
>>> import uncertain_cep as uc
>>> with tempfile.TemporaryDirectory() as tmp:
...     uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": 0, "t_lo": [1, 1],
...                                  "t_hi": [2, 2]})).save(tmp + "/ix")
...     read_manifest(tmp + "/ix").counts.events
...     read_manifest(tmp + "/nothing")
Traceback (most recent call last):
...
uncertain_cep.errors.IndexFormatError: ... is not an index directory (it does not exist)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from uncertain_cep.errors import IndexFormatError
from uncertain_cep.index.store.checksums import verify_files
from uncertain_cep.index.store.event_columns import text_columns
from uncertain_cep.index.store.layout import EVENTS, MANIFEST, PACKED, SHARDS, STATS
from uncertain_cep.index.store.manifest import SELF_CHECKSUM, Manifest, manifest_digest

__all__ = ["read_manifest"]


def read_manifest(root: str | os.PathLike[str], *, verify_all: bool = True) -> Manifest:
    """The manifest of an index directory, after checking its format version, its own
    checksum, that every file it lists is there, and the files' checksums
    (:mod:`uncertain_cep.index.store.checksums`).

    With ``verify_all=False`` the files opening an index reads are hashed (the
    statistics, the shards' manifests, and the events table when it has text columns:
    :func:`_used_when_opened`); the rest (what the working copy is made of:
    :mod:`uncertain_cep.index.store.working_copy`) is hashed before it is first read.

    Raises
    ------
    IndexFormatError
        When ``root`` is not an index, or an interrupted, damaged or foreign one.
    """
    root = Path(root)
    if root.is_file():
        raise IndexFormatError(f"{root} is a file, not an index directory: open the "
                               "directory that a build or save wrote (an archive file is "
                               "indexed by uc.build_index or `uncertain-cep build`)")
    if not root.is_dir():
        raise IndexFormatError(f"{root} is not an index directory (it does not exist)")
    try:
        with open(root / MANIFEST) as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise IndexFormatError(f"{root} has no {MANIFEST}: not an index, or its write was "
                               "interrupted; rebuild it") from None
    except (OSError, ValueError) as e:
        raise IndexFormatError(f"{root}/{MANIFEST} is damaged: {e}") from e
    digest = data.pop(SELF_CHECKSUM, None) if isinstance(data, dict) else None
    try:
        manifest = Manifest.from_json(data)
    except IndexFormatError as e:
        raise IndexFormatError(f"{root}/{MANIFEST}: {e}") from None
    if digest != manifest_digest(data):
        raise IndexFormatError(f"{root}/{MANIFEST} was edited or damaged: its fields do not "
                               f"match its own checksum ({SELF_CHECKSUM!r}); an index is "
                               "only written by uncertain-cep: rebuild it")
    checksums = dict(manifest.checksums)
    if not checksums:
        raise IndexFormatError(f"{root}/{MANIFEST} lists no files; rebuild the index")
    for table in () if manifest.is_sharded else (EVENTS, PACKED):
        if not any(k.startswith(f"{table}/") for k in checksums):
            raise IndexFormatError(f"{root}/{MANIFEST} lists no {table} files; rebuild the "
                                   "index")
    for shard in manifest.shards:
        if f"{shard.path}/{MANIFEST}" not in checksums:
            raise IndexFormatError(f"{root}/{MANIFEST} does not check the manifest of "
                                   f"{shard.path}; rebuild the index")
    for name in checksums:
        if not (root / name).is_file():
            raise IndexFormatError(f"{root} is damaged: {name} is missing; rebuild the index")
    verify_files(root, {name: digest for name, digest in checksums.items()
                        if verify_all or _used_when_opened(name, manifest)})
    return manifest


def _used_when_opened(name: str, manifest: Manifest) -> bool:
    """Whether opening an index reads the file ``name`` (relative to the index): the
    statistics, the shards' manifests, and the events table when the archive has text
    columns (string ids, categorical attributes), which are not mapped. What the working
    copy is made of is hashed when it is made, and the working copy's files when they are
    mapped (:meth:`~uncertain_cep.index.store.reader.IndexReader.load`)."""
    if name.startswith(f"{EVENTS}/"):
        return bool(text_columns(manifest))
    return name.startswith((f"{STATS}/", f"{SHARDS}/"))
