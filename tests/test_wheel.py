"""The wheel built from this checkout's sdist (tests/wheel_build.py: as pip installs a
release) is one namespace and works away from the checkout: only ``uncertain_cep``
(index, query, the sample archive and the compiled kernels inside it), the demo finds
its archive, ``--version`` answers, a user's ``query.py`` or ``index.py`` shadows
nothing, and with an empty kernel cache the first queries compile nothing (issue "No
compile wait")."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from uncertain_cep.kernel_cache import kernel_version


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
    version = kernel_version()
    shipped = [n for n in names if n.startswith(f"uncertain_cep/_kernels/{version}/")]
    assert any(n.endswith(".nbi") for n in shipped) and any(n.endswith(".nbc")
                                                           for n in shipped), names


def test_the_sdist_carries_the_build_backend_that_ships_the_kernels(sdist):
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"pyproject.toml", "build_backend/uncertain_cep_build.py",
            "uncertain_cep/kernel_build.py",
            "uncertain_cep/query/engine/kernels/negation.py"} <= names, sorted(names)
    assert not any("_kernels/" in n for n in names)     # compiled when the wheel is built


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
    # With a kernel cache of its own, empty: the wheel's compiled kernels serve the demo's
    # queries (those with NOT among them), and nothing is compiled or said.
    proc = _run(installed, tmp_path, "-m", "uncertain_cep.cli", "demo", "--engine", "local",
                "--out", "demo", PYTHONWARNINGS="ignore",
                UNCERTAIN_CEP_KERNEL_CACHE=str(tmp_path / "kernels"))
    assert proc.returncode == 0, proc.stderr
    assert "480 readings" in proc.stdout
    assert (tmp_path / "demo" / "report.html").is_file()
    assert "kernels compiled" not in proc.stdout and "compiling" not in proc.stderr, (
        proc.stdout + proc.stderr)


def test_the_installed_wheels_first_queries_compile_no_kernel(installed, tmp_path):
    script = (
        "import uncertain_cep as uc\n"
        "from uncertain_cep import kernel_cache\n"
        "from uncertain_cep.datasets.synthetic import generate_synthetic\n"
        "idx = uc.build_index(generate_synthetic(2000, groups=4, seed=3))\n"
        "for q in ('PATTERN SEQ(A, B, C) DEFINE A AS a0 > 0, B AS a0 > 0.5, C AS a0 > 0 '\n"
        "          'WITHIN 8 CONFIDENCE 0.05',\n"
        "          'PATTERN SEQ(A, NOT N, B) DEFINE A AS a0 > 0, N AS a1 > 0, B AS a0 > 0 '\n"
        "          'WITHIN 6 CONFIDENCE 0.05'):\n"
        "    for strategy in ('selectivity', 'sequential'):\n"
        "        print(len(idx.query(q, strategy=strategy)))\n"
        "print('compiled', kernel_cache.kernels_compiled(), kernel_cache.kernel_cache_dir())\n")
    proc = _run(installed, tmp_path, "-c", script,
                UNCERTAIN_CEP_KERNEL_CACHE=str(tmp_path / "kernels"))
    assert proc.returncode == 0, proc.stderr
    *counts, last = proc.stdout.split("\n")[:-1]
    assert last.startswith("compiled 0 " + str(tmp_path / "kernels")), proc.stdout + proc.stderr
    assert all(int(c) > 0 for c in counts), counts
    assert proc.stderr == "", proc.stderr


def test_the_wheel_says_matplotlib_is_the_plot_extra(wheel):
    # The base install leaves out the plotting stack (about 90 MB with fontTools and
    # Pillow): only plots and reports draw.
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        requires = [line for line in z.read(meta).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
    plotting = [r for r in requires if "matplotlib" in r]
    assert plotting and all('extra == "plot"' in r for r in plotting), plotting
