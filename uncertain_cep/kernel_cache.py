"""Where the compiled kernels are kept: one cache per version of the kernels' sources.

Every numba kernel of the package is compiled with ``cache=True``. numba's own cache sits
beside each source file and is checked file by file: a kernel inlines the helpers it calls
from other files, so editing a helper left its callers' compiled code stale, and a fresh
checkout or a new virtual environment found nothing and compiled everything again (about
60 s of two cores). This module gives numba a locator (a
``numba.core.caching._CacheLocator``) for the package's kernels: one directory per
*kernel version*, the SHA-256 of every package source file that mentions numba (they define
kernels or the helpers kernels inline) together with numba's version, so that

* any change to any kernel or helper starts a fresh directory (nothing stale is ever
  loaded), and
* every checkout, virtual environment and Spark worker of one machine with the same
  kernel sources shares one compiled copy, wherever the package is installed.

Every wheel (build_backend/uncertain_cep_build.py) ships the kernels compiled on the machine that
built it (``uncertain_cep/_kernels/<version>/``): a new cache directory of that version
starts as their copy, so a fresh install on a machine of the same CPU kind compiles nothing.

The directory is, first found: ``$UNCERTAIN_CEP_KERNEL_CACHE``; ``$NUMBA_CACHE_DIR`` (a
folder in it); else the user's cache directory
(``$XDG_CACHE_HOME/uncertain-cep/kernels``, ``~/.cache`` by default). Directories of other
kernel versions unused for a week are removed. numba still checks, per kernel, its
bytecode, argument types and the CPU it was compiled for, and compiles what does not match.

>>> key = kernel_version()
>>> len(key) == 16 and kernel_cache_dir().name == key
True
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numba
from numba.core import caching, event

__all__ = ["compile_seconds", "install_kernel_cache", "kernel_cache_dir", "kernel_sources",
           "kernel_version", "kernels_compiled", "load_cached_kernels", "load_in_background",
           "prepare_compiler"]

_PACKAGE = Path(__file__).resolve().parent
# Kernels compiled when the wheel was built (uncertain_cep/kernel_build.py), one folder per
# kernel version: a new cache directory starts as a copy of its version's.
_SHIPPED = _PACKAGE / "_kernels"
_UNUSED_SECONDS = 7 * 24 * 3600
_VERSION = re.compile("[0-9a-f]{16}")

log = logging.getLogger(__name__)


def kernel_sources() -> list[Path]:
    """The package's source files that mention numba, in a fixed order.

    Follows the links by which ``index/`` and ``query/`` are the package's folders in a
    checkout.
    """
    return [path for path, _ in _read_kernel_sources()]


def _read_kernel_sources() -> list[tuple[Path, bytes]]:
    found = []
    for folder, dirs, files in os.walk(_PACKAGE, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".py") and b"numba" in (text := path.read_bytes()):
                found.append((path, text))
    return found


@functools.cache
def kernel_version() -> str:
    """16 hex digits naming this version of the kernels' sources and of numba."""
    digest = hashlib.sha256(numba.__version__.encode())
    for path, text in _read_kernel_sources():
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(text).digest())
    return digest.hexdigest()[:16]


def kernel_cache_dir() -> Path:
    """The directory this version of the kernels is compiled into and loaded from."""
    if os.environ.get("UNCERTAIN_CEP_KERNEL_CACHE"):
        # A relative folder is the working directory's (each Spark executor's own, in a
        # cluster), fixed once: a later chdir must not move a process's cache.
        root = Path(os.environ["UNCERTAIN_CEP_KERNEL_CACHE"]).absolute()
    elif os.environ.get("NUMBA_CACHE_DIR"):
        root = Path(os.environ["NUMBA_CACHE_DIR"]) / "uncertain-cep"
    else:
        root = _user_cache() / "uncertain-cep" / "kernels"
    return root / kernel_version()


def _user_cache() -> Path:
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"])
    try:
        return Path.home() / ".cache"
    except (RuntimeError, KeyError):
        # A service account without a home (some cluster executors): the temporary
        # directory, one per user.
        return Path(tempfile.gettempdir()) / f"cache-{os.getuid()}"


class _KernelLocator(caching._CacheLocator):
    """numba's cache locator for the package's kernels (one folder per module)."""

    def __init__(self, py_func, folder: Path) -> None:
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(folder / py_func.__module__)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return kernel_version()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not py_func.__module__.startswith("uncertain_cep."):
            return None
        folder = _prepared_dir()
        if folder is None:
            return None
        return cls(py_func, folder)


@functools.cache
def _prepared_dir() -> Path | None:
    """The cache directory, created and marked as used; None where it cannot be written
    (numba then falls back to its own locators)."""
    folder = kernel_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.utime(folder)
    except OSError:
        return None
    _seed(folder, _SHIPPED / folder.name)
    _remove_unused(folder.parent, keep=folder.name)
    return folder


def _seed(folder: Path, shipped: Path) -> None:
    """Copy the kernels the wheel ships for this version into ``folder``, a module's
    folder at a time, each renamed into place whole (processes starting together each
    copy, and the first rename wins) and never over one that is there."""
    if not shipped.is_dir():
        return
    for module in shipped.iterdir():
        target = folder / module.name
        if target.exists():
            continue
        draft = folder / f".{module.name}.{os.getpid()}.{threading.get_ident()}"
        try:
            shutil.copytree(module, draft)
            os.rename(draft, target)
        except OSError:
            shutil.rmtree(draft, ignore_errors=True)


def _remove_unused(root: Path, keep: str) -> None:
    cutoff = time.time() - _UNUSED_SECONDS
    for other in root.iterdir():
        try:
            if (other.name != keep and _VERSION.fullmatch(other.name) and other.is_dir()
                    and other.stat().st_mtime < cutoff):
                shutil.rmtree(other, ignore_errors=True)
        except OSError:
            pass


class _CompileClock(event.Listener):
    """numba's compilations of the package's kernels: seconds and count of the outermost
    ones (a kernel compiles the helpers it calls inside its own), and the notice."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.kernels = 0
        self._depth = 0
        self._started = 0.0
        self._lock = threading.Lock()
        self._told = False

    def on_start(self, ev: event.Event) -> None:
        if not _ours(ev):
            return
        with self._lock:
            if self._depth == 0:
                self._started = time.perf_counter()
                tell, self._told = not self._told, True
            else:
                tell = False
            self._depth += 1
        if tell:
            log.warning("compiling the query kernels for this machine (their first use "
                        "since installing or changing uncertain-cep: about a minute on two "
                        "cores, once; later processes load them from %s). Query times "
                        "leave this out.", kernel_cache_dir())

    def on_end(self, ev: event.Event) -> None:
        if not _ours(ev):
            return
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self.seconds += time.perf_counter() - self._started
                self.kernels += 1


def _ours(ev: event.Event) -> bool:
    dispatcher = (ev.data or {}).get("dispatcher")
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith("uncertain_cep.")


_CLOCK = _CompileClock()


def compile_seconds() -> float:
    """Seconds this process has spent compiling the package's kernels (not loading them).

    >>> compile_seconds() >= 0.0
    True
    """
    return _CLOCK.seconds


def kernels_compiled() -> int:
    """How many of the package's kernels this process has compiled (not loaded)."""
    return _CLOCK.kernels


def prepare_compiler() -> None:
    """Make numba's first use in this process now, before any kernel is loaded or
    compiled: its typing and target registries of numpy's functions (about 0.45 s on
    this 2-core machine, half of it probing scipy's BLAS), which every process pays
    before its first kernel runs. Starts no thread (the Spark worker daemon,
    ``pipeline/worker_daemon.py``, calls it before it forks)."""
    from numba.core.registry import cpu_target

    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()


def load_cached_kernels(modules: Iterable[str] | None = None, *,
                        parallel: bool = True) -> int:
    """Load now, from this version's cache, every compiled form of the kernels defined in
    ``modules`` (module names, imported if they are not; default every imported module
    of the package), compiling nothing; returns how many were loaded.

    A kernel is loaded at its first call, which needs the argument types; the cache's
    index of each kernel lists the types it was compiled for, so a process about to use
    the kernels can load them beforehand, where the wait costs nothing: Spark's worker
    daemon before it forks (``pipeline/worker_daemon.py``, with ``parallel=False``:
    loading a ``parallel=True`` kernel starts numba's threads, and a process with
    threads must not fork), and the driver while the executors answer. A form compiled
    for another CPU, numba or source is skipped (numba's own key says so), as is any
    that fails to load: its first call loads or compiles it as before.

    >>> load_cached_kernels(["uncertain_cep.kernel_cache"])   # defines no kernel
    0
    """
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.dispatcher import Dispatcher

    if modules is None:
        found = {name: module for name, module in list(sys.modules.items())
                 if name.startswith("uncertain_cep.")}
    else:
        found = {name: importlib.import_module(name) for name in modules}
    loaded = 0
    for name, module in sorted(found.items()):
        for kernel in list(vars(module).values()):
            if (isinstance(kernel, Dispatcher) and kernel.py_func.__module__ == name
                    and (parallel or not kernel.targetoptions.get("parallel"))):
                with global_compiler_lock:
                    loaded += _load_kernel(kernel)
    return loaded


def load_in_background(modules: Iterable[str]) -> threading.Thread:
    """:func:`prepare_compiler` and :func:`load_cached_kernels` of ``modules`` on a thread
    of their own, started; join it before calling their kernels. For a process that is
    about to wait (the Spark query's driver while the executors answer) and then runs
    kernels it has not run before: about 0.8 s of a driver's first query, hidden.

    >>> load_in_background(["uncertain_cep.kernel_cache"]).join()
    """
    names = list(modules)

    def load() -> None:
        try:
            prepare_compiler()
            load_cached_kernels(names)
        except Exception as e:      # only an earlier start lost: the calls load them
            log.debug("loading kernels in the background failed: %s", e)

    thread = threading.Thread(target=load, name="uncertain-cep-kernel-loading", daemon=True)
    thread.start()
    return thread


def _load_kernel(kernel) -> int:
    """Load ``kernel``'s cached forms (under numba's compiler lock): what
    ``Dispatcher.compile`` does when it finds a form in the cache, without its fallback
    of compiling."""
    cache = kernel._cache
    index = getattr(cache, "_cache_file", None)
    if index is None:           # no cache (numba's NullCache)
        return 0
    loaded = 0
    try:
        codegen = kernel.targetctx.codegen()
        for key in index._load_index():
            args = key[0]
            if (tuple(args) in kernel.overloads
                    or key != cache._index_key(args, codegen)):
                continue
            result = cache.load_overload(args, kernel.targetctx)
            if result is None or result.objectmode:
                continue
            kernel.targetctx.insert_user_function(result.entry_point, result.fndesc,
                                                  [result.library])
            kernel.add_overload(result)
            loaded += 1
    except Exception as e:      # numba's internals moved, or a damaged entry: skip
        log.debug("could not load %s from the kernel cache: %s", kernel.py_func, e)
    return loaded


def install_kernel_cache() -> None:
    """Put the package's locator first in numba's list (once; done when this module is
    imported, which the ``index`` and ``query`` packages do before defining any kernel)."""
    # numba 0.61 named the class _CacheImpl, 0.62 on CacheImpl.
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # noqa: B009
    classes = impl._locator_classes
    if _KernelLocator not in classes:
        classes.insert(0, _KernelLocator)
        event.register("numba:compile", _CLOCK)


install_kernel_cache()
