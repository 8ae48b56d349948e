"""The build backend (build_backend/uncertain_cep_build.py) compiles the kernels into every
wheel unless told ``kernels=none``, and asks for what compiling needs; the wheel it builds
is tested in tests/test_wheel.py."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def backend():
    spec = importlib.util.spec_from_file_location(
        "uncertain_cep_build", REPO / "build_backend" / "uncertain_cep_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pyproject_names_the_backend_and_its_folder():
    system = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]
    assert system["build-backend"] == "uncertain_cep_build"
    assert system["backend-path"] == ["build_backend"]


def test_a_wheel_build_asks_for_the_dependencies_the_kernels_compile_with(backend,
                                                                          monkeypatch):
    monkeypatch.chdir(REPO)
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "dependencies"]
    shipping = backend.get_requires_for_build_wheel()
    assert set(dependencies) <= set(shipping)
    assert not set(dependencies) & set(backend.get_requires_for_build_wheel(
        {"kernels": "none"}))
    # An editable install ships nothing and asks for setuptools' needs only.
    assert not set(dependencies) & set(backend.get_requires_for_build_editable())


def test_an_unknown_kernels_setting_is_refused_with_the_valid_ones(backend):
    with pytest.raises(ValueError, match=r"kernels='all'.*kernels=ship.*kernels=none"):
        backend.get_requires_for_build_wheel({"kernels": "all"})
