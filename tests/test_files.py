"""Writes that the system refuses are clear errors naming the user's target (issue 44
item 10): saving into a read-only place raised a PermissionError naming a hidden
temporary path, and saving to "/" scanned the whole file system."""

from __future__ import annotations

import os
import time

import pandas as pd
import pytest

import uncertain_cep as uc
from uncertain_cep.errors import FileWriteError


@pytest.fixture(scope="module")
def idx():
    return uc.build_index(pd.DataFrame({"event_id": [1, 2], "group": "g", "t_lo": [0, 1],
                                        "t_hi": [2, 3], "x": [1.0, 2.0]}))


def test_saving_where_a_file_blocks_the_path_names_the_target_not_a_temporary(idx, tmp_path):
    # A file in place of the parent directory: even root cannot write there.
    (tmp_path / "blocker").write_text("")
    target = tmp_path / "blocker" / "ix"
    with pytest.raises(FileWriteError) as err:
        idx.save(target)
    message = str(err.value)
    assert f"cannot write the index {target}" in message
    assert "a file stands where a directory" in message
    assert ".ix.tmp" not in message and isinstance(err.value, OSError)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_saving_into_a_read_only_directory_names_the_target(idx, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(FileWriteError, match=r"cannot write the index .*locked/ix: "
                                                 r"Permission denied; choose a directory"):
            idx.save(locked / "ix")
    finally:
        locked.chmod(0o755)


def test_an_answer_file_that_cannot_be_written_names_the_file(idx, tmp_path):
    (tmp_path / "blocker").write_text("")
    answer = idx.query("PATTERN SEQ(A, B) DEFINE A AS x > 0, B AS x > 0")
    with pytest.raises(FileWriteError, match=r"cannot write the file .*blocker/a\.csv: "
                                             "[^;]*; a file stands where a directory"):
        answer.to_file(tmp_path / "blocker" / "a.csv")


@pytest.mark.parametrize("root", ["/", "/tmp/.."])
def test_saving_to_the_file_system_root_is_refused_at_once(idx, root):
    started = time.perf_counter()
    with pytest.raises(FileWriteError, match="the file system root"):
        idx.save(root)
    assert time.perf_counter() - started < 1.0


def test_a_big_foreign_directory_is_refused_without_listing_all_of_it(idx, tmp_path):
    folder = tmp_path / "home"
    for i in range(3):
        (folder / f"d{i}").mkdir(parents=True)
        (folder / f"d{i}" / "f.txt").write_text("keep me")
    with pytest.raises(uc.IndexFormatError, match=r"is not an uncertain-cep index \(it "
                                                  r"holds files, e\.g\. d\d/f\.txt\)"):
        idx.save(folder)
    assert (folder / "d0" / "f.txt").read_text() == "keep me"
