"""The compiled kernels are kept per version of their sources (uncertain_cep/kernel_cache.py):
a process finds what an earlier one compiled, wherever the package was checked out, and
a change to any kernel's source is never answered with old compiled code."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from numba.core.registry import CPUDispatcher

import uncertain_cep
from uncertain_cep import kernel_cache


def test_every_kernel_is_defined_in_a_file_the_kernel_version_covers():
    sources = {p.resolve() for p in kernel_cache.kernel_sources()}
    kernels = 0
    for info in pkgutil.walk_packages(uncertain_cep.__path__, "uncertain_cep."):
        if info.name.startswith("uncertain_cep.pipeline") or info.name.endswith("__main__"):
            continue        # Spark's side, and the command line's entry: no kernels
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.__module__ == info.name:
                kernels += 1
                assert Path(value.py_func.__code__.co_filename).resolve() in sources, (
                    f"{info.name}.{value.__name__} is compiled but its file is not among "
                    "the kernel sources")
                assert value._cache._cache_path.startswith(
                    str(kernel_cache.kernel_cache_dir())), value._cache._cache_path
    assert kernels > 50


def test_the_kernel_version_changes_with_any_kernel_source_and_only_with_them(
        tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    kernel = tmp_path / "sub" / "kernel.py"
    helper = tmp_path / "helper.py"
    other = tmp_path / "other.py"
    kernel.write_text("import numba\n")
    helper.write_text("# inlined into numba kernels\nX = 1\n")
    other.write_text("Y = 1\n")
    monkeypatch.setattr(kernel_cache, "_PACKAGE", tmp_path)
    version = kernel_cache.kernel_version.__wrapped__
    assert kernel_cache.kernel_sources() == [helper, kernel]
    first = version()
    other.write_text("Y = 2\n")
    assert version() == first
    helper.write_text("# inlined into numba kernels\nX = 2\n")
    second = version()
    assert second != first
    kernel.write_text("import numba  # \n")
    assert version() not in (first, second)


_CHILD = textwrap.dedent("""
    import numpy as np
    from uncertain_cep import kernel_cache
    from uncertain_cep.query.engine.kernels.chains import descends

    codes = np.array([0, 1], dtype=np.int64)
    assert descends(0, 1, codes, np.array([1, 1]), np.zeros(2, np.int64),
                    np.array([-1]), np.array([1]))
    print(kernel_cache.kernel_cache_dir(), sum(descends.stats.cache_misses.values()),
          sum(descends.stats.cache_hits.values()), kernel_cache.kernels_compiled(),
          kernel_cache.compile_seconds() > 0)
    descends(1, 0, codes, np.array([1, 1]), np.zeros(2, np.int64), np.array([-1]),
             np.array([1]))
""")


@pytest.mark.parametrize("variable", ["UNCERTAIN_CEP_KERNEL_CACHE", "NUMBA_CACHE_DIR"])
def test_a_process_loads_what_an_earlier_one_compiled_into_the_chosen_directory(
        tmp_path, variable):
    env = {k: v for k, v in os.environ.items()
           if k not in ("UNCERTAIN_CEP_KERNEL_CACHE", "NUMBA_CACHE_DIR")}
    env[variable] = str(tmp_path / "kernels")

    def run() -> tuple[list[str], str]:
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=tmp_path,
                              capture_output=True, text=True, check=True)
        return done.stdout.split(), done.stderr

    (folder, misses, hits, compiled, timed), said = run()
    root = tmp_path / "kernels"
    assert Path(folder).parent == (root if variable.startswith("UNCERTAIN") else
                                   root / "uncertain-cep")
    assert (misses, hits, compiled, timed) == ("1", "0", "1", "True")
    assert list(Path(folder).glob("*chains/*.nbc"))
    # Said once (the second call compiles nothing), naming what and how long.
    assert said.count("compiling the query kernels for this machine") == 1, said
    assert "about a minute" in said and folder in said.replace("\n", "")
    again, said = run()
    assert again == [folder, "0", "1", "0", "False"] and said == ""


def test_a_new_cache_directory_starts_as_a_copy_of_the_kernels_the_wheel_ships(tmp_path):
    shipped = tmp_path / "shipped"
    for module in ("uncertain_cep.a", "uncertain_cep.b"):
        (shipped / module).mkdir(parents=True)
        (shipped / module / "f-1.py311.nbi").write_bytes(module.encode())
    folder = tmp_path / "cache"
    folder.mkdir()
    # A module another process compiled or copied already is left as it is.
    (folder / "uncertain_cep.b").mkdir()
    (folder / "uncertain_cep.b" / "f-1.py311.nbi").write_bytes(b"compiled here")
    kernel_cache._seed(folder, shipped)
    kernel_cache._seed(folder, shipped)
    assert sorted(p.name for p in folder.iterdir()) == ["uncertain_cep.a", "uncertain_cep.b"]
    assert (folder / "uncertain_cep.a" / "f-1.py311.nbi").read_bytes() == b"uncertain_cep.a"
    assert (folder / "uncertain_cep.b" / "f-1.py311.nbi").read_bytes() == b"compiled here"
    kernel_cache._seed(folder, tmp_path / "no wheel here")          # nothing shipped


_LOADER = textwrap.dedent("""
    import sys
    import numpy as np
    from uncertain_cep import kernel_cache
    from uncertain_cep.query.engine.kernels.chains import descends

    module = "uncertain_cep.query.engine.kernels.chains"
    if sys.argv[1] == "background":
        kernel_cache.load_in_background([module]).join()
        loaded = len(descends.overloads)
    else:
        loaded = kernel_cache.load_cached_kernels([module])
    ready = len(descends.overloads)
    codes = np.array([0, 1], dtype=np.int64)
    assert descends(0, 1, codes, np.array([1, 1]), np.zeros(2, np.int64),
                    np.array([-1]), np.array([1]))
    print(loaded, ready, len(descends.overloads), kernel_cache.kernels_compiled())
""")


@pytest.mark.parametrize("how", ["now", "background"])
def test_kernels_loaded_ahead_from_the_cache_are_the_ones_a_call_then_runs(tmp_path, how):
    # What the Spark worker daemon and the query's driver do: a process loads, before any
    # call, every form its cache holds, compiling nothing; an empty cache loads nothing.
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["UNCERTAIN_CEP_KERNEL_CACHE"] = str(tmp_path / "kernels")

    def run() -> list[int]:
        done = subprocess.run([sys.executable, "-c", _LOADER, how], env=env, cwd=tmp_path,
                              capture_output=True, text=True, check=True)
        return [int(x) for x in done.stdout.split()]

    assert run() == [0, 0, 1, 1]        # nothing cached: the call compiles it
    loaded, ready, after, compiled = run()
    assert loaded >= 1 and ready >= 1 and after == ready and compiled == 0
