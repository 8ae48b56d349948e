"""Atomic file writes: a temporary file in the target's directory, then a rename.

Readers never see a partial report, answer table or HTML page: the content is written to
a private temporary file beside the target and moved into place with :func:`os.replace`
(atomic on POSIX). A failed write leaves the previous file untouched and no temporary
file behind.

>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
>>> atomic_write(target, lambda path: pathlib.Path(path).write_text("hello"))
>>> target.read_text()
'hello'
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write"]


def atomic_write(target: str | os.PathLike[str], write: Callable[[str], object]) -> None:
    """Call ``write(temporary_path)``, then move the temporary file to ``target``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    # mkstemp makes the file private (0600); the result is as readable as any file
    # written under the user's umask.
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
