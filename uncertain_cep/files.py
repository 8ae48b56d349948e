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

import ctypes
import errno
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["atomic_write", "check_table_path", "check_write_target", "current_umask",
           "exchange_paths", "index_location", "index_path", "local_path", "process_alive",
           "replace_directory", "write_table", "writing_to"]

_RENAME_EXCHANGE = 2    # linux/fs.h
_AT_FDCWD = -100


def atomic_write(target: str | os.PathLike[str], write: Callable[[str], object]) -> None:
    """Call ``write(temporary_path)``, then move the temporary file to ``target``.

    Raises
    ------
    FileWriteError
        When the system refuses (permissions, no space...), naming ``target``.
    """
    target = Path(target)
    with writing_to(target, "file"):
        _atomic_write(target, write)


def _atomic_write(target: Path, write: Callable[[str], object]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    # mkstemp makes the file private (0600); the result is as readable as any file
    # written under the user's umask.
    os.chmod(tmp, 0o666 & ~current_umask())
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextmanager
def writing_to(target: str | os.PathLike[str], what: str) -> Iterator[None]:
    """Report a system's refusal to write ``what`` (``"index"``, ``"file"``) at
    ``target`` as a :class:`~uncertain_cep.errors.FileWriteError` that names the target
    (what failed may be a hidden temporary file beside it) and what to do.

    >>> import tempfile, pathlib
    >>> blocker = pathlib.Path(tempfile.mkdtemp()) / "not-a-dir"
    >>> blocker.write_text("")
    0
    >>> try:
    ...     with writing_to(blocker / "a.csv", "file"):
    ...         (blocker / ".a.csv.tmp").write_text("x")
    ... except OSError as e:
    ...     print(type(e).__name__, str(e).replace(str(blocker), "FILE"))
    FileWriteError cannot write the file FILE/a.csv: Not a directory; a file stands where
    a directory of that path should be; choose another path
    """
    from uncertain_cep.errors import FileWriteError

    try:
        yield
    except FileWriteError:
        raise
    except OSError as e:
        reason = e.strerror or str(e)
        error = FileWriteError(f"cannot write the {what} {target}: {reason}; "
                               f"{_ADVICE.get(e.errno or 0, 'choose another path')}")
        error.errno = e.errno
        raise error from e


# What to do about the usual reasons a write fails.
_ADVICE = {
    errno.EACCES: "choose a directory you may write to, or change its permissions",
    errno.EPERM: "choose a directory you may write to, or change its permissions",
    errno.EROFS: "the file system is read-only; choose a path on a writable one",
    errno.ENOTDIR: "a file stands where a directory of that path should be; choose "
                   "another path",
    # mkdir of a directory on the path where a file stands.
    errno.EEXIST: "a file stands where a directory of that path should be; choose "
                  "another path",
    errno.ENOSPC: "the disk is full; free some space or choose a path on another disk",
    errno.EDQUOT: "the disk quota is used up; free some space or choose another disk",
}


def check_write_target(target: str | os.PathLike[str], what: str) -> None:
    """Refuse to write ``what`` at the file system's root: it is written beside its
    target and then moved into place, and the root has no "beside"."""
    from uncertain_cep.errors import FileWriteError

    resolved = Path(os.path.realpath(target))
    if resolved.parent == resolved:
        raise FileWriteError(f"cannot write the {what} to {target}, the file system root: "
                             f"the {what} replaces what is at its path; give a path of its "
                             "own, such as ./my.idx")


def exchange_paths(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Swap two existing paths (say, directories) in one atomic step, with Linux's
    ``renameat2(RENAME_EXCHANGE)``: a reader of either path sees the old or the new one,
    never nothing. Returns False, having changed nothing, where the system or file
    system cannot (the caller then renames in two steps).

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "a").write_text("A"); (root / "b").write_text("B")
    1
    1
    >>> swapped = exchange_paths(root / "a", root / "b")
    >>> (root / "a").read_text() == ("B" if swapped else "A")
    True
    """
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if done == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, f"cannot exchange {a} and {b}: {os.strerror(err)}")


def replace_directory(draft: str | os.PathLike[str], target: str | os.PathLike[str], *,
                      old_prefix: str | None = None) -> None:
    """Move the finished directory ``draft`` to ``target`` (a sibling), replacing what is
    there in one atomic exchange where the system has one (else in two renames, the old
    directory first renamed to a name starting ``old_prefix``); the old content is
    deleted. The caller checks first that ``target`` may be replaced."""
    draft, target = Path(draft), Path(target)
    if not target.exists():
        os.replace(draft, target)
        return
    if exchange_paths(draft, target):
        shutil.rmtree(draft, ignore_errors=True)
        return
    old = Path(tempfile.mkdtemp(prefix=old_prefix or f".{target.name}.old-",
                                dir=target.parent))
    old.rmdir()
    os.replace(target, old)
    os.replace(draft, target)
    shutil.rmtree(old, ignore_errors=True)


def check_table_path(target: Path, what: str = "report") -> None:
    """Refuse a table path that is neither ``.parquet`` nor ``.csv`` (before any work)."""
    if target.suffix not in (".csv", ".parquet"):
        from uncertain_cep.errors import InputError

        raise InputError(f"{what} {target} must end in .parquet or .csv")


def write_table(frame: pd.DataFrame, target: Path, *, csv_header: bool = True) -> None:
    """``frame`` to ``target`` (``.csv`` or else Parquet), atomically."""
    if target.suffix == ".csv":
        atomic_write(target, lambda tmp: frame.to_csv(tmp, index=False, header=csv_header))
    else:
        atomic_write(target, lambda tmp: frame.to_parquet(tmp, index=False))


def current_umask() -> int:
    """The process's file mode creation mask (read without changing it for long)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def process_alive(pid: int) -> bool:
    """Whether a process with id ``pid`` runs on this machine (one of another user
    counts: signalling it is refused, not missed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def local_path(text: str) -> Path | None:
    """The local path a ``file:`` URI names (``file:/x``, ``file:///x``,
    ``file://localhost/x``, percent-escapes decoded), else None.

    >>> local_path("file:///tmp/a%20b.idx"), local_path("s3a://bucket/x")
    (PosixPath('/tmp/a b.idx'), None)
    """
    from urllib.parse import unquote, urlparse

    parsed = urlparse(text)
    if parsed.scheme.lower() != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parsed.path))


def index_location(path: str | os.PathLike[str]) -> Path | str:
    """Where an index to open or save is: a local path (from a path or a ``file:`` URI),
    or, as given, the URI of another filesystem pyarrow knows (``s3://``, ``gs://``,
    ``abfs://``, ``hdfs://``: :mod:`uncertain_cep.index.store.remote`).

    >>> index_location("file:///shared/office.idx"), index_location("s3://bucket/x.idx")
    (PosixPath('/shared/office.idx'), 's3://bucket/x.idx')
    """
    if isinstance(path, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]+://", path) \
            and local_path(path) is None and not path.lower().startswith("file:"):
        return path
    return index_path(path)


def index_path(path: str | os.PathLike[str]) -> Path:
    """Where an index is, from any form a function taking an index accepts: a path, or a
    ``file:`` URI. Another URI is refused, saying why.

    >>> index_path("file:///shared/office.idx"), index_path("office.idx")
    (PosixPath('/shared/office.idx'), PosixPath('office.idx'))
    """
    from uncertain_cep.errors import InputError

    if not isinstance(path, str | os.PathLike):
        raise InputError(f"an index is named by a path or a file: URI, got "
                         f"{type(path).__name__}")
    text = os.fspath(path)
    local = local_path(text)
    if local is not None:
        return local
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+://", text):
        raise InputError(f"{text!r}: an index is a directory that this process and the "
                         "executors read as files (a local path, NFS, a mounted bucket), "
                         "not a URI of another scheme; give its path or a file: URI")
    return Path(text)
