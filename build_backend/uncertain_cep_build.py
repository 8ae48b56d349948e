"""The package's build backend: setuptools', with the query kernels compiled into every
wheel (issue "No compile wait").

``pip install`` of the sdist, ``pip wheel .`` and ``python -m build`` all build the wheel
here: before setuptools packs it, ``python -m uncertain_cep.kernel_build --into
uncertain_cep/_kernels`` compiles the kernels (or finds them in the machine's cache) with
the build's own interpreter and copies them into the package, so an install of the wheel
on a machine of the same CPU kind answers its first query without compiling
(uncertain_cep/kernel_cache.py). Compiling needs the package's own dependencies, so a
wheel build asks for them on top of setuptools (``get_requires_for_build_wheel``: pip
installs them into its isolated build environment); an editable install asks for
setuptools only and ships nothing (scripts/setup.sh compiles into the machine's cache).

``--config-settings kernels=none`` (``pip wheel -C kernels=none .``) builds a wheel
without kernels: it compiles on first use, and says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from contextlib import contextmanager
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every hook not redefined here)

_KERNELS = Path("uncertain_cep") / "_kernels"
# setuptools' build/ keeps what an earlier build copied: the kernels of older versions too.
_STALE = (_KERNELS, Path("build") / "lib" / _KERNELS)


def get_requires_for_build_wheel(config_settings=None):
    requires = _setuptools.get_requires_for_build_wheel(config_settings)
    if _ships_kernels(config_settings):
        project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
        requires = [*requires, *project["dependencies"]]
    return requires


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _kernels_inside(_ships_kernels(config_settings)):
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def _ships_kernels(config_settings) -> bool:
    value = (config_settings or {}).get("kernels", "ship")
    if value not in ("ship", "none"):
        raise ValueError(f"config setting kernels={value!r}: use kernels=ship (the "
                         "default: compiled into the wheel) or kernels=none")
    return value == "ship"


@contextmanager
def _kernels_inside(ship: bool):
    for stale in _STALE:
        shutil.rmtree(stale, ignore_errors=True)
    try:
        if ship:
            # The sources being built, not an installed copy of the package.
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
            subprocess.run([sys.executable, "-m", "uncertain_cep.kernel_build",
                            "--into", str(_KERNELS)], check=True, env=env,
                           stdout=sys.stderr)
        yield
    finally:
        for stale in _STALE:
            shutil.rmtree(stale, ignore_errors=True)
