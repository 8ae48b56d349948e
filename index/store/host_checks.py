"""What a host has already checked of a working copy: its files hashed against their seal,
its node numbers checked, recorded once per host instead of redone by every process.

Every process that maps a working copy used to hash the files it maps and check the node
table's numbers (:mod:`.column_checks`) before its first query: at 100M events, a copy of
the whole index is about 49 GB, which each Spark worker would read again from disk before
answering anything. A copy is written only by this package and never changed in place,
so once one process has checked its files, the copy records it (:data:`STAMP`: per file
checked, its inode, size and modification time); a later process that finds every file
it maps with the identity recorded skips the check. A file rewritten, truncated, replaced
or copied since has another identity and is checked again, as a copy of the cache moved
elsewhere is (damage that leaves a file's size and times alone, a bit flipped on the disk
itself, is what the disk's own checks are for).

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as tmp:
...     copy = Path(tmp)
...     _ = (copy / "a.npy").write_bytes(b"columns")
...     before = checked_before(copy, ["a.npy"])
...     record_checked(copy, ["a.npy"])
...     after = checked_before(copy, ["a.npy"])
...     _ = (copy / "a.npy").write_bytes(b"columns, rewritten")
...     rewritten = checked_before(copy, ["a.npy"])
>>> before, after, rewritten
(False, True, False)
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable
from pathlib import Path

__all__ = ["STAMP", "checked_before", "file_identity", "record_checked"]

# The checks a host made of a working copy (not part of its seal: written after it).
STAMP = "checked.json"


def file_identity(path: Path) -> list[int] | None:
    """What tells a file from a rewritten one: its inode, size and modification time
    (``None``: it cannot be read)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _recorded(copy: Path) -> dict[str, list[int]]:
    try:
        record = json.loads((copy / STAMP).read_text())
        return {str(k): list(v) for k, v in record.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def checked_before(copy: Path, names: Iterable[str]) -> bool:
    """Whether every file ``names`` names (relative to the working copy ``copy``) was
    checked on this host and has not changed since."""
    recorded = _recorded(copy)
    for name in names:
        identity = file_identity(copy / name)
        if identity is None or recorded.get(name) != identity:
            return False
    return True


def record_checked(copy: Path, names: Iterable[str]) -> None:
    """Record that the files ``names`` of ``copy`` were just checked. Best effort: a copy
    that cannot be written to (another user's cache) is checked again next time."""
    recorded = _recorded(copy)
    for name in names:
        identity = file_identity(copy / name)
        if identity is not None:
            recorded[name] = identity
    tmp = copy / f".{STAMP}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        tmp.write_text(json.dumps(recorded))
        os.replace(tmp, copy / STAMP)
    except OSError:
        tmp.unlink(missing_ok=True)
