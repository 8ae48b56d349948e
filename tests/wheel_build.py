"""The wheel built from this checkout, as a release is built (scripts/build_wheel.sh: the
compiled kernels inside it), and that wheel installed into a folder of its own.

A plugin of the test suite (``tests/conftest.py``): ``wheel`` and ``installed`` are
session-scoped fixtures (built once per test worker that asks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["installed", "wheel"]

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources.
    source = tmp_path_factory.mktemp("source") / "uncertain-cep"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "out", "__pycache__", ".hypothesis", "*.egg-info",
        "_kernels", "dist"))
    # No build isolation (the test group installs setuptools).
    proc = subprocess.run(["bash", str(source / "scripts" / "build_wheel.sh"), str(out)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHON": sys.executable})
    assert proc.returncode == 0, proc.stderr
    assert not (source / "uncertain_cep" / "_kernels").exists()     # only in the wheel
    (built,) = out.glob("uncertain_cep-*.whl")
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
