"""The JVM class archive: recorded once, promoted only when whole, then shared; off,
unsupported JVMs and awkward paths give no options; a real session records it and the
next one maps it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from uncertain_cep.pipeline.class_archive import (
    ClassArchive,
    class_archive,
    is_whole_archive,
    record_class_archive,
)

_WHOLE = (0xF00BABA8).to_bytes(4, sys.byteorder) + bytes(60)


def _jdk(root: Path, release: str = 'JAVA_VERSION="17.0.15"\nIMPLEMENTOR="Debian"\n') -> Path:
    home = root / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    (home / "release").write_text(release)
    return home


def _spark(root: Path, *jars: str) -> Path:
    home = root / "spark"
    (home / "jars").mkdir(parents=True)
    for jar in jars or ("spark-core_2.13-4.0.0.jar",):
        (home / "jars" / jar).write_text("")
    return home


@pytest.fixture
def homes(tmp_path):
    return {"java_home": str(_jdk(tmp_path)), "spark_home": str(_spark(tmp_path)),
            "cache": str(tmp_path / "cache")}


def _option(plan: ClassArchive, name: str) -> Path | None:
    found = [o.split("=", 1)[1] for o in plan.options if o.startswith(f"-XX:{name}=")]
    return Path(found[0]) if found else None


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_first_session_records_and_others_wait_for_it(homes):
    first = class_archive(**homes)
    recording = _option(first, "ArchiveClassesAtExit")
    assert recording is not None and first.recording == recording
    assert "-Xlog:cds=off" in first.options   # no HotSpot warnings on the user's terminal
    # While that session starts (no process id yet), no second recording is made.
    assert class_archive(**homes) == ClassArchive()


def test_a_finished_recording_is_promoted_and_then_shared(homes):
    first = class_archive(**homes)
    first.started(_dead_pid())
    first.recording.write_bytes(_WHOLE)
    second = class_archive(**homes)
    archive = _option(second, "SharedArchiveFile")
    assert archive is not None and is_whole_archive(archive)
    assert second.recording is None
    assert list(archive.parent.iterdir()) == [archive]   # the recording's files are gone
    assert class_archive(**homes) == second


def test_a_recording_whose_jvm_died_before_the_header_is_deleted_and_redone(homes):
    first = class_archive(**homes)
    first.started(_dead_pid())
    first.recording.write_bytes(bytes(64))   # HotSpot writes the header last
    second = class_archive(**homes)
    assert _option(second, "SharedArchiveFile") is None
    assert second.recording is not None and second.recording != first.recording
    assert not first.recording.exists()


def test_a_recording_by_a_running_jvm_is_left_alone(homes):
    first = class_archive(**homes)
    # A process whose command line names java, as a recording JVM's does.
    jvm = subprocess.Popen(["java", "60"], executable="sleep")
    cmdline = Path(f"/proc/{jvm.pid}/cmdline")
    while not cmdline.read_bytes().startswith(b"java"):   # until it has exec'd
        time.sleep(0.01)
    try:
        first.started(jvm.pid)
        first.recording.write_bytes(_WHOLE)   # written, but its JVM has not exited
        assert class_archive(**homes) == ClassArchive()
        assert first.recording.exists()
    finally:
        jvm.kill()
        jvm.wait()
    assert _option(class_archive(**homes), "SharedArchiveFile") is not None


def test_a_claim_whose_session_never_started_expires(homes):
    first = class_archive(**homes)
    claim = first.recording.with_name(first.recording.name + ".pid")
    old = time.time() - 3600
    os.utime(claim, (old, old))
    second = class_archive(**homes)
    assert second.recording is not None and not claim.exists()


def test_another_java_or_spark_records_an_archive_of_its_own(homes, tmp_path):
    first = class_archive(**homes)
    first.started(_dead_pid())
    first.recording.write_bytes(_WHOLE)
    shared = _option(class_archive(**homes), "SharedArchiveFile")
    other_spark = _spark(tmp_path / "other", "spark-core_2.13-4.1.0.jar")
    assert class_archive(**{**homes, "spark_home": str(other_spark)}).recording is not None
    newer_java = _jdk(tmp_path / "newer", 'JAVA_VERSION="21.0.2"\n')
    assert class_archive(**{**homes, "java_home": str(newer_java)}).recording is not None
    # A new virtual environment: the same jars, written anew (HotSpot checks their times).
    (jar,) = (Path(homes["spark_home"]) / "jars").iterdir()
    os.utime(jar, (time.time() + 5, time.time() + 5))
    assert class_archive(**homes).recording is not None
    assert is_whole_archive(shared)   # kept: used today


def test_archives_unused_for_a_month_are_deleted_when_another_is_recorded(homes, tmp_path):
    cache = Path(homes["cache"])
    cache.mkdir()
    stale, recent = cache / "spark-aaaa.jsa", cache / "spark-bbbb.jsa"
    for f in (stale, recent):
        f.write_bytes(_WHOLE)
    old = time.time() - 40 * 86400
    os.utime(stale, (old, old))
    assert class_archive(**homes).recording is not None
    assert not stale.exists() and recent.exists()


def test_only_the_two_last_used_archives_of_other_installations_are_kept(homes):
    cache = Path(homes["cache"])
    cache.mkdir()
    archives = [cache / f"spark-{k}.jsa" for k in "abcd"]
    for days, f in enumerate(archives):
        f.write_bytes(_WHOLE)
        used = time.time() - days * 86400
        os.utime(f, (used, used))
    assert class_archive(**homes).recording is not None
    assert [f.exists() for f in archives] == [True, True, False, False]


@pytest.mark.parametrize("release", [
    'JAVA_VERSION="11.0.2"\n',
    'JAVA_VERSION="17.0.1"\nJVM_VARIANT="Openj9"\n',
    'IMPLEMENTOR="Unknown"\n',
])
def test_jvms_without_dynamic_archives_get_no_options(homes, tmp_path, release):
    (Path(homes["java_home"]) / "release").write_text(release)
    assert class_archive(**homes) == ClassArchive()


def test_off_a_missing_java_or_a_cache_path_with_spaces_give_no_options(homes, tmp_path,
                                                                        monkeypatch):
    assert class_archive(**{**homes, "cache": "off"}) == ClassArchive()
    monkeypatch.setenv("UNCERTAIN_CEP_JVM_CACHE", "off")
    assert class_archive(java_home=homes["java_home"],
                         spark_home=homes["spark_home"]) == ClassArchive()
    assert class_archive(**{**homes, "java_home": str(tmp_path / "nojava")}) == ClassArchive()
    spaced = class_archive(**{**homes, "cache": str(tmp_path / "my cache")})
    assert spaced == ClassArchive()


def test_an_unwritable_cache_gives_no_options(homes, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert class_archive(**{**homes, "cache": str(blocker / "cache")}) == ClassArchive()


_SESSION = """
import sys
from uncertain_cep.pipeline.session import spark_session
spark = spark_session("local[1]")
jvm = spark.sparkContext._jvm
pid = jvm.java.lang.ProcessHandle.current().pid()
args = [str(a) for a in jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
        .getInputArguments() if "Archive" in str(a)]
maps = open(f"/proc/{pid}/maps").read()
mapped = sorted({line.split()[-1] for line in maps.splitlines() if sys.argv[1] in line})
print("ARGS", args)
print("MAPPED", mapped)
"""


def test_a_real_session_records_the_archive_and_the_next_one_maps_it(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    cache = tmp_path / "cache"
    # A session made in a child process records it; its JVM writes it on exit. (Without
    # a job: recording the classes of a session's start alone takes half the time.)
    archive = record_class_archive(str(cache), job=False)
    assert archive is not None and is_whole_archive(archive)
    assert [p.name for p in cache.iterdir()] == [archive.name]
    proc = subprocess.run([sys.executable, "-c", _SESSION, str(archive)], capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "UNCERTAIN_CEP_JVM_CACHE": str(cache)})
    assert proc.returncode == 0, proc.stderr
    assert f"-XX:SharedArchiveFile={archive}" in proc.stdout
    assert f"MAPPED ['{archive}']" in proc.stdout   # HotSpot accepted it
    assert "cds" not in proc.stderr   # nor did the recording say anything
