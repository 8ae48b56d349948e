"""The checksum of every file of an index: xxh3_64 over all its bytes, recorded by the
builders in the manifest and checked before the file is first used.

An index is mostly memory-mapped columns (``columns/``, ``event_columns/``) that the
compiled kernels index with the numbers they hold: a damaged byte there answers other
confidences, or makes a kernel read out of bounds. So opening an index hashes every file
it maps or reads (:func:`verify_files`), not only what it reads whole. xxh3_64 runs at
memory speed (about 9.5 GB/s here, where SHA-256 runs at 0.7 GB/s: docs/benchmarks.md),
so hashing the 830 MB an index of a million events maps costs about 0.15 s. It detects
damage, not tampering: whoever can rewrite a file can rewrite its checksum (and the
manifest's own SHA-256); what the kernels need of the numbers themselves is checked once
when the columns are mapped (:mod:`uncertain_cep.index.store.column_checks`).

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = Path(tmp) / "a.bin"
...     _ = path.write_bytes(b"uncertain")
...     digest = file_digest(path)
...     verify_files(Path(tmp), {"a.bin": digest})
...     _ = path.write_bytes(b"uncertaim")
...     verify_files(Path(tmp), {"a.bin": digest})
Traceback (most recent call last):
...
uncertain_cep.errors.IndexFormatError: ... is damaged: a.bin does not match its xxh3_64 checksum ...
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

import xxhash

from uncertain_cep.errors import IndexFormatError

__all__ = ["CHECKSUM", "file_digest", "verify_files"]

# The manifest's field of per-file checksums, named by the algorithm.
CHECKSUM = "xxh3_64"
# Bytes hashed per call: the GIL is released within each, and the pages of one step are
# read ahead together.
_STEP = 1 << 24


def file_digest(path: Path | BinaryIO) -> str:
    """The xxh3_64 of the file ``path`` (or of an open file: all of it), as 16 hex
    digits.

    The file is mapped, not read: hashing reads the pages in place (read into a buffer,
    it ran at a third of the speed here) and they are unmapped after, so the process's
    resident memory does not grow with the index."""
    if not isinstance(path, Path):
        return _digest(path.fileno())
    with open(path, "rb") as fh:
        return _digest(fh.fileno())


def _digest(fd: int) -> str:
    h = xxhash.xxh3_64()
    size = os.fstat(fd).st_size
    if size:
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
            mapped.madvise(mmap.MADV_SEQUENTIAL)
            with memoryview(mapped) as view:
                for at in range(0, size, _STEP):
                    with view[at:at + _STEP] as step:
                        h.update(step)
    return h.hexdigest()


def verify_files(root: Path, checksums: Mapping[str, str],
                 opened: Mapping[str, BinaryIO] | None = None) -> None:
    """Hash the files ``checksums`` names (relative to ``root``) and compare.

    One file after another: on 2 busy cores, threads made it slower (memory bandwidth is
    what it is bound by). ``opened``: files already open (by name), hashed through their
    descriptors, so that what is checked is what will be mapped even if the directory is
    replaced meanwhile.

    Raises
    ------
    IndexFormatError
        Naming the first file that is missing, unreadable or does not match.
    """
    for name in sorted(checksums):
        try:
            digest = file_digest(opened[name] if opened and name in opened
                                 else root / name)
        except OSError as e:
            raise IndexFormatError(f"{root} is damaged: {name} cannot be read ({e}); "
                                   "rebuild the index") from e
        if digest != checksums[name]:
            raise IndexFormatError(f"{root} is damaged: {name} does not match its "
                                   f"{CHECKSUM} checksum in manifest.json; rebuild the index")
