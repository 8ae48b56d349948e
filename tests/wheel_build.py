"""The wheel built from this checkout as ``pip install`` of a release builds it: the sdist
first, then the wheel from the sdist by the package's build backend (the compiled kernels
inside it); and that wheel installed into a folder of its own.

A plugin of the test suite (``tests/conftest.py``): ``sdist``, ``wheel`` and ``installed``
are session-scoped fixtures (built once per test worker that asks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["installed", "sdist", "wheel"]

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def sdist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources.
    source = tmp_path_factory.mktemp("source") / "uncertain-cep"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "out", "__pycache__", ".hypothesis", "*.egg-info",
        "_kernels", "dist"))
    return _built(out, "uncertain_cep-*.tar.gz",
                  [sys.executable, "-c", "import sys, uncertain_cep_build; "
                   "uncertain_cep_build.build_sdist(sys.argv[1])", str(out)],
                  cwd=source, env={**os.environ, "PYTHONPATH": "build_backend"})


@pytest.fixture(scope="session")
def wheel(sdist, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation (the test group installs setuptools; isolation would download
    # the dependencies again).
    return _built(out, "uncertain_cep-*.whl",
                  [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                   "-q", "-w", str(out), str(sdist)])


def _built(out: Path, pattern: str, command: list[str], **how) -> Path:
    """Run a build ``command`` that writes one file matching ``pattern`` into ``out``."""
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, **how)
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob(pattern)
    return built


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed into a folder of its own (dependencies from this environment):
    put it first on ``PYTHONPATH``, ahead of the checkout's editable install."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                           "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return target
