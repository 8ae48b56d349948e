"""The wheel built from this checkout is one namespace and works away from the checkout:
only ``uncertain_cep`` (index, query and the sample archive inside it), the demo finds
its archive, ``--version`` answers, and a user's ``query.py`` or ``index.py`` shadows
nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources.
    source = tmp_path_factory.mktemp("source") / "uncertain-cep"
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "out", "__pycache__", ".hypothesis", "*.egg-info"))
    # No build isolation: the test group installs setuptools, so no download is needed.
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("uncertain_cep-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed into a folder of its own (dependencies from this environment)."""
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                           "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return target


def _run(installed: Path, cwd: Path, *args: str, **env_vars: str
         ) -> subprocess.CompletedProcess[str]:
    # The installed folder first on the path, ahead of this checkout's editable install.
    env = {**os.environ, "PYTHONPATH": str(installed), **env_vars}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_the_wheel_holds_one_namespace_with_index_query_and_the_sample(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith((".dist-info", ".data"))} == {"uncertain_cep"}
    for path in ("uncertain_cep/index/forests/codes.py", "uncertain_cep/query/language/parse.py",
                     "uncertain_cep/query/engine/kernels/tuples.py",
                 "uncertain_cep/interval/language.py", "uncertain_cep/sample/office_rfid.parquet",
                 "uncertain_cep/py.typed", "uncertain_cep/index/py.typed",
                 "uncertain_cep/query/py.typed"):
        assert path in names, path


def test_the_wheel_says_pyspark_is_an_extra(wheel):
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [line for line in z.read(meta).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    spark = [r for r in requires if "pyspark" in r]
    # Only through the extras: 'spark' (the batch jobs) and 'connect' (Spark Connect).
    assert any('extra == "spark"' in r for r in spark), spark
    assert all('extra == "spark"' in r or 'extra == "connect"' in r for r in spark), spark


def test_installed_wheel_imports_from_its_own_folder_despite_shadowing_files(installed,
                                                                             tmp_path):
    for name in ("index", "query"):
        (tmp_path / f"{name}.py").write_text("raise SystemExit('user file imported')\n")
    proc = _run(installed, tmp_path, "-c",
                "import uncertain_cep, uncertain_cep.query.evaluation.chains, "
                "uncertain_cep.index.forests.codes; "
                "print(uncertain_cep.index.forests.codes.__file__)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(str(installed))


def test_installed_wheel_runs_the_demo_and_answers_version(installed, tmp_path):
    proc = _run(installed, tmp_path, "-m", "uncertain_cep.cli", "--version")
    assert proc.returncode == 0 and proc.stdout.startswith("uncertain-cep "), proc.stderr
    # The kernels run as Python here: compiled beside the installed copy they would cost
    # 45 s of compiling (the rest of the suite runs them compiled, from this checkout);
    # what this test checks is that the wheel holds all the demo needs.
    proc = _run(installed, tmp_path, "-m", "uncertain_cep.cli", "demo", "--engine", "local",
                "--out", "demo", NUMBA_DISABLE_JIT="1", PYTHONWARNINGS="ignore")
    assert proc.returncode == 0, proc.stderr
    assert "480 readings" in proc.stdout
    assert (tmp_path / "demo" / "report.html").is_file()


def test_the_wheel_says_matplotlib_is_the_plot_extra(wheel):
    # The base install leaves out the plotting stack (about 90 MB with fontTools and
    # Pillow): only plots and reports draw.
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [line for line in z.read(meta).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    plotting = [r for r in requires if "matplotlib" in r]
    assert plotting and all('extra == "plot"' in r for r in plotting), plotting
