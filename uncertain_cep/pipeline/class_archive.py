"""A class-data-sharing archive for the Spark JVMs that uncertain-cep starts.

Most of a local Spark session's start, and of its first job, goes to loading and
verifying the JVM classes of Spark and its libraries. HotSpot can map them, parsed and
verified already, from a class-data-sharing archive (AppCDS dynamic archives, JEP 350,
JDK 13+): on the 2-core machine of docs/benchmarks.md a session starts in about 6 s
instead of 10 s, and its first job takes 2-2.5 s less.

The archive is a cache, made unasked and used only when whole:

1. The first session made for a Java build and a Spark installation records the classes
   its JVM loads, and that JVM writes them to a recording file of its own when it exits
   (``-XX:ArchiveClassesAtExit``: about 15 s of work after the Python process is gone;
   nothing waits for it). A file beside it holds the recording JVM's process id.
2. A later session promotes a finished recording to the archive: its JVM has exited and
   the file's header, which HotSpot writes last, is there. A recording whose JVM died
   first is deleted, and the next session records again.
3. Sessions then map the archive (``-XX:SharedArchiveFile``). HotSpot checks it against
   its own build and class path and runs without it, silently, if they differ.

Only sessions this project creates get these options (:func:`class_archive`), never a
session the user started. ``UNCERTAIN_CEP_JVM_CACHE`` names the cache directory (default
``$XDG_CACHE_HOME/uncertain-cep``, else ``~/.cache/uncertain-cep``); ``off`` turns the
archive off. When another archive is recorded, those unused for 30 days are deleted, and
all but the two last used of other installations (a new virtual environment, Java or
Spark version records its own).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import shutil
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from uncertain_cep.errors import UncertainCepError
from uncertain_cep.files import process_alive

__all__ = ["CACHE_ENV", "ClassArchive", "class_archive", "is_whole_archive",
           "record_class_archive"]

log = logging.getLogger(__name__)

CACHE_ENV = "UNCERTAIN_CEP_JVM_CACHE"
# HotSpot's magic number of a dynamic (top-layer) archive, in the machine's byte order.
_DYNAMIC_MAGIC = struct.pack("=I", 0xF00BABA8)
# JVM unified-logging tags a recording or a mismatched archive would print warnings on.
_QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
# A recording claimed by a session whose JVM never reported its process id (it failed
# to start) is given up after this long.
_UNSTARTED_SECONDS = 600
_UNUSED_DAYS = 30
# Archives kept for other Java/Spark installations (each about 150 MB), most recently
# used first, when a new one is recorded.
_KEEP_OTHERS = 2


@dataclass(frozen=True)
class ClassArchive:
    """What a new session's driver JVM does with the class archive: map ``shared``, or
    write ``recording`` when it exits, or neither.

    :attr:`options` go into ``spark.driver.extraJavaOptions``; with ``recording`` set,
    the session calls :meth:`started` with its JVM's process id once the JVM runs.
    """

    shared: Path | None = None
    recording: Path | None = None

    @property
    def options(self) -> tuple[str, ...]:
        if self.shared is not None:
            return (f"-XX:SharedArchiveFile={self.shared}", *_QUIET)
        if self.recording is not None:
            return (f"-XX:ArchiveClassesAtExit={self.recording}", *_QUIET)
        return ()

    def started(self, jvm_pid: int) -> None:
        """Note which JVM writes the recording (a later session promotes the file once
        that process has exited)."""
        if self.recording is not None:
            _pid_file(self.recording).write_text(str(jvm_pid))


def class_archive(java_home: str | None = None, spark_home: str | None = None,
                  cache: str | None = None) -> ClassArchive:
    """The class archive for a new session's driver JVM: the archive to map, or else a
    claimed recording (unless another session's is under way).

    Parameters
    ----------
    java_home, spark_home
        Where the JVM and Spark's jars are (default: as ``spark-submit`` finds them,
        ``$JAVA_HOME`` or ``java`` on the path, and ``$SPARK_HOME`` or pyspark's folder).
    cache
        The cache directory (default ``$UNCERTAIN_CEP_JVM_CACHE``, see the module).

    Returns neither when the archive is off, the JVM is not HotSpot 13 or later, or
    the cache directory cannot be written; sharing classes only saves time.

    >>> class_archive(cache="off")
    ClassArchive(shared=None, recording=None)
    """
    archive = _archive_path(java_home, spark_home, cache)
    if archive is None:
        return ClassArchive()
    try:
        recording_live = _promote_recordings(archive)
        if is_whole_archive(archive):
            os.utime(archive)   # last used, for the cleanup of unused archives
            return ClassArchive(shared=archive)
        if recording_live:
            return ClassArchive()   # another session is recording it
        _delete_unused_archives(archive.parent, keep=archive)
        recording = archive.with_name(f"{archive.name}.{secrets.token_hex(4)}.rec")
        _pid_file(recording).write_text("")   # claims the recording
    except OSError as e:
        log.debug("no JVM class archive: %s", e)
        return ClassArchive()
    log.info("recording the Spark JVM's classes into %s when it exits (once for this Java "
             "and Spark: later sessions start faster)", archive)
    return ClassArchive(recording=recording)


def record_class_archive(cache: str | None = None, *, job: bool = True,
                         timeout: float = 600) -> Path | None:
    """Make sure the archive exists now, for a setup step or a benchmark.

    Records it if needed: a session made in a child process (with ``job``, also a small
    job through a Python worker, whose classes every build and query loads) exits, and
    its JVM writes the recording before it closes the child's output, which is waited
    for. Returns the archive, or None when it is off, unsupported, or being recorded by
    another process.
    """
    archive = _archive_path(None, None, cache)
    if archive is None:
        return None
    recording_live = _promote_recordings(archive)
    if not is_whole_archive(archive) and not recording_live:
        env = {**os.environ, CACHE_ENV: str(archive.parent)}
        env.pop("SPARK_REMOTE", None)
        done = subprocess.run([sys.executable, "-c", _SESSION + (_SMALL_JOB if job else "")],
                              env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise UncertainCepError("recording the JVM class archive failed: a Spark "
                                    f"session could not start:\n{done.stderr[-2000:]}")
        _promote_recordings(archive)
    return archive if is_whole_archive(archive) else None


_SESSION = """
from uncertain_cep.pipeline.session import spark_session
spark = spark_session("local[1]")
"""
_SMALL_JOB = """
spark.range(0, 2, 1, 2).mapInPandas(lambda batches: batches, "id long").count()
"""


def is_whole_archive(path: Path) -> bool:
    """Whether ``path`` is a dynamic archive HotSpot finished writing (its header, written
    last, starts with the magic number)."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == _DYNAMIC_MAGIC
    except OSError:
        return False


def _archive_path(java_home: str | None, spark_home: str | None, cache: str | None
                  ) -> Path | None:
    """Where this JVM build's and Spark installation's archive goes (its folder made),
    or None when the archive is off, unsupported or cannot be written."""
    folder = _cache_folder(cache)
    java = _java(java_home)
    if folder is None or java is None:
        return None
    release = _hotspot_release(java)
    jars = Path(spark_home or os.environ.get("SPARK_HOME") or _pyspark_home()) / "jars"
    if release is None or not jars.is_dir() or re.search(r"[\s\"'\\]", str(folder)):
        return None   # quoting a path into extraJavaOptions is not worth it
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"spark-{_key(java, release, jars)}.jsa"
    except OSError as e:
        log.debug("no JVM class archive: %s", e)
        return None


def _cache_folder(cache: str | None) -> Path | None:
    value = cache if cache is not None else os.environ.get(CACHE_ENV)
    if value is not None and value.strip().lower() in ("off", "0", "false", "no"):
        return None
    if value:
        return Path(value).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).resolve() / "uncertain-cep"


def _java(java_home: str | None) -> Path | None:
    """The java executable ``spark-class`` runs, followed to its real file."""
    home = java_home or os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).is_file() else None


def _hotspot_release(java: Path) -> str | None:
    """The JDK's ``release`` file text if it is HotSpot 13 or later (dynamic archives)."""
    try:
        text = (java.parent.parent / "release").read_text(errors="replace")
    except OSError:
        return None
    version = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
    if version is None or int(version.group(1)) < 13 or "openj9" in text.lower():
        return None
    return text


def _pyspark_home() -> str:
    import pyspark

    return os.path.dirname(pyspark.__file__)


def _key(java: Path, release: str, jars: Path) -> str:
    """Names the archive after what HotSpot validates it against: the JVM build and the
    class path, down to each jar's size and modification time (a new Java, Spark or
    virtual environment records a new archive instead of reusing one HotSpot refuses)."""
    digest = hashlib.sha256()
    stats = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in jars.iterdir())
    for part in (str(java), release, str(jars.resolve()), *map(repr, stats)):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]


def _pid_file(recording: Path) -> Path:
    return recording.with_name(recording.name + ".pid")


def _promote_recordings(archive: Path) -> bool:
    """Promote finished recordings of ``archive``, delete failed ones; whether one is
    still being made."""
    live = False
    for pid_file in archive.parent.glob(f"{archive.name}.*.rec.pid"):
        recording = pid_file.with_name(pid_file.name.removesuffix(".pid"))
        try:
            text = pid_file.read_text().strip()
            age = time.time() - pid_file.stat().st_mtime
        except FileNotFoundError:
            continue   # another session promoted or deleted it just now
        if text.isdigit() and _running(int(text)):
            live = True
            continue
        if not text and age < _UNSTARTED_SECONDS:
            live = True   # its session is starting
            continue
        if text and is_whole_archive(recording):
            try:
                os.replace(recording, archive)
                log.info("the Spark JVM's class archive is ready: %s", archive)
            except FileNotFoundError:
                pass   # another session promoted it first
        recording.unlink(missing_ok=True)
        pid_file.unlink(missing_ok=True)
    return live


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs and is a JVM (not a reused process id)."""
    if not process_alive(pid):
        return False
    try:
        return b"java" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True   # no /proc: trust the process id


def _delete_unused_archives(folder: Path, keep: Path) -> None:
    """Delete the archives of other installations unused for :data:`_UNUSED_DAYS`, and
    all but the :data:`_KEEP_OTHERS` last used."""
    limit = time.time() - _UNUSED_DAYS * 86400
    others = sorted(((p.stat().st_mtime, p) for p in folder.glob("spark-*.jsa") if p != keep),
                    reverse=True)
    for rank, (used, old) in enumerate(others):
        if rank >= _KEEP_OTHERS or used < limit:
            old.unlink(missing_ok=True)
