"""An index rebuilt while it is opened: which directory a path names, and whether a
rebuild is swapping it.

A rebuild swaps a whole new directory in at the index's path
(:mod:`uncertain_cep.index.store.drafts`). The reader
(:mod:`uncertain_cep.index.store.reader`) notes the directory's identity (device and
inode) when it opens one; an open that meets a swap starts again, up to
:data:`OPEN_ATTEMPTS` times, pausing a little longer each time (:data:`OPEN_PAUSE`).

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     before = directory_identity(Path(tmp))
...     same = being_replaced(Path(tmp), before)
>>> before is not None, same, directory_identity(Path(tmp)) is None
(True, False, True)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["OPEN_ATTEMPTS", "OPEN_PAUSE", "being_replaced", "directory_identity"]

# A rebuild swaps a whole directory in; an open that meets one starts again, a few times.
OPEN_ATTEMPTS = 8
OPEN_PAUSE = 0.05


def directory_identity(root: Path) -> tuple[int, int] | None:
    """Which directory ``root`` names now (None: none): a rebuild swaps in another."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def being_replaced(root: Path, before: tuple[int, int] | None) -> bool:
    """Whether ``root`` changed since ``before``, or is missing while a build swaps it in
    by two renames (its old directory is set aside beside it)."""
    now = directory_identity(root)
    if now != before:
        return True
    return now is None and any(root.parent.glob(f".{root.name}.old-*"))
