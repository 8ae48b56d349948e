"""Kernels are compiled at build or install time (uncertain_cep/kernel_build.py): a machine
cache marked compiled for this CPU is taken as is, and what a wheel ships is the cache's
module folders of this version, nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

from uncertain_cep import kernel_build, kernel_cache


def _run(*args: str, **env_vars: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "uncertain_cep.kernel_build", *args],
                          env={**os.environ, **env_vars}, capture_output=True, text=True,
                          timeout=600)


def test_a_cache_marked_compiled_is_shipped_without_compiling(tmp_path):
    cache = tmp_path / "cache"
    version = kernel_cache.kernel_version()
    # A made-up cache of this version, marked compiled for this CPU: the command must
    # neither compile nor load anything, only copy its module folders.
    (cache / version / "uncertain_cep.some.module").mkdir(parents=True)
    (cache / version / "uncertain_cep.some.module" / "k-1.py311.nbi").write_bytes(b"x")
    (cache / version / ".uncertain_cep.half.copy.123").mkdir()
    marker = kernel_build.compiled_marker().name
    (cache / version / marker).write_text("cpu\n")
    proc = _run("--into", str(tmp_path / "ship"), UNCERTAIN_CEP_KERNEL_CACHE=str(cache))
    assert proc.returncode == 0, proc.stderr
    assert "compiling" not in proc.stderr and "compiled in" not in proc.stdout, proc
    shipped = tmp_path / "ship" / version
    assert sorted(p.name for p in shipped.iterdir()) == ["uncertain_cep.some.module"]
    assert (shipped / "uncertain_cep.some.module" / "k-1.py311.nbi").read_bytes() == b"x"


def test_the_marker_names_this_cpu_in_this_versions_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("UNCERTAIN_CEP_KERNEL_CACHE", str(tmp_path))
    marker = kernel_build.compiled_marker()
    assert marker.parent == tmp_path / kernel_cache.kernel_version()
    assert marker.name.startswith(".compiled-")


def test_setup_has_compiled_this_versions_kernels_for_this_machine():
    # scripts/setup.sh (the README's commands run it) compiles at install time: the
    # test processes and their Spark workers find every kernel compiled.
    assert kernel_build.compiled_marker().exists(), (
        "run `python -m uncertain_cep.kernel_build` (scripts/setup.sh does)")
