"""numpy's huge-page advice is off where the kernel would stall on it, and only there."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from uncertain_cep.memory_pages import (
    DEFRAG_SETTING,
    stalls_on_huge_page_advice,
    use_ordinary_pages,
    use_steady_arrow_pool,
)

_SWITCH = "NUMPY_MADVISE_HUGEPAGE"
_ARROW_SWITCH = "ARROW_DEFAULT_MEMORY_POOL"


@pytest.fixture
def numpy_advice(monkeypatch):
    """numpy's own switch and environment variable, put back after the test."""
    before = np._core.multiarray._get_madvise_hugepage()
    monkeypatch.delenv(_SWITCH, raising=False)
    yield
    np._core.multiarray._set_madvise_hugepage(before)


@pytest.mark.parametrize(("setting", "stalls"), [
    ("always defer defer+madvise [madvise] never", True),
    ("always defer [defer+madvise] madvise never", True),
    ("[always] defer defer+madvise madvise never", False),
    ("always [defer] defer+madvise madvise never", False),
    ("always defer defer+madvise madvise [never]", False),
    ("", False),
])
def test_only_the_modes_that_compact_on_a_fault_stall(setting, stalls):
    assert stalls_on_huge_page_advice(setting) is stalls


def test_a_stalling_host_gets_ordinary_pages_in_this_process_and_its_children(
        numpy_advice, tmp_path):
    setting = tmp_path / "defrag"
    setting.write_text("always defer defer+madvise [madvise] never\n")
    np._core.multiarray._set_madvise_hugepage(True)
    assert use_ordinary_pages(str(setting)) is True
    assert np._core.multiarray._get_madvise_hugepage() is False   # numpy imported first
    assert os.environ[_SWITCH] == "0"                            # inherited by children


def test_other_hosts_and_a_users_choice_are_left_alone(numpy_advice, tmp_path, monkeypatch):
    setting = tmp_path / "defrag"
    setting.write_text("[always] defer defer+madvise madvise never\n")
    np._core.multiarray._set_madvise_hugepage(True)
    assert use_ordinary_pages(str(setting)) is False
    assert use_ordinary_pages(str(tmp_path / "absent")) is False
    assert np._core.multiarray._get_madvise_hugepage() is True and _SWITCH not in os.environ
    setting.write_text("always defer defer+madvise [madvise] never\n")
    monkeypatch.setenv(_SWITCH, "1")
    assert use_ordinary_pages(str(setting)) is False
    assert np._core.multiarray._get_madvise_hugepage() is True


def test_importing_the_package_before_numpy_applies_this_hosts_setting():
    env = {k: v for k, v in os.environ.items() if k != _SWITCH}
    code = ("import uncertain_cep, numpy; "
            "print(numpy._core.multiarray._get_madvise_hugepage())")
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        with open(DEFRAG_SETTING) as fh:
            stalls = stalls_on_huge_page_advice(fh.read())
    except OSError:
        stalls = False
    if not stalls and sys.platform != "linux":
        pytest.skip("numpy advises huge pages on Linux only")
    assert got == str(not stalls)


@pytest.fixture
def arrow_pool(monkeypatch):
    """Arrow's pool and switch, put back after the test."""
    before = pa.default_memory_pool()
    monkeypatch.delenv(_ARROW_SWITCH, raising=False)
    yield
    pa.set_memory_pool(before)


def test_a_stalling_host_gets_a_steady_arrow_pool_here_and_in_children(arrow_pool, tmp_path):
    setting = tmp_path / "defrag"
    setting.write_text("always defer [defer+madvise] madvise never\n")
    pa.set_memory_pool(pa.system_memory_pool())
    chosen = use_steady_arrow_pool(str(setting))
    assert chosen in ("jemalloc", "system")
    assert chosen in pa.supported_memory_backends()
    assert pa.default_memory_pool().backend_name == chosen     # pyarrow imported first
    assert os.environ[_ARROW_SWITCH] == chosen                  # inherited by children


def test_other_hosts_and_a_users_arrow_pool_are_left_alone(arrow_pool, tmp_path, monkeypatch):
    setting = tmp_path / "defrag"
    setting.write_text("[always] defer defer+madvise madvise never\n")
    pa.set_memory_pool(pa.system_memory_pool())
    assert use_steady_arrow_pool(str(setting)) is None
    assert use_steady_arrow_pool(str(tmp_path / "absent")) is None
    assert _ARROW_SWITCH not in os.environ
    setting.write_text("always defer defer+madvise [madvise] never\n")
    monkeypatch.setenv(_ARROW_SWITCH, "system")
    assert use_steady_arrow_pool(str(setting)) is None
    assert pa.default_memory_pool().backend_name == "system"


def test_importing_the_package_before_pyarrow_gives_arrow_this_hosts_pool():
    env = {k: v for k, v in os.environ.items() if k != _ARROW_SWITCH}
    code = ("import uncertain_cep, pyarrow; "
            "print(pyarrow.default_memory_pool().backend_name)")
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    try:
        with open(DEFRAG_SETTING) as fh:
            stalls = stalls_on_huge_page_advice(fh.read())
    except OSError:
        stalls = False
    if not stalls:
        pytest.skip("this host does not stall on huge-page advice: Arrow keeps its default")
    assert got.stdout.strip() == "jemalloc" and "Unsupported" not in got.stderr


_FREED_KEPT = """
import ctypes, sys
import numpy as np
from uncertain_cep.memory_pages import keep_freed_arrays

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "keep":
    assert keep_freed_arrays() is True and keep_freed_arrays() is True
elif sys.argv[1] == "refused":
    assert keep_freed_arrays() is False
big = np.ones(100 << 20, dtype=np.uint8)
del big
print(libc.mallinfo2().fordblks >> 20)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
def test_a_process_that_keeps_freed_arrays_reuses_their_memory():
    # A shard's node table freed is memory the next shard's arrays take again, not
    # pages handed back to the kernel and faulted in afresh.
    def free_megabytes(mode, **env):
        return int(subprocess.run([sys.executable, "-c", _FREED_KEPT, mode],
                                  env={**os.environ, **env}, capture_output=True, text=True,
                                  check=True).stdout)

    assert free_megabytes("keep") >= 100
    assert free_megabytes("default") < 100
    # The user's choice: glibc's own way.
    assert free_megabytes("refused", UNCERTAIN_CEP_KEEP_FREED="0") < 100
