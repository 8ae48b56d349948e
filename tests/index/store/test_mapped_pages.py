"""The pages a slice touched in an index's mapped columns are handed back after it: the
worker's resident memory falls, its answers do not change."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from uncertain_cep.index.store.mapped_pages import release_mapped_pages


def _resident_file_bytes() -> int:
    """The process's resident file-backed pages (the mapped columns'), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssFile in /proc/self/status")


def test_released_pages_leave_the_process_and_read_the_same_again(tmp_path):
    np.save(tmp_path / "column.npy", np.arange(8_000_000, dtype=np.int64))    # 64 MB
    column = np.load(tmp_path / "column.npy", mmap_mode="c")
    total = int(column.sum())                 # every page touched
    touched = _resident_file_bytes()
    assert release_mapped_pages([column, column[10:], column[::2]]) == 1
    assert touched - _resident_file_bytes() > 48 * 2**20
    assert int(column.sum()) == total
