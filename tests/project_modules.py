"""Every module of the installed ``uncertain_cep`` namespace, found from the package list
in pyproject.toml (the one place that says what ships), with its source file."""

from __future__ import annotations

import importlib.util
import pkgutil
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def packages() -> list[str]:
    """The packages pyproject.toml ships."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(config["tool"]["setuptools"]["packages"])


def modules() -> dict[str, Path]:
    """Module name -> source file, for every module of every shipped package."""
    out: dict[str, Path] = {}
    for package in packages():
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None, package
        out[package] = Path(spec.origin)
        for info in pkgutil.iter_modules(spec.submodule_search_locations):
            if not info.ispkg:
                sub = importlib.util.find_spec(f"{package}.{info.name}")
                assert sub is not None and sub.origin is not None
                out[sub.name] = Path(sub.origin)
    return out
