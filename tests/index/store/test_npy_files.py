"""``.npy`` files written piece by piece read back as the concatenated pieces."""

from __future__ import annotations

import numpy as np
import pytest

from uncertain_cep.index.store.npy_files import write_npy


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float64])
def test_pieces_written_one_after_another_read_back_as_one_array(tmp_path, dtype):
    rng = np.random.default_rng(1)
    pieces = [rng.integers(-100, 100, size=n) for n in (0, 5, 4097, 1)]
    write_npy(tmp_path / "a.npy", dtype, sum(map(len, pieces)), iter(pieces))
    back = np.load(tmp_path / "a.npy", mmap_mode="r")
    assert back.dtype == dtype
    assert np.array_equal(back, np.concatenate(pieces).astype(dtype))


def test_pieces_that_do_not_add_up_to_the_announced_length_are_an_error(tmp_path):
    with pytest.raises(ValueError, match="3 values written, 4 announced"):
        write_npy(tmp_path / "a.npy", np.int64, 4, [np.arange(3)])
